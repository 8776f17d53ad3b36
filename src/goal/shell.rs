//! Just enough of the POSIX shell grammar for the linter to see what a criterion's command runs:
//! words (with quotes removed), the operators between simple commands (`;`, `&&`, `||`, `|`,
//! `&`), and scripts nested in `sh -c '…'`. It is not a shell: expansions stay as written and
//! redirections stay inside their words (`2>/dev/null`). The commands themselves are always run
//! by the real `sh`; this only reads them.

/// A piece of a command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token {
    /// A word with its quotes removed.
    Word(String),
    /// `;` (or a newline), `&&`, `||`, `|` or `&`.
    Op(&'static str),
}

/// Split `cmd` into words and operators. Unclosed quotes run to the end of the text.
pub fn tokenize(cmd: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = cmd.chars().peekable();
    let flush = |out: &mut Vec<Token>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            out.push(Token::Word(std::mem::take(word)));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    word.push(d);
                }
            }
            '"' => {
                in_word = true;
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
                match chars.next() {
                    Some('\n') | None => {}
                    Some(e) => word.push(e),
                }
            }
            '#' if !in_word => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        out.push(Token::Op(";"));
                        break;
                    }
                }
            }
            ' ' | '\t' => flush(&mut out, &mut word, &mut in_word),
            '\n' | ';' => {
                flush(&mut out, &mut word, &mut in_word);
                out.push(Token::Op(";"));
            }
            '&' if word.ends_with(['>', '<']) || chars.peek() == Some(&'>') => {
                in_word = true;
                word.push(c);
            }
            '&' | '|' => {
                flush(&mut out, &mut word, &mut in_word);
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
                out.push(Token::Op(op));
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    flush(&mut out, &mut word, &mut in_word);
    out
}

/// The simple commands of `cmd` as word lists, including those of scripts nested in
/// `sh -c '…'` / `bash -c '…'` (which follow their outer command).
pub fn simple_commands(cmd: &str) -> Vec<Vec<String>> {
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
pub fn nested_script(words: &[String]) -> Option<String> {
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
pub fn program(words: &[String]) -> Option<(&str, &[String])> {
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
