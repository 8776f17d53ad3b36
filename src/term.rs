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

/// Whether stderr is a terminal (for progress bars).
pub(crate) fn stderr_is_term() -> bool {
    console::Term::stderr().is_term()
}

/// The terminal's width in characters, for tables that must not wrap: `COLUMNS` when it holds
/// a positive number (goldens pin it; shells that export it pass the user's width), else the
/// width of the terminal on stdout, else None (a pipe or a file: no limit).
pub(crate) fn columns() -> Option<usize> {
    if let Some(n) = std::env::var("COLUMNS").ok().and_then(|v| v.trim().parse::<usize>().ok()) {
        if n > 0 {
            return Some(n);
        }
    }
    console::Term::stdout().size_checked().map(|(_, cols)| cols as usize).filter(|&c| c > 0)
}
