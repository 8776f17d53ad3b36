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

use jsonc_parser::ast::{Array, Object, Value as Value_};
use jsonc_parser::common::Ranged;
use jsonc_parser::{CollectOptions, ParseOptions, ParseResult};
use serde_json::Value;

use crate::error::{Error, IoContext, Result, EXIT_OK};

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

/// The embedded snippet, as text (`kit/hooks/settings.json`).
fn snippet_text() -> &'static str {
    crate::templates::kit_file("hooks/settings.json").unwrap_or("{}")
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
    let Ok(parsed) = parse(snippet_text()) else { return Vec::new() };
    let Some(Value_::Object(top)) = &parsed.value else { return Vec::new() };
    match prop(top, "hooks") {
        Some(Value_::Object(events)) => {
            events.properties.iter().map(|p| p.name.as_str().to_string()).collect()
        }
        _ => Vec::new(),
    }
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

/// The text as jsonc-parser's syntax tree: every node with its byte range, so that an edit
/// touches only the bytes it adds or takes out.
fn parse(text: &str) -> std::result::Result<ParseResult<'_>, jsonc_parser::errors::ParseError> {
    jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &ParseOptions::default())
}

/// The value of `name` in `object` (the last one, as serde_json reads a repeated key).
fn prop<'a, 'b>(object: &'b Object<'a>, name: &str) -> Option<&'b Value_<'a>> {
    object.properties.iter().rev().find(|p| p.name.as_str() == name).map(|p| &p.value)
}

/// A node as a serde value (None when its text does not read as JSON on its own).
fn value_of(text: &str, node: &impl Ranged) -> Option<Value> {
    serde_json::from_str(&text[node.start()..node.end()]).ok()
}

/// The bytes `from..to` of the text replaced by `text`.
struct Edit {
    from: usize,
    to: usize,
    text: String,
}

/// `text` with `edits` made (they never overlap).
fn apply(text: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|e| std::cmp::Reverse(e.from));
    let mut out = text.to_string();
    for e in edits {
        out.replace_range(e.from..e.to, &e.text);
    }
    out
}

/// How the file is laid out, so that what kit adds reads like the rest: its line break (CRLF
/// when it has one) and its unit of indentation (the first indented line's; two spaces when no
/// line is indented).
struct Layout<'t> {
    text: &'t str,
    nl: &'static str,
    unit: String,
}

impl<'t> Layout<'t> {
    fn of(text: &'t str) -> Layout<'t> {
        let unit = text
            .split('\n')
            .skip(1)
            .filter(|l| !l.trim().is_empty())
            .map(|l| &l[..l.len() - l.trim_start_matches([' ', '\t']).len()])
            .find(|w| !w.is_empty())
            .unwrap_or("  ")
            .to_string();
        Layout { text, nl: if text.contains("\r\n") { "\r\n" } else { "\n" }, unit }
    }

    /// The indentation of the line that byte `at` is on.
    fn indent(&self, at: usize) -> &'t str {
        let line = &self.text[self.text[..at].rfind('\n').map_or(0, |i| i + 1)..];
        &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
    }

    /// True when the container spanning `range` (its brackets included) spreads its children
    /// over lines: a line break before its first child. An empty one is spread when it has a
    /// line break inside or its parent is spread (`parent`).
    fn spread(
        &self,
        range: jsonc_parser::common::Range,
        first: Option<usize>,
        parent: bool,
    ) -> bool {
        let inside = &self.text[range.start + 1..first.unwrap_or(range.end - 1)];
        inside.contains('\n') || (first.is_none() && parent)
    }

    /// `v` (a node of `src`) as text: on one line (`indent` None) or spread, its children one
    /// unit deeper than `indent`, with the file's line break. Scalars keep their text.
    fn render(&self, v: &Value_, src: &str, indent: Option<&str>) -> String {
        let inner = indent.map(|i| format!("{i}{}", self.unit));
        let (items, open, close): (Vec<String>, _, _) = match v {
            Value_::Object(o) => (
                o.properties
                    .iter()
                    .map(|p| self.render_prop(p.name.as_str(), &p.value, src, inner.as_deref()))
                    .collect(),
                '{',
                '}',
            ),
            Value_::Array(a) => (
                a.elements.iter().map(|e| self.render(e, src, inner.as_deref())).collect(),
                '[',
                ']',
            ),
            other => return src[other.start()..other.end()].to_string(),
        };
        match (&inner, indent) {
            _ if items.is_empty() => format!("{open}{close}"),
            (Some(inner), Some(outer)) => {
                let nl = self.nl;
                format!(
                    "{open}{nl}{inner}{}{nl}{outer}{close}",
                    items.join(&format!(",{nl}{inner}"))
                )
            }
            _ => format!("{open}{}{close}", items.join(", ")),
        }
    }

    /// A property `"name": value`, rendered as [`Layout::render`] does.
    fn render_prop(&self, name: &str, v: &Value_, src: &str, indent: Option<&str>) -> String {
        format!("{}: {}", Value::from(name), self.render(v, src, indent))
    }

    /// The edit that adds `items` at the end of the container spanning `range` whose children
    /// span `children`: after its last child, each as `,` then a line break and the last child's
    /// indentation (a spread container) or a space; inside an empty one, spread one unit deeper
    /// than its line or on one line. `item(k, indent)` renders the k-th of `count` (indent None:
    /// on one line). [`cut`] takes out exactly these bytes again.
    fn add(
        &self,
        range: jsonc_parser::common::Range,
        children: &[jsonc_parser::common::Range],
        parent_spread: bool,
        count: usize,
        item: &dyn Fn(usize, Option<&str>) -> String,
    ) -> Edit {
        let spread = self.spread(range, children.first().map(|c| c.start), parent_spread);
        let nl = self.nl;
        if let Some(last) = children.last() {
            let indent = spread.then(|| self.indent(last.start));
            let sep = match indent {
                Some(i) => format!(",{nl}{i}"),
                None => ", ".to_string(),
            };
            let text = (0..count).map(|k| format!("{sep}{}", item(k, indent))).collect();
            return Edit { from: last.end, to: last.end, text };
        }
        let text = if spread {
            let outer = self.indent(range.start);
            let inner = format!("{outer}{}", self.unit);
            let each: Vec<String> =
                (0..count).map(|k| format!("{nl}{inner}{}", item(k, Some(&inner)))).collect();
            format!("{}{nl}{outer}", each.join(","))
        } else {
            (0..count).map(|k| item(k, None)).collect::<Vec<_>>().join(", ")
        };
        Edit { from: range.start + 1, to: range.end - 1, text }
    }
}

/// The cuts that take the children marked `gone` out of a container spanning `range` whose
/// children span `items`: each run of them with the `,` and space before it (after the child
/// before the run), or, for a run at the start, up to the next child; all of them, everything
/// between the brackets. The inverse of [`Layout::add`], byte for byte.
fn cut(
    range: jsonc_parser::common::Range,
    items: &[jsonc_parser::common::Range],
    gone: &[bool],
) -> Vec<Edit> {
    let edit = |from, to| Edit { from, to, text: String::new() };
    if !gone.contains(&true) {
        return Vec::new();
    }
    if gone.iter().all(|g| *g) {
        return vec![edit(range.start + 1, range.end - 1)];
    }
    let mut cuts = Vec::new();
    let mut i = 0;
    while i < items.len() {
        if !gone[i] {
            i += 1;
            continue;
        }
        let mut j = i;
        while j + 1 < items.len() && gone[j + 1] {
            j += 1;
        }
        cuts.push(if i > 0 {
            edit(items[i - 1].end, items[j].end)
        } else {
            edit(items[0].start, items[j + 1].start)
        });
        i = j + 1;
    }
    cuts
}

fn ranges<T: Ranged>(nodes: &[T]) -> Vec<jsonc_parser::common::Range> {
    nodes.iter().map(Ranged::range).collect()
}

/// True when an array of matcher groups holds a kit handler.
fn lists_kit(text: &str, list: &Array) -> bool {
    list.elements.iter().filter_map(|g| value_of(text, g)).any(|g| has_kit_handler(&g))
}

/// `text` (the settings, an object) with kit's groups added for each event of the snippet that
/// has no kit handler yet: after the event's groups, new events after the existing ones, a new
/// `hooks` last, each laid out like its neighbours ([`Layout::add`]); every other byte stays.
/// Keys that [`misshapen`] names are left as they are (check it first: `run` refuses such a
/// file); a root that is not an object is left as it is.
fn merge(text: &str) -> Result<String> {
    let parsed = parse(text).map_err(|e| Error::internal(format!("settings JSON: {e}")))?;
    let Some(Value_::Object(top)) = &parsed.value else { return Ok(text.to_string()) };
    let src = snippet_text();
    let ours = parse(src).map_err(|e| Error::internal(format!("kit's hook snippet: {e}")))?;
    let Some(Value_::Object(snippet)) = &ours.value else { return Ok(text.to_string()) };
    let Some(Value_::Object(events)) = prop(snippet, "hooks") else {
        return Ok(text.to_string());
    };
    let lay = Layout::of(text);
    let first = |o: &Object| o.properties.first().map(|p| p.start());
    let top_spread = lay.spread(top.range, first(top), true);
    let mut edits = Vec::new();
    match prop(top, "hooks") {
        None => {
            let hooks = Value_::Object(events.clone());
            let item = |_, i: Option<&str>| lay.render_prop("hooks", &hooks, src, i);
            edits.push(lay.add(top.range, &ranges(&top.properties), true, 1, &item));
        }
        Some(Value_::Object(hooks)) => {
            let spread = lay.spread(hooks.range, first(hooks), top_spread);
            let mut missing = Vec::new();
            for event in &events.properties {
                let Value_::Array(groups) = &event.value else { continue };
                match prop(hooks, event.name.as_str()) {
                    None => missing.push(event),
                    Some(Value_::Array(list)) if !lists_kit(text, list) => {
                        let item =
                            |k: usize, i: Option<&str>| lay.render(&groups.elements[k], src, i);
                        let (at, n) = (ranges(&list.elements), groups.elements.len());
                        edits.push(lay.add(list.range, &at, spread, n, &item));
                    }
                    Some(_) => {}
                }
            }
            if !missing.is_empty() {
                let item = |k: usize, i: Option<&str>| {
                    lay.render_prop(missing[k].name.as_str(), &missing[k].value, src, i)
                };
                let at = ranges(&hooks.properties);
                edits.push(lay.add(hooks.range, &at, top_spread, missing.len(), &item));
            }
        }
        Some(_) => {}
    }
    Ok(apply(text, edits))
}

/// `text` without kit's handlers, then the groups and events left empty by that, then `hooks`
/// if empty, each taken out with the separator before it ([`cut`]), so that what
/// [`merge`] added comes out byte for byte and every other byte stays.
fn unmerge(text: &str) -> Result<String> {
    let parsed = parse(text).map_err(|e| Error::internal(format!("settings JSON: {e}")))?;
    let Some(Value_::Object(top)) = &parsed.value else { return Ok(text.to_string()) };
    let Some(at) = top.properties.iter().rposition(|p| p.name.as_str() == "hooks") else {
        return Ok(text.to_string());
    };
    let Value_::Object(hooks) = &top.properties[at].value else { return Ok(text.to_string()) };
    let mut edits = Vec::new();
    let mut events_gone = vec![false; hooks.properties.len()];
    for (i, event) in hooks.properties.iter().enumerate() {
        let Value_::Array(list) = &event.value else { continue };
        let mut inner = Vec::new();
        let mut groups_gone = vec![false; list.elements.len()];
        for (j, group) in list.elements.iter().enumerate() {
            let Value_::Object(g) = group else { continue };
            let Some(Value_::Array(handlers)) = prop(g, "hooks") else { continue };
            let kit: Vec<bool> = handlers
                .elements
                .iter()
                .map(|h| value_of(text, h).is_some_and(|v| is_kit_handler(&v)))
                .collect();
            if !kit.is_empty() && kit.iter().all(|k| *k) {
                groups_gone[j] = true;
            } else {
                inner.extend(cut(handlers.range, &ranges(&handlers.elements), &kit));
            }
        }
        if !groups_gone.is_empty() && groups_gone.iter().all(|g| *g) {
            events_gone[i] = true;
        } else {
            edits.extend(inner);
            edits.extend(cut(list.range, &ranges(&list.elements), &groups_gone));
        }
    }
    if !events_gone.is_empty() && events_gone.iter().all(|g| *g) {
        let mut gone = vec![false; top.properties.len()];
        gone[at] = true;
        edits = cut(top.range, &ranges(&top.properties), &gone);
    } else {
        edits.extend(cut(hooks.range, &ranges(&hooks.properties), &events_gone));
    }
    Ok(apply(text, edits))
}

/// `old` (valid JSON text of an object, or blank for a new file) with kit's entries merged in
/// (or with `uninstall` taken out). A blank file becomes `{…}` with a final newline; otherwise
/// the file's line breaks, indentation and final newline (or its lack) are kept, and
/// `--uninstall` after an install gives back the file byte for byte (except an event or `hooks`
/// that held nothing, `[]` or `{}`, before kit filled it: it goes with kit's entries).
fn edit(old: &str, uninstall: bool) -> Result<String> {
    let blank = old.trim().is_empty();
    let source = if blank { "{}\n" } else { old };
    let text = if uninstall { unmerge(source)? } else { merge(source)? };
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
pub fn run(opts: &InstallOptions, out: &mut dyn Write) -> Result<u8> {
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
        return Ok(EXIT_OK);
    }
    if unchanged && old_text.is_some() {
        let msg =
            if opts.uninstall { "no kit hook entries in" } else { "kit hook already installed in" };
        w(out, &format!("{msg} {}; nothing changed", path.display()))?;
        return Ok(EXIT_OK);
    }
    if opts.uninstall && old_text.is_none() {
        w(out, &format!("{} does not exist; nothing to remove", path.display()))?;
        return Ok(EXIT_OK);
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
    Ok(EXIT_OK)
}

const NOT_ON_PATH: &str = "warning: `kit` is not on PATH, so Claude Code cannot run `kit hook claude`; install it (cargo install --path .) or put it on PATH";

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Value {
        serde_json::from_str(t).unwrap()
    }

    /// Settings files laid out every way a person or a tool writes them: install then
    /// `--uninstall` gives back every byte, install is idempotent, and what install added is
    /// laid out like its neighbours (one line in a one-line container, else one per line).
    #[test]
    fn install_then_uninstall_gives_back_every_byte() {
        let team = r#"{"type": "command", "command": "notify-send done"}"#;
        let cases: &[(&str, String)] = &[
            ("pretty, two spaces", format!("{{\n  \"model\": \"opus\",\n  \"hooks\": {{\n    \"Stop\": [\n      {{\n        \"hooks\": [\n          {team}\n        ]\n      }}\n    ]\n  }}\n}}\n")),
            ("inline list with spaces in a pretty file", format!("{{\n  \"hooks\": {{\n    \"Stop\": [ {{ \"hooks\": [ {team} ] }} ]\n  }}\n}}\n")),
            ("inline list without spaces", format!("{{\n  \"hooks\": {{\n    \"Stop\": [{{\"hooks\": [{team}]}}]\n  }}\n}}\n")),
            ("all on one line, minified", format!("{{\"model\":\"opus\",\"hooks\":{{\"Stop\":[{{\"hooks\":[{team}]}}]}}}}")),
            ("all on one line, spaced", format!("{{\"model\": \"opus\", \"hooks\": {{\"Stop\": [{{\"hooks\": [{team}]}}]}}}}\n")),
            ("no hooks", "{\n  \"model\": \"opus\"\n}\n".to_string()),
            ("no hooks, one line, no final newline", "{\"model\": \"opus\"}".to_string()),
            ("empty object", "{}".to_string()),
            ("hooks without kit's events", "{\n  \"hooks\": {\n    \"PreToolUse\": []\n  }\n}\n".to_string()),
            ("tabs, an inline env with a non-ASCII value", format!("{{\n\t\"hooks\": {{\n\t\t\"Stop\": [\n\t\t\t{{\"hooks\": [{team}]}}\n\t\t]\n\t}},\n\t\"env\": {{\"A\": \"é\"}}\n}}")),
            ("inline hooks object in a pretty file", format!("{{\n  \"hooks\": {{ \"Stop\": [ {{ \"hooks\": [{team}] }} ], \"PreToolUse\": [] }},\n  \"env\": {{\"A\": \"é\"}}\n}}\n")),
            ("CRLF line breaks", format!("{{\r\n  \"model\": \"opus\",\r\n  \"hooks\": {{\r\n    \"Stop\": [\r\n      {{\"hooks\": [{team}]}}\r\n    ]\r\n  }}\r\n}}\r\n")),
            ("four spaces, one spread list and one inline", format!("{{\n    \"hooks\": {{\n        \"Stop\": [\n            {{\"hooks\": [{team}]}}\n        ],\n        \"PostToolUse\": [ {{\"matcher\": \"Edit\", \"hooks\": [{team}]}} ]\n    }}\n}}\n")),
            ("kit's events all there already", format!("{{\"hooks\": {{\"UserPromptSubmit\": [{{\"hooks\": [{team}]}}], \"PostToolUse\": [{{\"hooks\": [{team}]}}], \"Stop\": [{{\"hooks\": [{team}]}}], \"PreCompact\": [{{\"hooks\": [{team}]}}], \"SessionStart\": [{{\"hooks\": [{team}]}}]}}}}\n")),
        ];
        for (name, text) in cases {
            let on = edit(text, false).unwrap();
            assert_ne!(&on, text, "{name}: install changed nothing");
            assert_eq!(
                parse(&on)["hooks"]["Stop"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|g| has_kit_handler(g))
                    .count(),
                1,
                "{name}:\n{on}"
            );
            assert_eq!(edit(&on, false).unwrap(), on, "{name}: a second install changed the file");
            assert_eq!(&edit(&on, true).unwrap(), text, "{name}: uninstall after install:\n{on}");
            // kit's text follows the file: no line break added to a one-line file (an empty one
            // is spread, as a new file is), CRLF kept.
            assert_eq!(on.contains('\n'), text.contains('\n') || text == "{}", "{name}:\n{on}");
            assert_eq!(
                on.matches("\r\n").count(),
                on.matches('\n').count() * usize::from(text.contains("\r\n")),
                "{name}"
            );
        }
        // An event or `hooks` that held nothing before kit filled it goes with kit's entries: the
        // values come back, the empty key does not.
        for text in ["{\n  \"hooks\": {\n    \"Stop\": []\n  }\n}\n", "{\"hooks\": {}}"] {
            let off = edit(&edit(text, false).unwrap(), true).unwrap();
            assert!(!off.contains("kit hook claude") && !off.contains("Stop"), "{off}");
        }
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
        assert_eq!(edit(&once, true).unwrap(), text);
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
        let tree = super::parse(&out).unwrap();
        let Some(Value_::Object(top)) = &tree.value else { panic!("{out}") };
        let names = |o: &Object| -> Vec<String> {
            o.properties.iter().map(|p| p.name.as_str().to_string()).collect()
        };
        assert_eq!(names(top), ["zeta", "hooks", "alpha"]);
        let Some(Value_::Object(hooks)) = prop(top, "hooks") else { panic!("{out}") };
        let events = names(hooks);
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
