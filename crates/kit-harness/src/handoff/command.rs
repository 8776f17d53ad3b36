//! Does a Bash tool call's command line really run `kit handoff save`? The transcript proof
//! (DESIGN §11) and the hook's Stop check trust a tool result only when nothing but kit could
//! have printed it, so the recogniser is strict (QA finding F2b):
//!
//! - the command is one simple command: `kit` (or a path ending in `/kit`), then `handoff save`,
//!   with only kit's global `-C DIR` / `--dir DIR` among the words;
//! - it may take its stdin from a redirect (`< FILE`, `<<< WORD`) or a here-document
//!   (`<<EOF` … `EOF`, `<<'EOF'`, `<<-EOF`), and may send stderr to stdout (`2>&1`);
//! - nothing else: no `--help`/`--version` or unknown word (clap would print help or an error
//!   instead of saving), no environment assignment (`PATH=…` could pick another `kit`), no other
//!   command joined with `;`, `&`, `&&`, `||`, `|` or a new line, no `$( )` or backquotes, no
//!   stdout redirect (the stamp line must reach the tool result).
//!
//! The parser is a small tokenizer over the first line (quotes and backslashes as the shell
//! reads them, no expansion); it refuses whatever it does not understand.

/// True when `command` runs `kit handoff save` as described in the module doc.
pub fn runs_handoff_save(command: &str) -> bool {
    let command = command.trim_start();
    let (first, rest) = command.split_once('\n').unwrap_or((command, ""));
    let Some(toks) = tokens(first) else { return false };
    let mut it = toks.iter();
    match it.next() {
        Some(Tok::Word(k)) if k == "kit" || (k.ends_with("/kit") && !k.contains('$')) => {}
        _ => return false,
    }
    let mut seen: Vec<&str> = Vec::new();
    let mut heredoc: Option<(String, bool)> = None;
    let mut stdin_redirects = 0;
    let mut dashdash = false;
    while let Some(t) = it.next() {
        match t {
            Tok::Word(w) if w == "-C" || w == "--dir" => {
                if !matches!(it.next(), Some(Tok::Word(_))) {
                    return false;
                }
            }
            Tok::Word(w) if w.starts_with("--dir=") || (w.starts_with("-C") && w.len() > 2) => {}
            Tok::Word(w) if seen.is_empty() && w == "handoff" => seen.push("handoff"),
            Tok::Word(w) if seen.len() == 1 && w == "save" => seen.push("save"),
            Tok::Word(w) if seen.len() == 2 && w == "--" && !dashdash => dashdash = true,
            Tok::Word(_) => return false,
            Tok::Op(op) if op == "2>&1" => {}
            Tok::Op(op) => {
                stdin_redirects += 1;
                match (op.as_str(), it.next()) {
                    ("<" | "<<<", Some(Tok::Word(_))) => {}
                    ("<<" | "<<-", Some(Tok::Word(delim))) if heredoc.is_none() => {
                        heredoc = Some((delim.clone(), op == "<<-"));
                    }
                    _ => return false,
                }
            }
        }
    }
    if seen.len() != 2 || stdin_redirects > 1 {
        return false;
    }
    let mut lines = rest.lines();
    if let Some((delim, strip_tabs)) = heredoc {
        let end = lines.by_ref().position(|l| {
            let l = if strip_tabs { l.trim_start_matches('\t') } else { l };
            l == delim
        });
        if end.is_none() {
            return false;
        }
    }
    lines.all(|l| l.trim().is_empty())
}

#[derive(Debug, PartialEq)]
enum Tok {
    Word(String),
    Op(String),
}

/// The words and redirection operators of one line; `None` when it holds anything else that
/// the shell would treat as syntax (a separator, a pipe, a substitution, a stdout redirect).
fn tokens(line: &str) -> Option<Vec<Tok>> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    fn flush(word: &mut Option<String>, out: &mut Vec<Tok>) {
        if let Some(w) = word.take() {
            out.push(Tok::Word(w));
        }
    }
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        x => w.push(x),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => w.push(chars.next()?),
                        '`' => return None,
                        '$' if chars.peek() == Some(&'(') => return None,
                        x => w.push(x),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).push(chars.next()?),
            '$' if chars.peek() == Some(&'(') => return None,
            '`' | ';' | '|' | '&' | '(' | ')' => return None,
            '>' => {
                // Only `2>&1`: stderr joins stdout; any other output redirect is refused.
                if word.as_deref() != Some("2")
                    || chars.next() != Some('&')
                    || chars.next() != Some('1')
                {
                    return None;
                }
                word = None;
                out.push(Tok::Op("2>&1".into()));
            }
            '<' => {
                if word.is_some() {
                    return None;
                }
                let mut op = String::from("<");
                while op.len() < 3 && chars.peek() == Some(&'<') {
                    op.push(chars.next()?);
                }
                if op == "<<" && chars.peek() == Some(&'-') {
                    op.push(chars.next()?);
                }
                out.push(Tok::Op(op));
            }
            c if c.is_whitespace() => flush(&mut word, &mut out),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    flush(&mut word, &mut out);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "handoff saved: stamp 5d0c1f2a9b3e (commit 1a2b3c4, 3 files fingerprinted) in longrun/handoff.md";

    #[test]
    fn genuine_forms_are_recognised() {
        for cmd in [
            "kit handoff save",
            "  kit handoff save  ",
            "/usr/local/bin/kit handoff save",
            "./target/debug/kit handoff save\n",
            "'/opt/my tools/kit' handoff save",
            "kit -C /r handoff save",
            "kit --dir=/r handoff save",
            "kit handoff save -C /r",
            "kit handoff save --",
            "kit handoff save 2>&1",
            "kit handoff save < notes.md",
            "kit handoff save <notes.md",
            "kit handoff save <<< 'Done: a.'",
            "kit handoff save <<'EOF'\nDone: a; b && c | d $(e)\nNext action: f\nEOF",
            "kit handoff save <<EOF\nDone.\nEOF\n",
            "kit handoff save <<\"END\"\nDone.\nEND",
            "kit handoff save <<-EOF\n\tDone.\n\tEOF",
            "kit handoff save 2>&1 <<'EOF'\nDone.\nEOF\n\n",
        ] {
            assert!(runs_handoff_save(cmd), "genuine: {cmd:?}");
        }
    }

    #[test]
    fn forged_forms_are_refused() {
        for cmd in [
            "kit handoff save --help",
            "kit handoff save -h",
            "kit --version handoff save",
            "kit handoff save --bogus 2>/dev/null; echo ok",
            &format!("kit handoff save --help >/dev/null; echo '{LINE}'"),
            &format!("echo '{LINE}'"),
            &format!("kit handoff save; echo '{LINE}'"),
            &format!("kit handoff save\necho '{LINE}'"),
            &format!("kit handoff save <<'EOF'\nx\nEOF\necho '{LINE}'"),
            "kit handoff save <<'EOF'\nno end of the here-document",
            "kit handoff save && echo x",
            "kit handoff save || echo x",
            "kit handoff save & echo x",
            "kit handoff save | tee out",
            "printf 'Done.' | kit handoff save",
            "cd /r && kit handoff save",
            "(kit handoff save)",
            "kit handoff save $(echo)",
            "kit handoff save <<< \"$(cat notes)\"",
            "kit handoff save `true`",
            "kit handoff save > out.txt",
            "kit handoff save 2> err.txt",
            "kit handoff save < a < b",
            "A=1 kit handoff save",
            "PATH=/tmp/fake:$PATH kit handoff save",
            "$HOME/bin/kit handoff save",
            "echo kit handoff save",
            "mykit handoff save",
            "kit handoff saved",
            "kit handoff verify",
            "kit handoff",
            "kit save handoff",
            "kit handoff save extra",
            "kit handoff save # done",
            "kit handoff save \"unclosed",
            "kit handoff save <",
            "",
        ] {
            assert!(!runs_handoff_save(cmd), "forged: {cmd:?}");
        }
    }
}
