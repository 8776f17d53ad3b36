//! `kit report`: the page holds the very figures of `kit measure --json` and `kit status --json`
//! (its JSON islands equal the commands' documents, and the figures shown in tables equal the
//! documents' fields), a chart for each session, the `--turns` table cell for cell, and a
//! damaged transcript reported on the page without failing; `--serve` answers the same page
//! over loopback and follows the journal and transcripts as they grow. The browser check is
//! `scripts/report-screenshot.sh` (and its `--serve` mode; Chromium is not on every CI machine).

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

/// A running `kit report --serve 127.0.0.1:0 …`: the child, its port, and its stdout's lines
/// as they come (read on a thread, so that a test waits on a line with a deadline).
struct Served {
    child: std::process::Child,
    port: u16,
    lines: std::sync::mpsc::Receiver<String>,
}

/// How long a test waits for the server to say something: generous, for a loaded machine.
const SERVE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

impl Served {
    fn start(dir: &Path, args: &[&str]) -> Served {
        let mut child = kit(dir)
            .args(["report", "--serve", "127.0.0.1:0"])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let first = lines.recv_timeout(SERVE_DEADLINE).expect("the first line of --serve");
        let re = regex::Regex::new(
            r"^serving the report on http://127\.0\.0\.1:(\d+)/ \(Ctrl-C stops\)$",
        )
        .unwrap();
        let port = re.captures(&first).unwrap_or_else(|| panic!("first line: {first}"))[1]
            .parse()
            .unwrap();
        Served { child, port, lines }
    }

    /// `METHOD PATH` over HTTP/1.0 (one response, no chunks, the connection closed after it)
    /// with `host` as the Host header: (status code, headers, body).
    fn ask(&self, method: &str, path: &str, host: &str) -> (u16, String, String) {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(SERVE_DEADLINE)).unwrap();
        write!(s, "{method} {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap();
        let raw = String::from_utf8(raw).unwrap();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
        let code = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        (code, head.to_string(), body.to_string())
    }

    fn get(&self, path: &str) -> String {
        let (code, head, body) = self.ask("GET", path, &format!("127.0.0.1:{}", self.port));
        assert_eq!(code, 200, "{head}\n{body}");
        body
    }
}

/// The loop's journal of `events_of_a_newer_kit…` without the newer event: one interrupted run.
const ONE_RUN: &str = concat!(
    r#"{"command":"kit loop","event":"loop_start","pid":7,"run":1,"ts":"2026-10-01T09:00:00Z"}"#,
    "\n",
    r#"{"event":"loop_end","outcome":"interrupted","reason":"stopped by hand","ts":"2026-10-01T09:00:02Z"}"#,
    "\n",
);

#[test]
fn serve_follows_the_journal_and_the_transcripts_and_ends_on_sigterm() {
    let d = crate::util::git_repo();
    assert!(kit(d.path()).arg("init").output().unwrap().status.success());
    std::fs::write(d.path().join("longrun/journal.jsonl"), ONE_RUN).unwrap();
    let name = "fasthooks_sample_main_transcript.jsonl";
    let bytes = std::fs::read(sample(&format!("claude-code/{name}"))).unwrap();
    let (_t, root) = claude_tree(&[("one.jsonl", &bytes)]);
    let served = Served::start(d.path(), &[root.to_str().unwrap()]);
    let v1 = served.get("/version");
    assert_eq!(v1.len(), 16, "{v1}");
    let html = served.get("/");
    assert_eq!(attrs(&html, "<p class=\"meta\" id=\"kit-live\"", "data-version"), [v1.as_str()]);
    assert_eq!(attrs(&html, "<dd class=\"outcome\"", "data-outcome"), ["interrupted"]);
    assert_eq!(articles(&html).len(), 1);
    // The same page as `kit report` writes, less the live note and its script.
    let (_, written) = report(d.path(), &[root.to_str().unwrap()]);
    assert!(!written.contains("kit-live"));
    assert_eq!(island(&html, "kit-status"), island(&written, "kit-status"));
    assert_eq!(island(&html, "kit-measure"), island(&written, "kit-measure"));
    // Nothing fetched from elsewhere; asking the server is all the page may do.
    for shut in ["src=\"http", "href=\"http", "url(http", "@import", "<link"] {
        assert!(!html.contains(shut), "{shut} in the page");
    }
    let (_, head, _) = served.ask("GET", "/", &format!("localhost:{}", served.port));
    assert!(head.contains("Content-Security-Policy: default-src 'none';"), "{head}");

    // The journal grows: a second run ends at a cap.
    let mut j = std::fs::OpenOptions::new()
        .append(true)
        .open(d.path().join("longrun/journal.jsonl"))
        .unwrap();
    std::io::Write::write_all(
        &mut j,
        concat!(
            r#"{"command":"kit loop","event":"loop_start","pid":8,"run":2,"ts":"2026-10-01T10:00:00Z"}"#,
            "\n",
            r#"{"event":"loop_end","outcome":"cap","reason":"the served test cap","iteration":3,"iterations":3,"exit":3,"run":2,"ts":"2026-10-01T10:00:09Z"}"#,
            "\n",
        )
        .as_bytes(),
    )
    .unwrap();
    drop(j);
    let v2 = served.get("/version");
    assert_ne!(v1, v2, "the journal grew");
    let html = served.get("/");
    assert_eq!(attrs(&html, "<p class=\"meta\" id=\"kit-live\"", "data-version"), [v2.as_str()]);
    assert_eq!(attrs(&html, "<dd class=\"outcome\"", "data-outcome"), ["cap"]);
    assert!(html.contains(">cap: the served test cap</dd>"), "the new loop_end");

    // A transcript appears under the PATH reported on.
    std::fs::write(root.join("projects/proj/two.jsonl"), &bytes).unwrap();
    let v3 = served.get("/version");
    assert_ne!(v2, v3, "a transcript appeared");
    assert_eq!(articles(&served.get("/")).len(), 2);
    assert_eq!(served.get("/version"), v3, "steady while nothing changes");

    // Only GET and HEAD of / and /version, from a loopback host name.
    let host = format!("127.0.0.1:{}", served.port);
    let (code, head, body) = served.ask("HEAD", "/", &host);
    assert_eq!((code, body.as_str()), (200, ""), "{head}");
    let (code, head, _) = served.ask("POST", "/version", &host);
    assert_eq!(code, 405);
    assert!(head.contains("Allow: GET, HEAD"), "{head}");
    assert_eq!(served.ask("GET", "/journal.jsonl", &host).0, 404);
    assert_eq!(served.ask("GET", "/", &format!("attacker.example:{}", served.port)).0, 403);

    // SIGTERM ends it cleanly: exit 0 and a last line saying so.
    let Served { mut child, lines, .. } = served;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let mut last = String::new();
    while let Ok(l) = lines.recv_timeout(SERVE_DEADLINE) {
        last = l;
    }
    assert_eq!(last, "stopped serving (SIGTERM)");
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

#[test]
fn serve_refuses_an_address_that_is_not_loopback() {
    let d = tempfile::tempdir().unwrap();
    for addr in ["0.0.0.0", "0.0.0.0:8080", "192.168.1.5:8080", "[::]:8080", "example.com:80"] {
        let out = kit(d.path()).args(["report", "--serve", addr]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{addr}: {stderr}");
        assert!(
            stderr.contains("not a loopback address") || stderr.contains("not an IP address"),
            "{addr}: {stderr}"
        );
        assert!(stderr.contains("ssh -L"), "{addr}: the next step: {stderr}");
        assert!(out.stdout.is_empty(), "{addr}: nothing served");
    }
    let out = kit(d.path()).args(["report", "--serve", "--out", "x.html"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "--serve writes no file");
}
