//! The events of `longrun/journal.jsonl` as one type (DESIGN §3, STYLE 14): every line kit writes
//! is an [`Event`] serialised by [`super::journal::Journal::append`], and every reader gets
//! [`Entry`]s back from [`super::journal::read`].
//!
//! The bytes are what kit wrote before the journal was a type, so that older kits, the course's
//! exercise checks (Python reading fields) and the goldens read it unchanged: one JSON object per
//! line, its keys in alphabetical order (serde_json's map), `ts` (RFC 3339 UTC) and `event` (the
//! snake_case name) beside the event's own fields; a field that kit writes as `null` when it has
//! no value is an `Option` written as `null`, a field kit writes only in some cases is omitted
//! otherwise.
//!
//! **Versions.** The lines carry no version field (adding one would change every line). The
//! format is recognised by its event names: a line whose `event` this kit does not know (a newer
//! kit's), or whose fields do not read as this kit's event of that name, is kept as
//! [`Event::Unknown`] with its JSON as written: shown by `kit status` ("N events of a newer kit"),
//! never fatal. Fields added over time read with their defaults in an older journal (every event
//! struct is `#[serde(default)]`), as the `Value` readers did before; an [`Entry`] remembers
//! which fields its line lacked and which it had beyond this kit's, so it writes back as read.
//!
//! Nested objects that other layers own (a criterion's result, an agent's usage, a lock holder)
//! stay JSON ([`Value`]) here: the longrun layer comes before them (see `# Layers` in lib.rs).
//! Their shapes are named on each field.
//!
//! # The events
//!
//! The journal's documented schema: each event, its fields (each line also has `ts` and `event`).
//! The unit test `the_table_documents_every_event_and_field` holds it to [`Event`].
//!
//! | event | fields |
//! |---|---|
//! | `lock_takeover` | `previous` (the dead holder's record, or `raw` text), `stale` (the record named a live process holding no lock, see [`super::lock`]) |
//! | `recovered` | `iteration`, `pgid`, `killed` (pids), `same_boot` (the agent ran under this boot; else nothing of it is left to end): a killed loop's agent group ended |
//! | `memory_cap` | `enforcer` (`systemd-run`/`watchdog`), `reason`, `max_bytes` |
//! | `loop_start` | `run` (the run's number), `run_started`, `run_key` (random, one per run: the agent's `KIT_RUN_KEY`), `resumed`, `spent` {`iterations`, `wall_s`, `cost_usd`, `no_progress`} (before this process), `pid`, `host`, `command`, `agent`, `fallback` (`[agent] fallback`, written only when it lists agents), `goal` (title), `level`, `first_iteration`, `caps` {`iterations`, `wall_s`, `cost_usd`, `no_progress`}, `timeout_s`, `grace_s` (SIGTERM to SIGKILL), `memory_max_bytes`, `cap_sources` (name → `flag`/`config.toml`/`goal.md budget`), `subreaper` (`on`, or why kit could not become a child subreaper) |
//! | `cheat` | `iteration` (0 before the first), `phase` (`start`/`baseline`/`after_agent`/`after_criteria`/`confirm`/`review`/`exit`), `path`, `kind` (a frozen-file revert; `lock_replaced`: `longrun/.lock` deleted or replaced and locked again; `journal_appended`: lines appended by others cut off; `run_log_deleted`: the agent deleted or replaced its iteration's log, which kit wrote again from its open handle) |
//! | `baseline` | `results`, `passed`, `total`, `commit`, `dirty` (the tree read by content differs from HEAD), `tree` (the run's start tree: read at its first baseline, carried by a continued run's), `start_of_run` (this is the run's first baseline) |
//! | `green_start` | `lines` (function criteria passing at the run's first baseline), `allowed` (`--allow-green-start`), `all_pass` |
//! | `iteration_start` | `iteration`, `prompt` (path) |
//! | `agent_start` | `iteration`, `pid`, `pgid`, `starttime`, `boot_id`, `command`, `log` |
//! | `agent_end` | `iteration`, `exit`, `signal`, `timed_out` (the iteration timeout ended it), `wall_cut` (the run's remaining wall time, shorter than the timeout, ended it; a `cap` `wall` follows), `interrupted`, `paused` (`kit pause --now` ended it), `cost_capped` (the cost cap ended it; a `cost_cap` follows), `memory_killed`, `enforcer`, `peak_rss_bytes`, `leftovers_killed`, `usage`, `cost_usd` (from the final `result`/`turn.completed`; without one, the API calls its stream showed, priced as they came: see [`crate::looprun::agent::Meter`]), `api_calls` (seen on the stream), `duration_ms`, `errors` (Codex's `turn.failed`/`error` messages) |
//! | `cost_cap` | `iteration`, `by` (`kit`: the loop ended the agent's process group when the run's spend plus the iteration's running cost reached the cap; `claude`: Claude Code stopped itself at the `--max-budget-usd` kit gave it), `spent_usd` (the run's, before the iteration), `iteration_usd`, `used` (the run's, after it), `limit`, `api_calls`, `at_stop` {`iteration_usd`, `api_calls`, `last_call_usd`} (what kit had read when it sent SIGTERM), `source` (`stream`/`rollout`/`turn`): a `cap` `cost` follows |
//! | `permission_denials` | `iteration`, `denials` [{`tool_name`, `tool_input` (JSON text, clipped)}], `setting` (`agent.allowed_tools`), `suggest` (the exact line to add) — from Claude Code's `result` event |
//! | `unpriced` | `iteration`, `models`, `reported_cost_usd` |
//! | `criteria` | `iteration`, `results`, `passed`, `total`, `commit`, `dirty`, `verified`, `progress`, `no_progress` |
//! | `checkpoint` | `ref` (`refs/kit/checkpoint`), `commit`: the uncommitted tree at the start of a run |
//! | `frozen_commit` | `iteration`, `commits`, `paths`: commits of this run that change a frozen file kit just restored |
//! | `git_config_changed` | `added`: local git config entries and hooks that appeared during the run |
//! | `told` | `iteration`, `messages` [{`from` (`kit tell --from`, else the login name; null for a line added by hand), `at` (when told, RFC 3339; null by hand), `text`, `sha256` (of sender, time and text: what marks it delivered), `line` (in inbox.md)}]: messages of `longrun/inbox.md` put in this iteration's prompt, each delivered once ([`crate::longrun::inbox`]) |
//! | `asked` | `number` (1, 2, …: what `kit approve N` names), `text`, `line` (the goal.md line of a `- human:` criterion the loop asks for; null for `kit ask`), `from` (`kit ask --from`, else the login name; `agent` when the loop took it from an agent iteration; `kit` for a human criterion), `iteration` (the last iteration started when asked), `tree` (the working tree's id when asked: an approval binds to it; null when git could not say), `commit` (HEAD then): a decision pending for a person ([`crate::looprun::ask`]) |
//! | `approval` | `number` (of the `asked` it answers), `verdict` (`approved`/`rejected`), `note` (`--note`, may be empty), `by` (the login name), `tree` (the working tree's id it was given on; a human criterion's approval counts only while the tree is that one), `commit` (HEAD then), `counts` (false when it was given from inside an agent iteration: the agent cannot approve itself), `why` (null, or why it does not count), `pid`, `pgid` (`kit approve`'s own): `kit approve N` / `kit reject N` ([`crate::looprun::ask`]) |
//! | `needs_you` | `iteration`, `pending` (the `asked` numbers unanswered), `reason`: the loop stops for a person (exit 6, outcome `needs_you`): an agent asked (`kit ask`), or every other criterion passes and a `- human:` criterion waits for `kit approve N` |
//! | `agent_switch` | `iteration` (the one the next agent runs), `from`, `to` (agent specs), `why` (`limit`: a usage or rate limit whose wait passes `[agent] fallback_after_wait`; `no_progress`: `[agent] fallback_after_no_progress` iterations in a row without progress), `reason` (in words), `until` (the limit's reset, RFC 3339, or null), `retry` (the iteration is retried under its number: it counted as none), `position` (the new agent's place in `[agent] fallback`, 1-based): the run goes on with the next agent of `[agent] fallback` (`looprun::fallback`); the no-progress count starts again |
//! | `limit_wait` | `iteration`, `agent` (`claude`/`codex`/`fake`/`command`), `kind` (`usage`/`rate`), `until` (RFC 3339 or null), `wait_s`, `backoff`, `message`: the agent stopped on a usage or rate limit ([`crate::looprun::limits`]); the loop sleeps (bounded by the wall cap, interruptible) and retries the same iteration number, which counts as no iteration, failure or no progress (its cost counts) |
//! | `limit_resume` | `iteration`, `waited_s`, `cut_short` (null, `paused`, `interrupted` or `wall`) |
//! | `cap` | `which` (`iterations`/`wall`/`cost`/`no_progress`), `used`, `limit` |
//! | `paused` | `iteration` (the last one run), `now` (`kit pause --now` stopped its agent at once), `by` (the PAUSE record, see [`crate::longrun::pause`]; null for a file made by hand) |
//! | `notify` | `on` (`done`/`cap`/`limit`/`pause`/`needs_you`), `command`, `exit`, `error`, `timed_out`, `duration_ms`, `output_tail`: the `[notify]` command ran (see [`crate::looprun::notify`]) |
//! | `loop_end` | `outcome` (`done`/`cap`/`needs_you`/`denied`/`flapping`/`review_ask`/`paused`/`interrupted`/`agent_failed`/`refused`/`error`), `iterations` (this loop process), `iteration` (last number), `reason`, `exit`, `run`, `run_iterations` (the whole run's), `wall_s` (this loop process's) |
//! | `confirm` | `iteration`, `runs` (runs of the criteria made, the candidate's included), `all_pass`, `required` (confirm_runs) |
//! | `flap` | `iteration`, `line`, `criterion` (the command), `runs` (passed, per run: `[true, false]`), `times` (flaps of this criterion in this run since its last `flapping` stop, counted across loop processes: see [`crate::longrun::durable::flaps`]) |
//! | `revert_probe` | `iteration`, `tree` (the run's start tree), `results` [{`line`, `command`, `passed`, `exit`, `timed_out`, `duration_ms`}], `pass_without_work` (lines), `exempt` (lines, `--allow-green-start`), `refused`, `wall_ms`, `cpu_ms` |
//! | `review` | `iteration`, `line`, `text`, `evaluator`, `verdict` (`pass`/`fail`/`ask`), `reason`, `exit`, `timed_out`, `duration_ms`, `dir` |
//! | `canary` | `iteration`, `phase`, `results` (`goal::canary` results: per criterion, the test planted and whether the criterion still exited 0) |
//! | `criteria_env` | `removed` (variables), `set` (variables kit set), `path_dropped` (PATH entries, each with why), `pinned` (program → path), `not_found` (names PATH did not find): the criteria's environment, see `goal::env` |
//! | `hook` | `hook_event` (Claude Code's), `session`, `action` (what the context-band hook did), `band`, `context` (tokens), `pct` (of the compaction point, one decimal), `why` |
//! | `handoff_saved` | `stamp`, `commit`, `dirty`, `files` (fingerprinted), `handoff_sha256`, `summary_sha256`: `kit handoff save` wrote `longrun/handoff.md` |
//! | `race_start` | `run` (the race's number), `resumed` (a `kit race` after a killed or stopped one, same run), `base` (the commit the lanes started from), `branch` (the user's branch then; null when HEAD was detached), `lanes` [{`lane` (1-based), `agent`, `branch` (`kit/race/<run>/<lane>`), `path` (its worktree)}], `caps` {`cost_usd`, `wall_s` (the race's, shared by its lanes), `iterations` (per lane; null: each loop's own)}, `merge` (`--merge`: kept when the race is resumed; false in older journals), `pid`, `host`, `command`: `kit race` started or resumed its lanes ([`crate::race`]) |
//! | `lane_end` | `run`, `lane`, `agent`, `outcome` (`won`; `stopped`: the race ended it, another lane having won or a race cap reached; else its loop's own: `cap`, `error`, …), `loop_outcome` (the lane loop's last `loop_end` outcome, `killed` when none), `reason`, `iterations` (the lane run's), `passed`, `total` (its last criteria), `reverts` (frozen-file reverts, `cheat` events), `cost_usd` |
//! | `race_end` | `run`, `outcome` (`won`/`no_winner`/`needs_you` (no lane done, one or more wait for a person: the race is not finished, `kit race` continues it)/`cap`/`interrupted`/`error`), `winner` (lane, or null), `branch` (the winner's), `commit` (the winner's work, committed on its branch), `merged` (`fast-forward`/`merge`, or null: not asked, or the user's branch moved), `reason`, `cost_usd` (summed over lanes), `wall_s` (this race process's) |

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One line of the journal: when kit wrote it and what.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Entry {
    /// RFC 3339 UTC, from [`crate::clock`] (empty when the line had none).
    pub ts: String,
    /// The event.
    pub event: Event,
    /// Fields of the event that the line did not have (an older kit's line): they read as
    /// their defaults and are left out when the entry is written back.
    pub absent: Vec<String>,
    /// Fields the line had that this kit's event does not (a newer kit's), as written.
    pub extra: Map<String, Value>,
    /// 1-based line number in the journal it was read from (0: not read from a file).
    pub line: usize,
}

impl Entry {
    /// An entry for `event` written at `ts`.
    pub fn new(ts: String, event: Event) -> Entry {
        Entry { ts, event, absent: Vec::new(), extra: Map::new(), line: 0 }
    }

    /// Read one journal line already parsed as JSON. Never fails: a line that is not a known
    /// event reads as [`Event::Unknown`].
    pub fn from_value(v: Value) -> Entry {
        let ts = v.get("ts").and_then(Value::as_str).unwrap_or_default().to_string();
        let event = Event::from_value(v.clone());
        let mut e = Entry::new(ts, event);
        if let (Value::Object(line), Value::Object(typed)) = (&v, e.to_value()) {
            e.absent = typed.keys().filter(|k| !line.contains_key(*k)).cloned().collect();
            e.extra = line
                .iter()
                .filter(|(k, _)| !typed.contains_key(*k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
        }
        e
    }

    /// The line as kit writes it (`ts` and `event` among the event's fields); an entry read
    /// from a line writes back the same JSON (see [`Entry::absent`], [`Entry::extra`]).
    pub fn to_value(&self) -> Value {
        match &self.event {
            Event::Unknown(u) => u.line.clone(),
            e => {
                let mut v = e.to_value();
                if let Value::Object(m) = &mut v {
                    m.insert("ts".into(), Value::String(self.ts.clone()));
                    for k in &self.absent {
                        m.remove(k);
                    }
                    m.extend(self.extra.clone());
                }
                v
            }
        }
    }

    /// The event's name (`loop_start`, …; an unknown event's own name, or `""`).
    pub fn name(&self) -> &str {
        self.event.name()
    }

    /// The line had `field` (false for a field an older kit did not write, which reads as its
    /// default): for readers whose default for a missing field is not the type's.
    pub fn has(&self, field: &str) -> bool {
        match &self.event {
            Event::Unknown(u) => u.line.get(field).is_some(),
            _ => !self.absent.iter().any(|a| a == field),
        }
    }

    /// The time it was written, or None when its `ts` is missing or not RFC 3339.
    pub fn time(&self) -> Option<jiff::Timestamp> {
        self.ts.parse().ok()
    }
}

/// A journal line this kit does not read as one of its events: kept as written, never fatal.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Unknown {
    /// The line's JSON as written (with its `ts` and `event`).
    pub line: Value,
    /// Why it did not read: `not an event of this kit` (a newer kit's), or serde's words on
    /// the field that did not fit (`invalid type: string "lots", expected f64`).
    pub reason: String,
}

impl Unknown {
    /// The line is a known event whose fields did not read (rather than an event this kit does
    /// not know).
    pub fn misread(&self) -> bool {
        self.line.get(TAG).and_then(Value::as_str).is_some_and(|n| Event::NAMES.contains(&n))
    }
}

/// Every event kit journals, tagged by its `event` name. See the module doc for the format's
/// rules and [`crate::looprun`] for what each field means.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The loop took over the lock of a dead loop.
    LockTakeover(LockTakeover),
    /// A killed loop's agent group was ended.
    Recovered(Recovered),
    /// How the memory cap is enforced.
    MemoryCap(MemoryCap),
    /// A loop process started.
    LoopStart(LoopStart),
    /// Kit put something back that the agent (or a process) changed.
    Cheat(Cheat),
    /// The criteria before any agent ran.
    Baseline(Baseline),
    /// Function criteria passing at the run's first baseline.
    GreenStart(GreenStart),
    /// An iteration began.
    IterationStart(IterationStart),
    /// The agent of an iteration started.
    AgentStart(AgentStart),
    /// The agent of an iteration ended.
    AgentEnd(AgentEnd),
    /// The cost cap ended an iteration.
    CostCap(CostCap),
    /// Tool calls Claude Code denied.
    PermissionDenials(PermissionDenials),
    /// Models missing from the price table.
    Unpriced(Unpriced),
    /// The criteria after an iteration.
    Criteria(Criteria),
    /// The user's uncommitted work kept under a ref.
    Checkpoint(Checkpoint),
    /// Commits of this run that change a frozen file.
    FrozenCommit(FrozenCommit),
    /// Git config entries and hooks that appeared during the run.
    GitConfigChanged(GitConfigChanged),
    /// Messages of `longrun/inbox.md` put in an iteration's prompt.
    Told(Told),
    /// A decision pending for a person (`kit ask`, or a `- human:` criterion).
    Asked(Asked),
    /// `kit approve N` / `kit reject N` answered one.
    Approval(Approval),
    /// The loop stopped for a person.
    NeedsYou(NeedsYou),
    /// The run goes on with the next agent of `[agent] fallback`.
    AgentSwitch(AgentSwitch),
    /// The agent stopped on a usage or rate limit; the loop waits.
    LimitWait(LimitWait),
    /// The wait of a `limit_wait` ended.
    LimitResume(LimitResume),
    /// A cap was reached.
    Cap(Cap),
    /// The loop stopped on `longrun/PAUSE`.
    Paused(Paused),
    /// The `[notify]` command ran.
    Notify(Notify),
    /// The criteria run again on the same tree before done.
    Confirm(Confirm),
    /// A criterion passed and failed on the same tree.
    Flap(Flap),
    /// A review criterion's evaluator answered.
    Review(Review),
    /// The criteria run on the run's start tree with the work taken out.
    RevertProbe(RevertProbe),
    /// The criteria run with a failing test planted.
    Canary(Canary),
    /// What kit took out of, or pinned in, the criteria's environment.
    CriteriaEnv(CriteriaEnv),
    /// A loop process ended.
    LoopEnd(LoopEnd),
    /// The context-band hook fired.
    Hook(Hook),
    /// `kit handoff save` wrote `longrun/handoff.md`.
    HandoffSaved(HandoffSaved),
    /// `kit race` started or resumed its lanes.
    RaceStart(RaceStart),
    /// A lane of a race ended.
    LaneEnd(LaneEnd),
    /// A race ended.
    RaceEnd(RaceEnd),
    /// A line this kit does not read as one of the events above, as written (with its `ts` and
    /// `event`): a newer kit's event, or one whose fields are not this kit's.
    #[serde(skip)]
    Unknown(Unknown),
}

impl Default for Event {
    fn default() -> Event {
        Event::Unknown(Unknown::default())
    }
}

impl Event {
    /// The name of every known event, as journaled.
    pub const NAMES: [&'static str; 39] = [
        "lock_takeover",
        "recovered",
        "memory_cap",
        "loop_start",
        "cheat",
        "baseline",
        "green_start",
        "iteration_start",
        "agent_start",
        "agent_end",
        "cost_cap",
        "permission_denials",
        "unpriced",
        "criteria",
        "checkpoint",
        "frozen_commit",
        "git_config_changed",
        "told",
        "asked",
        "approval",
        "needs_you",
        "agent_switch",
        "limit_wait",
        "limit_resume",
        "cap",
        "paused",
        "notify",
        "confirm",
        "flap",
        "review",
        "revert_probe",
        "canary",
        "criteria_env",
        "loop_end",
        "hook",
        "handoff_saved",
        "race_start",
        "lane_end",
        "race_end",
    ];

    /// Read one journal object (its `ts` is ignored here: see [`Entry`]). Never fails.
    pub fn from_value(v: Value) -> Event {
        match serde_json::from_value::<Event>(v.clone()) {
            Ok(e) => e,
            Err(err) => {
                let known =
                    v.get(TAG).and_then(Value::as_str).is_some_and(|n| Event::NAMES.contains(&n));
                let reason =
                    if known { err.to_string() } else { "not an event of this kit".to_string() };
                Event::Unknown(Unknown { line: v, reason })
            }
        }
    }

    /// The event as a JSON object with its `event` tag (no `ts`).
    pub fn to_value(&self) -> Value {
        match self {
            Event::Unknown(u) => u.line.clone(),
            // Serialising plain data into a Value cannot fail (string keys, finite or null
            // numbers); an empty object is the honest fallback if it ever did.
            e => serde_json::to_value(e).unwrap_or_else(|_| Value::Object(Map::new())),
        }
    }

    /// The `event` name as journaled (an unknown event's own name, or `""`).
    pub fn name(&self) -> &str {
        match self {
            Event::Unknown(u) => name_of(&u.line),
            e => known_name(e),
        }
    }

    /// The `iteration` field of the events that carry one.
    pub fn iteration(&self) -> Option<u64> {
        Some(match self {
            Event::Recovered(e) => e.iteration,
            Event::Cheat(e) => e.iteration,
            Event::IterationStart(e) => e.iteration,
            Event::AgentStart(e) => e.iteration,
            Event::AgentEnd(e) => e.iteration,
            Event::CostCap(e) => e.iteration,
            Event::PermissionDenials(e) => e.iteration,
            Event::Unpriced(e) => e.iteration,
            Event::Criteria(e) => e.iteration,
            Event::FrozenCommit(e) => e.iteration,
            Event::Told(e) => e.iteration,
            Event::Asked(e) => e.iteration,
            Event::NeedsYou(e) => e.iteration,
            Event::AgentSwitch(e) => e.iteration,
            Event::LimitWait(e) => e.iteration,
            Event::LimitResume(e) => e.iteration,
            Event::Paused(e) => e.iteration,
            Event::Confirm(e) => e.iteration,
            Event::Flap(e) => e.iteration,
            Event::Review(e) => e.iteration,
            Event::RevertProbe(e) => e.iteration,
            Event::Canary(e) => e.iteration,
            Event::LoopEnd(e) => e.iteration,
            Event::Unknown(u) => u.line.get("iteration").and_then(Value::as_u64)?,
            _ => return None,
        })
    }
}

/// The key that tags a journal line with its event's name (`"loop_start"`, …).
pub const TAG: &str = "event";

/// The event name of a journal line read as JSON, without typing the rest of it (`""` when it
/// has none): for readers that only sort lines by event.
pub fn name_of(line: &Value) -> &str {
    line.get(TAG).and_then(Value::as_str).unwrap_or_default()
}

/// A journal line for a test: `fields` (a JSON object; `ts` among them where the test wants
/// one, any subset of the event's fields, as an older kit wrote them) tagged as event `name`.
/// Tests build their journals through this (or [`newer_fixture`]) so that the events' names
/// and their tag live in this file only; a fixture's name that this kit does not know is a
/// typo, not a test.
///
/// Panics (it builds test data, never user data) when `name` is not in [`Event::NAMES`] or
/// `fields` is not an object.
pub fn fixture(name: &str, fields: Value) -> Value {
    assert!(Event::NAMES.contains(&name), "`{name}` is no event of this kit: see Event::NAMES");
    tagged(name, fields)
}

/// A journal line of an event this kit does not know (a newer kit's, or any line that must
/// read as [`Event::Unknown`]), for the tests of how readers keep and show those.
///
/// Panics when `name` is a known event (use [`fixture`]) or `fields` is not an object.
pub fn newer_fixture(name: &str, fields: Value) -> Value {
    assert!(!Event::NAMES.contains(&name), "`{name}` is an event of this kit: use fixture");
    tagged(name, fields)
}

fn tagged(name: &str, fields: Value) -> Value {
    let Value::Object(mut m) = fields else { panic!("a fixture's fields are a JSON object") };
    m.insert(TAG.to_string(), Value::String(name.to_string()));
    Value::Object(m)
}

fn known_name(e: &Event) -> &'static str {
    match e {
        Event::LockTakeover(_) => "lock_takeover",
        Event::Recovered(_) => "recovered",
        Event::MemoryCap(_) => "memory_cap",
        Event::LoopStart(_) => "loop_start",
        Event::Cheat(_) => "cheat",
        Event::Baseline(_) => "baseline",
        Event::GreenStart(_) => "green_start",
        Event::IterationStart(_) => "iteration_start",
        Event::AgentStart(_) => "agent_start",
        Event::AgentEnd(_) => "agent_end",
        Event::CostCap(_) => "cost_cap",
        Event::PermissionDenials(_) => "permission_denials",
        Event::Unpriced(_) => "unpriced",
        Event::Criteria(_) => "criteria",
        Event::Checkpoint(_) => "checkpoint",
        Event::FrozenCommit(_) => "frozen_commit",
        Event::GitConfigChanged(_) => "git_config_changed",
        Event::Told(_) => "told",
        Event::Asked(_) => "asked",
        Event::Approval(_) => "approval",
        Event::NeedsYou(_) => "needs_you",
        Event::AgentSwitch(_) => "agent_switch",
        Event::LimitWait(_) => "limit_wait",
        Event::LimitResume(_) => "limit_resume",
        Event::Cap(_) => "cap",
        Event::Paused(_) => "paused",
        Event::Notify(_) => "notify",
        Event::Confirm(_) => "confirm",
        Event::Flap(_) => "flap",
        Event::Review(_) => "review",
        Event::RevertProbe(_) => "revert_probe",
        Event::Canary(_) => "canary",
        Event::CriteriaEnv(_) => "criteria_env",
        Event::LoopEnd(_) => "loop_end",
        Event::Hook(_) => "hook",
        Event::HandoffSaved(_) => "handoff_saved",
        Event::RaceStart(_) => "race_start",
        Event::LaneEnd(_) => "lane_end",
        Event::RaceEnd(_) => "race_end",
        Event::Unknown(_) => "",
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `lock_takeover`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LockTakeover {
    /// The dead holder's record ([`super::lock::Holder`]), or `{"raw": text}` when it did not
    /// read as one.
    pub previous: Value,
    /// The record named a live process holding no lock (written only when true).
    #[serde(skip_serializing_if = "is_false")]
    pub stale: bool,
}

/// `recovered`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Recovered {
    /// The unfinished agent's iteration.
    pub iteration: u64,
    /// Its process group.
    pub pgid: i32,
    /// Pids ended.
    pub killed: Vec<i32>,
    /// The agent ran under this boot (else nothing of it can be left).
    pub same_boot: bool,
}

/// `memory_cap`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryCap {
    /// `systemd-run` or `watchdog`.
    pub enforcer: String,
    /// Why that one.
    pub reason: String,
    /// The cap, bytes.
    pub max_bytes: u64,
}

/// The caps of a `loop_start`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Caps {
    /// Agent iterations.
    pub iterations: u64,
    /// Wall time, seconds.
    pub wall_s: u64,
    /// USD.
    pub cost_usd: f64,
    /// Consecutive iterations without progress.
    pub no_progress: u64,
}

/// `loop_start`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoopStart {
    /// The run's number (None in journals of kits before durable runs, which also lack
    /// `run_started`, `run_key`, `resumed` and `spent`).
    pub run: Option<u64>,
    /// The run's first `loop_start` time, RFC 3339.
    pub run_started: Option<String>,
    /// Random, one per run: the agent's `KIT_RUN_KEY`.
    pub run_key: Option<String>,
    /// This process continues a run.
    pub resumed: bool,
    /// What the run had spent before this process: `iterations`, `wall_s`, `cost_usd`,
    /// `no_progress`.
    pub spent: Value,
    /// The loop's pid.
    pub pid: u32,
    /// Its host.
    pub host: String,
    /// Its command line.
    pub command: String,
    /// The agent (`claude`, `fake:cheat`, …).
    pub agent: String,
    /// `[agent] fallback`: the agents to go on with (written only when there are some).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallback: Vec<String>,
    /// goal.md's title.
    pub goal: String,
    /// goal.md's level (0–4).
    pub level: u8,
    /// The first iteration this process runs.
    pub first_iteration: u64,
    /// The caps.
    pub caps: Caps,
    /// Iteration timeout, seconds.
    pub timeout_s: f64,
    /// SIGTERM to SIGKILL, seconds.
    pub grace_s: f64,
    /// Memory cap, bytes.
    pub memory_max_bytes: u64,
    /// Where each cap came from: name → `flag`/`config.toml`/`goal.md budget`.
    pub cap_sources: BTreeMap<String, String>,
    /// `on`, or why kit could not become a child subreaper.
    pub subreaper: String,
}

/// `cheat`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cheat {
    /// 0 before the first.
    pub iteration: u64,
    /// `start`/`baseline`/`after_agent`/`after_criteria`/`confirm`/`review`/`exit`.
    pub phase: String,
    /// The path, relative to the repository.
    pub path: String,
    /// A frozen-file revert's kind, `lock_replaced`, `journal_appended`, `run_log_deleted`,
    /// `tests_skipped`, `criteria_program_changed`.
    pub kind: String,
    /// `tests_skipped`: the criterion's goal.md line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// `tests_skipped`: tests skipped now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<u64>,
    /// `tests_skipped`: tests skipped at the loop's start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped_at_start: Option<u64>,
    /// `criteria_program_changed`: the program's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
}

/// `baseline`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Baseline {
    /// The criteria's results (`goal::criteria::CriterionResult` objects; read with
    /// [`super::history::CriterionView::all`]).
    pub results: Value,
    /// Criteria passing.
    pub passed: u64,
    /// Criteria.
    pub total: u64,
    /// HEAD.
    pub commit: String,
    /// The tree read by content differs from HEAD.
    pub dirty: bool,
    /// The run's start tree (None when git could not read it).
    pub tree: Option<String>,
    /// This is the run's first baseline.
    pub start_of_run: bool,
}

/// `green_start`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GreenStart {
    /// goal.md lines of function criteria passing at the first baseline.
    pub lines: Vec<u64>,
    /// `--allow-green-start`.
    pub allowed: bool,
    /// Every criterion passed.
    pub all_pass: bool,
}

/// `iteration_start`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IterationStart {
    /// Its number.
    pub iteration: u64,
    /// The prompt file, relative to the repository.
    pub prompt: String,
}

/// `agent_start`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentStart {
    /// Its iteration.
    pub iteration: u64,
    /// The agent's main process.
    pub pid: i32,
    /// Its process group.
    pub pgid: i32,
    /// Its start time, clock ticks since boot.
    pub starttime: u64,
    /// The boot it runs under.
    pub boot_id: Option<String>,
    /// The argv run, joined by spaces.
    pub command: String,
    /// Its output log, relative to the repository.
    pub log: String,
}

/// `agent_end`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentEnd {
    /// Its iteration.
    pub iteration: u64,
    /// Exit status.
    pub exit: Option<i32>,
    /// The signal that ended it.
    pub signal: Option<i32>,
    /// The iteration timeout ended it.
    pub timed_out: bool,
    /// The run's remaining wall time ended it.
    pub wall_cut: bool,
    /// Stopped by hand.
    pub interrupted: bool,
    /// `kit pause --now` ended it.
    pub paused: bool,
    /// The cost cap ended it.
    pub cost_capped: bool,
    /// The memory cap ended it.
    pub memory_killed: bool,
    /// The memory cap's enforcer.
    pub enforcer: String,
    /// Peak resident memory, bytes.
    pub peak_rss_bytes: u64,
    /// Leftover processes ended after it.
    pub leftovers_killed: Vec<i32>,
    /// Its reported usage (`looprun::agent::Usage`), or null.
    pub usage: Value,
    /// USD, as the loop priced it.
    pub cost_usd: f64,
    /// API calls seen on its stream.
    pub api_calls: u64,
    /// Milliseconds.
    pub duration_ms: u64,
    /// Codex's `turn.failed`/`error` messages.
    pub errors: Vec<String>,
}

/// `cost_cap`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CostCap {
    /// Its iteration.
    pub iteration: u64,
    /// `kit` or `claude`.
    pub by: String,
    /// The run's USD before the iteration.
    pub spent_usd: f64,
    /// The iteration's USD.
    pub iteration_usd: f64,
    /// The run's USD after it.
    pub used: f64,
    /// The cap, USD.
    pub limit: f64,
    /// API calls of the iteration.
    pub api_calls: u64,
    /// What kit had read when it sent SIGTERM: `iteration_usd`, `api_calls`, `last_call_usd`.
    pub at_stop: Value,
    /// `stream`, `rollout` or `turn`.
    pub source: String,
}

/// `permission_denials`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PermissionDenials {
    /// Its iteration.
    pub iteration: u64,
    /// `[{tool_name, tool_input}]`.
    pub denials: Value,
    /// `agent.allowed_tools`.
    pub setting: String,
    /// The line to add.
    pub suggest: String,
}

/// `unpriced`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Unpriced {
    /// Its iteration.
    pub iteration: u64,
    /// Models not in the price table.
    pub models: Vec<String>,
    /// The agent's own figure, USD.
    pub reported_cost_usd: Option<f64>,
}

/// `criteria`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Criteria {
    /// Its iteration.
    pub iteration: u64,
    /// The results (as in [`Baseline::results`]).
    pub results: Value,
    /// Criteria passing.
    pub passed: u64,
    /// Criteria.
    pub total: u64,
    /// HEAD.
    pub commit: String,
    /// The tree read by content differs from HEAD.
    pub dirty: bool,
    /// Nothing changed the tree while the criteria ran.
    pub verified: bool,
    /// The criteria got closer.
    pub progress: bool,
    /// Consecutive iterations without progress.
    pub no_progress: u64,
}

/// `checkpoint`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Checkpoint {
    /// `refs/kit/checkpoint`.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The commit.
    pub commit: String,
}

/// `frozen_commit`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FrozenCommit {
    /// Its iteration.
    pub iteration: u64,
    /// Abbreviated commits.
    pub commits: Vec<String>,
    /// Frozen paths they change.
    pub paths: Vec<String>,
}

/// `git_config_changed`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GitConfigChanged {
    /// Entries and hooks that appeared.
    pub added: Vec<String>,
}

/// `told`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Told {
    /// The iteration whose prompt holds them.
    pub iteration: u64,
    /// The messages, in the inbox's order.
    pub messages: Vec<ToldMessage>,
}

/// One message of a `told`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToldMessage {
    /// Who told it; None for a line added by hand.
    pub from: Option<String>,
    /// When it was told, RFC 3339; None for a line added by hand.
    pub at: Option<String>,
    /// The text.
    pub text: String,
    /// sha256 (hex) of sender, time and text (`longrun::inbox::Message::sha256`).
    pub sha256: String,
    /// Its first line in `longrun/inbox.md`, 1-based.
    pub line: u64,
}

/// `asked`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Asked {
    /// Its number, 1-based across the journal: `kit approve N`.
    pub number: u64,
    /// The question or what is to be approved.
    pub text: String,
    /// The goal.md line of the `- human:` criterion asked for; None for `kit ask`.
    pub line: Option<u64>,
    /// Who asked: a name, `agent` (from an iteration) or `kit` (a human criterion).
    pub from: String,
    /// The last iteration started when it was asked.
    pub iteration: u64,
    /// The working tree's id when asked (None when git could not say).
    pub tree: Option<String>,
    /// HEAD when asked (`none` before the first commit).
    pub commit: String,
}

/// `approval`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Approval {
    /// The `asked` number it answers.
    pub number: u64,
    /// `approved` or `rejected`.
    pub verdict: String,
    /// The person's note (may be empty).
    pub note: String,
    /// Who gave it (login name, or `--by`).
    pub by: String,
    /// The working tree's id it was given on (None when git could not say).
    pub tree: Option<String>,
    /// HEAD then.
    pub commit: String,
    /// Whether it counts: false when given from inside an agent iteration.
    pub counts: bool,
    /// Why it does not count; None when it does.
    pub why: Option<String>,
    /// `kit approve`'s process id.
    pub pid: u32,
    /// Its process group.
    pub pgid: i32,
}

/// `needs_you`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NeedsYou {
    /// The last iteration run.
    pub iteration: u64,
    /// The `asked` numbers left unanswered.
    pub pending: Vec<u64>,
    /// Why, in words.
    pub reason: String,
}

/// `agent_switch`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentSwitch {
    /// The iteration the next agent runs.
    pub iteration: u64,
    /// The agent that stops (its spec).
    pub from: String,
    /// The agent that takes over.
    pub to: String,
    /// `limit` or `no_progress`.
    pub why: String,
    /// Why, in words.
    pub reason: String,
    /// The limit's reset, RFC 3339 (null when none or not a limit).
    pub until: Option<String>,
    /// The iteration is retried under its number.
    pub retry: bool,
    /// The new agent's place in `[agent] fallback`, 1-based.
    pub position: u64,
}

/// `limit_wait`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LimitWait {
    /// The iteration retried.
    pub iteration: u64,
    /// `claude`/`codex`/`fake`/`fake-codex`/`command`.
    pub agent: String,
    /// `usage` or `rate`.
    pub kind: String,
    /// When the limit lifts, RFC 3339.
    pub until: Option<String>,
    /// Seconds to wait.
    pub wait_s: u64,
    /// The wait is a backoff (no `until`).
    pub backoff: bool,
    /// The agent's message.
    pub message: String,
}

/// `limit_resume`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LimitResume {
    /// The iteration retried.
    pub iteration: u64,
    /// Seconds waited.
    pub waited_s: u64,
    /// null, `paused`, `interrupted` or `wall`.
    pub cut_short: Option<String>,
}

/// `cap`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cap {
    /// `iterations`/`wall`/`cost`/`no_progress`.
    pub which: String,
    /// Used (iterations, seconds, USD or iterations).
    pub used: f64,
    /// The cap, same unit.
    pub limit: f64,
}

/// `paused`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Paused {
    /// The last iteration run.
    pub iteration: u64,
    /// `kit pause --now` stopped its agent at once.
    pub now: bool,
    /// The PAUSE record; null for a file made by hand.
    pub by: Value,
}

/// `notify`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Notify {
    /// `done`/`cap`/`limit`/`pause`.
    pub on: String,
    /// The command (null when config.toml did not read).
    pub command: Option<String>,
    /// Its exit status.
    pub exit: Option<i32>,
    /// What went wrong, if anything.
    pub error: Option<String>,
    /// Killed at `[notify] timeout`.
    pub timed_out: bool,
    /// Milliseconds.
    pub duration_ms: u64,
    /// The end of its output.
    pub output_tail: String,
}

/// `confirm`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Confirm {
    /// Its iteration.
    pub iteration: u64,
    /// Runs made.
    pub runs: u64,
    /// All passed every run.
    pub all_pass: bool,
    /// Runs required.
    pub required: u64,
}

/// `flap`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Flap {
    /// Its iteration.
    pub iteration: u64,
    /// goal.md line.
    pub line: u64,
    /// The command.
    pub criterion: String,
    /// Passed, per run.
    pub runs: Vec<bool>,
    /// Flaps of this criterion in this run.
    pub times: u64,
}

/// `review`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Review {
    /// Its iteration.
    pub iteration: u64,
    /// goal.md line.
    pub line: u64,
    /// The review's text.
    pub text: String,
    /// The evaluator command.
    pub evaluator: String,
    /// `pass`/`fail`/`ask`/…
    pub verdict: String,
    /// The evaluator's reason.
    pub reason: String,
    /// Its exit status.
    pub exit: Option<i32>,
    /// Killed at the review timeout.
    pub timed_out: bool,
    /// Milliseconds.
    pub duration_ms: u64,
    /// Its folder, relative to the repository.
    pub dir: String,
}

/// One criterion of a `revert_probe`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProbeResult {
    /// goal.md line.
    pub line: u64,
    /// The command.
    pub command: String,
    /// It passed without the work.
    pub passed: bool,
    /// Its exit status.
    pub exit: Option<i32>,
    /// Killed at the criterion timeout.
    pub timed_out: bool,
    /// Milliseconds.
    pub duration_ms: u64,
}

/// `revert_probe`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RevertProbe {
    /// Its iteration.
    pub iteration: u64,
    /// The start tree probed.
    pub tree: String,
    /// Each criterion's result.
    pub results: Vec<ProbeResult>,
    /// goal.md lines passing without the work.
    pub pass_without_work: Vec<u64>,
    /// goal.md lines exempt (`--allow-green-start`).
    pub exempt: Vec<u64>,
    /// Done was refused.
    pub refused: bool,
    /// Milliseconds.
    pub wall_ms: u64,
    /// Milliseconds of CPU.
    pub cpu_ms: u64,
}

/// `canary`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Canary {
    /// Its iteration.
    pub iteration: u64,
    /// The check's phase.
    pub phase: String,
    /// `goal::canary` results.
    pub results: Value,
}

/// `criteria_env`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CriteriaEnv {
    /// Variables removed.
    pub removed: Vec<String>,
    /// Variables set by kit.
    pub set: Vec<String>,
    /// PATH entries dropped, each with why.
    pub path_dropped: Vec<String>,
    /// Programs pinned: name → path.
    pub pinned: BTreeMap<String, String>,
    /// Names PATH did not find.
    pub not_found: Vec<String>,
}

/// `loop_end`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoopEnd {
    /// `done`/`cap`/`denied`/`flapping`/`review_ask`/`paused`/`interrupted`/`agent_failed`/
    /// `refused`/`error`.
    pub outcome: String,
    /// Iterations of this loop process.
    pub iterations: u64,
    /// The last iteration's number.
    pub iteration: u64,
    /// Why, in words.
    pub reason: String,
    /// The exit code.
    pub exit: u8,
    /// The run's number (absent before durable runs).
    pub run: Option<u64>,
    /// The whole run's iterations.
    pub run_iterations: Option<u64>,
    /// This loop process's wall time, seconds.
    pub wall_s: Option<f64>,
}

/// `hook`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Hook {
    /// Claude Code's hook event.
    pub hook_event: String,
    /// The session.
    pub session: String,
    /// What the hook did.
    pub action: String,
    /// The band crossed, percent.
    pub band: Option<u8>,
    /// Context, tokens.
    pub context: Option<u64>,
    /// Percent of the compaction point, one decimal.
    pub pct: Option<f64>,
    /// Why, in words.
    pub why: String,
}

/// `handoff_saved`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HandoffSaved {
    /// The stamp.
    pub stamp: String,
    /// HEAD.
    pub commit: String,
    /// The tree differs from HEAD.
    pub dirty: bool,
    /// Files fingerprinted.
    pub files: u64,
    /// sha256 of handoff.md as written.
    pub handoff_sha256: String,
    /// sha256 of the summary.
    pub summary_sha256: String,
}

/// `race_start`: `kit race` started (or resumed) its lanes ([`crate::race`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RaceStart {
    /// The race's number (1 for the journal's first race).
    pub run: u64,
    /// A later `kit race` process continuing this run after a killed or stopped one.
    pub resumed: bool,
    /// The commit every lane started from.
    pub base: String,
    /// The user's branch at the start (null: HEAD was detached).
    pub branch: Option<String>,
    /// The lanes.
    pub lanes: Vec<RaceLane>,
    /// The race's caps.
    pub caps: RaceCaps,
    /// `--merge`: merge the winner into the user's branch (false in journals older than it).
    pub merge: bool,
    /// The race's process id.
    pub pid: u32,
    /// Its host.
    pub host: String,
    /// Its command line.
    pub command: String,
}

/// One lane of a `race_start`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RaceLane {
    /// 1-based.
    pub lane: u32,
    /// Its agent spec.
    pub agent: String,
    /// Its branch, `kit/race/<run>/<lane>`.
    pub branch: String,
    /// Its worktree (absolute).
    pub path: String,
}

/// The caps of a `race_start`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RaceCaps {
    /// USD, summed over the lanes.
    pub cost_usd: f64,
    /// Wall time, seconds, shared by the lanes.
    pub wall_s: f64,
    /// Iterations per lane (null: each loop's own cap).
    pub iterations: Option<u32>,
}

/// `lane_end`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LaneEnd {
    /// The race.
    pub run: u64,
    /// The lane, 1-based.
    pub lane: u32,
    /// Its agent spec.
    pub agent: String,
    /// `won`, `stopped`, or its loop's own outcome.
    pub outcome: String,
    /// The lane loop's last `loop_end` outcome (`killed`: none).
    pub loop_outcome: String,
    /// Why, in words.
    pub reason: String,
    /// Iterations of the lane's run.
    pub iterations: u64,
    /// Criteria passing at its last check.
    pub passed: u64,
    /// Criteria in all.
    pub total: u64,
    /// Frozen-file reverts in the lane's run.
    pub reverts: u64,
    /// USD the lane's run spent.
    pub cost_usd: f64,
}

/// `race_end`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RaceEnd {
    /// The race.
    pub run: u64,
    /// `won`, `no_winner`, `needs_you` (not final: `kit race` continues it), `cap`,
    /// `interrupted` or `error`.
    pub outcome: String,
    /// The winning lane.
    pub winner: Option<u32>,
    /// The winner's branch.
    pub branch: Option<String>,
    /// The winner's work as a commit on its branch.
    pub commit: Option<String>,
    /// `fast-forward` or `merge` when merged into the user's branch.
    pub merged: Option<String>,
    /// Why, in words.
    pub reason: String,
    /// USD summed over the lanes.
    pub cost_usd: f64,
    /// This race process's wall time, seconds.
    pub wall_s: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixtures_read_as_the_event_they_name_and_a_typo_fails() {
        let e = Entry::from_value(fixture("loop_start", serde_json::json!({"run": 2, "ts": "t"})));
        assert!(matches!(&e.event, Event::LoopStart(s) if s.run == Some(2)), "{e:?}");
        assert_eq!((e.name(), e.ts.as_str()), ("loop_start", "t"));
        let newer = newer_fixture("teleport", serde_json::json!({"to": "mars"}));
        assert!(matches!(Event::from_value(newer.clone()), Event::Unknown(_)));
        assert_eq!(name_of(&newer), "teleport");
        assert!(std::panic::catch_unwind(|| fixture("loop_strat", serde_json::json!({}))).is_err());
        assert!(std::panic::catch_unwind(|| newer_fixture("cap", serde_json::json!({}))).is_err());
    }

    /// Every line of `text` that is a JSON object, read as an [`Entry`] and written again, is
    /// the same bytes; returns how many lines were known events.
    fn round_trip(what: &str, text: &str) -> usize {
        let mut known = 0;
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(line) else { continue };
            let e = Entry::from_value(v.clone());
            if !matches!(e.event, Event::Unknown(_)) {
                known += 1;
            }
            // Lines written by hand (an exercise's cheat) may order their keys otherwise: kit's
            // lines are byte for byte, those the same JSON.
            let again = e.to_value();
            if serde_json::to_string(&v).unwrap() == line {
                let again = serde_json::to_string(&again).unwrap();
                assert_eq!(again, line, "{what}:{}: {} does not write back", i + 1, e.name());
            } else {
                assert_eq!(again, v, "{what}:{}: {} does not write back", i + 1, e.name());
            }
        }
        known
    }

    /// The rows of the module doc's table: (event, its fields column).
    fn table() -> Vec<(String, String)> {
        include_str!("event.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("//! | `"))
            .filter_map(|l| l.split_once("` | "))
            .map(|(name, fields)| (name.to_string(), fields.to_string()))
            .collect()
    }

    #[test]
    fn the_table_documents_every_event_and_field() {
        let rows = table();
        let mut documented: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
        let mut names = Event::NAMES.to_vec();
        documented.sort_unstable();
        names.sort_unstable();
        assert_eq!(documented, names, "the table's events are Event::NAMES, each once");
        for (name, fields) in &rows {
            // The name is the variant's serde tag: a line with only it reads as that variant.
            let e = Event::from_value(serde_json::json!({ "event": name }));
            assert_eq!(e.name(), name, "{name} is not a variant of Event");
            assert!(!matches!(e, Event::Unknown(_)), "{name} reads as unknown");
            let Value::Object(m) = e.to_value() else { panic!("{name}: not an object") };
            for field in m.keys().filter(|k| *k != "event") {
                assert!(
                    fields.contains(&format!("`{field}`")),
                    "{name}'s field `{field}` is not in its row of the table"
                );
            }
        }
    }

    fn e_newer() -> Event {
        Event::from_value(serde_json::json!({"event": "teleport", "to": "mars"}))
    }

    #[test]
    fn a_newer_kits_event_and_fields_are_kept_and_an_older_kits_lines_lack_theirs() {
        let newer = r#"{"event":"teleport","to":"mars","ts":"2030-01-01T00:00:00Z"}"#;
        let e = Entry::from_value(serde_json::from_str(newer).unwrap());
        assert!(matches!(e.event, Event::Unknown(_)));
        assert_eq!((e.name(), e.ts.as_str()), ("teleport", "2030-01-01T00:00:00Z"));
        assert_eq!(serde_json::to_string(&e.to_value()).unwrap(), newer);
        // A known event with a field this kit does not know, and without one it does.
        let line = r#"{"event":"cap","limit":3.0,"mood":"tired","ts":"t","which":"iterations"}"#;
        let e = Entry::from_value(serde_json::from_str(line).unwrap());
        let Event::Cap(c) = &e.event else { panic!("{e:?}") };
        assert_eq!((c.which.as_str(), c.used, c.limit), ("iterations", 0.0, 3.0));
        assert_eq!(e.absent, ["used"]);
        assert_eq!(serde_json::to_string(&e.to_value()).unwrap(), line);
        // A known name whose fields are not this kit's reads as unknown, not as an error.
        let odd = serde_json::json!({"event": "cap", "used": "lots"});
        let Event::Unknown(u) = Event::from_value(odd) else { panic!("a misread cap is known") };
        assert!(u.misread() && u.reason.contains("invalid type: string \"lots\""), "{u:?}");
        let Event::Unknown(u) = &e_newer() else { panic!() };
        assert!(!u.misread() && u.reason == "not an event of this kit", "{u:?}");
    }

    #[test]
    fn journals_in_the_repository_read_and_write_back_byte_for_byte() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let mut files = vec![root.join("tests/fixtures/mine/loop/longrun/journal.jsonl")];
        for dir in ["exercises", "tests/cases"] {
            let mut stack = vec![root.join(dir)];
            while let Some(d) = stack.pop() {
                for e in std::fs::read_dir(&d).unwrap().flatten() {
                    let p = e.path();
                    if p.is_dir() {
                        stack.push(p);
                    } else if p.file_name().is_some_and(|n| n == "journal.jsonl") {
                        files.push(p);
                    }
                }
            }
        }
        let mut known = 0;
        for f in &files {
            known += round_trip(&f.display().to_string(), &std::fs::read_to_string(f).unwrap());
        }
        assert!(known >= 20, "only {known} known events in {files:?}");
    }
}
