//! What the agent's structured output says once it ended: usage and cost (Claude Code's
//! `result`, Codex's `turn.completed`, priced by [`crate::prices`]), the tool calls Claude Code
//! denied, Codex's errors, and the Codex model and rate limits from the rollout its `thread_id`
//! names. Formats: formats/claude-code.md, formats/codex.md and real-clis.md in the shared folder.

use super::*;

/// Tokens and cost an agent reported for one iteration.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AgentUsage {
    /// The model that did most of the work (from `system`/`init`, else the first `modelUsage` key).
    pub model: Option<String>,
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Cache write tokens (5-minute TTL).
    pub cache_write_5m_tokens: u64,
    /// Cache write tokens (1-hour TTL).
    pub cache_write_1h_tokens: u64,
    /// Cache read tokens.
    pub cache_read_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// The agent's own cost estimate (`total_cost_usd`), USD.
    pub reported_cost_usd: Option<f64>,
    /// Per-model usage from `modelUsage` (subagents and compaction included), when present.
    #[serde(skip)]
    pub per_model: Vec<(String, Usage)>,
}

impl AgentUsage {
    fn usage(&self) -> Usage {
        Usage {
            input: self.input_tokens,
            cache_write_5m: self.cache_write_5m_tokens,
            cache_write_1h: self.cache_write_1h_tokens,
            cache_read: self.cache_read_tokens,
            output: self.output_tokens,
        }
    }
}

/// The cost of an iteration, USD, and the models the price table does not know.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Priced {
    /// USD: from the price table when every model is priced, else the agent's reported
    /// `total_cost_usd` (0 when it reported none).
    pub cost_usd: f64,
    /// Models missing from the price table (journaled as `unpriced`).
    pub unpriced: Vec<String>,
}

/// Price `u` with `table`. The result's usage is a sum over the iteration's API calls, so the
/// long-context tier (which applies per request) cannot be told apart: standard rates are used.
pub fn price(u: &AgentUsage, table: &PriceTable) -> Priced {
    let rows: Vec<(String, Usage)> = if u.per_model.is_empty() {
        match &u.model {
            Some(m) => vec![(m.clone(), u.usage())],
            None => vec![],
        }
    } else {
        u.per_model.clone()
    };
    let mut cost = 0.0;
    let mut unpriced = Vec::new();
    for (model, usage) in &rows {
        match table.lookup(model) {
            Lookup::Priced(p) => {
                let r = &p.rates;
                cost += (usage.input as f64 * r.input
                    + usage.cache_write_5m as f64 * r.cache_write_5m
                    + usage.cache_write_1h as f64 * r.cache_write_1h
                    + usage.cache_read as f64 * r.cache_read
                    + usage.output as f64 * r.output)
                    / 1e6;
            }
            Lookup::Free => {}
            Lookup::Unpriced => unpriced.push(model.clone()),
        }
    }
    if rows.is_empty() && (u.reported_cost_usd.is_some() || u.usage() != Usage::default()) {
        unpriced.push("(no model reported)".into());
    }
    if !unpriced.is_empty() {
        cost = u.reported_cost_usd.unwrap_or(0.0);
    }
    Priced { cost_usd: cost, unpriced }
}

/// Read the usage an agent printed to its log. Lines that are not JSON (stderr, progress) are
/// skipped. None when no usage event was printed (a plain command).
pub fn read_usage(log: &Path, format: OutputFormat) -> Option<AgentUsage> {
    let claude = matches!(format, OutputFormat::ClaudeStreamJson | OutputFormat::Detect);
    let codex = matches!(format, OutputFormat::CodexJson | OutputFormat::Detect);
    let file = File::open(log).ok()?;
    let mut model: Option<String> = None;
    let mut found: Option<AgentUsage> = None;
    for line in BufReader::new(file).split(b'\n').map_while(|l| l.ok()) {
        let Ok(v) = serde_json::from_slice::<Value>(&line) else { continue };
        match v.get("type").and_then(Value::as_str) {
            Some("system") if claude => {
                if let Some(m) = v.get("model").and_then(Value::as_str) {
                    model.get_or_insert_with(|| m.to_string());
                }
            }
            Some("result") if claude => found = Some(claude_result(&v)),
            Some("turn.completed") if codex => found = Some(codex_turn(&v)),
            _ => {}
        }
    }
    let mut u = found?;
    if u.model.is_none() {
        u.model = model.or_else(|| u.per_model.first().map(|(m, _)| m.clone()));
    }
    Some(u)
}

pub(super) fn n(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

pub(super) fn claude_result(v: &Value) -> AgentUsage {
    let empty = Value::Null;
    let usage = v.get("usage").unwrap_or(&empty);
    let creation = n(usage, "cache_creation_input_tokens");
    // The split by TTL, when the result carries it; otherwise all writes count as 5-minute.
    let split = usage.get("cache_creation");
    let w1h = split.map_or(0, |s| n(s, "ephemeral_1h_input_tokens")).min(creation);
    let w5m = split.map_or(0, |s| n(s, "ephemeral_5m_input_tokens"));
    let mut per_model = Vec::new();
    if let Some(Value::Object(models)) = v.get("modelUsage") {
        for (m, mu) in models {
            let (c5m, c1h) = split_writes(n(mu, "cacheCreationInputTokens"), w5m, w1h);
            per_model.push((
                m.clone(),
                Usage {
                    input: n(mu, "inputTokens"),
                    cache_write_5m: c5m,
                    cache_write_1h: c1h,
                    cache_read: n(mu, "cacheReadInputTokens"),
                    output: n(mu, "outputTokens"),
                },
            ));
        }
    }
    AgentUsage {
        model: None,
        input_tokens: n(usage, "input_tokens"),
        cache_write_5m_tokens: creation - w1h,
        cache_write_1h_tokens: w1h,
        cache_read_tokens: n(usage, "cache_read_input_tokens"),
        output_tokens: n(usage, "output_tokens"),
        reported_cost_usd: v.get("total_cost_usd").and_then(Value::as_f64),
        per_model,
    }
}

/// Split one model's cache writes `total` (`modelUsage[m].cacheCreationInputTokens`, which has
/// no TTL split) into (5-minute, 1-hour) by the result's `usage.cache_creation` figures
/// `w5m`/`w1h`, which `modelUsage` lacks (real-clis.md §3). `usage` excludes the compaction
/// call that `modelUsage` includes, so the split is applied as a proportion; with no split
/// given, all writes count as 5-minute.
pub(super) fn split_writes(total: u64, w5m: u64, w1h: u64) -> (u64, u64) {
    let known = w5m + w1h;
    if known == 0 || w1h == 0 {
        return (total, 0);
    }
    let h = ((total as u128 * w1h as u128 + known as u128 / 2) / known as u128) as u64;
    let h = h.min(total);
    (total - h, h)
}

pub(super) fn codex_turn(v: &Value) -> AgentUsage {
    let empty = Value::Null;
    let usage = v.get("usage").unwrap_or(&empty);
    let input = n(usage, "input_tokens");
    let cached = n(usage, "cached_input_tokens").min(input);
    AgentUsage {
        input_tokens: input - cached,
        cache_read_tokens: cached,
        output_tokens: n(usage, "output_tokens"),
        ..AgentUsage::default()
    }
}

/// Claude Code ended itself at `--max-budget-usd`: the log's last `result` has subtype
/// `error_max_budget_usd` (the `SDKResultError` subtypes of 2.1.197: `error_during_execution`,
/// `error_max_turns`, `error_max_budget_usd`, `error_max_structured_output_retries`).
pub fn stopped_at_budget(log: &Path) -> bool {
    let Ok(file) = File::open(log) else { return false };
    let mut last = false;
    for line in BufReader::new(file).split(b'\n').map_while(|l| l.ok()) {
        let Ok(v) = serde_json::from_slice::<Value>(&line) else { continue };
        if v.get("type").and_then(Value::as_str) == Some("result") {
            last = v.get("subtype").and_then(Value::as_str) == Some("error_max_budget_usd");
        }
    }
    last
}

/// One tool call Claude Code denied, from the `result` event's `permission_denials`
/// (`[{tool_name, tool_use_id, tool_input}]`, real-clis.md §2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Denial {
    /// `Bash`, `Write`, `Edit`, …
    pub tool_name: String,
    /// The call's input as JSON text, clipped to 300 characters.
    pub tool_input: String,
}

impl Denial {
    /// The `--allowedTools` pattern that would have allowed it: `Bash(PREFIX:*)` for a shell
    /// command (see [`tool_patterns`]), else the tool's name.
    pub fn pattern(&self) -> String {
        if self.tool_name == "Bash" {
            let cmd = serde_json::from_str::<Value>(&self.tool_input)
                .ok()
                .and_then(|v| v.get("command").and_then(Value::as_str).map(str::to_string));
            if let Some(p) = cmd.as_deref().and_then(|c| tool_patterns(c).into_iter().next()) {
                return p;
            }
        }
        self.tool_name.clone()
    }

    /// `Bash: {"command":"npm install"}` — for the prompt and the loop's output.
    pub fn describe(&self) -> String {
        format!("{}: {}", self.tool_name, self.tool_input)
    }
}

/// The denials in the log's last Claude Code `result` event (empty when there is none).
pub fn read_denials(log: &Path) -> Vec<Denial> {
    let Ok(file) = File::open(log) else { return Vec::new() };
    let mut last = Vec::new();
    for line in BufReader::new(file).split(b'\n').map_while(|l| l.ok()) {
        let Ok(v) = serde_json::from_slice::<Value>(&line) else { continue };
        if v.get("type").and_then(Value::as_str) != Some("result") {
            continue;
        }
        last = v
            .get("permission_denials")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|d| Denial {
                        tool_name: d
                            .get("tool_name")
                            .and_then(Value::as_str)
                            .unwrap_or("?")
                            .to_string(),
                        tool_input: clip(
                            &d.get("tool_input").map(Value::to_string).unwrap_or_default(),
                            300,
                        ),
                    })
                    .collect()
            })
            .unwrap_or_default();
    }
    last
}

/// The exact setting that allows `denials`: `[agent] allowed_tools = ["Bash(npm install:*)"]`
/// in longrun/config.toml, or `permissions = "skip"`.
pub fn denial_setting(denials: &[Denial]) -> String {
    let mut pats: Vec<String> = Vec::new();
    for d in denials {
        let p = d.pattern();
        if !pats.contains(&p) {
            pats.push(p);
        }
    }
    let list = pats.iter().map(|p| format!("{p:?}")).collect::<Vec<_>>().join(", ");
    format!(
        "add allowed_tools = [{list}] under [agent] in longrun/config.toml (or permissions = \"skip\" to allow everything)"
    )
}

pub(super) fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max).collect();
    t.push('…');
    t
}

/// What Codex said went wrong: each `turn.failed` `error.message`, top-level `error` event
/// `message` and `item.completed` item of type `error` (`message`), in order, each clipped to
/// 300 characters (formats/codex.md §14.2). Empty for a run without errors.
pub fn codex_errors(log: &Path) -> Vec<String> {
    let Ok(file) = File::open(log) else { return Vec::new() };
    let mut out = Vec::new();
    for line in BufReader::new(file).split(b'\n').map_while(|l| l.ok()) {
        let Ok(v) = serde_json::from_slice::<Value>(&line) else { continue };
        let msg = match v.get("type").and_then(Value::as_str) {
            Some("turn.failed") => v.pointer("/error/message"),
            Some("error") => v.get("message"),
            Some("item.completed")
                if v.pointer("/item/type").and_then(Value::as_str) == Some("error") =>
            {
                v.pointer("/item/message")
            }
            _ => None,
        };
        if let Some(m) = msg.and_then(Value::as_str) {
            out.push(clip(m.trim(), 300));
        }
    }
    out
}

/// The `thread.started` `thread_id` of a Codex `--json` log.
pub fn codex_thread_id(log: &Path) -> Option<String> {
    let file = File::open(log).ok()?;
    BufReader::new(file).split(b'\n').map_while(|l| l.ok()).find_map(|line| {
        let v = serde_json::from_slice::<Value>(&line).ok()?;
        (v.get("type")?.as_str()? == "thread.started")
            .then(|| v.get("thread_id")?.as_str().map(str::to_string))?
    })
}

/// `$CODEX_HOME`, else `~/.codex`.
pub fn codex_home() -> Option<PathBuf> {
    match std::env::var_os("CODEX_HOME").filter(|v| !v.is_empty()) {
        Some(h) => Some(PathBuf::from(h)),
        None => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".codex")),
    }
}

/// The model of Codex thread `thread_id`, read from its rollout
/// `HOME/sessions/YYYY/MM/DD/rollout-…-<thread_id>.jsonl` (or `.jsonl.zst` is skipped): the
/// first `turn_context` `payload.model`, or an `event_msg` `thread_settings_applied` `model`
/// (real-clis.md §2, formats/codex.md §6). The newest day folders are searched first, at most
/// 14 of them. None when no rollout or no model is found.
pub fn codex_rollout_model(home: &Path, thread_id: &str) -> Option<String> {
    rollout_model(&codex_rollout(home, thread_id)?)
}

/// The rollout of Codex thread `thread_id` under `home`
/// (`sessions/YYYY/MM/DD/rollout-…-<thread_id>.jsonl`), the newest 14 day folders searched
/// newest first. None when there is none.
pub fn codex_rollout(home: &Path, thread_id: &str) -> Option<PathBuf> {
    let sessions = home.join("sessions");
    let sorted_desc = |dir: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()).collect())
            .unwrap_or_default();
        v.sort();
        v.reverse();
        v
    };
    let suffix = format!("-{thread_id}.jsonl");
    let mut days = 0;
    for y in sorted_desc(&sessions) {
        for m in sorted_desc(&y) {
            for d in sorted_desc(&m) {
                days += 1;
                if days > 14 {
                    return None;
                }
                let Ok(rd) = std::fs::read_dir(&d) else { continue };
                for e in rd.filter_map(|e| e.ok()) {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if name.starts_with("rollout-") && name.ends_with(&suffix) {
                        return Some(e.path());
                    }
                }
            }
        }
    }
    None
}

pub(super) fn rollout_model(path: &Path) -> Option<String> {
    let file = File::open(path).ok()?;
    for line in BufReader::new(file).split(b'\n').map_while(|l| l.ok()) {
        let Ok(v) = serde_json::from_slice::<Value>(&line) else { continue };
        let p = v.get("payload");
        let model = match v.get("type").and_then(Value::as_str) {
            Some("turn_context") => p.and_then(|p| p.get("model")),
            Some("event_msg")
                if p.and_then(|p| p.get("type")).and_then(Value::as_str)
                    == Some("thread_settings_applied") =>
            {
                p.and_then(|p| p.get("model").or_else(|| p.pointer("/settings/model")))
            }
            _ => None,
        };
        if let Some(m) = model.and_then(Value::as_str).filter(|m| !m.is_empty()) {
            return Some(m.to_string());
        }
    }
    None
}

/// The `rate_limits` of the last `event_msg/token_count` in the rollout of the Codex run
/// logged in `log` (its `thread.started` id, under [`codex_home`]): `{primary, secondary}` windows
/// `{used_percent, window_minutes, resets_at}` (formats/codex.md §5.1). None without a rollout
/// or such a record.
pub fn codex_last_rate_limits(log: &Path) -> Option<Value> {
    let path = codex_rollout(&codex_home()?, &codex_thread_id(log)?)?;
    let file = File::open(path).ok()?;
    let mut last = None;
    for line in BufReader::new(file).split(b'\n').map_while(|l| l.ok()) {
        let Ok(v) = serde_json::from_slice::<Value>(&line) else { continue };
        if v.get("type").and_then(Value::as_str) == Some("event_msg")
            && v.pointer("/payload/type").and_then(Value::as_str) == Some("token_count")
        {
            if let Some(r) = v.pointer("/payload/rate_limits").filter(|r| r.is_object()) {
                last = Some(r.clone());
            }
        }
    }
    last
}

/// The model a Codex iteration used: config.toml's `model` (passed as `-m`), else the one its
/// rollout names (see [`codex_rollout_model`]).
pub fn codex_model(log: &Path, setup: &AgentSetup) -> Option<String> {
    if !setup.model.is_empty() {
        return Some(setup.model.clone());
    }
    let id = codex_thread_id(log)?;
    codex_rollout_model(&codex_home()?, &id)
}
