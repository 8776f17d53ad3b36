//! The report's charts, drawn by plotters' SVG backend into strings that the page inlines.
//! Every chart is one function here that takes the engine's records (a session's
//! [`ApiCall`]s, a loop's iteration rows) and says what to plot; plotters places the axes,
//! ticks, labels and shapes. Text is written as SVG `<text>` (no font is loaded: plotters'
//! built-in size estimate lays it out), so a chart needs nothing but the page.
//!
//! Colours: the context bands are those of the context-band hook (DESIGN §10): 50 % notice,
//! 70 % save a handoff, 85 % wrap up, 100 % the compaction point.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::transcript::{ApiCall, SessionSummary, TTL_5M_S};
use crate::units::{tokens, usd};

/// Width and height of a chart (SVG user units; the page scales it to its column).
const SIZE: (u32, u32) = (960, 280);
/// Labels on the x and y axes at most: enough to read a value off, few enough that the
/// charts of a thousand sessions stay light.
const X_LABELS: usize = 8;
const Y_LABELS: usize = 5;
/// Axis labels and legend text.
const FONT: (&str, u32) = ("sans-serif", 13);

/// The context bands: (from, to) as fractions of the compaction point, and their fill.
const BANDS: [(f64, f64, RGBColor, &str); 3] = [
    (0.50, 0.70, RGBColor(255, 236, 153), "50–70 %"),
    (0.70, 0.85, RGBColor(255, 196, 120), "70–85 %"),
    (0.85, 1.00, RGBColor(255, 150, 140), "85–100 %"),
];
const CONTEXT: RGBColor = RGBColor(31, 90, 180);
const POINT: RGBColor = RGBColor(190, 30, 30);
const COMPACTION: RGBColor = RGBColor(120, 40, 160);
const RESUME: RGBColor = RGBColor(220, 60, 0);
const READ: RGBColor = RGBColor(30, 140, 80);
const WRITE: RGBColor = RGBColor(230, 120, 0);
const COST: RGBColor = RGBColor(60, 60, 60);
const PASS: RGBColor = RGBColor(30, 140, 80);
const CHEAT: RGBColor = RGBColor(200, 20, 20);

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Drawn = std::result::Result<(), String>;

/// Draw on a fresh SVG of [`SIZE`] and return its text; a drawing error (none is expected
/// with the string backend) becomes a one-line note in place of the chart.
fn svg(draw: impl FnOnce(&Area<'_>) -> Drawn) -> String {
    let mut buf = String::new();
    let result = {
        // No background: the page's is white, and one element less per chart.
        let root = SVGBackend::with_string(&mut buf, SIZE).into_drawing_area();
        draw(&root).and_then(|_| root.present().map_err(|e| e.to_string()))
    };
    match result {
        Ok(()) => buf,
        Err(e) => {
            format!("<p class=\"warn\">chart not drawn: {}</p>", maud::html! { (e) }.into_string())
        }
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The x position of each compaction: halfway between the call before it and the one after
/// (`after_call` is the number of calls logged before it).
pub(crate) fn compaction_x(after_call: usize) -> f64 {
    after_call as f64 + 0.5
}

/// How a legend entry is drawn: the mark beside its text (a CSS class of the page).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    /// A solid line.
    Line,
    /// A dashed line.
    Dash,
    /// A filled square: a band.
    Band,
    /// A filled dot.
    Dot,
    /// A ring.
    Ring,
}

impl Mark {
    /// The CSS class of the mark.
    pub(crate) fn class(self) -> &'static str {
        match self {
            Mark::Line => "line",
            Mark::Dash => "dash",
            Mark::Band => "band",
            Mark::Dot => "dot",
            Mark::Ring => "ring",
        }
    }
}

/// One legend entry: its text, its colour (CSS `#rrggbb`) and its mark.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Key {
    /// The text.
    pub label: String,
    /// The colour, `#rrggbb`.
    pub color: String,
    /// The mark.
    pub mark: Mark,
}

fn key(label: impl Into<String>, c: RGBColor, mark: Mark) -> Key {
    Key { label: label.into(), color: format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2), mark }
}

/// A session chart: the SVG and its legend, which the page writes as HTML under it (text
/// that wraps and prints, and that never hides data).
#[derive(Clone, Debug)]
pub(crate) struct Chart {
    /// The `<svg>` element.
    pub svg: String,
    /// What each colour means.
    pub legend: Vec<Key>,
}

/// Context size per API call (main conversation; a subagent's calls carry their own context)
/// against the compaction point, with the 50/70/85 % bands, each compaction (a dashed line
/// at `compactions`, from [`compaction_x`]) and each resume (a dot) marked.
pub(crate) fn context(s: &SessionSummary, calls: &[ApiCall], compactions: &[f64]) -> Chart {
    let n = calls.len() as f64;
    let point = s.compaction_point as f64;
    let peak = calls.iter().map(|c| c.context_tokens).max().unwrap_or(0) as f64;
    let top = peak.max(point) * 1.08 + 1.0;
    let resumes: Vec<(f64, f64)> = calls
        .iter()
        .enumerate()
        .filter(|(_, c)| c.resume)
        .map(|(i, c)| (i as f64 + 1.0, c.context_tokens as f64))
        .collect();
    let mut legend: Vec<Key> = BANDS.iter().map(|b| key(b.3, b.2, Mark::Band)).collect();
    legend.push(key(format!("compaction point {}", tokens(s.compaction_point)), POINT, Mark::Line));
    legend.push(key("context", CONTEXT, Mark::Line));
    if !compactions.is_empty() {
        legend.push(key("compaction", COMPACTION, Mark::Dash));
    }
    if !resumes.is_empty() {
        legend.push(key("resume (cache expired)", RESUME, Mark::Dot));
    }
    let svg = svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(64)
            .build_cartesian_2d(0.5..n + 0.5, 0.0..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .max_light_lines(0)
            .x_labels(X_LABELS)
            .y_labels(Y_LABELS)
            .x_desc("API call")
            .y_desc("context (tokens)")
            .x_label_formatter(&|x| call_label(*x, n))
            .y_label_formatter(&|y| tokens(*y as u64))
            .label_style(FONT)
            .draw()
            .map_err(err)?;
        chart
            .draw_series(BANDS.iter().map(|&(from, to, color, _)| {
                Rectangle::new(
                    [(0.5, point * from), (n + 0.5, point * to)],
                    color.mix(0.6).filled(),
                )
            }))
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new([(0.5, point), (n + 0.5, point)], POINT.stroke_width(2)))
            .map_err(err)?;
        let main = calls.iter().enumerate().filter(|(_, c)| !c.sidechain);
        chart
            .draw_series(LineSeries::new(
                main.map(|(i, c)| (i as f64 + 1.0, c.context_tokens as f64)),
                CONTEXT.stroke_width(2),
            ))
            .map_err(err)?;
        for &x in compactions {
            chart
                .draw_series(DashedLineSeries::new(
                    [(x, 0.0), (x, top)],
                    6,
                    4,
                    COMPACTION.stroke_width(2),
                ))
                .map_err(err)?;
        }
        chart
            .draw_series(resumes.iter().map(|&p| Circle::new(p, 6, RESUME.filled())))
            .map_err(err)?;
        Ok(())
    });
    Chart { svg, legend }
}

/// Cache read and cache write (both TTLs) per API call (tokens, left axis), and the
/// cumulative cost (USD, right axis) of the main conversation's calls, with each idle gap
/// longer than the 5-minute cache TTL marked where it ended (a ring; a filled dot when the
/// call after it was a resume). Unpriced calls add nothing to the cost.
pub(crate) fn cache_cost(calls: &[ApiCall]) -> Chart {
    let n = calls.len() as f64;
    let top = calls
        .iter()
        .map(|c| c.usage.cache_read.max(c.usage.cache_write_5m + c.usage.cache_write_1h))
        .max()
        .unwrap_or(0) as f64
        * 1.08
        + 1.0;
    let mut sum = 0.0;
    let spent: Vec<(f64, f64)> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            sum += c.cost_usd.unwrap_or(0.0);
            (i as f64 + 1.0, sum)
        })
        .collect();
    let top_cost = sum * 1.08 + 1e-6;
    let gaps: Vec<(f64, f64, bool)> = calls
        .iter()
        .zip(&spent)
        .filter(|(c, _)| c.gap_s.is_some_and(|g| g > TTL_5M_S as f64))
        .map(|(c, &(x, y))| (x, y, c.resume))
        .collect();
    let mut legend = vec![
        key("cache read", READ, Mark::Line),
        key("cache write", WRITE, Mark::Line),
        key("cumulative cost (right axis)", COST, Mark::Line),
    ];
    if gaps.iter().any(|g| !g.2) {
        legend.push(key("after an idle gap > 5 min, cache still warm", RESUME, Mark::Ring));
    }
    if gaps.iter().any(|g| g.2) {
        legend.push(key("after an idle gap > 5 min: resume", RESUME, Mark::Dot));
    }
    let svg = svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(64)
            .right_y_label_area_size(64)
            .build_cartesian_2d(0.5..n + 0.5, 0.0..top)
            .map_err(err)?
            .set_secondary_coord(0.5..n + 0.5, 0.0..top_cost);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .max_light_lines(0)
            .x_labels(X_LABELS)
            .y_labels(Y_LABELS)
            .x_desc("API call")
            // Twin of the context chart's mesh above: the same axes, another quantity.
            .y_desc("cache (tokens)")
            .x_label_formatter(&|x| call_label(*x, n))
            .y_label_formatter(&|y| tokens(*y as u64))
            .label_style(FONT)
            .draw()
            .map_err(err)?;
        chart
            .configure_secondary_axes()
            .y_labels(Y_LABELS)
            .y_desc("cumulative cost (USD)")
            .y_label_formatter(&|y| usd(*y))
            .label_style(FONT)
            .draw()
            .map_err(err)?;
        let at = |f: fn(&ApiCall) -> u64| {
            calls.iter().enumerate().map(move |(i, c)| (i as f64 + 1.0, f(c) as f64))
        };
        chart
            .draw_series(LineSeries::new(at(|c| c.usage.cache_read), READ.stroke_width(2)))
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                at(|c| c.usage.cache_write_5m + c.usage.cache_write_1h),
                WRITE.stroke_width(2),
            ))
            .map_err(err)?;
        chart
            .draw_secondary_series(LineSeries::new(spent.iter().copied(), COST.stroke_width(2)))
            .map_err(err)?;
        chart
            .draw_secondary_series(gaps.iter().map(|&(x, y, resume)| {
                let style = if resume { RESUME.filled() } else { RESUME.stroke_width(2) };
                Circle::new((x, y), 6, style)
            }))
            .map_err(err)?;
        Ok(())
    });
    Chart { svg, legend }
}

/// One iteration of a loop as the timeline chart needs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct IterationPoint {
    /// The iteration number (0: a baseline).
    pub iteration: u64,
    /// Criteria passing after it, and how many there are.
    pub passed: Option<(u64, u64)>,
    /// Files reverted in it.
    pub reverts: usize,
}

/// Criteria passing per iteration (a line of dots, in journal order), with the iterations
/// in which kit reverted a frozen file marked by a cross at the top.
pub(crate) fn iterations(points: &[IterationPoint]) -> String {
    let n = points.len() as f64;
    let total = points.iter().filter_map(|p| p.passed.map(|(_, t)| t)).max().unwrap_or(1);
    let top = total as f64 + 0.6;
    let labels: Vec<String> = points
        .iter()
        .map(|p| if p.iteration == 0 { "base".into() } else { p.iteration.to_string() })
        .collect();
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(64)
            .build_cartesian_2d(x_range(-0.5, n - 0.5), 0.0..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .max_light_lines(0)
            .x_desc("iteration")
            .y_desc("criteria passing")
            .x_labels((points.len() * 2 + 4).min(40))
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 0.01 && i >= 0.0 {
                    labels.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_labels((total as usize + 1).min(12))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .label_style(FONT)
            .draw()
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                [(-0.5, total as f64), (n - 0.5, total as f64)],
                POINT.stroke_width(1),
            ))
            .map_err(err)?
            .label(format!("all {total} criteria"))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], POINT.stroke_width(1)));
        let passed: Vec<(f64, f64)> = points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.passed.map(|(k, _)| (i as f64, k as f64)))
            .collect();
        chart
            .draw_series(LineSeries::new(passed.iter().copied(), PASS.stroke_width(2)))
            .map_err(err)?;
        chart
            .draw_series(passed.iter().map(|&p| Circle::new(p, 5, PASS.filled())))
            .map_err(err)?
            .label("passing")
            .legend(|(x, y)| Circle::new((x + 7, y), 5, PASS.filled()));
        let cheats: Vec<(f64, f64)> = points
            .iter()
            .enumerate()
            .filter(|(_, p)| p.reverts > 0)
            .map(|(i, _)| (i as f64, total as f64 + 0.3))
            .collect();
        if !cheats.is_empty() {
            chart
                .draw_series(cheats.into_iter().map(|p| Cross::new(p, 6, CHEAT.stroke_width(3))))
                .map_err(err)?
                .label("revert")
                .legend(|(x, y)| Cross::new((x + 7, y), 5, CHEAT.stroke_width(3)));
        }
        legend(&mut chart)
    })
}

/// The current run's cost (USD) after each iteration against its cost cap (a line).
/// `spent` holds (iteration, cumulative cost) in order.
pub(crate) fn cost_cap(spent: &[(u64, f64)], cap: f64) -> String {
    let n = spent.len() as f64;
    let top = spent.last().map_or(0.0, |s| s.1).max(cap) * 1.1 + 1e-6;
    let labels: Vec<String> = spent.iter().map(|s| s.0.to_string()).collect();
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(64)
            .build_cartesian_2d(x_range(-0.5, n.max(1.0) - 0.5), 0.0..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .max_light_lines(0)
            .x_desc("iteration (this run)")
            .y_desc("cost (USD)")
            .x_labels((spent.len() * 2 + 4).min(40))
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 0.01 && i >= 0.0 {
                    labels.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|y| usd(*y))
            .label_style(FONT)
            .draw()
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                [(-0.5, cap), (n.max(1.0) - 0.5, cap)],
                POINT.stroke_width(2),
            ))
            .map_err(err)?
            .label(format!("cost cap {}", usd(cap)))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], POINT.stroke_width(2)));
        let pts: Vec<(f64, f64)> = spent.iter().enumerate().map(|(i, s)| (i as f64, s.1)).collect();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), COST.stroke_width(2)))
            .map_err(err)?;
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 4, COST.filled())))
            .map_err(err)?
            .label("spent")
            .legend(|(x, y)| Circle::new((x + 7, y), 4, COST.filled()));
        legend(&mut chart)
    })
}

/// An API call's number on the x axis: whole numbers from 1 to `n` only (ticks between calls
/// carry no label).
fn call_label(x: f64, n: f64) -> String {
    let i = x.round();
    if (x - i).abs() < 1e-6 && i >= 1.0 && i <= n {
        format!("{i:.0}")
    } else {
        String::new()
    }
}

/// The share of each plot's width kept free on the right for its legend.
const LEGEND_SHARE: f64 = 0.3;

/// The x range of a plot whose data spans `from..to`, widened on the right by
/// [`LEGEND_SHARE`] so that the legend never hides data.
fn x_range(from: f64, to: f64) -> std::ops::Range<f64> {
    from..from + (to - from) / (1.0 - LEGEND_SHARE)
}

/// The legend, in the room [`x_range`] keeps free at the upper right.
fn legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> Drawn {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(FONT)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .draw()
        .map_err(err)
}
