//! The report's HTML, as maud templates: the document, the loop section, the session table
//! and one article per session. Every figure shown is formatted by the function `kit measure`
//! or `kit status` prints it with; the raw figures ride along as `data-` attributes (for the
//! sorting script and for tests) and, whole, as JSON islands at the end of the page.

use maud::{html, Markup, PreEscaped, DOCTYPE};
use serde_json::Value;

use super::charts::{self, IterationPoint};
use super::timeline::Row;
use crate::measure::{self, TurnLine};
use crate::status::Status;
use crate::transcript::{ApiCall, Damage, SessionSummary, TTL_5M_S};
use crate::units;

/// What the page shows about a loop.
pub(crate) enum LoopPart<'a> {
    /// No `longrun/` around the folder kit ran in.
    Absent,
    /// `longrun/` is there but its state could not be read: the error.
    Unreadable(String),
    /// The loop's status and the timeline of its iterations.
    Loop { status: &'a Status, rows: &'a [Row] },
}

/// Everything the page is made of.
pub(crate) struct Page<'a> {
    /// When it was made (RFC 3339).
    pub generated: String,
    /// Where sessions were looked for.
    pub looked_in: Vec<String>,
    /// The loop part.
    pub lp: LoopPart<'a>,
    /// The sessions, oldest first (as `kit measure` lists them).
    pub sessions: &'a [SessionSummary],
    /// Each session's article, rendered by [`session_article`], in the same order.
    pub articles: &'a [String],
    /// Damage over all transcripts read.
    pub damage: &'a Damage,
    /// The `kit.measure/1` document, as `kit measure --json` prints it.
    pub measure: &'a Value,
    /// The `kit.status/1` document, when there is a loop.
    pub status_json: Option<Value>,
    /// When the page is served by `kit report --serve`: how it refreshes itself. None for the
    /// written page, which is then byte for byte what it was before `--serve` existed.
    pub live: Option<Live>,
}

/// How a served page refreshes itself: it asks the server for [`super::serve`]'s version of
/// its inputs every `poll_ms` and reloads when the answer differs from `version`.
pub(crate) struct Live {
    /// The version of the journal and transcripts the page was made from (opaque text).
    pub version: String,
    /// The path that answers the current version (`/version`).
    pub version_path: &'static str,
    /// Time between two asks, milliseconds.
    pub poll_ms: u64,
}

/// Where the session articles go in the page's shell.
const ARTICLES: &str = "<!--kit:articles-->";

/// Write the whole document to `w`: the shell around the articles, and each article in its
/// `<article class="session" id="session-N" data-session="ID">`, streamed rather than
/// assembled (on a big tree the articles are tens of MB).
///
/// Errors: those of `w`.
pub(crate) fn write_document(p: &Page<'_>, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    let shell = document(p);
    let (before, after) = shell.split_once(ARTICLES).unwrap_or((&shell, ""));
    w.write_all(before.as_bytes())?;
    for (i, (article, s)) in p.articles.iter().zip(p.sessions).enumerate() {
        let open = html! { (s.session_id) }.into_string();
        write!(w, "<article class=\"session\" id=\"session-{}\" data-session=\"{open}\">", i + 1)?;
        w.write_all(article.as_bytes())?;
        w.write_all(b"</article>")?;
    }
    w.write_all(after.as_bytes())
}

/// The document's shell, with [`ARTICLES`] where the session articles go.
fn document(p: &Page<'_>) -> String {
    let totals = &p.measure["totals"];
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="generator" content=(format!("kit {}", env!("CARGO_PKG_VERSION")));
                title { "kit report" }
                style { (PreEscaped(CSS)) }
            }
            body {
                header {
                    h1 { "kit report" }
                    p.meta {
                        "made " time datetime=(p.generated) { (p.generated) }
                        " by kit " (env!("CARGO_PKG_VERSION"))
                    }
                    nav {
                        a href="#loop" { "Loop" } " · " a href="#sessions" { "Sessions" }
                    }
                    @if let Some(l) = &p.live {
                        p.meta #kit-live data-version=(l.version) data-path=(l.version_path)
                            data-poll-ms=(l.poll_ms) {
                            "served by " code { "kit report --serve" } ": this page reloads itself "
                            "when the journal or a transcript it reports on changes."
                        }
                    }
                }
                (loop_section(&p.lp))
                section #sessions {
                    h2 { "Sessions" }
                    p.meta { "looked in: " (p.looked_in.join(", ")) }
                    (damage_note(p.damage))
                    @if p.sessions.is_empty() {
                        p { "no sessions found" }
                    } @else {
                        (totals_line(totals))
                        (session_table(p.sessions))
                        (PreEscaped(ARTICLES))
                    }
                }
                script type="application/json" id="kit-measure" {
                    (PreEscaped(json_island(p.measure)))
                }
                @if let Some(s) = &p.status_json {
                    script type="application/json" id="kit-status" {
                        (PreEscaped(json_island(s)))
                    }
                }
                script { (PreEscaped(JS)) }
                @if p.live.is_some() {
                    script { (PreEscaped(LIVE_JS)) }
                }
            }
        }
    };
    markup.into_string()
}

/// JSON safe inside `<script>`: `<`, `>` and `&` (only ever inside strings) as `\u` escapes.
fn json_island(v: &Value) -> String {
    let text = serde_json::to_string(v).unwrap_or_else(|_| "null".into());
    text.replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026")
}

fn damage_note(d: &Damage) -> Markup {
    let mut text = Vec::new();
    // The same lines `kit measure` prints under its table.
    let _ = measure::write_damage(&crate::term::Theme::plain(), d, &mut text);
    let text = String::from_utf8_lossy(&text).into_owned();
    html! {
        @if !text.is_empty() {
            div.damage data-skipped-lines=(d.skipped()) data-repaired-lines=(d.repaired())
                data-unreadable=(d.unreadable.len()) {
                p { strong { "Damaged transcripts." } " These lines and files were skipped; "
                    "every figure below is from the rest." }
                pre { (text) }
            }
        }
    }
}

fn totals_line(t: &Value) -> Markup {
    let u = |k: &str| t[k].as_u64().unwrap_or(0);
    let f = |k: &str| t[k].as_f64().unwrap_or(0.0);
    let tokens =
        u("input_tokens") + u("cache_write_tokens") + u("cache_read_tokens") + u("output_tokens");
    html! {
        p.totals data-sessions=(u("sessions")) data-api-calls=(u("api_calls"))
            data-cost-usd=(t["cost_usd"]) data-compactions=(u("compactions"))
            data-resumes=(u("resumes")) {
            strong { (u("sessions")) " sessions" } ": "
            (units::thousands(u("api_calls"))) " API calls · "
            (units::tokens(tokens)) " tokens · "
            (t["cost_usd"].as_f64().map(units::usd).unwrap_or_else(|| "unpriced".into()))
            " · " (units::plural(u("compactions"), "compaction"))
            " · " (units::plural(u("resumes"), "resume"))
            " (" (units::usd(f("resume_premium_usd"))) " beyond a warm cache)"
            " · wall " (units::secs(f("duration_s"))) ", active " (units::secs(f("active_s")))
        }
    }
}

/// The sortable columns of the session table: (column index in [`measure::COLUMNS`], key).
const SORTABLE: [(usize, &str); 5] =
    [(2, "start"), (3, "duration"), (7, "tokens"), (10, "compactions"), (12, "cost")];

fn session_table(sessions: &[SessionSummary]) -> Markup {
    let ids = measure::unique_prefixes(sessions.iter().map(|s| s.session_id.as_str()), 8);
    html! {
        table.sessions.sortable {
            caption { "One row per session, as " code { "kit measure" } " prints it. "
                span.js-only { "Click WALL, TOKENS, CMP or COST to sort." } }
            thead { tr {
                @for (i, (name, _, right)) in measure::COLUMNS.iter().enumerate() {
                    @let key = SORTABLE.iter().find(|(c, _)| *c == i).map(|(_, k)| *k);
                    th.num[*right] data-key=[key] { (name) }
                }
            } }
            tbody {
                @for (i, (s, id)) in sessions.iter().zip(&ids).enumerate() {
                    @let cells = measure::session_cells(s);
                    tr data-session=(s.session_id) data-start=(s.start_ms.unwrap_or(0))
                        data-duration=(s.duration_s) data-tokens=(s.tokens.total())
                        data-compactions=(s.compactions.len())
                        data-cost=(s.cost_usd.map_or(-1.0, |c| c)) {
                        @for (j, cell) in cells.iter().enumerate() {
                            td.num[measure::COLUMNS[j].2] {
                                @if j == 0 {
                                    a href=(format!("#session-{}", i + 1)) { (id) }
                                } @else { (cell) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// One session's article: its figures, its two charts, its idle gaps and its `--turns`
/// table. Rendered on the thread that read the session, while its calls are in memory.
pub(crate) fn session_article(s: &SessionSummary, calls: &[ApiCall]) -> String {
    let lines = measure::turn_lines(s, calls);
    // The x of each compaction: after the calls listed before it.
    let mut before = 0;
    let mut compactions = vec![];
    for l in &lines {
        match l {
            TurnLine::Call { .. } => before += 1,
            TurnLine::Compaction(_) => compactions.push(charts::compaction_x(before)),
        }
    }
    let gaps: Vec<(usize, &ApiCall)> = calls
        .iter()
        .enumerate()
        .filter(|(_, c)| c.gap_s.is_some_and(|g| g > TTL_5M_S as f64))
        .collect();
    let skipped = s.damage.skipped();
    html! {
        h3 { (s.session_id) " " span.meta { (measure::project_name(&s.project)) " · " (s.source.name())
            @if let Some(t) = &s.start { " · " (t) } } }
        p.facts data-api-calls=(s.api_calls) data-cost-usd=(s.cost_usd.map_or(Value::Null, Value::from))
            data-compactions=(s.compactions.len()) data-resumes=(s.resumes)
            data-peak-context-tokens=(s.peak_context_tokens) data-compaction-point=(s.compaction_point) {
            "wall " (units::secs(s.duration_s)) ", active " (units::secs(s.active_s))
            " · " (units::plural(s.turns, "turn")) " · " (units::plural(s.api_calls, "API call"))
            " · " (units::tokens(s.tokens.total())) " tokens"
            " · cache hit " (s.cache_hit_ratio.map(|r| format!("{:.0}%", r * 100.0)).unwrap_or_else(|| "-".into()))
            " · " (s.cost_usd.map(units::usd).unwrap_or_else(|| "unpriced".into()))
            br;
            "peak context " (units::thousands(s.peak_context_tokens)) " tokens, "
            (format!("{:.0}%", s.peak_context_pct)) " of the compaction point ("
            (units::thousands(s.compaction_point)) ") · "
            (units::plural(s.compactions.len() as u64, "compaction")) " · "
            (units::plural(s.resumes, "resume")) " (" (units::usd(s.resume_premium_usd)) " beyond a warm cache)"
            @if !s.models.is_empty() { " · " (s.models.iter().cloned().collect::<Vec<_>>().join(", ")) }
            @if !s.unpriced_models.is_empty() { " · " span.warn { "unpriced: "
                (s.unpriced_models.iter().cloned().collect::<Vec<_>>().join(", ")) } }
        }
        @if skipped + s.damage.repaired() > 0 || !s.damage.unreadable.is_empty() {
            p.warn data-skipped-lines=(skipped) {
                "damaged transcript: " (units::plural(skipped, "line")) " skipped, "
                (s.damage.repaired()) " repaired"
                @for e in s.damage.examples.iter().take(3) {
                    br; code { (e.path.display()) ":" (e.line) } ": " (e.kind.describe())
                }
                @for u in &s.damage.unreadable { br; code { (u.path.display()) } ": " (u.reason) }
            }
        }
        @if calls.is_empty() {
            p.meta.nothing-to-chart { "no API calls in the main conversation: nothing to chart" }
        } @else {
            figure.chart data-chart="context" {
                @let chart = charts::context(s, calls, &compactions);
                (PreEscaped(chart.svg))
                figcaption { (legend(&chart.legend)) "Context per API call against the compaction point; bands at 50, 70 and 85 %." }
            }
            figure.chart data-chart="cache-cost" {
                @let chart = charts::cache_cost(calls);
                (PreEscaped(chart.svg))
                figcaption { (legend(&chart.legend)) "Cache read and cache write per API call (left axis) and the cumulative cost of the main conversation's calls (right axis)"
                    @if !s.subagents.is_empty() { "; subagents' calls are in the session's total, not here" }
                    "; idle gaps longer than the 5-minute cache TTL marked." }
            }
        }
        @if !gaps.is_empty() {
            table.gaps {
                caption { "Idle gaps longer than the 5-minute cache TTL, and what the call after each cost." }
                thead { tr { th.num { "#" } th.num { "GAP" } th.num { "COST" } th { "RESUME" } th.num { "BEYOND A WARM CACHE" } } }
                tbody {
                    @for (i, c) in &gaps {
                        tr data-gap-s=(c.gap_s.unwrap_or(0.0)) data-resume-premium-usd=(c.resume_premium_usd) {
                            td.num { (i + 1) }
                            td.num { (c.gap_s.map(units::secs).unwrap_or_default()) }
                            td.num { (c.cost_usd.map(units::usd).unwrap_or_else(|| "?".into())) }
                            td { @if c.resume { "yes: the context was re-written" } @else { "no: the cache was still warm" } }
                            td.num { (units::usd(c.resume_premium_usd)) }
                        }
                    }
                }
            }
        }
        @if !s.subagents.is_empty() {
            p.meta { "subagents: "
                @for (k, sub) in s.subagents.iter().enumerate() {
                    @if k > 0 { ", " }
                    (sub.session_id) " (" (units::plural(sub.api_calls, "call")) ", "
                    (sub.cost_usd.map(units::usd).unwrap_or_else(|| "unpriced".into())) ")"
                }
            }
        }
        details.turns {
            summary { "Per API call (" code { "kit measure --turns" } "): " (units::plural(calls.len() as u64, "call")) }
            table.turns {
                thead { tr { @for (i, h) in measure::TURN_COLUMNS.iter().enumerate() {
                    th.num[i != 1 && i != 9] { (h) }
                } } }
                tbody {
                    @for l in &lines {
                        @match l {
                            TurnLine::Call { call, cells } => {
                                tr.resume[call.resume] {
                                    // Numbers are right-aligned by the stylesheet (by column: a
                                    // class on each of 76,000 × 8 cells is 5 MB on a big tree).
                                    @for cell in cells.iter() {
                                        td { (cell) }
                                    }
                                }
                            }
                            TurnLine::Compaction(k) => {
                                tr.compaction { td colspan="10" { "-- " (measure::compaction_text(k)) } }
                            }
                        }
                    }
                }
            }
            p.meta { (measure::turns_total_text(s)) }
        }
    }
    .into_string()
}

/// A chart's legend: each entry's mark in its colour, then its text.
fn legend(keys: &[charts::Key]) -> Markup {
    html! {
        ul.legend {
            @for k in keys {
                li { span class=(format!("mark {}", k.mark.class())) style=(format!("--c: {}", k.color)) {} (k.label) }
            }
        }
    }
}

fn loop_section(lp: &LoopPart<'_>) -> Markup {
    html! {
        section #loop {
            h2 { "Loop" }
            @match lp {
                LoopPart::Absent => p.meta { "No " code { "longrun/" } " here: no loop to show. "
                    "Run " code { "kit report" } " inside a repository with a loop to see it." },
                LoopPart::Unreadable(e) => p.warn { "longrun/ could not be read: " (e) },
                LoopPart::Loop { status, rows } => (loop_body(status, rows)),
            }
            @if let LoopPart::Loop { status, .. } = lp {
                @if let Some(r) = &status.race {
                    (race_table(r, status.owner.as_ref().is_some_and(|o| o.command.contains(" race"))))
                }
            }
        }
    }
}

/// The project's last `kit race`: its lanes side by side, one column each.
fn race_table(r: &crate::longrun::race::RaceView, racing: bool) -> Markup {
    let criteria = |l: &crate::longrun::race::LaneView| {
        if l.total == 0 {
            "-".to_string()
        } else {
            format!("{} of {}", l.passed, l.total)
        }
    };
    type Cell = fn(&crate::longrun::race::LaneView) -> String;
    let rows: [(&str, Cell); 6] = [
        ("agent", |l| l.agent.clone()),
        ("iterations", |l| l.iteration.to_string()),
        ("frozen-file reverts", |l| l.reverts.to_string()),
        ("cost", |l| format!("${:.2}", l.cost_usd)),
        ("outcome", |l| l.outcome.clone()),
        ("branch", |l| l.branch.clone()),
    ];
    html! {
        h3 { "Race " (r.run) }
        p.meta { (r.describe(racing)) }
        table.race {
            caption { "The lanes side by side, as " code { "kit status" } " shows them." }
            thead { tr { th { "" } @for l in &r.lanes { th { "lane " (l.lane) } } } }
            tbody {
                tr { th { "criteria passing" } @for l in &r.lanes { td { (criteria(l)) } } }
                @for (name, cell) in rows.iter() {
                    tr { th { (name) } @for l in &r.lanes { td { (cell(l)) } } }
                }
                tr { th { "why" } @for l in &r.lanes { td { (l.reason) } } }
            }
        }
    }
}

fn loop_body(s: &Status, rows: &[Row]) -> Markup {
    let goal = match (
        s.goal.get("title").and_then(Value::as_str),
        s.goal.get("error").and_then(Value::as_str),
    ) {
        (Some(t), _) => format!("{t} (level {} of 4)", s.goal["level"].as_u64().unwrap_or(0)),
        (_, Some(e)) => format!("unreadable: {e}"),
        _ => "none".into(),
    };
    let outcome = match &s.outcome {
        _ if s.race_last && s.owner.is_none() => {
            s.race.as_ref().map(|r| r.outcome()).unwrap_or_default()
        }
        Some(o) => format!(
            "{}: {}",
            o["outcome"].as_str().unwrap_or("?"),
            o["reason"].as_str().unwrap_or("")
        ),
        None if s.interrupted => {
            "interrupted: the last loop was killed before it ended; kit loop resumes it".into()
        }
        None if s.owner.is_some() => "running".into(),
        None => "no loop has run yet; next: kit loop".into(),
    };
    let c = &s.caps;
    let points: Vec<IterationPoint> = rows
        .iter()
        .map(|r| IterationPoint {
            iteration: r.iteration,
            passed: r.passed,
            reverts: r.reverts.len(),
        })
        .collect();
    // The current run's iterations, cost after each (the agent_end costs status sums).
    let current = rows.last().map_or(0, |r| r.run);
    let mut spent = 0.0;
    let run_cost: Vec<(u64, f64)> = rows
        .iter()
        .filter(|r| r.run == current && r.iteration > 0)
        .map(|r| {
            spent += r.cost_usd.unwrap_or(0.0);
            (r.iteration, spent)
        })
        .collect();
    let cost_pct =
        if c.cost_usd.limit > 0.0 { c.cost_usd.used / c.cost_usd.limit * 100.0 } else { 0.0 };
    html! {
        dl.facts {
            dt { "goal" } dd data-level=(s.goal["level"]) { (goal) }
            dt { "outcome" } dd.outcome data-outcome=(s.outcome.as_ref().and_then(|o| o["outcome"].as_str()).unwrap_or(if s.interrupted { "interrupted" } else { "" })) { (outcome) }
            dt { "owner" } dd { (s.owner.as_ref().map(|h| h.describe()).unwrap_or_else(|| "none".into())) }
            dt { "iteration" } dd data-iteration=(s.iteration) { (s.iteration) }
            dt { "cost" } dd data-cost-used=(c.cost_usd.used) data-cost-limit=(c.cost_usd.limit) {
                (format!("${:.2} of ${:.2}", c.cost_usd.used.max(0.0), c.cost_usd.limit))
                " (" (c.sources.cost) ") "
                meter min="0" max=(c.cost_usd.limit) value=(c.cost_usd.used.max(0.0)) { (format!("{cost_pct:.0}%")) }
            }
            dt { "caps" } dd {
                "iterations " (c.iterations.used) " of " (c.iterations.limit)
                ", wall " (crate::units::format_duration(std::time::Duration::from_secs_f64(c.wall_s.used.max(0.0))))
                " of " (crate::units::format_duration(std::time::Duration::from_secs_f64(c.wall_s.limit.max(0.0))))
                ", no progress " (c.no_progress.used) " of " (c.no_progress.limit)
            }
            dt { "reverts" } dd data-reverts=(s.reverts["total"]) {
                (s.reverts["total"]) " (" (s.reverts["this_run"]) " this run)"
            }
            dt { "next action" } dd { (s.next_action.as_deref().unwrap_or("(none in longrun/progress.md)")) }
        }
        @for p in &s.problems {
            p.warn { "problem: " (p["file"].as_str().unwrap_or("?")) " " (p["error"].as_str().unwrap_or("?")) }
        }
        @if !s.skipped_lines.is_empty() {
            p.warn data-skipped-journal-lines=(s.skipped_lines.len()) {
                "damaged journal: skipped lines " (format!("{:?}", s.skipped_lines))
            }
        }
        @if let Some(u) = &s.unknown_events {
            @for line in u.describe() {
                p.warn data-unknown-journal-events=(u.newer + u.misread.len()) { "journal: " (line) }
            }
        }
        (evidence(s))
        @if !rows.is_empty() {
            h3 { "Iterations" }
            figure.chart data-chart="iterations" {
                (PreEscaped(charts::iterations(&points)))
                figcaption { "Criteria passing after each iteration (base: the baseline of a run); a cross where kit reverted a frozen file." }
            }
            @if !run_cost.is_empty() {
                figure.chart data-chart="cost-cap" {
                    (PreEscaped(charts::cost_cap(&run_cost, c.cost_usd.limit)))
                    figcaption { "The current run's cost after each iteration against its cost cap." }
                }
            }
            table.timeline {
                thead { tr {
                    th.num { "RUN" } th.num { "ITERATION" } th { "STARTED" } th.num { "DURATION" } th.num { "COST" }
                    th { "AGENT" } th.num { "PASSING" } th { "PROGRESS" } th { "COMMIT" } th { "REVERTED" } th { "WAITS, FLAPS, CAPS" }
                } }
                tbody {
                    @for r in rows {
                        tr data-iteration=(r.iteration) data-cost-usd=(r.cost_usd.map_or(Value::Null, Value::from))
                            data-reverts=(r.reverts.len()) {
                            td.num { (r.run) }
                            td.num { @if r.iteration == 0 { "baseline" } @else { (r.iteration) } }
                            td { (r.started.as_deref().unwrap_or("")) }
                            td.num { (r.duration_ms.map(|ms| crate::units::format_duration(std::time::Duration::from_millis(ms))).unwrap_or_default()) }
                            td.num { (r.cost_usd.map(units::usd).unwrap_or_default()) }
                            td { (r.agent.as_deref().unwrap_or("")) }
                            td.num { @if let Some((p, t)) = r.passed { (p) " of " (t) } }
                            td { @match r.progress { Some(true) => "yes", Some(false) => "no", None => "" } }
                            td { code { (r.commit.as_deref().map(|c| &c[..c.len().min(12)]).unwrap_or("")) } }
                            td.bad { @for (k, (path, kind)) in r.reverts.iter().enumerate() {
                                @if k > 0 { br; } (path) " (" (kind.replace('_', " ")) ")"
                            } }
                            td { @for w in &r.waits { span.wait { (w) } br; }
                                 @for f in &r.flaps { span.warn { (f) } br; }
                                 @if let Some(cap) = &r.cap { span.bad { "cap: " (cap) } } }
                        }
                    }
                }
            }
        }
    }
}

fn evidence(s: &Status) -> Markup {
    html! {
        h3 { "Last evidence" }
        @match &s.criteria {
            None => p.meta { "The criteria have not run yet." },
            Some(c) => {
                p data-passed=(c["passed"]) data-total=(c["total"]) data-commit=(c["commit"].as_str().unwrap_or("")) {
                    (c["passed"]) " of " (c["total"]) " criteria pass at "
                    @match c["iteration"].as_u64().unwrap_or(0) { 0 => "the baseline", n => { "iteration " (n) } }
                    ", commit " code { (c["commit"].as_str().unwrap_or("none")) }
                    @if c["dirty"].as_bool().unwrap_or(false) { " + uncommitted changes" }
                    @if !c["verified"].as_bool().unwrap_or(true) { ", tree changed meanwhile" }
                }
                table.criteria {
                    thead { tr { th { "RESULT" } th { "KIND" } th { "COMMAND" } th.num { "GOAL.MD LINE" } th { "WHY" } } }
                    tbody {
                        @for r in c["results"].as_array().into_iter().flatten() {
                            @let passed = r["passed"].as_bool().unwrap_or(false);
                            tr {
                                td.ok[passed].bad[!passed] { @if passed { "pass" } @else { "FAIL" } }
                                td { (r["kind"].as_str().unwrap_or("")) }
                                td { code { (r["command"].as_str().unwrap_or("")) } }
                                td.num { (r["line"]) }
                                td {
                                    @if !passed {
                                        @if r["timed_out"].as_bool().unwrap_or(false) { "timed out " }
                                        @else if let Some(code) = r["exit"].as_i64().filter(|&c| c != 0) { "exit " (code) " " }
                                        @for m in r["missing"].as_array().into_iter().flatten() {
                                            "missing " code { (m.as_str().unwrap_or("")) } " "
                                        }
                                        @let tail = r["output_tail"].as_str().unwrap_or("");
                                        @if !tail.trim().is_empty() { pre { (tail.trim_end()) } }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The page's stylesheet: readable at a laptop's width, and printable.
const CSS: &str = r#"
:root { --fg: #1d1f23; --muted: #5b6270; --line: #d8dce3; --bg: #fff; --warn: #a15c00; --bad: #b3261e; --ok: #1e7a45; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); margin: 0 auto; padding: 1rem 1.5rem 3rem; max-width: 1280px; }
h1 { font-size: 1.6rem; margin: .2rem 0; } h2 { font-size: 1.3rem; border-bottom: 2px solid var(--line); padding-bottom: .2rem; margin-top: 2rem; }
h3 { font-size: 1.05rem; margin: 1.4rem 0 .3rem; word-break: break-all; }
.meta { color: var(--muted); font-weight: normal; } .warn { color: var(--warn); } .bad { color: var(--bad); } .ok { color: var(--ok); }
nav a { color: inherit; }
code, pre { font: 13px/1.35 ui-monospace, "DejaVu Sans Mono", Menlo, monospace; }
pre { background: #f5f6f8; padding: .5rem .7rem; overflow-x: auto; white-space: pre-wrap; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; font-size: 13px; }
table.gaps, table.criteria, table.timeline { width: auto; }
caption { text-align: left; color: var(--muted); padding-bottom: .3rem; }
th, td { padding: .2rem .45rem; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: #f0f2f5; font-weight: 600; white-space: nowrap; }
.num, table.turns td { text-align: right; font-variant-numeric: tabular-nums; }
table.turns td:nth-child(2), table.turns td:nth-child(10), table.turns tr.compaction td { text-align: left; }
th[data-key] { cursor: pointer; text-decoration: underline dotted; }
th[aria-sort="descending"]::after { content: " ▼"; } th[aria-sort="ascending"]::after { content: " ▲"; }
.js-only { display: none; } .js .js-only { display: inline; }
tr.resume td { color: var(--warn); } tr.compaction td { color: #78289f; font-style: italic; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: .5rem 0; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; }
meter { width: 10rem; vertical-align: middle; }
figure.chart { margin: .6rem 0; } figure.chart svg { width: 100%; height: auto; max-width: 960px; display: block; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: 13px; }
ul.legend { list-style: none; padding: 0; margin: .2rem 0; display: flex; flex-wrap: wrap; gap: .1rem 1.1rem; color: var(--fg); }
.mark { display: inline-block; width: 16px; height: 10px; margin-right: .35rem; vertical-align: middle; -webkit-print-color-adjust: exact; print-color-adjust: exact; }
.mark.line { height: 0; border-top: 3px solid var(--c); } .mark.dash { height: 0; border-top: 3px dashed var(--c); }
.mark.band { background: var(--c); } .mark.dot { width: 10px; border-radius: 50%; background: var(--c); }
.mark.ring { width: 10px; border-radius: 50%; border: 2px solid var(--c); }
.damage { border-left: 4px solid var(--warn); padding: .2rem .8rem; background: #fff8ec; }
article.session { border-top: 1px solid var(--line); margin-top: 1.2rem; }
details.turns summary { cursor: pointer; color: var(--muted); }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  nav, .js-only { display: none !important; }
  figure.chart, table.criteria, dl.facts { break-inside: avoid; }
  article.session { break-before: auto; }
  h2, h3 { break-after: avoid; }
  th { background: none; }
  figure.chart svg { max-width: 100%; border: none; }
}
"#;

/// Sorting the session table by a column (WALL, TOKENS, CMP, COST) and opening every
/// per-call table before printing. Without JavaScript the page reads the same, unsorted.
const JS: &str = r#"
document.documentElement.classList.add("js");
document.querySelectorAll("table.sortable").forEach(function (t) {
  t.querySelectorAll("th[data-key]").forEach(function (th) {
    th.addEventListener("click", function () {
      var key = th.dataset.key, desc = th.getAttribute("aria-sort") !== "descending";
      t.querySelectorAll("th[data-key]").forEach(function (o) { o.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", desc ? "descending" : "ascending");
      var body = t.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) { var d = parseFloat(a.dataset[key]) - parseFloat(b.dataset[key]); return desc ? -d : d; });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
window.addEventListener("beforeprint", function () {
  document.querySelectorAll("details").forEach(function (d) { d.open = true; });
});
"#;

/// A served page's refresh: ask the server for the version of its inputs every few seconds
/// (`#kit-live`'s `data-poll-ms`) and reload when it differs from the page's; say so while the
/// server does not answer, and go on asking.
const LIVE_JS: &str = r#"
(function () {
  var live = document.getElementById("kit-live");
  if (!live || !window.fetch) return;
  var version = live.dataset.version, every = parseInt(live.dataset.pollMs, 10) || 2000;
  var said = live.innerHTML;
  function again() { setTimeout(ask, every); }
  function ask() {
    fetch(live.dataset.path, { cache: "no-store" }).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.text();
    }).then(function (v) {
      if (v.trim() !== version) {
        live.textContent = "the journal or a transcript changed: reloading";
        location.reload();
        return;
      }
      live.classList.remove("warn");
      live.innerHTML = said;
      again();
    }, function (e) {
      live.classList.add("warn");
      live.textContent = "kit report --serve does not answer (" + e.message + "): this page " +
        "refreshes again once it does";
      again();
    });
  }
  again();
})();
"#;
