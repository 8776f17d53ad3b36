//! `kit hook install`: merge kit's hook entries (the embedded snippet `kit/hooks/settings.json`)
//! into Claude Code's settings (formats/claude-code.md §5.1: event → matcher group → handlers).
//!
//! Rules: every other key and every other hook stays as it was, in the file's own order (kit's
//! entries are appended where they go), with the file's indentation and final newline; running
//! it twice changes nothing; the previous file is kept as `settings.json.kit-backup-<time>`
//! before any change; `--uninstall` removes only handlers whose command is kit's
//! (`kit hook claude`, any path to `kit`), then groups and events left empty by that;
//! `--dry-run` prints the change as a unified diff and writes nothing. A settings file that is a
//! symbolic link is edited where it points (the link stays a link, as dotfile managers need); the
//! file keeps its permission bits. A file that is not valid JSON is left untouched and reported
//! as `file:line:col`.
//!
//! Why [`Json`] and not `serde_json::Value`: kit builds serde_json without `preserve_order`, so
//! its maps sort their keys. Turning that feature on crate-wide would change the key order of
//! every `json!` value kit prints or journals (`--json` outputs, `journal.jsonl`); the
//! order-keeping value lives here, where it is needed.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use crate::error::{Error, IoContext, Result};

/// The command kit installs.
pub const COMMAND: &str = "kit hook claude";

/// Options of `kit hook install`.
#[derive(Clone, Debug)]
pub struct InstallOptions {
    /// The settings file to change.
    pub settings: PathBuf,
    /// Remove kit's entries instead of adding them.
    pub uninstall: bool,
    /// Print the change as a diff; write nothing.
    pub dry_run: bool,
}

/// Which settings file: `<repo or cwd>/.claude/settings.json`, or with `user` the first root of
/// `$CLAUDE_CONFIG_DIR` (default `$HOME/.claude`) `/settings.json`.
///
/// Errors: [`Error::Usage`] with `user` when neither `CLAUDE_CONFIG_DIR` nor an absolute `HOME`
/// is set (never a path relative to `cwd`).
pub fn settings_path(cwd: &Path, user: bool) -> Result<PathBuf> {
    if user {
        let roots = crate::transcript::discover::claude_roots().map_err(|e| {
            let msg = e.to_string();
            Error::usage(msg).with_hint(
                "set HOME (or CLAUDE_CONFIG_DIR) and run kit hook install --user again, or run kit hook install without --user for this project's .claude/settings.json",
            )
        })?;
        let root =
            roots.into_iter().next().ok_or_else(|| Error::internal("no Claude Code root"))?;
        return Ok(root.join("settings.json"));
    }
    let root = crate::longrun::git_toplevel(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    Ok(root.join(".claude").join("settings.json"))
}

/// A JSON value whose objects keep their keys in the order they were read (a key read twice
/// keeps its first place and its last value, as JSON parsers do).
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number, exactly as serde_json reads it.
    Number(serde_json::Number),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Json>),
    /// An object: (key, value) pairs in order.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The value under `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(kv) => kv.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        match self {
            Json::Object(kv) => kv.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value under `key`, appended (as `make()`) when the object has none.
    fn entry<'a>(
        kv: &'a mut Vec<(String, Json)>,
        key: &str,
        make: impl FnOnce() -> Json,
    ) -> &'a mut Json {
        let i = match kv.iter().position(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                kv.push((key.to_string(), make()));
                kv.len() - 1
            }
        };
        &mut kv[i].1
    }

    /// The text, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// The items, if this is an array.
    pub fn as_array(&self) -> Option<&Vec<Json>> {
        match self {
            Json::Array(a) => Some(a),
            _ => None,
        }
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) => n.serialize(s),
            Json::String(t) => s.serialize_str(t),
            Json::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for i in items {
                    seq.serialize_element(i)?;
                }
                seq.end()
            }
            Json::Object(kv) => {
                let mut map = s.serialize_map(Some(kv.len()))?;
                for (k, v) in kv {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Json, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> std::result::Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_none<E>(self) -> std::result::Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, b: bool) -> std::result::Result<Json, E> {
                Ok(Json::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> std::result::Result<Json, E> {
                Ok(Json::Number(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> std::result::Result<Json, E> {
                Ok(Json::Number(n.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, n: f64) -> std::result::Result<Json, E> {
                serde_json::Number::from_f64(n)
                    .map(Json::Number)
                    .ok_or_else(|| E::custom("a number JSON cannot hold"))
            }
            fn visit_str<E>(self, s: &str) -> std::result::Result<Json, E> {
                Ok(Json::String(s.to_string()))
            }
            fn visit_string<E>(self, s: String) -> std::result::Result<Json, E> {
                Ok(Json::String(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> std::result::Result<Json, A::Error> {
                let mut items = Vec::new();
                while let Some(i) = a.next_element()? {
                    items.push(i);
                }
                Ok(Json::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> std::result::Result<Json, A::Error> {
                let mut kv: Vec<(String, Json)> = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, Json>()? {
                    match kv.iter_mut().find(|(key, _)| *key == k) {
                        Some(slot) => slot.1 = v,
                        None => kv.push((k, v)),
                    }
                }
                Ok(Json::Object(kv))
            }
        }
        d.deserialize_any(V)
    }
}

/// The embedded snippet.
pub fn snippet() -> Json {
    let text = crate::embedded::kit_file("hooks/settings.json").unwrap_or("{}");
    serde_json::from_str(text).unwrap_or(Json::Null)
}

/// True when a handler object runs kit's hook.
pub fn is_kit_handler(h: &Json) -> bool {
    let Some(cmd) = h.get("command").and_then(Json::as_str) else { return false };
    let words: Vec<&str> = cmd.split_whitespace().collect();
    words.len() == 3
        && (words[0] == "kit"
            || words[0].ends_with("/kit")
            || words[0].trim_matches('"').ends_with("/kit"))
        && words[1] == "hook"
        && words[2] == "claude"
}

/// True when a matcher group holds a kit handler.
fn has_kit_handler(group: &Json) -> bool {
    group.get("hooks").and_then(Json::as_array).is_some_and(|hs| hs.iter().any(is_kit_handler))
}

/// What JSON calls a value's kind, for messages ("an object", "a string", …).
fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// A key of the settings whose value has the wrong shape for [`merge`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Misshapen {
    /// Dotted path: `hooks` or `hooks.Stop`.
    pub key: String,
    /// What it holds: "an object", "a string", …
    pub found: &'static str,
}

/// The keys [`merge`] cannot add to without losing what is there: `hooks` when it is not an
/// object of events, and each event of the snippet whose value is not an array of matcher
/// groups (formats/claude-code.md §5.1). Hand-edited settings get this wrong; kit reports them
/// rather than skip the event (no Stop hook means no 85 % Stop block) or replace the value.
pub fn misshapen(settings: &Json, snippet: &Json) -> Vec<Misshapen> {
    let Some(hooks) = settings.get("hooks") else { return Vec::new() };
    let Json::Object(events) = hooks else {
        return vec![Misshapen { key: "hooks".into(), found: kind(hooks) }];
    };
    let Some(Json::Object(ours)) = snippet.get("hooks") else { return Vec::new() };
    ours.iter()
        .filter_map(|(event, _)| events.iter().find(|(k, _)| k == event))
        .filter(|(_, v)| !matches!(v, Json::Array(_)))
        .map(|(event, v)| Misshapen { key: format!("hooks.{event}"), found: kind(v) })
        .collect()
}

/// The error for a file with [`misshapen`] keys: each key and what it holds, what Claude Code
/// wants there, and how to fix it by hand.
fn misshapen_error(path: &Path, bad: &[Misshapen]) -> Error {
    let listed: Vec<String> = bad.iter().map(|m| format!("`{}` is {}", m.key, m.found)).collect();
    let (want, fix) = if bad.iter().any(|m| m.key == "hooks") {
        (
            "an object of events (\"hooks\": {\"Stop\": [...]})",
            "make `hooks` an object of events or remove it",
        )
    } else {
        (
            "an array of matcher groups (\"Stop\": [{\"hooks\": [...]}])",
            "wrap each value in [ ] or remove the key",
        )
    };
    Error::input(
        path,
        None,
        format!(
            "{}; Claude Code wants {want}; nothing installed, the file is left untouched",
            listed.join(", ")
        ),
    )
    .with_hint(format!("{fix} in {}, then run kit hook install again", path.display()))
}

/// Add kit's groups for each event of the snippet that has no kit handler yet; new events and
/// groups go after the existing ones. Keys that [`misshapen`] names are left as they are (check
/// it first: `run` refuses such a file); `settings` must be an object (else nothing changes).
pub fn merge(settings: &mut Json, snippet: &Json) {
    let Json::Object(top) = settings else { return };
    let Some(Json::Object(events)) = snippet.get("hooks") else { return };
    let hooks = Json::entry(top, "hooks", || Json::Object(Vec::new()));
    let Json::Object(hooks) = hooks else { return };
    for (event, groups) in events {
        let list = Json::entry(hooks, event, || Json::Array(Vec::new()));
        let Json::Array(list) = list else { continue };
        if !list.iter().any(has_kit_handler) {
            list.extend(groups.as_array().cloned().unwrap_or_default());
        }
    }
}

/// Remove kit's handlers, then groups and events they leave empty, then `hooks` if empty.
pub fn unmerge(settings: &mut Json) {
    let Some(Json::Object(hooks)) = settings.get_mut("hooks") else { return };
    hooks.retain_mut(|(_, groups)| {
        let Json::Array(list) = groups else { return true };
        let before = list.len();
        list.retain_mut(|g| {
            let Some(Json::Array(hs)) = g.get_mut("hooks") else { return true };
            let n = hs.len();
            hs.retain(|h| !is_kit_handler(h));
            !(n > 0 && hs.is_empty())
        });
        !(before > 0 && list.is_empty())
    });
    if hooks.is_empty() {
        if let Json::Object(top) = settings {
            top.retain(|(k, _)| k != "hooks");
        }
    }
}

/// The indentation unit of a JSON text: the leading whitespace of its first indented line
/// (`"  "` when there is none, as Claude Code writes its settings).
fn indent_of(text: &str) -> &str {
    text.lines()
        .map(|l| &l[..l.len() - l.trim_start_matches([' ', '\t']).len()])
        .find(|w| !w.is_empty())
        .unwrap_or("  ")
}

/// `value` printed with `indent`, ending with a newline.
fn render(value: &Json, indent: &str) -> Result<String> {
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    value.serialize(&mut ser).map_err(|e| Error::internal(e.to_string()))?;
    buf.push(b'\n');
    String::from_utf8(buf).map_err(|e| Error::internal(e.to_string()))
}

/// The file a settings path really names: `path` itself, or where its chain of symbolic links
/// ends (which may not exist yet). A loop of links is an error naming `path`.
pub fn resolve_links(path: &Path) -> Result<PathBuf> {
    let mut at = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&at).at(&at)?;
                at = match at.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            Ok(_) => return Ok(at),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(at),
            Err(e) => return Err(Error::io(&at, e)),
        }
    }
    Err(Error::input(path, None, "too many levels of symbolic links; left untouched").with_hint(
        format!("point {} at a real file, then run kit hook install again", path.display()),
    ))
}

/// `path` with its folder's `..` and links resolved, for display (as is when that fails).
/// Keep `bytes` (the settings file before this edit) beside `path` as
/// `NAME.kit-backup-<UTC time>`, or `…-<time>.N` when a backup of the same second exists: a
/// backup never overwrites another, so the user's original survives any number of installs and
/// uninstalls. Returns the backup's path.
fn write_backup(path: &Path, bytes: &[u8], mode: u32) -> Result<PathBuf> {
    let stamp = crate::clock::now().strftime("%Y%m%dT%H%M%SZ").to_string();
    let base = format!(
        "{}.kit-backup-{stamp}",
        path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    );
    for n in 0..10_000u32 {
        let name = if n == 0 { base.clone() } else { format!("{base}.{n}") };
        let backup = path.with_file_name(name);
        if crate::atomic::create_new_atomic_mode(&backup, bytes, mode)? {
            return Ok(backup);
        }
    }
    Err(Error::internal(format!(
        "10000 backups named {base}.N already exist beside {}; remove old ones and run again",
        path.display()
    )))
}

fn tidy(path: &Path) -> PathBuf {
    let dir = path.parent().and_then(|d| d.canonicalize().ok());
    match (dir, path.file_name()) {
        (Some(d), Some(name)) => d.join(name),
        _ => path.to_path_buf(),
    }
}

/// Run `kit hook install`.
///
/// Errors: [`Error::Input`] naming `settings.json:LINE:COL` when the file is not valid JSON or
/// not an object, naming the keys when `hooks` or one of kit's events has the wrong shape
/// ([`misshapen`]; install only), all with the file left untouched; or when its links loop; [`Error::Io`] on read and
/// write failures.
pub fn run(opts: &InstallOptions, out: &mut dyn Write) -> Result<u8> {
    let path = &opts.settings;
    let real = resolve_links(path)?;
    let old_text = match std::fs::read_to_string(&real) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(&real, e)),
    };
    let fix = || format!("fix {} by hand, then run kit hook install again", path.display());
    let mut settings = match &old_text {
        Some(t) if !t.trim().is_empty() => match serde_json::from_str::<Json>(t) {
            Ok(v @ Json::Object(_)) => v,
            Ok(_) => {
                return Err(Error::input(
                    path,
                    None,
                    "settings must be a JSON object; left untouched",
                )
                .with_hint(fix()))
            }
            Err(e) => {
                // Error::Input prints PATH:LINE; the column rides in the path so the message reads
                // file:line:col, as editors expect.
                let at = PathBuf::from(format!("{}:{}:{}", path.display(), e.line(), e.column()));
                return Err(Error::input(
                    at,
                    None,
                    format!("not valid JSON ({e}); left untouched"),
                )
                .with_hint(fix()));
            }
        },
        _ => Json::Object(Vec::new()),
    };
    if !opts.uninstall {
        let bad = misshapen(&settings, &snippet());
        if !bad.is_empty() {
            return Err(misshapen_error(path, &bad));
        }
    }
    let before = settings.clone();
    if opts.uninstall {
        unmerge(&mut settings);
    } else {
        merge(&mut settings, &snippet());
    }
    let unchanged = before == settings;
    let old = old_text.as_deref().unwrap_or("");
    let text = if unchanged && old_text.is_some() {
        old.to_string()
    } else {
        let t = render(&settings, indent_of(old))?;
        // The file's own ending: no final newline if it had none.
        if old_text.is_some() && !old.ends_with('\n') {
            t.trim_end_matches('\n').to_string()
        } else {
            t
        }
    };
    let w = |out: &mut dyn Write, s: &str| writeln!(out, "{s}").map_err(|e| Error::io("stdout", e));
    if opts.dry_run {
        if text == old {
            w(out, &format!("{}: no change (--dry-run)", path.display()))?;
        } else {
            let name = path.display().to_string();
            let diff = similar::TextDiff::from_lines(old, &text);
            let shown = diff.unified_diff().context_radius(3).header(&name, &name).to_string();
            out.write_all(shown.as_bytes()).map_err(|e| Error::io("stdout", e))?;
            w(out, "(--dry-run: nothing written)")?;
        }
        return Ok(0);
    }
    if unchanged && old_text.is_some() {
        let msg =
            if opts.uninstall { "no kit hook entries in" } else { "kit hook already installed in" };
        w(out, &format!("{msg} {}; nothing changed", path.display()))?;
        return Ok(0);
    }
    if opts.uninstall && old_text.is_none() {
        w(out, &format!("{} does not exist; nothing to remove", path.display()))?;
        return Ok(0);
    }
    let mode = std::fs::metadata(&real).ok().map(|m| {
        use std::os::unix::fs::PermissionsExt;
        m.permissions().mode() & 0o7777
    });
    if let Some(old) = &old_text {
        let backup = write_backup(path, old.as_bytes(), mode.unwrap_or(0o600))?;
        w(out, &format!("backup: {}", backup.display()))?;
    } else if let Some(dir) = real.parent() {
        crate::atomic::create_dir_all(dir)?;
    }
    // An existing file keeps its permission bits; a new one gets the umask's.
    crate::atomic::write_atomic(&real, text.as_bytes())?;
    let what = if opts.uninstall {
        "kit's hook entries removed from"
    } else {
        "kit's hook entries merged into"
    };
    w(out, &format!("{what} {}", path.display()))?;
    if real != *path {
        w(out, &format!("(a link: edited {}, the link kept)", tidy(&real).display()))?;
    }
    if !opts.uninstall {
        w(out, "events: UserPromptSubmit, PostToolUse, Stop, PreCompact (manual|auto), SessionStart (compact|resume)")?;
        if crate::proc::find_on_path("kit").is_none() {
            w(out, NOT_ON_PATH)?;
        }
    }
    Ok(0)
}

const NOT_ON_PATH: &str = "warning: `kit` is not on PATH, so Claude Code cannot run `kit hook claude`; install it (cargo install --path .) or put it on PATH";

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Json {
        serde_json::from_str(t).unwrap()
    }

    #[test]
    fn merge_is_idempotent_and_unmerge_keeps_the_rest() {
        let mut s = parse(
            r#"{
            "model": "opus",
            "hooks": {
                "Stop": [{"hooks": [{"type": "command", "command": "~/bin/notify"}]}],
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "check"}]}]
            }
        }"#,
        );
        let original = s.clone();
        merge(&mut s, &snippet());
        let once = s.clone();
        merge(&mut s, &snippet());
        assert_eq!(s, once);
        assert_eq!(s.get("hooks").unwrap().get("Stop").unwrap().as_array().unwrap().len(), 2);
        unmerge(&mut s);
        assert_eq!(s, original);
    }

    #[test]
    fn keys_keep_the_files_order_and_kits_events_come_after() {
        let text = r#"{
    "zeta": 1,
    "hooks": {
        "Stop": [
            {
                "hooks": []
            }
        ]
    },
    "alpha": [
        1.5,
        "x",
        null,
        true
    ]
}
"#;
        let mut s = parse(text);
        assert_eq!(render(&s, indent_of(text)).unwrap(), text, "a round trip is byte for byte");
        merge(&mut s, &snippet());
        let Json::Object(top) = &s else { panic!() };
        let keys: Vec<&str> = top.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["zeta", "hooks", "alpha"]);
        let Some(Json::Object(events)) = s.get("hooks") else { panic!() };
        let events: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            events,
            ["Stop", "UserPromptSubmit", "PostToolUse", "PreCompact", "SessionStart"]
        );
        let out = render(&s, indent_of(text)).unwrap();
        assert!(
            out.starts_with("{\n    \"zeta\": 1,\n    \"hooks\": {\n        \"Stop\": [\n"),
            "{out}"
        );
        unmerge(&mut s);
        assert_eq!(render(&s, indent_of(text)).unwrap(), text);
    }

    #[test]
    fn misshapen_names_each_key_kit_cannot_merge_into() {
        let s = parse(r#"{"hooks": {"Stop": {"hooks": []}, "PreToolUse": "x", "PreCompact": []}}"#);
        assert_eq!(
            misshapen(&s, &snippet()),
            [Misshapen { key: "hooks.Stop".into(), found: "an object" }],
            "only kit's events count; an empty array is fine"
        );
        let s = parse(r#"{"hooks": null}"#);
        assert_eq!(misshapen(&s, &snippet()), [Misshapen { key: "hooks".into(), found: "null" }]);
        assert!(misshapen(&parse(r#"{"model": "opus"}"#), &snippet()).is_empty());
        // merge leaves such values alone rather than replacing them.
        let mut s = parse(r#"{"hooks": "mine"}"#);
        merge(&mut s, &snippet());
        assert_eq!(s, parse(r#"{"hooks": "mine"}"#));
    }

    #[test]
    fn indentation_is_read_from_the_file() {
        for (text, want) in [
            ("{\n  \"a\": 1\n}", "  "),
            ("{\n    \"a\": 1\n}", "    "),
            ("{\n\t\"a\": 1\n}", "\t"),
            ("{\"a\": 1}", "  "),
            ("", "  "),
        ] {
            assert_eq!(indent_of(text), want, "{text:?}");
        }
    }

    #[test]
    fn kit_handlers_by_command() {
        for (cmd, yes) in [
            ("kit hook claude", true),
            ("/home/u/.cargo/bin/kit hook claude", true),
            ("kit hook rehearse", false),
            ("toolkit hook claude", false),
        ] {
            let h = Json::Object(vec![("command".into(), Json::String(cmd.into()))]);
            assert_eq!(is_kit_handler(&h), yes, "{cmd}");
        }
    }

    #[test]
    fn links_resolve_to_their_target_relative_to_the_link() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("dotfiles")).unwrap();
        std::fs::write(d.path().join("dotfiles/settings.json"), "{}").unwrap();
        let link = d.path().join("settings.json");
        std::os::unix::fs::symlink("dotfiles/settings.json", &link).unwrap();
        let two = d.path().join("two.json");
        std::os::unix::fs::symlink(&link, &two).unwrap();
        assert_eq!(resolve_links(&two).unwrap(), d.path().join("dotfiles/settings.json"));
        let dangling = d.path().join("dangling.json");
        std::os::unix::fs::symlink("nowhere/settings.json", &dangling).unwrap();
        assert_eq!(resolve_links(&dangling).unwrap(), d.path().join("nowhere/settings.json"));
        let a = d.path().join("a");
        let b = d.path().join("b");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        assert!(resolve_links(&a).unwrap_err().to_string().contains("symbolic links"));
    }
}
