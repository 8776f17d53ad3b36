//! Just enough of the POSIX shell grammar for the linter to see what a criterion's command runs:
//! words (with quotes removed), the operators between simple commands (`;`, `&&`, `||`, `|`,
//! `&`), and scripts nested in `sh -c '…'`; [`script`] builds the lists, and-or chains and
//! pipelines from them, with each command's redirections taken apart (`> /dev/null 2>&1`), so
//! the linter can tell which command's exit status and output reach the loop. It is not a shell:
//! expansions stay as written, `$(…)` stays inside its word, subshells and `{ …; }` are read
//! through. The commands themselves are always run by the real `sh`; this only reads them.

/// A piece of a command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Token {
    /// A word with its quotes removed.
    Word(String),
    /// `;` (or a newline), `&&`, `||`, `|` or `&`.
    Op(&'static str),
}

/// Split `cmd` into words and operators. Unclosed quotes run to the end of the text.
pub(super) fn tokenize(cmd: &str) -> Vec<Token> {
    lex(cmd).into_iter().map(|(t, _)| t).collect()
}

/// [`tokenize`], each token with whether any part of it was quoted (a quoted `'2>x'` is an
/// argument, not a redirection). `(` and `)` of subshells come out as operators; `$(…)` stays
/// inside its word.
fn lex(cmd: &str) -> Vec<(Token, bool)> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quoted = false;
    let mut chars = cmd.chars().peekable();
    let flush =
        |out: &mut Vec<(Token, bool)>, word: &mut String, in_word: &mut bool, quoted: &mut bool| {
            if *in_word {
                out.push((Token::Word(std::mem::take(word)), *quoted));
                *in_word = false;
                *quoted = false;
            }
        };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                quoted = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    word.push(d);
                }
            }
            '"' => {
                in_word = true;
                quoted = true;
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => {
                            if let Some(&e) = chars.peek() {
                                if matches!(e, '"' | '\\' | '$' | '`') {
                                    chars.next();
                                    word.push(e);
                                    continue;
                                }
                            }
                            word.push('\\');
                        }
                        _ => word.push(d),
                    }
                }
            }
            '\\' => {
                in_word = true;
                quoted = true;
                match chars.next() {
                    Some('\n') | None => {}
                    Some(e) => word.push(e),
                }
            }
            '#' if !in_word => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        out.push((Token::Op(";"), false));
                        break;
                    }
                }
            }
            ' ' | '\t' => flush(&mut out, &mut word, &mut in_word, &mut quoted),
            '\n' | ';' => {
                flush(&mut out, &mut word, &mut in_word, &mut quoted);
                out.push((Token::Op(";"), false));
            }
            '>' | '<'
                if in_word
                    && !word.chars().all(|d| d.is_ascii_digit() || d == '&')
                    && !word.ends_with(['>', '<'])
                    && word.matches('(').count() <= word.matches(')').count() =>
            {
                // `runner>/dev/null`: the redirection starts a new word.
                flush(&mut out, &mut word, &mut in_word, &mut quoted);
                in_word = true;
                word.push(c);
            }
            '$' if chars.peek() == Some(&'(') => {
                // `$(…)` is one piece of the word, whatever it holds.
                in_word = true;
                word.push(c);
                let mut depth = 0usize;
                for d in chars.by_ref() {
                    word.push(d);
                    match d {
                        '(' => depth += 1,
                        ')' if depth <= 1 => break,
                        ')' => depth -= 1,
                        _ => {}
                    }
                }
            }
            '(' if !in_word => out.push((Token::Op("("), false)),
            ')' if !in_word || word.matches('(').count() <= word.matches(')').count() => {
                flush(&mut out, &mut word, &mut in_word, &mut quoted);
                out.push((Token::Op(")"), false));
            }
            '&' if word.ends_with(['>', '<']) || chars.peek() == Some(&'>') => {
                in_word = true;
                word.push(c);
            }
            '&' | '|' => {
                flush(&mut out, &mut word, &mut in_word, &mut quoted);
                let op = if chars.peek() == Some(&c) {
                    chars.next();
                    if c == '&' {
                        "&&"
                    } else {
                        "||"
                    }
                } else if c == '&' {
                    "&"
                } else {
                    "|"
                };
                out.push((Token::Op(op), false));
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    flush(&mut out, &mut word, &mut in_word, &mut quoted);
    out
}

/// Where a redirection sends output or takes input from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Redirect {
    /// The redirection as written, target included: `2>&1`, `> /dev/null`, `&>/dev/null`.
    pub written: String,
    /// The file descriptor redirected: 0, 1, 2, or `None` for both 1 and 2 (`&>`, `>&FILE`).
    pub fd: Option<u32>,
    /// `>` (also `>>`, `>|`), `<`, or `>&` / `<&` for a duplication such as `2>&1`.
    pub op: &'static str,
    /// The file, or the descriptor number of a duplication.
    pub target: String,
}

/// A simple command: its words (assignments and wrappers included) and its redirections.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Simple {
    /// The words, quotes removed, redirections taken out.
    pub words: Vec<String>,
    /// The redirections, in the order written (the order decides where output ends up).
    pub redirects: Vec<Redirect>,
}

impl Simple {
    /// Whether output written to file descriptor `fd` (1 or 2) ends in `/dev/null`, following
    /// the redirections left to right as the shell does (`>/dev/null 2>&1` discards both,
    /// `2>&1 >/dev/null` only stdout).
    pub(super) fn discards(&self, fd: u32) -> bool {
        let (mut out, mut err) = ("-".to_string(), "-".to_string());
        for r in &self.redirects {
            let target = match r.op {
                ">&" => match r.target.as_str() {
                    "1" => out.clone(),
                    "2" => err.clone(),
                    _ => continue,
                },
                ">" => r.target.clone(),
                _ => continue,
            };
            match r.fd {
                Some(1) => out = target,
                Some(2) => err = target,
                None => {
                    out = target.clone();
                    err = target;
                }
                _ => {}
            }
        }
        (if fd == 1 { out } else { err }) == "/dev/null"
    }

    /// The file stdout is finally written to (`> out.txt`, `&>log`), if not the terminal,
    /// /dev/null or another descriptor.
    pub(super) fn stdout_file(&self) -> Option<&str> {
        let mut file = None;
        for r in &self.redirects {
            if r.op == ">" && matches!(r.fd, Some(1) | None) {
                file = Some(r.target.as_str());
            } else if r.op == ">&" && r.fd == Some(1) {
                file = None;
            }
        }
        file.filter(|f| *f != "/dev/null" && !f.starts_with("/dev/std"))
    }
}

/// A pipeline: simple commands joined by `|`, perhaps negated with `!`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Pipeline {
    /// `! cmd`: the exit status is inverted.
    pub negated: bool,
    /// The commands, left to right; the exit status is the last one's (without `pipefail`).
    pub commands: Vec<Simple>,
}

/// An and-or list: pipelines joined by `&&` and `||`, ended by `;`, a newline or `&`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct AndOr {
    /// The pipelines, left to right.
    pub pipelines: Vec<Pipeline>,
    /// `ops[i]` joins `pipelines[i]` and `pipelines[i + 1]`: `&&` or `||`.
    pub ops: Vec<&'static str>,
    /// Ended by `&`: run in the background, its exit status is never seen.
    pub background: bool,
}

/// Keywords of compound commands, read through: `if runner; then echo ok; fi` is the lists
/// `runner` and `echo ok` (and the if's status is echo's, or 0 when runner fails).
const KEYWORDS: [&str; 10] =
    ["if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{"];

/// The command lists of `cmd` in order, the last one deciding the exit status. Subshells
/// `( … )` and groups `{ …; }` are read through as if their lists stood in line, which keeps
/// which command runs last; `case`, functions and here-documents are not understood.
pub(super) fn script(cmd: &str) -> Vec<AndOr> {
    let mut lists: Vec<AndOr> = Vec::new();
    let mut list = AndOr::default();
    let mut pipe = Pipeline::default();
    let mut simple = Simple::default();
    let mut pending: Option<(String, Option<u32>, &'static str)> = None;
    let end_simple = |pipe: &mut Pipeline, simple: &mut Simple| {
        if !simple.words.is_empty() || !simple.redirects.is_empty() {
            pipe.commands.push(std::mem::take(simple));
        }
    };
    // An empty pipeline (`! ( cmd )` before the parenthesis, `}`) ends nothing: a pending `!`
    // carries over to the pipeline in the parentheses.
    let end_pipe = |list: &mut AndOr, pipe: &mut Pipeline| {
        if !pipe.commands.is_empty() {
            list.pipelines.push(std::mem::take(pipe));
        }
    };
    for (t, quoted) in lex(cmd).into_iter().chain([(Token::Op(";"), false)]) {
        match t {
            Token::Word(w) => {
                if let Some((written, fd, op)) = pending.take() {
                    simple.redirects.push(Redirect {
                        written: format!("{written} {w}"),
                        fd,
                        op,
                        target: w,
                    });
                    continue;
                }
                if !quoted {
                    if let Some(r) = redirect(&w) {
                        if r.target.is_empty() {
                            pending = Some((r.written, r.fd, r.op));
                        } else {
                            simple.redirects.push(r);
                        }
                        continue;
                    }
                    let first = simple.words.is_empty() && simple.redirects.is_empty();
                    if first && pipe.commands.is_empty() && w == "!" {
                        pipe.negated = !pipe.negated;
                        continue;
                    }
                    if first && (KEYWORDS.contains(&w.as_str()) || w == "}") {
                        continue;
                    }
                }
                simple.words.push(w);
            }
            Token::Op("(") | Token::Op(")") => {}
            Token::Op("|") => end_simple(&mut pipe, &mut simple),
            Token::Op(op @ ("&&" | "||")) => {
                end_simple(&mut pipe, &mut simple);
                let had = pipe.commands.len();
                end_pipe(&mut list, &mut pipe);
                if had == 0 && list.pipelines.is_empty() && !pipe.negated {
                    // `{ a; b; } && c`: the group's last list goes on with `&& c`.
                    match lists.pop() {
                        Some(prev) if !prev.background => list = prev,
                        Some(prev) => lists.push(prev),
                        None => {}
                    }
                }
                if !list.pipelines.is_empty() {
                    list.ops.push(op);
                }
            }
            Token::Op(op) => {
                end_simple(&mut pipe, &mut simple);
                end_pipe(&mut list, &mut pipe);
                if list.ops.len() == list.pipelines.len() {
                    list.ops.pop(); // `a && }`: nothing after the last operator
                }
                if !list.pipelines.is_empty() {
                    list.background = op == "&";
                    lists.push(std::mem::take(&mut list));
                } else {
                    list = AndOr::default();
                }
            }
        }
    }
    lists
}

/// A redirection word: `>`, `2>`, `>>`, `&>`, `>&`, `2>&1`, `<in`, with its target if it is
/// written in the same word (else the target is empty: it is the next word).
fn redirect(w: &str) -> Option<Redirect> {
    let digits = w.chars().take_while(char::is_ascii_digit).count();
    let (fd, rest) = if let Some(r) = w.strip_prefix("&>") {
        (None, format!(">{r}"))
    } else {
        let fd = w[..digits].parse::<u32>().ok();
        (fd, w[digits..].to_string())
    };
    let (op, target) = if let Some(t) = rest.strip_prefix(">&").or_else(|| rest.strip_prefix("<&"))
    {
        let dup = !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '-');
        if dup {
            (">&", t)
        } else {
            // `>&FILE` sends both stdout and stderr to FILE, like `&>FILE`.
            return Some(Redirect {
                written: w.to_string(),
                fd: if digits == 0 { None } else { fd },
                op: ">",
                target: t.to_string(),
            });
        }
    } else if let Some(t) = rest.strip_prefix(">>").or_else(|| rest.strip_prefix(">|")) {
        (">", t)
    } else if let Some(t) = rest.strip_prefix('>') {
        (">", t)
    } else if let Some(t) = rest.strip_prefix('<') {
        if t.starts_with('<') {
            return None; // a here-document: not understood
        }
        ("<", t)
    } else {
        return None;
    };
    let fd =
        if w.starts_with("&>") { None } else { Some(fd.unwrap_or(if op == "<" { 0 } else { 1 })) };
    Some(Redirect { written: w.to_string(), fd, op, target: target.to_string() })
}

/// The simple commands of `cmd` as word lists, including those of scripts nested in
/// `sh -c '…'` / `bash -c '…'` (which follow their outer command).
pub(super) fn simple_commands(cmd: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    collect(cmd, &mut out, 0);
    out
}

fn collect(cmd: &str, out: &mut Vec<Vec<String>>, depth: usize) {
    let mut cur: Vec<String> = Vec::new();
    let mut nested = Vec::new();
    for t in tokenize(cmd).into_iter().chain([Token::Op(";")]) {
        match t {
            Token::Word(w) => cur.push(w),
            Token::Op(_) => {
                if !cur.is_empty() {
                    if let Some(script) = nested_script(&cur) {
                        nested.push(script);
                    }
                    out.push(std::mem::take(&mut cur));
                }
            }
        }
    }
    if depth < 4 {
        for s in nested {
            collect(&s, out, depth + 1);
        }
    }
}

/// The script of `sh -c SCRIPT` / `bash -lc SCRIPT`, if `words` is such a command.
pub(super) fn nested_script(words: &[String]) -> Option<String> {
    let prog = words.first()?;
    let base = prog.rsplit('/').next().unwrap_or(prog);
    if !matches!(base, "sh" | "bash" | "dash" | "zsh") {
        return None;
    }
    let i =
        words.iter().position(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('c'))?;
    words.get(i + 1).cloned()
}

/// The program of a simple command after environment assignments and wrappers such as
/// `env`, `timeout 60`, `time`, `nice`, `uv run`, `poetry run`: `(program, its arguments)`.
pub(super) fn program(words: &[String]) -> Option<(&str, &[String])> {
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        let assignment = w.split_once('=').is_some_and(|(k, _)| {
            !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if assignment || matches!(w, "env" | "time" | "nice" | "exec" | "command" | "nohup") {
            i += 1;
        } else if w == "timeout" {
            i += 1;
            while i < words.len() && words[i].starts_with('-') {
                let takes_value =
                    matches!(words[i].as_str(), "-s" | "--signal" | "-k" | "--kill-after");
                i += if takes_value { 2 } else { 1 };
            }
            i += 1; // the duration
        } else if matches!(w, "uv" | "poetry" | "pipenv" | "pdm" | "hatch")
            && words.get(i + 1).map(String::as_str) == Some("run")
        {
            i += 2;
        } else {
            break;
        }
    }
    let prog = words.get(i)?;
    Some((prog.as_str(), &words[i + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Token {
        Token::Word(s.into())
    }

    #[test]
    fn tokens() {
        use Token::Op;
        let cases: Vec<(&str, Vec<Token>)> = vec![
            ("a b", vec![w("a"), w("b")]),
            ("a 'b c' \"d \\\"e\"", vec![w("a"), w("b c"), w("d \"e")]),
            ("a || true", vec![w("a"), Op("||"), w("true")]),
            (
                "a&&b|c;d&e",
                vec![w("a"), Op("&&"), w("b"), Op("|"), w("c"), Op(";"), w("d"), Op("&"), w("e")],
            ),
            ("a 2>&1 >/dev/null", vec![w("a"), w("2>&1"), w(">/dev/null")]),
            ("a &>/dev/null", vec![w("a"), w("&>/dev/null")]),
            ("a # comment || true", vec![w("a")]),
            ("a\nb", vec![w("a"), Op(";"), w("b")]),
            ("a 'unclosed", vec![w("a"), w("unclosed")]),
        ];
        for (cmd, want) in cases {
            assert_eq!(tokenize(cmd), want, "{cmd}");
        }
    }

    /// `(lists, each as "pipeline && pipeline" with `!` and `&` marks, redirections in [])`.
    fn shape(cmd: &str) -> String {
        let lists: Vec<String> = script(cmd)
            .iter()
            .map(|l| {
                let mut t = String::new();
                for (k, p) in l.pipelines.iter().enumerate() {
                    if k > 0 {
                        t.push_str(&format!(" {} ", l.ops[k - 1]));
                    }
                    if p.negated {
                        t.push_str("! ");
                    }
                    let cmds: Vec<String> = p
                        .commands
                        .iter()
                        .map(|s| {
                            let r: Vec<String> = s
                                .redirects
                                .iter()
                                .map(|r| format!("{:?}{}{}", r.fd, r.op, r.target))
                                .collect();
                            format!(
                                "{}{}",
                                s.words.join(" "),
                                if r.is_empty() {
                                    String::new()
                                } else {
                                    format!(" [{}]", r.join(","))
                                }
                            )
                        })
                        .collect();
                    t.push_str(&cmds.join(" | "));
                }
                if l.background {
                    t.push_str(" &");
                }
                t
            })
            .collect();
        lists.join(" ; ")
    }

    #[test]
    fn scripts() {
        let cases = [
            ("a; b", "a ; b"),
            ("a && b || c", "a && b || c"),
            ("a & b", "a & ; b"),
            ("! a | b", "! a | b"),
            ("! ( a )", "! a"),
            ("(a; b) && c", "a ; b && c"),
            ("{ a; b; } && c", "a ; b && c"),
            ("if a; then b; fi", "a ; b"),
            ("a > /dev/null 2>&1", "a [Some(1)>/dev/null,Some(2)>&1]"),
            ("a>/dev/null", "a [Some(1)>/dev/null]"),
            ("a &>/dev/null", "a [None>/dev/null]"),
            ("a &> /dev/null", "a [None>/dev/null]"),
            ("a >&/dev/null", "a [None>/dev/null]"),
            ("a 2> e.txt < in", "a [Some(2)>e.txt,Some(0)<in]"),
            ("a '2>x' \"b>c\"", "a 2>x b>c"),
            ("echo $(a; b) c", "echo $(a; b) c"),
            ("python3 -c 'print(1)'", "python3 -c print(1)"),
        ];
        for (cmd, want) in cases {
            assert_eq!(shape(cmd), want, "{cmd}");
        }
    }

    #[test]
    fn where_output_ends() {
        let s = |cmd: &str| script(cmd).remove(0).pipelines.remove(0).commands.remove(0);
        // (command, stdout discarded, stderr discarded, stdout file)
        let cases = [
            ("a >/dev/null 2>&1", true, true, None),
            ("a 2>&1 >/dev/null", true, false, None),
            ("a &>/dev/null", true, true, None),
            ("a 2>/dev/null", false, true, None),
            ("a > out.txt 2>&1", false, false, Some("out.txt")),
            ("a >> log", false, false, Some("log")),
            ("a >&2", false, false, None),
            ("a", false, false, None),
        ];
        for (cmd, out, err, file) in cases {
            let c = s(cmd);
            assert_eq!((c.discards(1), c.discards(2), c.stdout_file()), (out, err, file), "{cmd}");
        }
    }

    #[test]
    fn nested_scripts_are_split_too() {
        let got = simple_commands("sh -c 'pytest -k fast || true'");
        assert_eq!(got.len(), 3);
        assert_eq!(got[1], ["pytest", "-k", "fast"]);
        assert_eq!(got[2], ["true"]);
    }

    #[test]
    fn program_skips_wrappers() {
        let words: Vec<String> =
            "FOO=1 timeout -s KILL 60 uv run pytest tests".split(' ').map(String::from).collect();
        let (p, args) = program(&words).unwrap();
        assert_eq!(p, "pytest");
        assert_eq!(args, ["tests"]);
    }
}
