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
//! The edit is made on the file's syntax tree (`jsonc_parser::cst`, the editor dprint uses):
//! kit's groups are appended and removed as nodes, so every other byte of the file (key order,
//! spacing, compact or spread-out arrays) stays as it was. `serde_json` (without
//! `preserve_order`, which would reorder every `json!` value kit prints) only validates the text
//! first, so the file must be plain JSON (no comments) and errors carry its line and column.

use std::io::Write;
use std::path::{Path, PathBuf};

use jsonc_parser::cst::{CstInputValue, CstNode, CstObjectProp, CstRootNode};
use jsonc_parser::ParseOptions;
use serde_json::Value;

use crate::error::{Error, IoContext, Result};

/// Options of `kit hook install`.
#[derive(Clone, Debug)]
pub(crate) struct InstallOptions {
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
pub(crate) fn settings_path(cwd: &Path, user: bool) -> Result<PathBuf> {
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

/// The embedded snippet, as text (`kit/hooks/settings.json`).
fn snippet_text() -> &'static str {
    crate::embedded::kit_file("hooks/settings.json").unwrap_or("{}")
}

/// The embedded snippet, as a value (for [`misshapen`]).
pub(crate) fn snippet() -> Value {
    serde_json::from_str(snippet_text()).unwrap_or(Value::Null)
}

/// True when a handler object runs kit's hook.
pub(crate) fn is_kit_handler(h: &Value) -> bool {
    let Some(cmd) = h.get("command").and_then(Value::as_str) else { return false };
    let words: Vec<&str> = cmd.split_whitespace().collect();
    words.len() == 3
        && (words[0] == "kit"
            || words[0].ends_with("/kit")
            || words[0].trim_matches('"').ends_with("/kit"))
        && words[1] == "hook"
        && words[2] == "claude"
}

/// True when a matcher group holds a kit handler.
fn has_kit_handler(group: &Value) -> bool {
    group.get("hooks").and_then(Value::as_array).is_some_and(|hs| hs.iter().any(is_kit_handler))
}

/// What JSON calls a value's kind, for messages ("an object", "a string", …).
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A key of the settings whose value has the wrong shape for [`merge`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Misshapen {
    /// Dotted path: `hooks` or `hooks.Stop`.
    pub key: String,
    /// What it holds: "an object", "a string", …
    pub found: &'static str,
}

/// The keys [`merge`] cannot add to without losing what is there: `hooks` when it is not an
/// object of events, and each event of the snippet whose value is not an array of matcher
/// groups (formats/claude-code.md §5.1). Hand-edited settings get this wrong; kit reports them
/// rather than skip the event (no Stop hook means no 85 % Stop block) or replace the value.
/// Listed in the snippet's event order.
pub(crate) fn misshapen(settings: &Value, snippet: &Value) -> Vec<Misshapen> {
    let Some(hooks) = settings.get("hooks") else { return Vec::new() };
    let Value::Object(events) = hooks else {
        return vec![Misshapen { key: "hooks".into(), found: kind(hooks) }];
    };
    let Some(Value::Object(ours)) = snippet.get("hooks") else { return Vec::new() };
    let order = snippet_events();
    let mut bad: Vec<Misshapen> = ours
        .keys()
        .filter_map(|event| events.get(event).map(|v| (event, v)))
        .filter(|(_, v)| !v.is_array())
        .map(|(event, v)| Misshapen { key: format!("hooks.{event}"), found: kind(v) })
        .collect();
    bad.sort_by_key(|m| order.iter().position(|e| format!("hooks.{e}") == m.key));
    bad
}

/// The snippet's event names in its own order.
fn snippet_events() -> Vec<String> {
    let Ok(root) = CstRootNode::parse(snippet_text(), &ParseOptions::default()) else {
        return Vec::new();
    };
    root.object_value()
        .and_then(|o| o.object_value("hooks"))
        .map(|h| h.properties().iter().filter_map(CstObjectProp::decoded_name).collect())
        .unwrap_or_default()
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

/// A node of the syntax tree as a value to insert elsewhere, its keys in their order.
fn input_of(node: &CstNode) -> CstInputValue {
    if let Some(o) = node.as_object() {
        let props = o
            .properties()
            .iter()
            .filter_map(|p| Some((p.decoded_name()?, input_of(&p.value()?))))
            .collect();
        return CstInputValue::Object(props);
    }
    if let Some(a) = node.as_array() {
        return CstInputValue::Array(a.elements().iter().map(input_of).collect());
    }
    if let Some(s) = node.as_string_lit() {
        return CstInputValue::String(s.decoded_value().unwrap_or_default());
    }
    if let Some(n) = node.as_number_lit() {
        return CstInputValue::Number(n.to_string());
    }
    if let Some(b) = node.as_boolean_lit() {
        return CstInputValue::Bool(b.value());
    }
    CstInputValue::Null
}

/// Add kit's groups for each event of the snippet that has no kit handler yet; new events and
/// groups go after the existing ones, the rest of the text stays byte for byte. Keys that
/// [`misshapen`] names are left as they are (check it first: `run` refuses such a file);
/// the root must be an object (else nothing changes).
pub(crate) fn merge(root: &CstRootNode) {
    let Some(top) = root.object_value() else { return };
    let Ok(ours) = CstRootNode::parse(snippet_text(), &ParseOptions::default()) else { return };
    let Some(events) = ours.object_value().and_then(|o| o.object_value("hooks")) else { return };
    let Some(hooks) = top.object_value_or_create("hooks") else { return };
    for prop in events.properties() {
        let (Some(event), Some(groups)) = (prop.decoded_name(), prop.array_value()) else {
            continue;
        };
        let Some(list) = hooks.array_value_or_create(&event) else { continue };
        let installed =
            list.elements().iter().filter_map(CstNode::to_serde_value).any(|g| has_kit_handler(&g));
        if !installed {
            for group in groups.elements() {
                list.append(input_of(&group));
            }
        }
    }
}

/// Remove kit's handlers, then groups and events they leave empty, then `hooks` if empty; the
/// rest of the text stays byte for byte.
pub(crate) fn unmerge(root: &CstRootNode) {
    let Some(top) = root.object_value() else { return };
    let Some(hooks) = top.object_value("hooks") else { return };
    for event in hooks.properties() {
        let Some(list) = event.array_value() else { continue };
        let groups = list.elements();
        let mut emptied = 0;
        for group in &groups {
            let Some(hs) = group.as_object().and_then(|g| g.array_value("hooks")) else { continue };
            let handlers = hs.elements();
            let kit: Vec<CstNode> = handlers
                .iter()
                .filter(|h| h.to_serde_value().is_some_and(|v| is_kit_handler(&v)))
                .cloned()
                .collect();
            if !handlers.is_empty() && kit.len() == handlers.len() {
                group.clone().remove();
                emptied += 1;
            } else {
                kit.into_iter().for_each(CstNode::remove);
            }
        }
        if !groups.is_empty() && emptied == groups.len() {
            event.remove();
        }
    }
    if hooks.properties().is_empty() {
        if let Some(p) = top.get("hooks") {
            p.remove();
        }
    }
}

/// `old` (valid JSON text of an object, or blank for a new file) with kit's entries merged in
/// (or with `uninstall` taken out). A blank file becomes `{…}` with a final newline; otherwise
/// the file's indentation and final newline (or its lack) are kept.
fn edit(old: &str, uninstall: bool) -> Result<String> {
    let blank = old.trim().is_empty();
    let source = if blank { "{}\n" } else { old };
    let root = CstRootNode::parse(source, &ParseOptions::default())
        .map_err(|e| Error::internal(format!("settings JSON: {e}")))?;
    if uninstall {
        unmerge(&root);
    } else {
        merge(&root);
    }
    let text = root.to_string();
    Ok(if blank && text == source { old.to_string() } else { text })
}

/// The file a settings path really names: `path` itself, or where its chain of symbolic links
/// ends (which may not exist yet). A loop of links is an error naming `path`.
pub(crate) fn resolve_links(path: &Path) -> Result<PathBuf> {
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
pub(crate) fn run(opts: &InstallOptions, out: &mut dyn Write) -> Result<u8> {
    let path = &opts.settings;
    let real = resolve_links(path)?;
    let old_text = match std::fs::read_to_string(&real) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(&real, e)),
    };
    let fix = || format!("fix {} by hand, then run kit hook install again", path.display());
    let old = old_text.as_deref().unwrap_or("");
    let settings = if old.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        match serde_json::from_str::<Value>(old) {
            Ok(v @ Value::Object(_)) => v,
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
        }
    };
    if !opts.uninstall {
        let bad = misshapen(&settings, &snippet());
        if !bad.is_empty() {
            return Err(misshapen_error(path, &bad));
        }
    }
    let text = edit(old, opts.uninstall)?;
    let unchanged = text == old;
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

    fn parse(t: &str) -> Value {
        serde_json::from_str(t).unwrap()
    }

    #[test]
    fn merge_is_idempotent_and_unmerge_gives_back_the_bytes() {
        let text = r#"{
            "model": "opus",
            "hooks": {
                "Stop": [{"hooks": [{"type": "command", "command": "~/bin/notify"}]}],
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "check"}]}]
            }
        }"#;
        let once = edit(text, false).unwrap();
        assert_eq!(edit(&once, false).unwrap(), once);
        let v = parse(&once);
        assert_eq!(v["hooks"]["Stop"].as_array().unwrap().len(), 2);
        // A one-line array kit appended to comes back spread over lines; its values are the same.
        assert_eq!(parse(&edit(&once, true).unwrap()), parse(text));
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
    "alpha": [1.5, "x", null, true]
}
"#;
        let out = edit(text, false).unwrap();
        let root = CstRootNode::parse(&out, &ParseOptions::default()).unwrap();
        let top = root.object_value().unwrap();
        let keys: Vec<String> =
            top.properties().iter().filter_map(CstObjectProp::decoded_name).collect();
        assert_eq!(keys, ["zeta", "hooks", "alpha"]);
        let events: Vec<String> = top
            .object_value("hooks")
            .unwrap()
            .properties()
            .iter()
            .filter_map(CstObjectProp::decoded_name)
            .collect();
        assert_eq!(
            events,
            ["Stop", "UserPromptSubmit", "PostToolUse", "PreCompact", "SessionStart"]
        );
        assert!(
            out.starts_with("{\n    \"zeta\": 1,\n    \"hooks\": {\n        \"Stop\": [\n"),
            "{out}"
        );
        assert!(out.ends_with("    \"alpha\": [1.5, \"x\", null, true]\n}\n"), "{out}");
        assert_eq!(edit(&out, true).unwrap(), text);
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
        assert_eq!(edit(r#"{"hooks": "mine"}"#, false).unwrap(), r#"{"hooks": "mine"}"#);
    }

    #[test]
    fn a_blank_file_gets_an_object_with_a_final_newline() {
        let out = edit("", false).unwrap();
        assert!(out.starts_with("{\n  \"hooks\": {\n    \"UserPromptSubmit\": ["), "{out}");
        assert!(out.ends_with("}\n"));
        assert_eq!(edit("", true).unwrap(), "");
    }

    #[test]
    fn kit_handlers_by_command() {
        for (cmd, yes) in [
            ("kit hook claude", true),
            ("/home/u/.cargo/bin/kit hook claude", true),
            ("kit hook rehearse", false),
            ("toolkit hook claude", false),
        ] {
            let h = serde_json::json!({ "command": cmd });
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
