//! Starting the agent and waiting for it: its own process group, the iteration timeout (SIGTERM,
//! grace, SIGKILL to the group), the memory cap, the cost cap inside the iteration (the agent's
//! spend read as it streams, [`Meter`]), `kit pause --now`, Ctrl-C, and its output kept in the
//! iteration's log (written again from kit's open handle when the agent deletes it).

use super::*;

/// What one iteration's agent run needs.
#[derive(Clone, Debug)]
pub struct Launch<'a> {
    /// The agent.
    pub spec: &'a AgentSpec,
    /// How Claude Code or Codex is started (permissions, sandbox, model).
    pub setup: &'a AgentSetup,
    /// Repository root: working directory, `KIT_ROOT`.
    pub root: &'a Path,
    /// The prompt file: stdin and `KIT_PROMPT_FILE`.
    pub prompt_file: &'a Path,
    /// 1-based iteration number: `KIT_ITERATION`.
    pub iteration: u64,
    /// The run's key (`KIT_RUN_KEY`): the same for every iteration of one run, continued or not.
    pub run_key: &'a str,
    /// Where stdout and stderr go.
    pub log: &'a Path,
    /// Time until SIGTERM to the group.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Memory cap in bytes of the agent's tree.
    pub memory_max: u64,
    /// Who enforces the memory cap.
    pub enforcer: Enforcer,
    /// Asked to stop by hand (SIGINT/SIGTERM/SIGHUP to kit): ended like a timeout.
    pub stop: Option<&'a crate::signals::Stop>,
    /// `longrun/PAUSE`, read every [`PAUSE_POLL`] while the agent runs: a `kit pause --now`
    /// record there stops the agent at once (ended like a timeout).
    pub pause_file: Option<&'a Path>,
    /// The `longrun/` folder where the model a Claude stream's `system/init` names (with its
    /// window suffix, `claude-opus-4-8[1m]`) is remembered for the hook, while the agent runs
    /// ([`InitWatch`]). None: not remembered.
    pub longrun: Option<&'a Path>,
    /// The price table the agent's API calls are priced with as they stream ([`Meter`]); None:
    /// nothing is read while it runs ([`Ended::streamed`] stays empty).
    pub prices: Option<&'a PriceTable>,
    /// The cost cap inside the iteration; None: not enforced while the agent runs.
    pub cost_cap: Option<CostCap>,
}

/// The cost cap as it stands when an iteration starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostCap {
    /// USD the run spent before this iteration.
    pub spent_usd: f64,
    /// The cap, USD: when `spent_usd` plus what this iteration spent so far reaches it, the
    /// agent's process group is ended like at the timeout (SIGTERM, grace, SIGKILL).
    pub cap_usd: f64,
}

/// The moment the cost cap ended an agent: what kit had read by then.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CostStop {
    /// USD this iteration had spent when kit sent SIGTERM.
    pub iteration_usd: f64,
    /// API calls it had made.
    pub api_calls: u64,
    /// USD of the call that reached the cap.
    pub last_call_usd: f64,
}

/// How often a running agent's loop looks for `kit pause --now`.
pub const PAUSE_POLL: Duration = Duration::from_millis(200);

/// The process just started: journaled before kit waits on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Started {
    /// The agent's main process.
    pub pid: i32,
    /// Its process group (the same number: it leads its own group).
    pub pgid: i32,
    /// Its start time, clock ticks since boot (to recognise the group after a crash).
    pub starttime: u64,
    /// The argv actually run, joined by spaces.
    pub command: String,
}

/// How one agent run ended.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Ended {
    /// Exit status of the main process, if it exited.
    pub exit: Option<i32>,
    /// Signal that ended it, if one did.
    pub signal: Option<i32>,
    /// Ended by the iteration timeout.
    pub timed_out: bool,
    /// Ended because kit was asked to stop (SIGINT, SIGTERM, SIGHUP).
    pub interrupted: bool,
    /// Ended because `kit pause --now` asked for it.
    pub paused: bool,
    /// Ended by the memory cap (the watchdog fired, or SIGKILL under a systemd scope that kit
    /// did not send).
    pub memory_killed: bool,
    /// Highest resident memory of the tree the watchdog saw, bytes (0 when not sampled).
    pub peak_rss_bytes: u64,
    /// Leftover processes of its tree that kit killed after the main process ended.
    pub leftovers_killed: Vec<i32>,
    /// Wall time of the run, ms.
    pub duration_ms: u64,
    /// The agent deleted or replaced its log; kit wrote it again from its open handle.
    pub log_recovered: bool,
    /// Ended by the cost cap: the run's spend plus this iteration's, read as it streamed,
    /// reached the cap.
    pub cost_capped: Option<CostStop>,
    /// What the agent spent by its stream's account, read to its end (see [`Meter`]): the
    /// iteration's cost when the agent printed no final usage (killed, crashed).
    pub streamed: Streamed,
}

/// Start the agent, call `on_start` (which journals `agent_start`) before waiting, supervise it
/// to its end and clean up its tree.
///
/// Errors: [`Error::Internal`] when the agent cannot be started (program not found) or its tree
/// cannot be ended; an error from `on_start` is returned after the agent's tree was killed.
pub fn run(l: &Launch<'_>, on_start: &mut dyn FnMut(&Started) -> Result<()>) -> Result<Ended> {
    let argv = l.enforcer.wrap(l.spec.argv_with(l.setup), l.memory_max);
    // Read as well as written: kit reads it back through `kept` if the agent deletes it.
    let log = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(l.log)
        .at(l.log)?;
    let log2 = log.try_clone().at(l.log)?;
    // kit's own handle on the log: the output survives the agent deleting the file.
    let kept = log.try_clone().at(l.log)?;
    let stdin = File::open(l.prompt_file).at(l.prompt_file)?;
    let started_at = Instant::now();
    let mut cmd = Command::new(&argv[0]);
    crate::signals::unblock_in_child(&mut cmd);
    let mut child = cmd
        .args(&argv[1..])
        .current_dir(l.root)
        .env("KIT_PROMPT_FILE", l.prompt_file)
        .env("KIT_ITERATION", l.iteration.to_string())
        .env("KIT_RUN_KEY", l.run_key)
        .env("KIT_ROOT", l.root)
        .envs(l.spec.env_with(l.setup))
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log2))
        .process_group(0)
        .spawn()
        .map_err(|e| {
            Error::internal(format!("cannot start the agent `{}`: {e}", argv.join(" ")))
                .with_hint(AGENT_NOT_FOUND_HINT)
        })?;
    let pid = child.id() as i32;
    let me = std::process::id() as i32;
    let started = Started {
        pid,
        pgid: pid,
        starttime: procs::get(pid).map_or(0, |p| p.starttime),
        command: argv.join(" "),
    };
    if let Err(e) = on_start(&started) {
        let _ = procs::end_tree(me, pid, Duration::from_secs(5));
        let _ = child.wait();
        return Err(e);
    }

    let mut ended = Ended::default();
    let mut watchdog =
        (l.enforcer == Enforcer::Watchdog).then(|| Watchdog::new(me, pid, l.memory_max));
    let mut term_at: Option<Instant> = None;
    let mut kill_sent = false;
    let mut pause_checked = Instant::now();
    let mut meter = l.prices.map(|p| Meter::new(l.spec.format(), p, Some(l.setup.model.as_str())));
    let mut init = l
        .longrun
        .filter(|_| l.spec.format() != OutputFormat::CodexJson)
        .map(|dir| InitWatch { longrun: dir, read: 0, partial: Vec::new() });
    let status = loop {
        if init.as_mut().is_some_and(|w| w.poll(&kept)) {
            init = None;
        }
        if let Some(m) = meter.as_mut() {
            m.poll(&kept);
            if let Some(cap) = l.cost_cap.filter(|_| ended.cost_capped.is_none()) {
                let s = m.streamed();
                if cap.spent_usd + s.cost_usd >= cap.cap_usd {
                    ended.cost_capped = Some(CostStop {
                        iteration_usd: s.cost_usd,
                        api_calls: s.api_calls,
                        last_call_usd: s.last_call_usd,
                    });
                    if term_at.is_none() {
                        procs::signal_tree(me, pid, Signal::SIGTERM);
                        term_at = Some(Instant::now());
                    }
                }
            }
        }
        if let Some(st) =
            child.try_wait().map_err(|e| Error::internal(format!("waiting for the agent: {e}")))?
        {
            break st;
        }
        if let Some(w) = watchdog.as_mut() {
            if w.tick().is_some() {
                ended.memory_killed = true;
                kill_sent = true;
            }
        }
        if let Some((stop, sig)) = l.stop.and_then(|s| Some((s, s.requested()?))) {
            if !ended.interrupted {
                ended.interrupted = true;
                notify(&format!(
                    "loop: {sig} received: stopping the agent (process group {pid}): SIGTERM now, \
                     SIGKILL in {} unless it exits; press Ctrl-C again to kill it at once",
                    crate::units::format_duration(l.grace)
                ));
                if term_at.is_none() {
                    procs::signal_tree(me, pid, Signal::SIGTERM);
                    term_at = Some(Instant::now());
                }
            } else if !kill_sent && stop.times() >= 2 {
                notify(&format!("loop: {sig} again: killing the agent's process group {pid} now"));
                procs::signal_tree(me, pid, Signal::SIGKILL);
                kill_sent = true;
            }
        }
        if let Some(pause_file) = l.pause_file.filter(|_| !ended.paused) {
            if pause_checked.elapsed() >= PAUSE_POLL {
                pause_checked = Instant::now();
                if crate::longrun::pause::read_at(pause_file).is_some_and(|p| p.now()) {
                    ended.paused = true;
                    notify(&format!(
                        "loop: kit pause --now: stopping the agent (process group {pid}): SIGTERM \
                         now, SIGKILL in {} unless it exits",
                        crate::units::format_duration(l.grace)
                    ));
                    if term_at.is_none() {
                        procs::signal_tree(me, pid, Signal::SIGTERM);
                        term_at = Some(Instant::now());
                    }
                }
            }
        }
        let elapsed = started_at.elapsed();
        match term_at {
            None if elapsed >= l.timeout => {
                ended.timed_out = true;
                procs::signal_tree(me, pid, Signal::SIGTERM);
                term_at = Some(Instant::now());
            }
            Some(t) if !kill_sent && t.elapsed() >= l.grace => {
                procs::signal_tree(me, pid, Signal::SIGKILL);
                kill_sent = true;
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    ended.exit = status.code();
    ended.signal = status.signal();
    if l.enforcer == Enforcer::SystemdRun
        && ended.signal == Some(Signal::SIGKILL as i32)
        && !kill_sent
    {
        ended.memory_killed = true;
    }
    ended.peak_rss_bytes = watchdog.map_or(0, |w| w.peak);
    match procs::end_tree(me, pid, Duration::from_secs(10)) {
        Ok(killed) => ended.leftovers_killed = killed,
        Err(alive) => {
            return Err(Error::internal(format!(
                "the agent's processes {alive:?} survived SIGKILL for 10s; the tree is not safe to check"
            )))
        }
    }
    ended.duration_ms = started_at.elapsed().as_millis() as u64;
    if let Some(m) = meter.as_mut() {
        m.poll(&kept);
        ended.streamed = m.streamed();
    }
    ended.log_recovered = keep_log(l.log, &kept)?;
    Ok(ended)
}

/// Reads a Claude stream's log while the agent runs, until its `system/init` event: the model
/// there carries the window suffix (`claude-opus-4-8[1m]`) that transcript lines lack, and
/// SessionStart stdin names it only after a compaction (real-clis.md §3, §5). It is remembered
/// for the session ([`crate::hook::state::remember_model`]) so that the hook resolves the
/// compaction point for that window. `system/init` is the stream's first event, printed before
/// the first API call, so a watch polled with the process is done before any tool hook runs.
pub(super) struct InitWatch<'a> {
    longrun: &'a Path,
    /// Bytes of the log read so far.
    read: u64,
    /// The bytes of a line not yet ended.
    partial: Vec<u8>,
}

impl InitWatch<'_> {
    /// Read no further than this for `system/init` (it is the first line of a stream).
    const LIMIT: u64 = 1 << 20;

    /// Read what the agent added to `log`; true when the watch is over: `system/init` was
    /// read (and remembered), or [`Self::LIMIT`] bytes came without one.
    fn poll(&mut self, log: &File) -> bool {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 16 * 1024];
        loop {
            let n = match log.read_at(&mut buf, self.read) {
                Ok(0) | Err(_) => return self.read >= Self::LIMIT,
                Ok(n) => n,
            };
            self.read += n as u64;
            self.partial.extend_from_slice(&buf[..n]);
            while let Some(end) = self.partial.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.partial.drain(..=end).collect();
                if self.remember(&line) {
                    return true;
                }
            }
            if self.read >= Self::LIMIT {
                return true;
            }
        }
    }

    /// Remember the model of an `init` line; true when `line` was one.
    fn remember(&self, line: &[u8]) -> bool {
        let Ok(v) = serde_json::from_slice::<Value>(line) else { return false };
        let field = |k: &str| v.get(k).and_then(Value::as_str);
        if field("type") != Some("system") || field("subtype") != Some("init") {
            return false;
        }
        if let (Some(session), Some(model)) = (field("session_id"), field("model")) {
            if !session.trim().is_empty() && !model.trim().is_empty() {
                if let Err(e) = crate::hook::state::remember_model(self.longrun, session, model) {
                    notify(&format!("loop: cannot remember the model {model} for the hook: {e}"));
                }
            }
        }
        true
    }
}

/// Say at once, on stderr, what a stop request is doing (the loop's own lines go to stdout and
/// may be redirected to a file; the person who pressed Ctrl-C reads the terminal). A failed write
/// is ignored: the stop goes on.
pub(super) fn notify(line: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// Put the iteration's log back when the agent deleted or replaced it (`git clean -fdx`,
/// `rm -rf longrun`): kit held it open from before the agent started, so the whole output is
/// read back through kit's handle and written again at `path` (its folder recreated). Returns
/// whether it had to.
///
/// Errors: [`Error::Io`] when the log cannot be read back or written.
pub(super) fn keep_log(path: &Path, kept: &File) -> Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::MetadataExt;
    let ours = kept.metadata().at(path)?;
    let same = std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.dev() == ours.dev() && m.ino() == ours.ino());
    if same {
        return Ok(false);
    }
    let mut bytes = Vec::new();
    let mut f = kept;
    f.seek(SeekFrom::Start(0)).at(path)?;
    f.read_to_end(&mut bytes).at(path)?;
    if let Some(dir) = path.parent() {
        crate::atomic::create_dir_all(dir)?;
    }
    crate::atomic::write_atomic(path, &bytes)?;
    Ok(true)
}
