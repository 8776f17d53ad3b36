//! All terminal output goes through here (STYLE.md §7). Colour is decided once: on only when
//! stdout is a terminal and `NO_COLOR` is unset. Library code writes to a `&mut impl Write`
//! handed down from `run`, never to stdout directly.

use console::Style;

/// Colours for kit's output, decided once per process.
#[derive(Clone, Debug)]
pub struct Theme {
    /// Whether colour is on.
    pub color: bool,
}

impl Theme {
    /// Decide from the environment: colour only on a terminal and without `NO_COLOR`.
    pub fn detect() -> Self {
        let color = std::env::var_os("NO_COLOR").is_none() && console::Term::stdout().is_term();
        Theme { color }
    }

    /// A theme with colour off (tests, pipes).
    pub fn plain() -> Self {
        Theme { color: false }
    }

    fn paint(&self, s: &str, style: Style) -> String {
        if self.color {
            style.force_styling(true).apply_to(s).to_string()
        } else {
            s.to_string()
        }
    }

    /// Green text for a pass.
    pub fn ok(&self, s: &str) -> String {
        self.paint(s, Style::new().green())
    }
    /// Red text for a failure.
    pub fn bad(&self, s: &str) -> String {
        self.paint(s, Style::new().red())
    }
    /// Yellow text for a warning.
    pub fn warn(&self, s: &str) -> String {
        self.paint(s, Style::new().yellow())
    }
    /// Bold text for headings.
    pub fn bold(&self, s: &str) -> String {
        self.paint(s, Style::new().bold())
    }
    /// Dim text for secondary detail.
    pub fn dim(&self, s: &str) -> String {
        self.paint(s, Style::new().dim())
    }
}

/// Ask `question` on the terminal (stderr) with ` [y/N] ` and read the answer from stdin: true
/// for `y`, `Y` or `yes`. For commands that must not act without a person's yes; the caller
/// checks first that there is a terminal to ask.
///
/// Errors: stderr cannot be written or stdin read ([`crate::Error::Io`]).
pub fn ask_yes(question: &str) -> crate::Result<bool> {
    let term = console::Term::stderr();
    term.write_str(&format!("{question} [y/N] ")).map_err(|e| crate::Error::io("stderr", e))?;
    let answer = term.read_line().map_err(|e| crate::Error::io("stdin", e))?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// The progress bars' stderr, drawn only when it is a terminal (the caller checks
/// [`stderr_is_term`]).
pub fn progress_target() -> indicatif::ProgressDrawTarget {
    indicatif::ProgressDrawTarget::stderr()
}

/// Clear the terminal on stdout (for a view redrawn in place); nothing when that fails.
pub fn clear_screen() {
    let _ = console::Term::stdout().clear_screen();
}

/// Whether stderr is a terminal (for progress bars).
pub fn stderr_is_term() -> bool {
    console::Term::stderr().is_term()
}

/// The terminal's width in characters, for tables that must not wrap: `COLUMNS` when it holds
/// a positive number (goldens pin it; shells that export it pass the user's width), else the
/// width of the terminal on stdout, else None (a pipe or a file: no limit).
pub fn columns() -> Option<usize> {
    if let Some(n) = std::env::var("COLUMNS").ok().and_then(|v| v.trim().parse::<usize>().ok()) {
        if n > 0 {
            return Some(n);
        }
    }
    console::Term::stdout().size_checked().map(|(_, cols)| cols as usize).filter(|&c| c > 0)
}

/// One line on stderr that a long job rewrites in place to show which step it is at
/// (`step 3/7 kit loop --agent fake:lie …`), cleared when dropped. Off a terminal it prints
/// nothing, so piped output and goldens never see it.
pub struct StepLine {
    term: Option<console::Term>,
}

impl StepLine {
    /// A step line on stderr when stderr is a terminal, else one that prints nothing.
    pub fn on_stderr() -> StepLine {
        let term = console::Term::stderr();
        StepLine { term: term.is_term().then_some(term) }
    }

    /// Show `step N/TOTAL COMMAND`, the command cut to the terminal's width with `…`.
    pub fn show(&self, n: usize, total: usize, command: &str) {
        let Some(t) = &self.term else { return };
        let width = t.size_checked().map_or(80, |(_, c)| usize::from(c)).max(20);
        let line = step_line(n, total, command, width - 1);
        let _ = t.clear_line();
        let _ = t.write_str(&line);
    }
}

impl Drop for StepLine {
    fn drop(&mut self) {
        if let Some(t) = &self.term {
            let _ = t.clear_line();
        }
    }
}

/// `step N/TOTAL COMMAND` on one line of at most `width` columns (the command's first line,
/// cut with `…`).
pub(crate) fn step_line(n: usize, total: usize, command: &str, width: usize) -> String {
    let first = command.lines().next().unwrap_or_default();
    let more = if command.lines().nth(1).is_some() { " …" } else { "" };
    let line = format!("step {n}/{total} {first}{more}");
    console::truncate_str(&line, width, "…").into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_line_fits_its_width() {
        let cases: &[(&str, usize, &str)] = &[
            ("kit init", 80, "step 3/7 kit init"),
            ("kit loop --agent fake:lie --max-iterations 2", 30, "step 3/7 kit loop --agent fak…"),
            ("echo a\necho b", 80, "step 3/7 echo a …"),
        ];
        for (cmd, width, want) in cases {
            let got = step_line(3, 7, cmd, *width);
            assert_eq!(got, *want);
            assert!(console::measure_text_width(&got) <= *width, "{got}");
        }
    }
}
