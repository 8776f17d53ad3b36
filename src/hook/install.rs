//! `kit hook install`: merge kit's hook entries (the embedded snippet `kit/hooks/settings.json`)
//! into Claude Code's settings (formats/claude-code.md §5.1: event → matcher group → handlers).
//!
//! Rules: every other key and every other hook stays as it was; running it twice changes
//! nothing; the previous file is kept as `settings.json.kit-backup-<time>` before any change;
//! `--uninstall` removes only handlers whose command is kit's (`kit hook claude`, any path to
//! `kit`), then groups and events left empty by that; `--dry-run` prints the result and writes
//! nothing. A file that is not valid JSON is left untouched and reported as `file:line:col`.
//!
//! Note: keys are written back in serde_json's order (alphabetical), not the file's own order.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The command kit installs.
pub const COMMAND: &str = "kit hook claude";

/// Options of `kit hook install`.
#[derive(Clone, Debug)]
pub struct InstallOptions {
    /// The settings file to change.
    pub settings: PathBuf,
    /// Remove kit's entries instead of adding them.
    pub uninstall: bool,
    /// Print the result; write nothing.
    pub dry_run: bool,
}

/// Which settings file: `<repo or cwd>/.claude/settings.json`, or with `user` the first root of
/// `$CLAUDE_CONFIG_DIR` (default `~/.claude`) `/settings.json`.
pub fn settings_path(cwd: &Path, user: bool) -> Result<PathBuf> {
    if user {
        let root = crate::hook::tail::claude_roots()
            .into_iter()
            .next()
            .ok_or_else(|| Error::usage("neither CLAUDE_CONFIG_DIR nor HOME is set"))?;
        return Ok(root.join("settings.json"));
    }
    let root = crate::longrun::git_toplevel(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    Ok(root.join(".claude").join("settings.json"))
}

/// The embedded snippet.
pub fn snippet() -> Value {
    let text = crate::embedded::kit_file("hooks/settings.json").unwrap_or("{}");
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// True when a handler object runs kit's hook.
pub fn is_kit_handler(h: &Value) -> bool {
    let Some(cmd) = h.get("command").and_then(Value::as_str) else { return false };
    let words: Vec<&str> = cmd.split_whitespace().collect();
    words.len() == 3
        && (words[0] == "kit"
            || words[0].ends_with("/kit")
            || words[0].trim_matches('"').ends_with("/kit"))
        && words[1] == "hook"
        && words[2] == "claude"
}

/// Add kit's groups for each event of the snippet that has no kit handler yet.
pub fn merge(settings: &mut Map<String, Value>, snippet: &Value) {
    let Some(events) = snippet.get("hooks").and_then(Value::as_object) else { return };
    let hooks = settings.entry("hooks").or_insert_with(|| Value::Object(Map::new()));
    if !hooks.is_object() {
        *hooks = Value::Object(Map::new());
    }
    let Some(hooks) = hooks.as_object_mut() else { return };
    for (event, groups) in events {
        let list = hooks.entry(event.clone()).or_insert_with(|| Value::Array(vec![]));
        let Some(list) = list.as_array_mut() else { continue };
        let present = list.iter().any(|g| {
            g.get("hooks").and_then(Value::as_array).is_some_and(|hs| hs.iter().any(is_kit_handler))
        });
        if !present {
            list.extend(groups.as_array().cloned().unwrap_or_default());
        }
    }
}

/// Remove kit's handlers, then groups and events they leave empty, then `hooks` if empty.
pub fn unmerge(settings: &mut Map<String, Value>) {
    let Some(hooks) = settings.get_mut("hooks").and_then(Value::as_object_mut) else { return };
    let mut emptied = Vec::new();
    for (event, groups) in hooks.iter_mut() {
        let Some(list) = groups.as_array_mut() else { continue };
        let before = list.len();
        list.retain_mut(|g| {
            let Some(hs) = g.get_mut("hooks").and_then(Value::as_array_mut) else { return true };
            let n = hs.len();
            hs.retain(|h| !is_kit_handler(h));
            !(n > 0 && hs.is_empty())
        });
        if before > 0 && list.is_empty() {
            emptied.push(event.clone());
        }
    }
    for e in emptied {
        hooks.remove(&e);
    }
    if hooks.is_empty() {
        settings.remove("hooks");
    }
}

/// Run `kit hook install`.
///
/// Errors: [`Error::Input`] naming `settings.json:LINE:COL` when the file is not valid JSON or
/// not an object (the file is left untouched); [`Error::Io`] on write failures.
pub fn run(opts: &InstallOptions, out: &mut dyn Write) -> Result<u8> {
    let path = &opts.settings;
    let old_text = match std::fs::read_to_string(path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(path, e)),
    };
    let mut settings = match &old_text {
        Some(t) if !t.trim().is_empty() => match serde_json::from_str::<Value>(t) {
            Ok(Value::Object(m)) => m,
            Ok(_) => {
                return Err(Error::input(
                    path,
                    None,
                    "settings must be a JSON object; left untouched",
                )
                .with_hint(format!(
                    "fix {} by hand, then run kit hook install again",
                    path.display()
                )))
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
                .with_hint(format!(
                    "fix {} by hand, then run kit hook install again",
                    path.display()
                )));
            }
        },
        _ => Map::new(),
    };
    let before = Value::Object(settings.clone());
    if opts.uninstall {
        unmerge(&mut settings);
    } else {
        merge(&mut settings, &snippet());
    }
    let after = Value::Object(settings);
    let text =
        serde_json::to_string_pretty(&after).map_err(|e| Error::internal(e.to_string()))? + "\n";
    let w = |out: &mut dyn Write, s: &str| writeln!(out, "{s}").map_err(|e| Error::io("stdout", e));
    if opts.dry_run {
        out.write_all(text.as_bytes()).map_err(|e| Error::io("stdout", e))?;
        return Ok(0);
    }
    let what = if opts.uninstall {
        "kit's hook entries removed from"
    } else {
        "kit's hook entries merged into"
    };
    if before == after && old_text.is_some() {
        let msg =
            if opts.uninstall { "no kit hook entries in" } else { "kit hook already installed in" };
        w(out, &format!("{msg} {}; nothing changed", path.display()))?;
        return Ok(0);
    }
    if opts.uninstall && old_text.is_none() {
        w(out, &format!("{} does not exist; nothing to remove", path.display()))?;
        return Ok(0);
    }
    if let Some(old) = &old_text {
        let stamp = crate::clock::now().strftime("%Y%m%dT%H%M%SZ").to_string();
        let name = format!(
            "{}.kit-backup-{stamp}",
            path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        );
        let backup = path.with_file_name(name);
        crate::atomic::write_atomic(&backup, old.as_bytes())?;
        w(out, &format!("backup: {}", backup.display()))?;
    } else if let Some(dir) = path.parent() {
        crate::atomic::create_dir_all(dir)?;
    }
    crate::atomic::write_atomic(path, text.as_bytes())?;
    w(out, &format!("{what} {}", path.display()))?;
    if !opts.uninstall {
        w(out, "events: UserPromptSubmit, PostToolUse, Stop, PreCompact (manual|auto), SessionStart (compact|resume)")?;
        if !on_path("kit") {
            w(out, NOT_ON_PATH)?;
        }
    }
    Ok(0)
}

/// True when an executable file `name` is in a folder of `$PATH`.
fn on_path(name: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            std::fs::metadata(d.join(name))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

const NOT_ON_PATH: &str = "warning: `kit` is not on PATH, so Claude Code cannot run `kit hook claude`; install it (cargo install --path .) or put it on PATH";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_is_idempotent_and_unmerge_keeps_the_rest() {
        let mut s = json!({
            "model": "opus",
            "hooks": {
                "Stop": [{"hooks": [{"type": "command", "command": "~/bin/notify"}]}],
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "check"}]}]
            }
        });
        let original = s.clone();
        let m = s.as_object_mut().unwrap();
        merge(m, &snippet());
        let once = m.clone();
        merge(m, &snippet());
        assert_eq!(*m, once);
        assert_eq!(m["hooks"]["Stop"].as_array().unwrap().len(), 2);
        unmerge(m);
        assert_eq!(Value::Object(m.clone()), original);
    }

    #[test]
    fn kit_handlers_by_command() {
        for (cmd, yes) in [
            ("kit hook claude", true),
            ("/home/u/.cargo/bin/kit hook claude", true),
            ("kit hook rehearse", false),
            ("toolkit hook claude", false),
        ] {
            assert_eq!(is_kit_handler(&json!({"command": cmd})), yes, "{cmd}");
        }
    }
}
