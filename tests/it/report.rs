//! `kit report`: the page holds the very figures of `kit measure --json` and `kit status --json`
//! (its JSON islands equal the commands' documents, and the figures shown in tables equal the
//! documents' fields), a chart for each session, the `--turns` table cell for cell, and a
//! damaged transcript reported on the page without failing. The browser check is
//! `scripts/report-screenshot.sh` (Chromium is not on every CI machine).

use std::path::Path;

use kit_harness::longrun::event::{fixture, newer_fixture};
use serde_json::{json, Value};

use crate::measure::{claude_tree, measure_json, sample, samples};
use crate::util::kit;

/// `kit report --out report.html ARGS…` in `dir`: its stdout and the page.
fn report(dir: &Path, args: &[&str]) -> (String, String) {
    let out = kit(dir).args(["report", "--out", "report.html"]).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    (stdout, std::fs::read_to_string(dir.join("report.html")).unwrap())
}

/// The JSON island `<script type="application/json" id="ID">` of the page.
fn island(html: &str, id: &str) -> Value {
    let open = format!("<script type=\"application/json\" id=\"{id}\">");
    let start = html.find(&open).unwrap_or_else(|| panic!("no {id} island")) + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).unwrap()
}

/// The value of attribute `attr` on every element whose opening tag starts with `tag`.
fn attrs(html: &str, tag: &str, attr: &str) -> Vec<String> {
    let re =
        regex::Regex::new(&format!(r#"{}[^>]*\s{attr}="([^"]*)""#, regex::escape(tag))).unwrap();
    re.captures_iter(html).map(|c| c[1].to_string()).collect()
}

/// [`attrs`], each value read as JSON by serde_json, as the documents compared with were (its
/// float parsing may differ from Rust's by one unit in the last place: equal text, equal
/// numbers).
fn json_attrs(html: &str, tag: &str, attr: &str) -> Vec<Value> {
    attrs(html, tag, attr).iter().map(|v| serde_json::from_str(v).unwrap()).collect()
}

/// The session articles of the page, in order.
fn articles(html: &str) -> Vec<&str> {
    html.split("<article class=\"session\"").skip(1).collect()
}

/// The API calls of a session's main conversation (its total less its subagents').
fn main_calls(s: &Value) -> u64 {
    let subs: u64 = s["subagents"]
        .as_array()
        .map(|a| a.iter().map(|x| x["api_calls"].as_u64().unwrap()).sum())
        .unwrap_or(0);
    s["api_calls"].as_u64().unwrap() - subs
}

#[test]
fn report_on_the_samples_holds_measures_json_and_the_charts_of_each_session() {
    let d = tempfile::tempdir().unwrap();
    let root = samples();
    let root = root.to_str().unwrap();
    let (stdout, html) = report(d.path(), &[root]);
    let doc = measure_json(d.path(), &[root]);
    assert_eq!(island(&html, "kit-measure"), doc, "the island is kit measure --json");
    let sessions = doc["sessions"].as_array().unwrap();
    assert!(sessions.len() >= 10, "{}", sessions.len());

    // The totals shown, and each session's row, are the document's figures.
    let t = &doc["totals"];
    assert_eq!(
        json_attrs(&html, "<p class=\"totals\"", "data-api-calls"),
        [t["api_calls"].clone()]
    );
    assert_eq!(json_attrs(&html, "<p class=\"totals\"", "data-cost-usd"), [t["cost_usd"].clone()]);
    let want: Vec<Value> =
        sessions
            .iter()
            .map(|s| {
                if s["cost_usd"].is_null() {
                    serde_json::json!(-1)
                } else {
                    s["cost_usd"].clone()
                }
            })
            .collect();
    assert_eq!(json_attrs(&html, "<tr data-session", "data-cost"), want);
    let cmp = attrs(&html, "<tr data-session", "data-compactions");
    let want: Vec<String> = sessions.iter().map(|s| s["compactions"].to_string()).collect();
    assert_eq!(cmp, want);
    let total: u64 = t["api_calls"].as_u64().unwrap();
    assert!(stdout.contains(&format!("{} · {total} API calls", sessions.len())), "{stdout}");

    // One article per session; two charts (context; cache and cost), each an SVG with content,
    // for every session with calls in its main conversation.
    let arts = articles(&html);
    assert_eq!(arts.len(), sessions.len());
    for (a, s) in arts.iter().zip(sessions) {
        assert!(a.contains(&format!("data-session=\"{}\"", s["session_id"].as_str().unwrap())));
        let charts = attrs(a, "<figure class=\"chart\"", "data-chart");
        if main_calls(s) == 0 {
            assert!(charts.is_empty() && a.contains("nothing to chart"), "{}", s["session_id"]);
            continue;
        }
        assert_eq!(charts, ["context", "cache-cost"], "{}", s["session_id"]);
        assert_eq!(a.matches("<svg").count(), 2);
        assert!(a.matches("<polyline").count() >= 3, "{}", s["session_id"]);
    }
    // Self-contained: nothing is fetched.
    for shut in ["src=\"http", "href=\"http", "url(http", "@import", "<link"] {
        assert!(!html.contains(shut), "{shut} in the page");
    }
}

#[test]
fn the_per_call_table_is_kit_measure_turns_cell_for_cell_with_the_resume_marked() {
    let name = "spotter_4d5611e5-241a-462a-8d15-5122611a9569.L261-L300.excerpt";
    let bytes = std::fs::read(sample(&format!("claude-code/{name}.jsonl"))).unwrap();
    let (d, root) = claude_tree(&[(&format!("{name}.jsonl"), &bytes)]);
    let (_, html) = report(d.path(), &[root.to_str().unwrap()]);
    let out = kit(d.path()).args(["measure", "--turns", "spotter"]).arg(&root).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // The text table's call rows, as cells (NOTE's words joined back).
    let want: Vec<Vec<String>> = text
        .lines()
        .skip(2)
        .filter(|l| !l.starts_with("total") && !l.trim_start().starts_with("--"))
        .map(|l| {
            let mut cells: Vec<String> = l.split_whitespace().map(str::to_string).collect();
            let note = cells.split_off(9.min(cells.len())).join(" ");
            cells.push(note);
            cells
        })
        .collect();
    assert_eq!(want.len(), 4, "{text}");
    let table = html.split("<table class=\"turns\">").nth(1).unwrap();
    let table = &table[..table.find("</table>").unwrap()];
    let row_re = regex::Regex::new(r"(?s)<tr[^>]*>(.*?)</tr>").unwrap();
    let cell_re = regex::Regex::new(r"(?s)<td[^>]*>(.*?)</td>").unwrap();
    let got: Vec<Vec<String>> = row_re
        .captures_iter(table.split("<tbody>").nth(1).unwrap())
        .map(|r| cell_re.captures_iter(&r[1]).map(|c| c[1].to_string()).collect())
        .collect();
    assert_eq!(got, want);
    assert_eq!(html.matches("<tr class=\"resume\">").count(), 1);
    assert!(html.contains(&text.lines().last().unwrap().to_string()), "the total line");
    // The resume is in the idle-gap table with its premium, as measure --json has it.
    let doc = measure_json(d.path(), &[root.to_str().unwrap()]);
    let premium = doc["sessions"][0]["resume_premium_usd"].clone();
    assert_eq!(json_attrs(&html, "<tr data-gap-s", "data-resume-premium-usd"), [premium]);
}

#[test]
fn a_damaged_transcript_is_reported_on_the_page_and_the_rest_is_shown() {
    let mut bytes =
        std::fs::read(sample("claude-code/fasthooks_sample_main_transcript.jsonl")).unwrap();
    let lines = bytes.iter().filter(|&&b| b == b'\n').count();
    bytes.extend_from_slice(b"{\"type\":\"assistant\", broken\n");
    let (d, root) = claude_tree(&[("s.jsonl", &bytes)]);
    let (stdout, html) = report(d.path(), &[root.to_str().unwrap()]);
    assert!(stdout.contains("damaged: 1 line skipped"), "{stdout}");
    assert_eq!(attrs(&html, "<div class=\"damage\"", "data-skipped-lines"), ["1"]);
    assert!(html.contains(&format!("s.jsonl:{}: malformed JSON", lines + 1)), "file and line");
    assert_eq!(island(&html, "kit-measure")["skipped_lines"], 1);
    let arts = articles(&html);
    assert_eq!(arts.len(), 1);
    assert_eq!(attrs(arts[0], "<figure class=\"chart\"", "data-chart").len(), 2);
    assert!(arts[0].contains("damaged transcript: 1 line skipped"));
}

#[test]
fn report_in_a_loop_repository_shows_what_kit_status_shows_and_each_iteration() {
    let d = tempfile::tempdir().unwrap();
    let out = kit(d.path()).args(["rehearse", "--keep", "sb"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let project = d.path().join("sb/project");
    let out = kit(&project).args(["report", "../home/.claude"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.starts_with("report: longrun/.runs/report.html\n"), "{stdout}");
    let html = std::fs::read_to_string(project.join("longrun/.runs/report.html")).unwrap();

    let status = kit(&project).args(["status", "--json"]).output().unwrap();
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(island(&html, "kit-status"), status, "the island is kit status --json");
    let measure = measure_json(&project, &["../home/.claude"]);
    assert_eq!(island(&html, "kit-measure"), measure);

    assert_eq!(attrs(&html, "<dd class=\"outcome\"", "data-outcome"), ["done"]);
    let cost = status["caps"]["cost_usd"]["used"].clone();
    assert_eq!(json_attrs(&html, "<dd", "data-cost-used"), [cost]);
    let c = &status["criteria"];
    assert_eq!(attrs(&html, "<p", "data-commit"), [c["commit"].as_str().unwrap()]);
    assert_eq!(json_attrs(&html, "<p", "data-passed"), [c["passed"].clone()]);
    // The timeline: the baseline and iteration 1, the criteria passing after each.
    assert_eq!(attrs(&html, "<tr", "data-iteration"), ["0", "1"]);
    let charts = attrs(&html, "<figure class=\"chart\"", "data-chart");
    assert!(charts.starts_with(&["iterations".to_string()]), "{charts:?}");
    // And the fake agent's session, charted.
    assert_eq!(articles(&html).len(), measure["sessions"].as_array().unwrap().len());
}

#[test]
fn events_of_a_newer_kit_are_counted_on_the_page_not_dropped() {
    let d = crate::util::git_repo();
    assert!(kit(d.path()).arg("init").output().unwrap().status.success());
    let journal = [
        fixture(
            "loop_start",
            json!({"command":"kit loop","pid":7,"run":1,"ts":"2026-10-01T09:00:00Z"}),
        ),
        newer_fixture("teleport", json!({"to":"mars","ts":"2026-10-01T09:00:01Z"})),
        fixture("loop_end", json!({"outcome":"interrupted","ts":"2026-10-01T09:00:02Z"})),
    ]
    .map(|l| l.to_string() + "\n")
    .concat();
    std::fs::write(d.path().join("longrun/journal.jsonl"), journal).unwrap();
    let (_, html) = report(d.path(), &[d.path().to_str().unwrap()]);
    assert_eq!(attrs(&html, "<p class=\"warn\"", "data-unknown-journal-events"), ["1"]);
    assert!(html.contains("journal: 1 event of a newer kit (teleport) not shown"), "{html}");
    assert_eq!(island(&html, "kit-status")["unknown_events"]["names"][0], "teleport");
}

#[test]
fn open_without_a_desktop_says_so_and_a_folder_is_no_out_file() {
    let d = tempfile::tempdir().unwrap();
    let root = samples().join("codex");
    let out = kit(d.path())
        .args(["report", "--open"])
        .arg(&root)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.starts_with("report: kit-report.html\n"), "{stdout}");
    assert!(stdout.contains("--open: no desktop opener here"), "{stdout}");
    assert!(d.path().join("kit-report.html").is_file());

    std::fs::create_dir(d.path().join("folder")).unwrap();
    let out = kit(d.path()).args(["report", "--out", "folder"]).arg(&root).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a folder"));
}
