//! What an iteration spends *while it runs*, so that the cost cap holds inside an iteration
//! (issue 22): the agent's output is read as it comes, each API call priced as soon as it
//! appears, and the loop ends the agent's process group when the run's spend plus this running
//! figure reaches the cap ([`Meter`], polled by [`super::run`] with the process).
//!
//! Sources, per API call:
//! - Claude Code stream-json (formats/claude-code.md §7, §3.3): every `assistant` event carries
//!   its API call's `message.usage` (`input_tokens`, `cache_creation_input_tokens` with the
//!   `cache_creation` 5m/1h split, `cache_read_input_tokens`, `output_tokens`). A response with
//!   several content blocks is printed as several events sharing `message.id` and the same
//!   usage (the output count is final only on the last): one call per `message.id`, each field
//!   its largest value seen, as the transcript engine dedups. The model is `message.model`, else
//!   `system/init`'s. Subagents' calls (`parent_tool_use_id` set) are billed too and counted.
//! - Codex `exec --json` (formats/codex.md §14.2) prints usage only in `turn.completed`, the
//!   thread's cumulative total at the end of a turn: one `codex exec` is one turn, so the stream
//!   alone says nothing until the end. The rollout Codex writes as it goes
//!   (`$CODEX_HOME/sessions/…/rollout-…-<thread_id>.jsonl`, the id from the stream's first event
//!   `thread.started`) holds an `event_msg` `token_count` after every API call with the
//!   cumulative `total_token_usage` (§5.1): the meter follows it and prices each change of the
//!   cumulative (echoes and context estimates, which leave it unchanged, are skipped; a
//!   decrease re-baselines). The model: `-m` from config.toml, else the rollout's
//!   `turn_context`. Granularity is one API call while the rollout is found; without it (an
//!   `--ephemeral` run, another `CODEX_HOME`), one turn (`turn.completed`), i.e. the whole
//!   iteration.
//! - A command line (`OutputFormat::Detect`) is read as both.
//!
//! Each call is priced by itself with kit's price table ([`crate::prices::ModelPrice::cost`],
//! so the long-context tier applies per request). A model the table does not know is not
//! counted here (it is listed in [`Streamed::unpriced`]; the loop then falls back to the agent's
//! own figure at the end, as for an unpriced `result`).

use std::collections::HashMap;
use std::os::unix::fs::FileExt;

use super::*;

/// How often the rollout of a Codex thread is looked for until it is found.
const ROLLOUT_LOOK: Duration = Duration::from_millis(200);

/// Read no more than this per poll (the rest comes at the next one).
const POLL_BYTES: usize = 1 << 20;

/// What an iteration spent by the stream's own account, as far as it was read.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Streamed {
    /// USD, each API call priced by kit's table.
    pub cost_usd: f64,
    /// API calls seen (priced or not).
    pub api_calls: u64,
    /// USD of the last priced API call.
    pub last_call_usd: f64,
    /// Tokens summed over the calls, with the model of the last one.
    pub usage: AgentUsage,
    /// Models seen that the price table does not know (their calls count $0 here).
    pub unpriced: Vec<String>,
    /// Where the figures came from: `stream` (Claude Code's assistant events), `rollout`
    /// (Codex's `token_count` records), `turn` (only Codex's `turn.completed`), or `none`.
    pub source: &'static str,
}

/// A file read as it grows, one complete line at a time.
#[derive(Debug, Default)]
struct Tail {
    read: u64,
    partial: Vec<u8>,
}

impl Tail {
    /// Call `f` on every complete line added to `file` since the last call.
    fn lines(&mut self, file: &File, mut f: impl FnMut(&[u8])) {
        let mut buf = vec![0u8; 64 * 1024];
        let mut budget = POLL_BYTES;
        while budget > 0 {
            let n = match file.read_at(&mut buf, self.read) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            self.read += n as u64;
            budget = budget.saturating_sub(n);
            self.partial.extend_from_slice(&buf[..n]);
            let mut start = 0;
            while let Some(end) = self.partial[start..].iter().position(|&b| b == b'\n') {
                f(&self.partial[start..start + end]);
                start += end + 1;
            }
            self.partial.drain(..start);
        }
    }
}

/// One Claude Code API call: its model and usage (each field the largest seen).
#[derive(Clone, Debug)]
struct Call {
    model: String,
    usage: Usage,
    cost: f64,
}

/// The Codex cumulative counters of a `token_count` or `turn.completed`: (input incl. cached,
/// cached, output).
type Cumulative = (u64, u64, u64);

/// The running cost of one agent run, read from its log (and, for Codex, its rollout) while
/// it runs. Poll it with [`Meter::poll`]; it never fails: unreadable or malformed lines are
/// skipped.
#[derive(Debug)]
pub struct Meter {
    format: OutputFormat,
    prices: PriceTable,
    /// `system/init`'s model (Claude), or the configured / rollout model (Codex).
    model: Option<String>,
    /// The model given with `-m`: it wins over the rollout's.
    configured: Option<String>,
    log: Tail,
    calls: HashMap<String, Call>,
    /// Claude message ids in the order first seen (the last one is "the last call").
    order: Vec<String>,
    codex_cost: f64,
    codex_calls: u64,
    codex_last: f64,
    codex_usage: Usage,
    codex_prev: Option<Cumulative>,
    /// The last `turn.completed` cumulative on the stream.
    turn_total: Option<Cumulative>,
    thread_id: Option<String>,
    rollout: Option<(File, Tail)>,
    rollout_looked: Option<Instant>,
    unpriced: Vec<String>,
}

impl Meter {
    /// A meter for an agent printing `format`, pricing with `prices`; `model` is the model
    /// kit passed (`--model`/`-m`), if any.
    pub fn new(format: OutputFormat, prices: &PriceTable, model: Option<&str>) -> Meter {
        let configured = model.map(str::trim).filter(|m| !m.is_empty()).map(str::to_string);
        Meter {
            format,
            prices: prices.clone(),
            model: None,
            configured,
            log: Tail::default(),
            calls: HashMap::new(),
            order: Vec::new(),
            codex_cost: 0.0,
            codex_calls: 0,
            codex_last: 0.0,
            codex_usage: Usage::default(),
            codex_prev: None,
            turn_total: None,
            thread_id: None,
            rollout: None,
            rollout_looked: None,
            unpriced: Vec::new(),
        }
    }

    /// Read what the agent added to `log` (kit's own handle on the iteration's log) and, for
    /// Codex, to its rollout.
    pub fn poll(&mut self, log: &File) {
        let mut lines: Vec<Value> = Vec::new();
        self.log.lines(log, |l| {
            if let Ok(v) = serde_json::from_slice::<Value>(l) {
                lines.push(v);
            }
        });
        for v in &lines {
            self.stream_line(v);
        }
        self.follow_rollout();
    }

    /// The figures so far.
    pub fn streamed(&self) -> Streamed {
        let mut usage = AgentUsage::default();
        let mut add = |u: &Usage| {
            usage.input_tokens += u.input;
            usage.cache_write_5m_tokens += u.cache_write_5m;
            usage.cache_write_1h_tokens += u.cache_write_1h;
            usage.cache_read_tokens += u.cache_read;
            usage.output_tokens += u.output;
        };
        let claude_cost: f64 = self.calls.values().map(|c| c.cost).sum();
        for c in self.calls.values() {
            add(&c.usage);
        }
        add(&self.codex_usage);
        let (turn_extra, turn_cost) = self.turn_beyond_rollout();
        add(&turn_extra);
        let last = self.order.last().and_then(|id| self.calls.get(id));
        usage.model = last.map(|c| c.model.clone()).or_else(|| self.codex_model());
        let codex_calls = self.codex_calls + u64::from(turn_extra != Usage::default());
        let source = if !self.calls.is_empty() {
            "stream"
        } else if self.codex_calls > 0 {
            "rollout"
        } else if self.turn_total.is_some() {
            "turn"
        } else {
            "none"
        };
        Streamed {
            cost_usd: claude_cost + self.codex_cost + turn_cost,
            api_calls: self.order.len() as u64 + codex_calls,
            last_call_usd: match last {
                Some(c) if self.codex_calls == 0 && turn_cost == 0.0 => c.cost,
                _ if turn_cost > 0.0 => turn_cost,
                _ => self.codex_last,
            },
            usage,
            unpriced: self.unpriced.clone(),
            source,
        }
    }

    fn claude(&self) -> bool {
        self.format != OutputFormat::CodexJson
    }

    fn codex(&self) -> bool {
        self.format != OutputFormat::ClaudeStreamJson
    }

    fn stream_line(&mut self, v: &Value) {
        let s = |k: &str| v.get(k).and_then(Value::as_str);
        match s("type") {
            Some("system") if self.claude() && s("subtype") == Some("init") => {
                if let Some(m) = s("model").filter(|m| !m.is_empty()) {
                    self.model.get_or_insert_with(|| m.to_string());
                }
            }
            Some("assistant") if self.claude() => self.claude_call(v),
            Some("thread.started") if self.codex() => {
                if let Some(id) = s("thread_id").filter(|id| !id.is_empty()) {
                    self.thread_id.get_or_insert_with(|| id.to_string());
                }
            }
            Some("turn.completed") if self.codex() => {
                let u = v.get("usage").unwrap_or(&Value::Null);
                self.turn_total = Some((
                    n(u, "input_tokens"),
                    n(u, "cached_input_tokens"),
                    n(u, "output_tokens"),
                ));
            }
            _ => {}
        }
    }

    fn claude_call(&mut self, v: &Value) {
        let Some(msg) = v.get("message") else { return };
        let Some(usage) = msg.get("usage").filter(|u| u.is_object()) else { return };
        let Some(id) = msg.get("id").and_then(Value::as_str).filter(|id| !id.is_empty()) else {
            return;
        };
        let model = msg
            .get("model")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .map(str::to_string)
            .or_else(|| self.model.clone())
            .unwrap_or_else(|| "(no model reported)".into());
        let creation = n(usage, "cache_creation_input_tokens");
        let split = usage.get("cache_creation");
        let w1h = split.map_or(0, |s| n(s, "ephemeral_1h_input_tokens")).min(creation);
        let seen = Usage {
            input: n(usage, "input_tokens"),
            cache_write_5m: creation - w1h,
            cache_write_1h: w1h,
            cache_read: n(usage, "cache_read_input_tokens"),
            output: n(usage, "output_tokens"),
        };
        let call = match self.calls.get(id) {
            Some(c) => Usage {
                input: c.usage.input.max(seen.input),
                cache_write_5m: c.usage.cache_write_5m.max(seen.cache_write_5m),
                cache_write_1h: c.usage.cache_write_1h.max(seen.cache_write_1h),
                cache_read: c.usage.cache_read.max(seen.cache_read),
                output: c.usage.output.max(seen.output),
            },
            None => {
                self.order.push(id.to_string());
                seen
            }
        };
        let cost = self.price(&model, &call);
        self.calls.insert(id.to_string(), Call { model, usage: call, cost });
    }

    fn price(&mut self, model: &str, u: &Usage) -> f64 {
        match self.prices.lookup(model) {
            Lookup::Priced(p) => p.cost(u),
            Lookup::Free => 0.0,
            Lookup::Unpriced => {
                if *u != Usage::default() && !self.unpriced.iter().any(|m| m == model) {
                    self.unpriced.push(model.to_string());
                }
                0.0
            }
        }
    }

    fn codex_model(&self) -> Option<String> {
        self.configured.clone().or_else(|| self.model.clone())
    }

    /// Find the rollout of the thread (once its id is known), then read what was added to it.
    fn follow_rollout(&mut self) {
        if self.rollout.is_none() {
            let Some(id) = self.thread_id.clone() else { return };
            if self.rollout_looked.is_some_and(|t| t.elapsed() < ROLLOUT_LOOK) {
                return;
            }
            self.rollout_looked = Some(Instant::now());
            let Some(path) = codex_home().and_then(|h| codex_rollout(&h, &id)) else { return };
            let Ok(file) = File::open(&path) else { return };
            self.rollout = Some((file, Tail::default()));
        }
        let mut lines: Vec<Value> = Vec::new();
        if let Some((file, tail)) = self.rollout.as_mut() {
            tail.lines(file, |l| {
                if let Ok(v) = serde_json::from_slice::<Value>(l) {
                    lines.push(v);
                }
            });
        }
        for v in &lines {
            self.rollout_line(v);
        }
    }

    fn rollout_line(&mut self, v: &Value) {
        let p = v.get("payload").unwrap_or(&Value::Null);
        match v.get("type").and_then(Value::as_str) {
            Some("turn_context") => {
                if let Some(m) = p.get("model").and_then(Value::as_str).filter(|m| !m.is_empty()) {
                    self.model = Some(m.to_string());
                }
            }
            Some("event_msg") if p.get("type").and_then(Value::as_str) == Some("token_count") => {
                let Some(t) = p.pointer("/info/total_token_usage").filter(|t| t.is_object()) else {
                    return;
                };
                let now =
                    (n(t, "input_tokens"), n(t, "cached_input_tokens"), n(t, "output_tokens"));
                let prev = self.codex_prev.unwrap_or((0, 0, 0));
                if now == prev {
                    return; // an echo, or a context estimate
                }
                self.codex_prev = Some(now);
                if now.0 < prev.0 || now.1 < prev.1 || now.2 < prev.2 {
                    return; // overwritten (fill_to_context_window): re-baseline, bill nothing
                }
                let d = codex_usage((now.0 - prev.0, now.1 - prev.1, now.2 - prev.2));
                let model = self.codex_model().unwrap_or_else(|| "(no model reported)".into());
                let cost = self.price(&model, &d);
                self.codex_cost += cost;
                self.codex_last = cost;
                self.codex_calls += 1;
                self.codex_usage.input += d.input;
                self.codex_usage.cache_read += d.cache_read;
                self.codex_usage.output += d.output;
            }
            _ => {}
        }
    }

    /// What `turn.completed` counts beyond the rollout's records (all of it without a rollout),
    /// as one call, and its cost.
    fn turn_beyond_rollout(&self) -> (Usage, f64) {
        let Some(t) = self.turn_total else { return (Usage::default(), 0.0) };
        let r = self.codex_prev.unwrap_or((0, 0, 0));
        if t.0 + t.2 <= r.0 + r.2 {
            return (Usage::default(), 0.0);
        }
        let d = codex_usage((
            t.0.saturating_sub(r.0),
            t.1.saturating_sub(r.1),
            t.2.saturating_sub(r.2),
        ));
        let cost = match self.codex_model() {
            Some(m) => match self.prices.lookup(&m) {
                Lookup::Priced(p) => p.cost(&d),
                _ => 0.0,
            },
            None => 0.0,
        };
        (d, cost)
    }
}

/// Codex counters as kit prices them: cached input is part of input (formats/codex.md §10.1).
fn codex_usage((input, cached, output): Cumulative) -> Usage {
    let cached = cached.min(input);
    Usage { input: input - cached, cache_read: cached, output, ..Usage::default() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn sonnet(u: Usage) -> f64 {
        match PriceTable::embedded().lookup("claude-sonnet-4-5-20250929") {
            Lookup::Priced(p) => p.cost(&u),
            _ => unreachable!("sonnet is priced"),
        }
    }

    fn append(f: &mut File, lines: &[&str]) {
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
    }

    #[test]
    fn claude_calls_are_priced_as_they_stream_once_per_message_id() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("001.log");
        let mut w = File::create(&path).unwrap();
        let r = File::open(&path).unwrap();
        let mut m = Meter::new(OutputFormat::ClaudeStreamJson, PriceTable::embedded(), None);
        append(
            &mut w,
            &[
                r#"{"type":"system","subtype":"init","model":"claude-sonnet-4-5-20250929","session_id":"s"}"#,
                "not json",
                // One call, two content blocks: the usage repeats, the output is final on the last.
                r#"{"type":"assistant","message":{"id":"msg_1","model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":10,"cache_creation_input_tokens":1000,"cache_read_input_tokens":12800,"output_tokens":1,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":0}}}}"#,
            ],
        );
        m.poll(&r);
        let first = Usage {
            input: 10,
            cache_write_5m: 1000,
            cache_read: 12800,
            output: 1,
            ..Usage::default()
        };
        assert!((m.streamed().cost_usd - sonnet(first)).abs() < 1e-12);
        // A partial line is not read until it ends.
        write!(w, r#"{{"type":"assistant","message":{{"id":"msg_1","usage":{{"input_tokens":10,"cache_creation_input_tokens":1000,"cache_read_input_tokens":12800,"output_tokens":250}}}}}}"#).unwrap();
        m.poll(&r);
        assert_eq!(m.streamed().api_calls, 1);
        assert_eq!(m.streamed().usage.output_tokens, 1);
        writeln!(w).unwrap();
        append(
            &mut w,
            &[
                r#"{"type":"user","message":{"content":[{"type":"tool_result"}]}}"#,
                r#"{"type":"assistant","message":{"id":"msg_2","usage":{"input_tokens":5,"cache_creation_input_tokens":300,"cache_read_input_tokens":13810,"output_tokens":40}}}"#,
                r#"{"type":"assistant","message":{"id":"msg_s","model":"<synthetic>","usage":{"input_tokens":0,"output_tokens":0}}}"#,
            ],
        );
        m.poll(&r);
        let s = m.streamed();
        let one = Usage { output: 250, ..first };
        let two = Usage {
            input: 5,
            cache_write_5m: 300,
            cache_read: 13810,
            output: 40,
            ..Usage::default()
        };
        assert_eq!(s.api_calls, 3);
        assert_eq!(s.source, "stream");
        assert!((s.cost_usd - sonnet(one) - sonnet(two)).abs() < 1e-12, "{s:?}");
        assert_eq!(s.usage.output_tokens, 290);
        assert_eq!(s.usage.model.as_deref(), Some("<synthetic>"));
        assert!(s.unpriced.is_empty());
    }

    #[test]
    fn an_unpriced_claude_model_is_named_and_counts_nothing() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("log");
        std::fs::write(
            &path,
            r#"{"type":"assistant","message":{"id":"m","model":"claude-future-9","usage":{"input_tokens":5000,"output_tokens":5}}}
"#,
        )
        .unwrap();
        let mut m = Meter::new(OutputFormat::Detect, PriceTable::embedded(), None);
        m.poll(&File::open(&path).unwrap());
        let s = m.streamed();
        assert_eq!((s.cost_usd, s.api_calls), (0.0, 1));
        assert_eq!(s.unpriced, ["claude-future-9"]);
    }

    #[test]
    fn codex_calls_are_priced_from_the_rollout_and_the_turn_covers_the_rest() {
        // The rollout handed to the meter as if found under CODEX_HOME (no environment change).
        let home = tempfile::tempdir().unwrap();
        let day = home.path().join("sessions/2026/10/01");
        std::fs::create_dir_all(&day).unwrap();
        let id = "019a0000-0000-7000-8000-000000000001";
        let rollout_path = day.join(format!("rollout-2026-10-01T09-00-00-{id}.jsonl"));
        let mut rollout = File::create(&rollout_path).unwrap();
        let d = tempfile::tempdir().unwrap();
        let log_path = d.path().join("log");
        let mut w = File::create(&log_path).unwrap();
        let r = File::open(&log_path).unwrap();
        let mut m = Meter::new(OutputFormat::CodexJson, PriceTable::embedded(), None);
        m.thread_id = Some(id.into());
        let (file, tail) = (File::open(&rollout_path).unwrap(), Tail::default());
        m.rollout = Some((file, tail));
        append(&mut w, &[&format!(r#"{{"type":"thread.started","thread_id":"{id}"}}"#)]);
        append(
            &mut rollout,
            &[
                r#"{"type":"turn_context","payload":{"model":"gpt-5.3-codex"}}"#,
                r#"{"type":"event_msg","payload":{"type":"token_count","info":null}}"#,
                r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100000,"cached_input_tokens":0,"output_tokens":1000}}}}"#,
                // An echo: the cumulative unchanged.
                r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100000,"cached_input_tokens":0,"output_tokens":1000}}}}"#,
            ],
        );
        m.poll(&r);
        let codex = |u: Usage| match PriceTable::embedded().lookup("gpt-5.3-codex") {
            Lookup::Priced(p) => p.cost(&u),
            _ => unreachable!("priced"),
        };
        let one = Usage { input: 100_000, output: 1000, ..Usage::default() };
        let s = m.streamed();
        assert_eq!((s.api_calls, s.source), (1, "rollout"));
        assert!((s.cost_usd - codex(one)).abs() < 1e-12, "{s:?}");
        append(
            &mut rollout,
            &[
                r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":250000,"cached_input_tokens":100000,"output_tokens":1500}}}}"#,
            ],
        );
        m.poll(&r);
        let two = Usage { input: 50_000, cache_read: 100_000, output: 500, ..Usage::default() };
        let s = m.streamed();
        assert_eq!(s.api_calls, 2);
        assert!((s.cost_usd - codex(one) - codex(two)).abs() < 1e-12);
        assert!((s.last_call_usd - codex(two)).abs() < 1e-12);
        // turn.completed beyond the rollout's last record: the rest counts as one more call.
        append(
            &mut w,
            &[
                r#"{"type":"turn.completed","usage":{"input_tokens":260000,"cached_input_tokens":100000,"output_tokens":1500}}"#,
            ],
        );
        m.poll(&r);
        let s = m.streamed();
        assert_eq!(s.api_calls, 3);
        let rest = Usage { input: 10_000, ..Usage::default() };
        assert!((s.cost_usd - codex(one) - codex(two) - codex(rest)).abs() < 1e-12);
    }

    #[test]
    fn codex_without_a_rollout_counts_the_turn() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("log");
        std::fs::write(
            &path,
            r#"{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":400,"output_tokens":50}}
"#,
        )
        .unwrap();
        let mut m =
            Meter::new(OutputFormat::CodexJson, PriceTable::embedded(), Some("gpt-5.3-codex"));
        m.poll(&File::open(&path).unwrap());
        let s = m.streamed();
        assert_eq!((s.api_calls, s.source), (1, "turn"));
        assert!(s.cost_usd > 0.0);
        assert_eq!(s.usage.cache_read_tokens, 400);
    }
}
