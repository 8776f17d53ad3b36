//! `kit schedule install` / `kit schedule remove`: a timer that calls `kit loop --ensure-alive`
//! for one repository (see [`crate::looprun::ensure`]), so a loop survives crashes, logouts and
//! reboots without anyone watching. Two backends:
//!
//! - **systemd** (the default where `systemctl --user` answers): a user service and timer in
//!   `~/.config/systemd/user/` (or `$XDG_CONFIG_HOME/systemd/user/`), named after the repository
//!   (`kit-loop-SLUG-HASH`: its folder's name, made safe, and the first 8 hex digits of the
//!   sha256 of its absolute path, so two repositories never share a unit). The service is
//!   `Type=forking` (ensure-alive returns once the loop it started holds the lock) with
//!   `MemoryMax=` config.toml's memory cap and `MemorySwapMax=0` over the whole tree, and
//!   `SuccessExitStatus=5` (paused is not a failure); the timer has `Persistent=true`, so a
//!   start missed while the machine was off happens at boot. Then `systemctl --user
//!   daemon-reload` and `enable --now` the timer. A user timer stops at logout unless lingering
//!   is on (`loginctl enable-linger`); `kit doctor` says which.
//! - **cron**: one line in the user's crontab, under a marker comment naming the repository
//!   (`# kit schedule kit-loop-SLUG-HASH: PATH`), run through `flock -n` on
//!   `longrun/.runs/cron.lock` so a slow call is never doubled, its output appended to
//!   `longrun/.runs/cron.log`.
//!
//! Both call kit by the absolute path of the running binary ([`std::env::current_exe`]) with
//! `-C REPOSITORY`, and carry the `PATH` of the shell that installed them (timers and cron
//! start with a bare one, where `claude` or `codex` would not be found).
//!
//! Quoting: in `ExecStart=` and `Environment=` every word is double-quoted with `\` and `"`
//! backslash-escaped, `%` written `%%` (systemd's specifier escape) and `$` written `$$`
//! (systemd.service(5), "Command lines"); `WorkingDirectory=` takes the path as it is (systemd
//! does not unquote it; spaces are fine) with `%` written `%%`. In the crontab line each word
//! is single-quoted for `sh` (`'` written `'\''`) and `%` written `\%` (crontab(5): an
//! unescaped `%` ends the command). A path with a newline or another control character cannot
//! be written in either and is refused.
//!
//! `--dry-run` prints exactly what would be written and changes nothing; installing twice
//! changes nothing the second time; `remove` deletes only kit's own units (the two files of
//! this repository's name that carry kit's marker line) or kit's own crontab block.
//!
//! Test seams (documented, not for daily use): `KIT_SYSTEMD_USER_DIR` replaces the unit folder,
//! `KIT_SYSTEMCTL` the `systemctl` program and `KIT_CRONTAB` the `crontab` program (each a path
//! to a program taking the same arguments: `--user daemon-reload`, `--user enable --now UNIT`,
//! `--user disable --now UNIT`, `--user show-environment`; `-l`, and `-` with the new crontab on
//! stdin).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::error::{Error, IoContext, Result, EXIT_INTERNAL, EXIT_OK};
use crate::longrun::Project;

/// Which scheduler to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A user systemd service and timer.
    Systemd,
    /// A crontab line.
    Cron,
}

/// `kit schedule install|remove` options.
#[derive(Clone, Debug)]
pub struct ScheduleOptions {
    /// The scheduler; None picks systemd where `systemctl --user` answers, else cron.
    pub backend: Option<Backend>,
    /// How often the timer calls `kit loop --ensure-alive` (install only).
    pub every: Duration,
    /// Print what would be written; change nothing.
    pub dry_run: bool,
}

/// The default interval of `--every`.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(600);

/// The marker that starts every file and crontab block kit writes.
const MARKER: &str = "# kit schedule";

/// `kit schedule install`.
///
/// Errors: [`Error::Usage`] (exit 2) outside an initialised repository, for an `--every` that
/// does not repeat evenly, a path that cannot be written in a unit or crontab, or no scheduler;
/// [`Error::Io`] when a file cannot be written. Exit 1 (with the command to run) when the units
/// were written but `systemctl --user` could not enable them, or `crontab` failed.
pub fn install(cwd: &Path, opts: &ScheduleOptions, out: &mut dyn Write) -> Result<u8> {
    let project = Project::discover_initialised(cwd)?;
    let target = Target::of(&project)?;
    let backend = pick(opts.backend)?;
    let cal = Calendar::of(opts.every)?;
    match backend {
        Backend::Systemd => install_systemd(&project, &target, &cal, opts, out),
        Backend::Cron => install_cron(&project, &target, &cal, opts, out),
    }
}

/// `kit schedule remove`: delete this repository's units or crontab block, and only those.
///
/// Errors: as [`install`].
pub fn remove(cwd: &Path, opts: &ScheduleOptions, out: &mut dyn Write) -> Result<u8> {
    let project = Project::discover_initialised(cwd)?;
    let target = Target::of(&project)?;
    let o = Path::new("stdout");
    match pick(opts.backend)? {
        Backend::Systemd => {
            let dir = unit_dir()?;
            let files = [target.service(), target.timer()].map(|n| dir.join(n));
            let ours: Vec<&PathBuf> = files.iter().filter(|p| is_ours(p)).collect();
            if ours.is_empty() {
                writeln!(
                    out,
                    "schedule: no kit units for {} in {}; nothing to remove",
                    target.root,
                    dir.display()
                )
                .at(o)?;
                return Ok(EXIT_OK);
            }
            if opts.dry_run {
                for p in &ours {
                    writeln!(out, "would remove {}", p.display()).at(o)?;
                }
                return Ok(EXIT_OK);
            }
            let _ = systemctl(&["--user", "disable", "--now", &target.timer()]);
            for p in &ours {
                std::fs::remove_file(p).at(p)?;
                writeln!(out, "removed {}", p.display()).at(o)?;
            }
            let _ = systemctl(&["--user", "daemon-reload"]);
            Ok(EXIT_OK)
        }
        Backend::Cron => {
            let current = crontab_list()?;
            let (kept, found) = without_block(&current, &target.id);
            if !found {
                writeln!(
                    out,
                    "schedule: no kit crontab line for {}; nothing to remove",
                    target.root
                )
                .at(o)?;
                return Ok(EXIT_OK);
            }
            if opts.dry_run {
                writeln!(out, "would install this crontab (via {} -):", crontab_program()).at(o)?;
                out.write_all(kept.as_bytes()).at(o)?;
                return Ok(EXIT_OK);
            }
            crontab_install(&kept)?;
            writeln!(out, "removed the crontab line for {} ({})", target.root, target.id).at(o)?;
            Ok(EXIT_OK)
        }
    }
}

/// What the schedule points at: the repository, kit, and the names derived from them.
struct Target {
    /// The repository root, as text.
    root: String,
    /// kit's binary, absolute.
    kit: String,
    /// `kit-loop-SLUG-HASH`.
    id: String,
    /// The `PATH` to carry.
    path_env: String,
    /// config.toml's memory cap, bytes.
    memory_max: u64,
}

impl Target {
    fn of(project: &Project) -> Result<Target> {
        let root = project.root.to_string_lossy().into_owned();
        let kit = std::env::current_exe()
            .map_err(|e| Error::internal(format!("cannot find kit's own binary: {e}")))?
            .to_string_lossy()
            .into_owned();
        for (what, text) in [("the repository's path", &root), ("kit's path", &kit)] {
            if text.chars().any(char::is_control) {
                return Err(Error::usage(format!(
                    "{what} `{}` holds a control character (a newline?); no unit file or crontab line can name it",
                    text.escape_debug()
                ))
                .with_hint("move the repository (or kit) to a path without one, then kit schedule install"));
            }
        }
        let cfg = crate::longrun::config::Config::load(&project.config())?;
        let path_env = dedup_path(
            &std::env::var("PATH")
                .unwrap_or_default()
                .chars()
                .filter(|c| !c.is_control())
                .collect::<String>(),
        );
        Ok(Target { id: unit_id(&project.root), root, kit, path_env, memory_max: cfg.memory_max() })
    }

    fn service(&self) -> String {
        format!("{}.service", self.id)
    }

    fn timer(&self) -> String {
        format!("{}.timer", self.id)
    }
}

/// `kit-loop-SLUG-HASH` for the repository at `root`: SLUG is its folder's name with anything
/// but ASCII letters, digits, `_` and `-` turned into `-` (at most 32 characters), HASH the
/// first 8 hex digits of the sha256 of the whole path. A valid unit name with no escaping.
pub(crate) fn unit_id(root: &Path) -> String {
    let name = root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut slug = String::new();
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '-' };
        if !(c == '-' && slug.ends_with('-')) {
            slug.push(c);
        }
    }
    let slug: String = slug.trim_matches('-').chars().take(32).collect();
    let slug = if slug.is_empty() { "repo".to_string() } else { slug };
    let hash = crate::digest::sha256_hex(root.as_os_str().as_encoded_bytes());
    format!("kit-loop-{slug}-{}", &hash[..8])
}

/// The schedule an `--every` gives, in both syntaxes.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Calendar {
    /// `OnCalendar=` value.
    systemd: String,
    /// The five crontab time fields.
    cron: String,
    /// For people: `10m`.
    words: String,
}

impl Calendar {
    /// Errors: [`Error::Usage`] for an interval that does not repeat evenly within an hour or
    /// a day (a timer or crontab line can only say "every N minutes past the hour" or "every N
    /// hours from midnight").
    fn of(every: Duration) -> Result<Calendar> {
        let secs = every.as_secs();
        let words = humantime::format_duration(every).to_string();
        let uneven = || {
            Error::usage(format!(
                "--every {words}: a schedule must repeat evenly within the hour or the day: give \
                 minutes that divide 60 (1m, 2m, 5m, 10m, 15m, 20m, 30m) or hours that divide 24 \
                 (1h, 2h, 3h, 4h, 6h, 8h, 12h, 24h)"
            ))
            .with_hint("kit schedule install --every 10m")
        };
        if secs == 0 || !secs.is_multiple_of(60) || every.subsec_nanos() != 0 {
            return Err(uneven());
        }
        let m = secs / 60;
        if m < 60 && 60 % m == 0 {
            return Ok(Calendar {
                systemd: format!("*-*-* *:00/{m}:00"),
                cron: format!("*/{m} * * * *"),
                words,
            });
        }
        if m.is_multiple_of(60) && 24 % (m / 60) == 0 {
            let h = m / 60;
            let (systemd, cron) = if h == 24 {
                ("*-*-* 00:00:00".to_string(), "0 0 * * *".to_string())
            } else {
                (format!("*-*-* 00/{h}:00:00"), format!("0 */{h} * * *"))
            };
            return Ok(Calendar { systemd, cron, words });
        }
        Err(uneven())
    }
}

/// The backend: the one asked for, else systemd where `systemctl --user` answers, else cron
/// where `crontab` is found.
fn pick(asked: Option<Backend>) -> Result<Backend> {
    if let Some(b) = asked {
        return Ok(b);
    }
    if systemctl(&["--user", "show-environment"]).is_ok() {
        return Ok(Backend::Systemd);
    }
    if crate::proc::find_on_path(&crontab_program()).is_some()
        || Path::new(&crontab_program()).is_file()
    {
        return Ok(Backend::Cron);
    }
    Err(Error::usage("neither a user systemd (systemctl --user) nor crontab answers here")
        .with_hint(
            "kit schedule install --systemd (writes the units to enable later) or install cron",
        ))
}

/// The user unit folder: `KIT_SYSTEMD_USER_DIR`, else `$XDG_CONFIG_HOME/systemd/user`, else
/// `$HOME/.config/systemd/user`.
///
/// Errors: [`Error::Usage`] when none of them is set.
fn unit_dir() -> Result<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(d) = var("KIT_SYSTEMD_USER_DIR") {
        return Ok(d);
    }
    if let Some(d) = var("XDG_CONFIG_HOME") {
        return Ok(d.join("systemd").join("user"));
    }
    var("HOME").map(|h| h.join(".config").join("systemd").join("user")).ok_or_else(|| {
        Error::usage("HOME is not set: no user unit folder")
            .with_hint("export HOME, then kit schedule install")
    })
}

/// A word for `ExecStart=`/`Environment=`: double-quoted, `\` `"` escaped, `%%`, `$$`.
pub(crate) fn systemd_quote(word: &str) -> String {
    let mut s = String::from("\"");
    for c in word.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '%' => s.push_str("%%"),
            '$' => s.push_str("$$"),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// A value systemd takes as it is but for specifiers (`WorkingDirectory=`, `Description=`).
fn systemd_plain(text: &str) -> String {
    text.replace('%', "%%")
}

/// A word for `sh`, single-quoted, with `%` escaped for cron.
pub(crate) fn cron_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''")).replace('%', "\\%")
}

/// The service and timer files' text, from `kit/schedule/kit-loop.{service,timer}`.
fn units(t: &Target, cal: &Calendar) -> (String, String) {
    let root_quoted = systemd_quote(&t.root);
    let kit = systemd_quote(&t.kit);
    let path = systemd_quote(&format!("PATH={}", t.path_env));
    let plain = systemd_plain(&t.root);
    let memory_max = crate::duration::format_size(t.memory_max);
    let fields = [
        ("id", t.id.as_str()),
        ("root", t.root.as_str()),
        ("root_quoted", root_quoted.as_str()),
        ("kit", kit.as_str()),
        ("path", path.as_str()),
        ("working_directory", plain.as_str()),
        ("description", plain.as_str()),
        ("memory_max", memory_max.as_str()),
        ("calendar", cal.systemd.as_str()),
        ("every", cal.words.as_str()),
    ];
    (fill(SERVICE_TEMPLATE, &fields), fill(TIMER_TEMPLATE, &fields))
}

/// The crontab block, from `kit/schedule/crontab.txt`.
fn cron_block(t: &Target, cal: &Calendar) -> String {
    let runs = format!("{}/longrun/.runs", t.root);
    let (root_quoted, kit, path) =
        (cron_quote(&t.root), cron_quote(&t.kit), cron_quote(&t.path_env));
    let (lock, log) =
        (cron_quote(&format!("{runs}/cron.lock")), cron_quote(&format!("{runs}/cron.log")));
    let fields = [
        ("id", t.id.as_str()),
        ("root", t.root.as_str()),
        ("root_quoted", root_quoted.as_str()),
        ("kit", kit.as_str()),
        ("path", path.as_str()),
        ("calendar", cal.cron.as_str()),
        ("lock", lock.as_str()),
        ("log", log.as_str()),
    ];
    fill(CRON_TEMPLATE, &fields)
}

/// `template` with each `{name}` of `fields` replaced by its value, in one pass (a value that
/// holds braces is not read again); an unknown `{…}` stays as it is.
fn fill(template: &str, fields: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + 256);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let name = after.find('}').map(|close| &after[..close]);
        match name.and_then(|n| fields.iter().find(|(k, _)| *k == n)) {
            Some((k, v)) => {
                out.push_str(v);
                rest = &after[k.len() + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `kit/schedule/kit-loop.service`.
const SERVICE_TEMPLATE: &str = include_str!("../../../kit/schedule/kit-loop.service");
/// `kit/schedule/kit-loop.timer`.
const TIMER_TEMPLATE: &str = include_str!("../../../kit/schedule/kit-loop.timer");
/// `kit/schedule/crontab.txt`.
const CRON_TEMPLATE: &str = include_str!("../../../kit/schedule/crontab.txt");

fn install_systemd(
    project: &Project,
    t: &Target,
    cal: &Calendar,
    opts: &ScheduleOptions,
    out: &mut dyn Write,
) -> Result<u8> {
    let o = Path::new("stdout");
    let dir = unit_dir()?;
    let (service, timer) = units(t, cal);
    let files = [(dir.join(t.service()), service), (dir.join(t.timer()), timer)];
    if opts.dry_run {
        for (path, text) in &files {
            writeln!(out, "would write {}:", path.display()).at(o)?;
            out.write_all(text.as_bytes()).at(o)?;
        }
        writeln!(
            out,
            "would run: systemctl --user daemon-reload && systemctl --user enable --now {}",
            t.timer()
        )
        .at(o)?;
        return Ok(EXIT_OK);
    }
    for (path, _) in &files {
        if path.exists() && !is_ours(path) {
            return Err(Error::usage(format!(
                "{} exists and was not written by kit schedule; kit will not overwrite it",
                path.display()
            ))
            .with_hint("move it away, then kit schedule install"));
        }
    }
    crate::atomic::create_dir_all(&dir)?;
    crate::atomic::create_dir_all(&project.runs())?;
    let mut changed = false;
    for (path, text) in &files {
        if std::fs::read(path).ok().as_deref() == Some(text.as_bytes()) {
            writeln!(out, "unchanged {}", path.display()).at(o)?;
        } else {
            crate::atomic::write_atomic(path, text.as_bytes())?;
            writeln!(out, "wrote {}", path.display()).at(o)?;
            changed = true;
        }
    }
    let enable = systemctl(&["--user", "daemon-reload"])
        .and_then(|()| systemctl(&["--user", "enable", "--now", &t.timer()]));
    match enable {
        Ok(()) => {
            writeln!(
                out,
                "schedule: {} enabled{}: kit loop --ensure-alive every {} (systemctl --user list-timers shows it; journalctl --user -u {} its lines)",
                t.timer(),
                if changed { "" } else { " (it was already installed)" },
                cal.words,
                t.service()
            )
            .at(o)?;
            if let Linger::Off(user) = lingering() {
                writeln!(out, "note: lingering is off for {user}: the timer stops when you log out; loginctl enable-linger {user} keeps it running").at(o)?;
            }
            Ok(EXIT_OK)
        }
        Err(why) => {
            writeln!(
                out,
                "schedule: the units are written but not enabled: systemctl --user does not answer here ({why}); in a session with a user systemd run: systemctl --user daemon-reload && systemctl --user enable --now {}",
                t.timer()
            )
            .at(o)?;
            Ok(EXIT_INTERNAL)
        }
    }
}

// Twin of `install_systemd`: the same install, for the other scheduler.
fn install_cron(
    project: &Project,
    t: &Target,
    cal: &Calendar,
    opts: &ScheduleOptions,
    out: &mut dyn Write,
) -> Result<u8> {
    let o = Path::new("stdout");
    let block = cron_block(t, cal);
    let current = match crontab_list() {
        // A dry run needs no crontab program: it shows what it would write, and says the tool
        // is missing (issue 22).
        Err(e) if opts.dry_run => {
            writeln!(
                out,
                "note: {e}; without it nothing can be installed (install cron, or kit schedule install --systemd)"
            )
            .at(o)?;
            String::new()
        }
        r => r?,
    };
    let (mut kept, _) = without_block(&current, &t.id);
    if !kept.is_empty() && !kept.ends_with('\n') {
        kept.push('\n');
    }
    kept.push_str(&block);
    if opts.dry_run {
        writeln!(out, "would install this crontab (via {} -):", crontab_program()).at(o)?;
        out.write_all(kept.as_bytes()).at(o)?;
        return Ok(EXIT_OK);
    }
    crate::atomic::create_dir_all(&project.runs())?;
    if kept == current {
        writeln!(out, "schedule: the crontab line for {} is installed already; unchanged", t.root)
            .at(o)?;
        return Ok(EXIT_OK);
    }
    crontab_install(&kept)?;
    writeln!(
        out,
        "schedule: crontab line installed: kit loop --ensure-alive every {} (its output in longrun/.runs/cron.log)",
        cal.words
    )
    .at(o)?;
    Ok(EXIT_OK)
}

/// `text` without kit's block for `id` (its marker line and the line after it); whether it
/// was there.
fn without_block(text: &str, id: &str) -> (String, bool) {
    let marker = format!("{MARKER} {id}:");
    let mut out = String::new();
    let mut found = false;
    let mut skip_next = false;
    for line in text.split_inclusive('\n') {
        if skip_next {
            skip_next = false;
            continue;
        }
        if line.starts_with(&marker) {
            found = true;
            skip_next = true;
            continue;
        }
        out.push_str(line);
    }
    (out, found)
}

/// Whether the file at `path` is one kit wrote (starts with the marker).
fn is_ours(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.starts_with(MARKER))
}

/// The `systemctl` program: `KIT_SYSTEMCTL` (a test seam), else `systemctl`.
fn systemctl_program() -> String {
    std::env::var("KIT_SYSTEMCTL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "systemctl".into())
}

/// The `crontab` program: `KIT_CRONTAB` (a test seam), else `crontab`.
fn crontab_program() -> String {
    std::env::var("KIT_CRONTAB").ok().filter(|s| !s.is_empty()).unwrap_or_else(|| "crontab".into())
}

/// Run `systemctl ARGS`; Err with its complaint when it cannot run or fails.
fn systemctl(args: &[&str]) -> std::result::Result<(), String> {
    let prog = systemctl_program();
    let o = Command::new(&prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{prog}: {e}"))?;
    if o.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&o.stderr);
    let first = err.lines().next().unwrap_or("").trim();
    Err(format!("{prog} {} exited {}: {first}", args.join(" "), o.status.code().unwrap_or(-1)))
}

/// `path` (a `PATH` value) with each entry kept once, at its first place, and empty entries
/// dropped: a shell that sourced its profile twice gives `~/.cargo/bin:~/.cargo/bin:…`.
fn dedup_path(path: &str) -> String {
    let mut seen = std::collections::HashSet::new();
    path.split(':').filter(|e| !e.is_empty() && seen.insert(*e)).collect::<Vec<_>>().join(":")
}

/// The user's crontab (`crontab -l`); empty when there is none.
///
/// Errors: [`Error::Usage`] when `crontab` cannot be run.
fn crontab_list() -> Result<String> {
    let prog = crontab_program();
    let o = Command::new(&prog).arg("-l").stdin(Stdio::null()).output().map_err(|e| {
        Error::usage(format!("cannot run {prog} -l: {e}"))
            .with_hint("install cron, or kit schedule install --systemd")
    })?;
    if o.status.success() {
        return Ok(String::from_utf8_lossy(&o.stdout).into_owned());
    }
    // `crontab -l` exits 1 with "no crontab for USER" when there is none yet.
    let err = String::from_utf8_lossy(&o.stderr);
    if err.contains("no crontab") {
        return Ok(String::new());
    }
    Err(Error::internal(format!("{prog} -l failed: {}", err.trim())))
}

/// Install `text` as the user's crontab (`crontab -`).
fn crontab_install(text: &str) -> Result<()> {
    let prog = crontab_program();
    let mut child = Command::new(&prog)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::usage(format!("cannot run {prog} -: {e}")).with_hint("install cron"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(text.as_bytes()).map_err(|e| Error::internal(format!("{prog} -: {e}")))?;
    }
    let o = child.wait_with_output().map_err(|e| Error::internal(format!("{prog} -: {e}")))?;
    if !o.status.success() {
        return Err(Error::internal(format!(
            "{prog} - refused the new crontab: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    Ok(())
}

/// Whether the user's systemd instance outlives their sessions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Linger {
    /// On: user timers run without a session.
    On(String),
    /// Off: user timers stop at logout.
    Off(String),
    /// Not known (no loginctl and no /var/lib/systemd/linger).
    Unknown(String),
}

/// Lingering of this user: `loginctl show-user USER -p Linger` (`Linger=yes`), else the file
/// `/var/lib/systemd/linger/USER` that logind keeps for each lingering user.
pub(crate) fn lingering() -> Linger {
    let user = crate::longrun::pause::user_name();
    if let Ok(o) = Command::new("loginctl")
        .args(["show-user", &user, "-p", "Linger"])
        .stdin(Stdio::null())
        .output()
    {
        let text = String::from_utf8_lossy(&o.stdout);
        match text.trim() {
            "Linger=yes" => return Linger::On(user),
            "Linger=no" => return Linger::Off(user),
            _ => {}
        }
    }
    let dir = Path::new("/var/lib/systemd/linger");
    if dir.join(&user).exists() {
        Linger::On(user)
    } else if dir.is_dir() {
        Linger::Off(user)
    } else {
        Linger::Unknown(user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_entries_are_kept_once_in_order() {
        for (given, want) in [
            ("/a:/b:/a:/c:/b", "/a:/b:/c"),
            ("/h/.cargo/bin:/h/.cargo/bin:/usr/bin", "/h/.cargo/bin:/usr/bin"),
            ("/a::/b:", "/a:/b"),
            ("", ""),
        ] {
            assert_eq!(dedup_path(given), want, "{given}");
        }
    }

    #[test]
    fn words_are_quoted_for_systemd_and_for_cron() {
        let cases = [
            ("/home/ada/my repo", "\"/home/ada/my repo\"", "'/home/ada/my repo'"),
            ("a\"b\\c", "\"a\\\"b\\\\c\"", "'a\"b\\c'"),
            ("100%$HOME", "\"100%%$$HOME\"", "'100\\%$HOME'"),
            ("it's", "\"it's\"", "'it'\\''s'"),
        ];
        for (word, systemd, cron) in cases {
            assert_eq!(systemd_quote(word), systemd, "{word}");
            assert_eq!(cron_quote(word), cron, "{word}");
        }
        assert_eq!(systemd_plain("/srv/50% off"), "/srv/50%% off");
    }

    #[test]
    fn templates_are_filled_in_one_pass() {
        assert_eq!(fill("a {x} {y} {z}", &[("x", "{y}"), ("y", "2")]), "a {y} 2 {z}");
        assert_eq!(fill("{", &[]), "{");
        assert!(!SERVICE_TEMPLATE.is_empty() && SERVICE_TEMPLATE.starts_with(MARKER));
        assert!(TIMER_TEMPLATE.starts_with(MARKER) && CRON_TEMPLATE.starts_with(MARKER));
    }

    #[test]
    fn unit_names_are_safe_and_differ_per_path() {
        let a = unit_id(Path::new("/home/ada/my repo"));
        assert!(a.starts_with("kit-loop-my-repo-"), "{a}");
        assert_eq!(a.len(), "kit-loop-my-repo-".len() + 8);
        assert_ne!(a, unit_id(Path::new("/home/bob/my repo")));
        assert!(unit_id(Path::new("/srv/é%")).starts_with("kit-loop-repo-"));
    }

    #[test]
    fn every_becomes_a_calendar_or_is_refused() {
        let c = |s: u64| Calendar::of(Duration::from_secs(s)).map(|c| (c.systemd, c.cron));
        assert_eq!(c(600).unwrap(), ("*-*-* *:00/10:00".into(), "*/10 * * * *".into()));
        assert_eq!(c(7200).unwrap(), ("*-*-* 00/2:00:00".into(), "0 */2 * * *".into()));
        assert_eq!(c(86400).unwrap(), ("*-*-* 00:00:00".into(), "0 0 * * *".into()));
        for bad in [0, 30, 420, 5400, 18000, 172800] {
            assert_eq!(c(bad).unwrap_err().exit_code(), 2, "{bad}");
        }
    }

    #[test]
    fn only_our_block_leaves_the_crontab() {
        let text =
            "MAILTO=ada\n# kit schedule kit-loop-a-1: /a\n*/10 * * * * x\n# mine\n0 * * * * y\n";
        let (kept, found) = without_block(text, "kit-loop-a-1");
        assert!(found);
        assert_eq!(kept, "MAILTO=ada\n# mine\n0 * * * * y\n");
        assert_eq!(without_block(text, "kit-loop-b-2"), (text.to_string(), false));
    }
}
