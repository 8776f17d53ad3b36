//! `kit status --watch [--interval DUR]`: the status redrawn in place on a terminal every
//! interval (default 2 s), until Ctrl-C (exit 0; SIGTERM and SIGHUP end it the same way).
//!
//! Read-only like `kit status`: no lock is taken, nothing is written while it watches (a
//! journal line the loop is writing at that instant is not reported as damaged, see
//! `super::gather`). When it ends it moves the "since you last looked" mark (see
//! [`super::since`]) unless `--no-mark`. A read that fails (the journal removed under it) is
//! shown in the frame and the watch goes on.
//!
//! Stdout must be a terminal: redrawing a pipe or a file would fill it with escape sequences,
//! so `--watch` elsewhere is refused with exit 2 and the commands that do work there
//! (`kit status`, `kit status --json`). The screen is drawn with plain ANSI sequences (cursor
//! home, erase to end of line, erase below), each line cut to the terminal's width and the frame
//! to its height (console's ANSI-aware width), so a redraw never scrolls.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{IoContext, Result, EXIT_OK};
use crate::term::Theme;

/// Default time between redraws.
pub(crate) const DEFAULT_INTERVAL: Duration = Duration::from_secs(2);

/// The frame for one redraw: a header naming the interval and the time of this refresh (kit
/// clock, UTC), a blank line, then `body`; every line cut to `width` columns (ANSI-aware) and the
/// whole to `height` lines, the last one saying how many were cut.
pub(crate) fn frame(
    body: &str,
    interval: Duration,
    at: &str,
    size: Option<(usize, usize)>,
) -> String {
    let mut lines = vec![
        format!(
            "kit status --watch: every {}, last refresh {at}; Ctrl-C ends it",
            crate::units::format_duration(interval)
        ),
        String::new(),
    ];
    lines.extend(body.lines().map(str::to_string));
    if let Some((height, width)) = size.filter(|&(h, w)| h > 0 && w > 0) {
        if lines.len() > height {
            let cut = lines.len() - height + 1;
            lines.truncate(height - 1);
            lines.push(format!(
                "… {cut} more line{} (a taller terminal shows them)",
                if cut == 1 { "" } else { "s" }
            ));
        }
        for l in &mut lines {
            *l = console::truncate_str(l, width, "…").into_owned();
        }
    }
    lines.join("\n")
}

/// The bytes that draw `frame` over the previous one: cursor home, each line followed by an
/// erase to its end, then an erase of everything below.
pub(crate) fn redraw(frame: &str) -> String {
    let mut s = String::from("\x1b[H");
    for (i, l) in frame.lines().enumerate() {
        if i > 0 {
            s.push_str("\r\n");
        }
        s.push_str(l);
        s.push_str("\x1b[K");
    }
    s.push_str("\x1b[J");
    s
}

/// Watch the status of the project containing `cwd` on `out` (a terminal) every `interval`,
/// until a stop signal; then move the mark unless `mark` is false. `size` gives the terminal's
/// (rows, columns) at each redraw.
///
/// Errors: [`crate::Error::Io`] when `out` cannot be written (the terminal went away).
pub(crate) fn watch(
    cwd: &Path,
    interval: Duration,
    mark: bool,
    theme: &Theme,
    out: &mut dyn Write,
    size: &dyn Fn() -> Option<(usize, usize)>,
) -> Result<u8> {
    // Before anything starts a thread (gather hashes on rayon's pool): see signals::Stop.
    let stop = crate::signals::Stop::install();
    let stdout = Path::new("stdout");
    // Hide the cursor and clear the screen once; later frames draw over the last one.
    write!(out, "\x1b[?25l\x1b[H\x1b[2J").at(stdout)?;
    let mut last = None;
    let result = (|| -> Result<()> {
        loop {
            let body = match super::gather(cwd) {
                Ok(s) => {
                    let mut b = Vec::new();
                    super::print_text(&s, theme, &mut b).at(stdout)?;
                    last = Some(s);
                    String::from_utf8_lossy(&b).into_owned()
                }
                Err(e) => format!("kit status: {e}\n(still watching; Ctrl-C ends it)"),
            };
            let f = frame(&body, interval, &crate::clock::now_rfc3339(), size());
            write!(out, "{}", redraw(&f)).at(stdout)?;
            out.flush().at(stdout)?;
            let deadline = Instant::now() + interval;
            loop {
                if stop.requested().is_some() {
                    return Ok(());
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                std::thread::sleep(left.min(Duration::from_millis(100)));
            }
        }
    })();
    // Whatever happened, give the cursor back and end on a fresh line.
    let _ = write!(out, "\x1b[?25h\r\n");
    let _ = out.flush();
    result?;
    if mark {
        if let Some(s) = last {
            super::move_mark(cwd, &s);
        }
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_has_a_header_and_fits_the_terminal() {
        let body = "goal: x (level 3 of 4)\nowner: none\nrun: 1 (started t, 1 loop process, last: cap); spent 2 iterations\n";
        let f = frame(body, Duration::from_secs(2), "2026-10-01T09:00:00Z", None);
        assert_eq!(
            f,
            "kit status --watch: every 2.0s, last refresh 2026-10-01T09:00:00Z; Ctrl-C ends it\n\n\
             goal: x (level 3 of 4)\nowner: none\nrun: 1 (started t, 1 loop process, last: cap); spent 2 iterations"
        );
        let small = frame(body, Duration::from_secs(2), "t", Some((4, 20)));
        let lines: Vec<&str> = small.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[2], "goal: x (level 3 of…");
        assert_eq!(lines[3], "… 2 more lines (a t…");
        assert!(lines.iter().all(|l| console::measure_text_width(l) <= 20));
        // Colour codes do not count towards the width.
        let coloured = frame("\x1b[1mgoal:\x1b[0m x", Duration::from_secs(1), "t", Some((10, 8)));
        assert!(coloured.lines().all(|l| console::measure_text_width(l) <= 8));
    }

    #[test]
    fn a_redraw_goes_home_erases_each_line_end_and_what_is_below() {
        assert_eq!(redraw("a\nbb"), "\x1b[Ha\x1b[K\r\nbb\x1b[K\x1b[J");
    }
}
