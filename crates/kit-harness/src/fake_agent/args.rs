//! The command line of `fake-agent`: the subset of `claude -p`'s flags that changes what it does,
//! plus `--scenario`. Every other Claude Code flag is accepted and ignored (its value skipped),
//! so a loop can run `fake-agent` exactly as it runs `claude -p --output-format stream-json
//! --verbose …` (formats/claude-code.md §7).

use std::ffi::OsString;

/// Claude Code flags that take a value; `fake-agent` skips the value.
const FLAGS_WITH_VALUE: &[&str] = &[
    "--input-format",
    "--max-turns",
    "--allowedTools",
    "--allowed-tools",
    "--disallowedTools",
    "--disallowed-tools",
    "--tools",
    "--append-system-prompt",
    "--system-prompt",
    "--settings",
    "--session-id",
    "--resume",
    "-r",
    "--json-schema",
    "--add-dir",
    "--mcp-config",
    "--fallback-model",
    "--max-budget-usd",
    "--setting-sources",
    "--agents",
    "--autocompact",
];

/// What a run was asked to do.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Args {
    /// `--scenario NAME` (or `KIT_FAKE_SCENARIO`): an embedded scenario name or a `.toml` path.
    pub scenario: Option<String>,
    /// The prompt from the command line; `None` means read it from stdin.
    pub prompt: Option<String>,
    /// `--model ID`: the model the fake claims (default: the scenario's).
    pub model: Option<String>,
    /// `--permission-mode MODE` or `--dangerously-skip-permissions` (reported in `init`).
    pub permission_mode: Option<String>,
    /// `--output-format text|json|stream-json` (default text, as Claude Code).
    pub output_format: Option<String>,
    /// `--verbose` (stream-json requires it, as in Claude Code).
    pub verbose: bool,
    /// `--no-session-persistence`: write no transcript, as Claude Code does.
    pub no_persistence: bool,
    /// `-h` / `--help`.
    pub help: bool,
    /// `--list`: print the embedded scenarios with their descriptions.
    pub list: bool,
    /// `--codex`: behave as `codex exec` (the flags after it are codex's; see [`CODEX_HELP`]).
    pub codex: bool,
    /// Codex `--json`: the event stream on stdout.
    pub json: bool,
    /// Codex `-s` / `--sandbox MODE`.
    pub sandbox: Option<String>,
    /// Codex `--ephemeral`: no rollout.
    pub ephemeral: bool,
}

/// `codex exec` flags that take a value; `fake-agent --codex` skips the value.
const CODEX_FLAGS_WITH_VALUE: &[&str] = &[
    "-c",
    "--config",
    "-C",
    "--cd",
    "-p",
    "--profile",
    "-o",
    "--output-last-message",
    "--output-schema",
    "--add-dir",
    "-i",
    "--image",
    "--color",
    "--local-provider",
    "--enable",
    "--disable",
];

impl Args {
    /// Parse the arguments after the program name.
    ///
    /// Errors: a message for a flag of ours that lacks its value.
    pub(super) fn parse(argv: impl IntoIterator<Item = OsString>) -> Result<Args, String> {
        let argv: Vec<String> =
            argv.into_iter().map(|a| a.to_string_lossy().into_owned()).collect();
        let mut a = Args::default();
        if argv.iter().any(|x| x == "--codex") {
            a.parse_codex(&argv)?;
            return Ok(a);
        }
        let mut i = 0;
        while i < argv.len() {
            let arg = argv[i].as_str();
            let (flag, inline) = split_inline(arg);
            let value = |i: &mut usize| flag_value(&argv, i, flag, inline);
            match flag {
                "-h" | "--help" => a.help = true,
                "--list" => a.list = true,
                "-p" | "--print" => {
                    // `-p PROMPT` or `-p` alone (prompt from stdin or a later positional).
                    if let Some(next) = argv.get(i + 1).filter(|n| !n.starts_with('-')) {
                        a.prompt = Some(next.clone());
                        i += 1;
                    }
                }
                "--scenario" => a.scenario = Some(value(&mut i)?),
                "--model" => a.model = Some(value(&mut i)?),
                "--permission-mode" => a.permission_mode = Some(value(&mut i)?),
                "--dangerously-skip-permissions" => {
                    a.permission_mode = Some("bypassPermissions".into())
                }
                "--no-session-persistence" => a.no_persistence = true,
                "--output-format" => a.output_format = Some(value(&mut i)?),
                "--verbose" => a.verbose = true,
                f if FLAGS_WITH_VALUE.contains(&f) => {
                    value(&mut i)?;
                }
                f if f.starts_with('-') => {}
                _ => {
                    if a.prompt.is_none() {
                        a.prompt = Some(arg.to_string());
                    }
                }
            }
            i += 1;
        }
        if a.scenario.is_none() {
            a.scenario = std::env::var("KIT_FAKE_SCENARIO").ok().filter(|s| !s.is_empty());
        }
        Ok(a)
    }

    /// The `--codex` command line: `exec` (optional), codex's flags, the prompt or `-` (stdin).
    fn parse_codex(&mut self, argv: &[String]) -> Result<(), String> {
        self.codex = true;
        let mut i = 0;
        let mut exec_seen = false;
        while i < argv.len() {
            let arg = argv[i].as_str();
            let (flag, inline) = split_inline(arg);
            let value = |i: &mut usize| flag_value(argv, i, flag, inline);
            match flag {
                "-h" | "--help" => self.help = true,
                "--list" => self.list = true,
                "--codex" => {}
                "--scenario" => self.scenario = Some(value(&mut i)?),
                "-m" | "--model" => self.model = Some(value(&mut i)?),
                "-s" | "--sandbox" => self.sandbox = Some(value(&mut i)?),
                "--json" | "--experimental-json" => self.json = true,
                "--ephemeral" => self.ephemeral = true,
                "--dangerously-bypass-approvals-and-sandbox" | "--yolo" => {
                    self.sandbox = Some("danger-full-access".into())
                }
                f if CODEX_FLAGS_WITH_VALUE.contains(&f) => {
                    value(&mut i)?;
                }
                "-" => self.prompt = None,
                f if f.starts_with('-') => {}
                "exec" | "e" if !exec_seen && self.prompt.is_none() => exec_seen = true,
                _ => {
                    if self.prompt.is_none() {
                        self.prompt = Some(arg.to_string());
                    }
                }
            }
            i += 1;
        }
        if self.scenario.is_none() {
            self.scenario = std::env::var("KIT_FAKE_SCENARIO").ok().filter(|s| !s.is_empty());
        }
        Ok(())
    }
}

/// `fake-agent --help`.
pub(super) const HELP: &str = "\
fake-agent: a scripted stand-in for `claude -p --output-format stream-json --verbose`.

Usage: fake-agent --scenario NAME [-p PROMPT] [--output-format text|json|stream-json --verbose]
                  [claude flags…]
       fake-agent --list

  --scenario NAME   an embedded scenario (finish, cheat, race, hang, hog, lie, stall, …)
                    or a path to a scenario .toml file; default: $KIT_FAKE_SCENARIO
  -p [PROMPT]       the prompt; without a value (or without -p) it is read from stdin
  --model ID        the model to claim (default: the scenario's)

The invocation number counts the finished invocations of this loop run ($KIT_RUN_KEY) in\n.git/fake-agent-<scenario>.count (an interrupted one is done again); $KIT_FAKE_INVOCATION overrides it.
It acts on the current directory, prints its answer as claude -p does (text; the json result; or
stream-json events ending in a `result`), and writes a Claude Code transcript under
$CLAUDE_CONFIG_DIR/projects/ (default ~/.claude).
Other claude flags are accepted and ignored.

       fake-agent --codex --scenario NAME exec [--json] [-s SANDBOX] [-m MODEL] [PROMPT | -]

  --codex           behave as `codex exec`: the same steps, printed as its --json event stream
                    (thread.started … turn.completed, or turn.failed at a usage limit), and a
                    rollout written under $CODEX_HOME/sessions/YYYY/MM/DD/ (default ~/.codex)
  -m MODEL          the model the rollout names (default gpt-5.3-codex)
Other codex exec flags are accepted and ignored.";

/// `--flag=value` split into the flag and its inline value; any other word as it is.
fn split_inline(arg: &str) -> (&str, Option<&str>) {
    match arg.split_once('=') {
        Some((f, v)) if f.starts_with("--") => (f, Some(v)),
        _ => (arg, None),
    }
}

/// The value of `flag` at `argv[*i]`: its inline `=value`, else the next word (`*i` moves onto
/// it). Errors: `FLAG needs a value` when there is none.
fn flag_value(
    argv: &[String],
    i: &mut usize,
    flag: &str,
    inline: Option<&str>,
) -> Result<String, String> {
    if let Some(v) = inline {
        return Ok(v.to_string());
    }
    *i += 1;
    argv.get(*i).cloned().ok_or_else(|| format!("{flag} needs a value"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Args {
        Args::parse(args.iter().map(OsString::from)).unwrap()
    }

    #[test]
    fn claude_command_lines() {
        let a = parse(&[
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--scenario",
            "finish",
            "do it",
        ]);
        assert_eq!(a.scenario.as_deref(), Some("finish"));
        assert_eq!(a.prompt.as_deref(), Some("do it"));

        let a = parse(&["-p", "hello", "--model=claude-opus-4-6", "--scenario", "lie"]);
        assert_eq!(a.prompt.as_deref(), Some("hello"));
        assert_eq!(a.model.as_deref(), Some("claude-opus-4-6"));

        let a = parse(&["-p", "--max-turns", "3", "--dangerously-skip-permissions"]);
        assert_eq!(a.prompt, None);
        assert_eq!(a.permission_mode.as_deref(), Some("bypassPermissions"));

        let a = parse(&["--allowedTools", "Bash,Read", "-p", "--no-session-persistence"]);
        assert_eq!(a.prompt, None);
        assert!(a.no_persistence);
    }

    #[test]
    fn codex_command_lines() {
        let a = parse(&[
            "--codex",
            "--scenario",
            "finish",
            "exec",
            "--json",
            "--sandbox",
            "workspace-write",
            "-",
        ]);
        assert!(a.codex && a.json);
        assert_eq!((a.scenario.as_deref(), a.prompt.as_deref()), (Some("finish"), None));
        assert_eq!(a.sandbox.as_deref(), Some("workspace-write"));
        let a = parse(&["--codex", "exec", "-m", "gpt-5-codex", "-C", "/x", "fix it"]);
        assert_eq!(
            (a.model.as_deref(), a.prompt.as_deref()),
            (Some("gpt-5-codex"), Some("fix it"))
        );
        assert!(!a.json);
    }

    #[test]
    fn our_flag_without_value_is_an_error() {
        assert!(Args::parse(["--scenario"].iter().map(OsString::from)).is_err());
    }
}
