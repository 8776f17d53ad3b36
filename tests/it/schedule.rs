//! `kit schedule install` / `remove` against a temporary unit folder, a stand-in `systemctl`
//! that records its calls, and a stand-in `crontab` (the documented test seams
//! `KIT_SYSTEMD_USER_DIR`, `KIT_SYSTEMCTL`, `KIT_CRONTAB`).

use std::path::Path;
use std::process::{Command, Output};

use crate::util::{git_repo, kit};

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A repository whose path has a space, initialised, and the stand-ins beside it.
struct Setup {
    _dir: tempfile::TempDir,
    repo: std::path::PathBuf,
    units: std::path::PathBuf,
    calls: std::path::PathBuf,
    systemctl: std::path::PathBuf,
    crontab: std::path::PathBuf,
    table: std::path::PathBuf,
}

fn setup() -> Setup {
    let dir = git_repo();
    let repo = dir.path().join("my repo");
    std::fs::create_dir(&repo).unwrap();
    let init = Command::new("git").args(["init", "-q"]).current_dir(&repo).status().unwrap();
    assert!(init.success());
    let o = kit(&repo).arg("init").output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let calls = dir.path().join("systemctl.calls");
    let systemctl = dir.path().join("systemctl");
    script(&systemctl, &format!("echo \"$*\" >> '{}'\n", calls.display()));
    let table = dir.path().join("table");
    let crontab = dir.path().join("crontab");
    script(
        &crontab,
        &format!(
            "case \"$1\" in -l) cat '{t}' 2>/dev/null || {{ echo \"no crontab for $USER\" >&2; exit 1; }};; -) cat > '{t}';; esac\n",
            t = table.display()
        ),
    );
    let units = dir.path().join("units");
    Setup { repo, units, calls, systemctl, crontab, table, _dir: dir }
}

fn schedule(s: &Setup, args: &[&str]) -> Output {
    kit(&s.repo)
        .arg("schedule")
        .args(args)
        .env("KIT_SYSTEMD_USER_DIR", &s.units)
        .env("KIT_SYSTEMCTL", &s.systemctl)
        .env("KIT_CRONTAB", &s.crontab)
        .output()
        .unwrap()
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn systemd_install_twice_changes_nothing_and_remove_deletes_only_ours() {
    let s = setup();
    std::fs::create_dir_all(&s.units).unwrap();
    std::fs::write(s.units.join("mine.service"), "[Service]\nExecStart=/bin/true\n").unwrap();
    let o = schedule(&s, &["install", "--systemd", "--every", "30m"]);
    assert!(o.status.success(), "{}", text(&o));
    let names = listing(&s.units);
    assert_eq!(names.len(), 3, "{names:?}");
    let service =
        names.iter().find(|n| n.ends_with(".service") && n.starts_with("kit-loop-my-repo-"));
    let service = s.units.join(service.expect("the kit service"));
    let unit = std::fs::read_to_string(&service).unwrap();
    let root = s.repo.display().to_string();
    assert!(unit.contains(&format!("WorkingDirectory={root}\n")), "{unit}");
    assert!(unit.contains(&format!("-C \"{root}\" loop --ensure-alive\n")), "{unit}");
    assert!(unit.contains("MemoryMax=4G\nMemorySwapMax=0\n"), "{unit}");
    let timer = std::fs::read_to_string(service.with_extension("timer")).unwrap();
    assert!(timer.contains("OnCalendar=*-*-* *:00/30:00\nPersistent=true\n"), "{timer}");
    let calls = std::fs::read_to_string(&s.calls).unwrap();
    let timer_name =
        service.with_extension("timer").file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(calls, format!("--user daemon-reload\n--user enable --now {timer_name}\n"));

    let before = (unit.clone(), std::fs::metadata(&service).unwrap().modified().unwrap());
    let o = schedule(&s, &["install", "--systemd", "--every", "30m"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("unchanged"), "{}", text(&o));
    let after = std::fs::metadata(&service).unwrap().modified().unwrap();
    assert_eq!((std::fs::read_to_string(&service).unwrap(), after), before, "not rewritten");

    // A dry run of remove names both files and removes nothing.
    let o = schedule(&s, &["remove", "--systemd", "--dry-run"]);
    assert_eq!(text(&o).matches("would remove ").count(), 2, "{}", text(&o));
    assert_eq!(listing(&s.units).len(), 3);
    let o = schedule(&s, &["remove", "--systemd"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(listing(&s.units), ["mine.service"], "only kit's units were removed");
    let calls = std::fs::read_to_string(&s.calls).unwrap();
    assert!(
        calls.ends_with(&format!("--user disable --now {timer_name}\n--user daemon-reload\n")),
        "{calls}"
    );
    let o = schedule(&s, &["remove", "--systemd"]);
    assert!(text(&o).contains("nothing to remove"), "{}", text(&o));
}

#[test]
fn a_systemctl_that_does_not_answer_leaves_the_units_written_and_says_how_to_enable() {
    let s = setup();
    script(&s.systemctl, "echo 'Failed to connect to bus: No medium found' >&2\nexit 1\n");
    let o = schedule(&s, &["install", "--systemd"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("the units are written but not enabled: systemctl --user does not answer here"),
        "{t}"
    );
    assert!(
        t.contains("Failed to connect to bus")
            && t.contains("systemctl --user enable --now kit-loop-my-repo-"),
        "{t}"
    );
    assert_eq!(listing(&s.units).len(), 2);
}

#[test]
fn cron_install_keeps_the_users_lines_is_idempotent_and_remove_takes_only_ours() {
    let s = setup();
    let mine = "MAILTO=ada@example.org\n30 6 * * 1 backup --all\n";
    std::fs::write(&s.table, mine).unwrap();
    let o = schedule(&s, &["install", "--cron"]);
    assert!(o.status.success(), "{}", text(&o));
    let table = std::fs::read_to_string(&s.table).unwrap();
    assert!(table.starts_with(mine), "{table}");
    let ours: Vec<&str> = table.lines().skip(2).collect();
    assert_eq!(ours.len(), 2, "{table}");
    assert!(ours[0].starts_with("# kit schedule kit-loop-my-repo-"), "{table}");
    assert!(ours[1].starts_with("*/10 * * * * cd '"), "{table}");
    assert!(
        ours[1].contains("flock -n '") && ours[1].contains("loop --ensure-alive >> '"),
        "{table}"
    );
    assert!(s.repo.join("longrun/.runs").is_dir(), "the log's folder exists for cron's redirect");

    let o = schedule(&s, &["install", "--cron"]);
    assert!(text(&o).contains("installed already; unchanged"), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&s.table).unwrap(), table);
    // A new interval replaces kit's line, still once.
    let o = schedule(&s, &["install", "--cron", "--every", "1h"]);
    assert!(o.status.success(), "{}", text(&o));
    let table = std::fs::read_to_string(&s.table).unwrap();
    assert_eq!(table.matches("# kit schedule ").count(), 1, "{table}");
    assert!(table.contains("\n0 */1 * * * cd '"), "{table}");

    let o = schedule(&s, &["remove", "--cron"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&s.table).unwrap(), mine);
    let o = schedule(&s, &["remove", "--cron"]);
    assert!(text(&o).contains("nothing to remove"), "{}", text(&o));
}

#[test]
fn the_cron_line_runs_ensure_alive_in_the_repository() {
    // The line itself, run by sh as cron would (after cron turns `\%` into `%`).
    let s = setup();
    let o = schedule(&s, &["install", "--cron"]);
    assert!(o.status.success(), "{}", text(&o));
    let table = std::fs::read_to_string(&s.table).unwrap();
    let line = table.lines().last().unwrap();
    let command = line.splitn(6, ' ').nth(5).unwrap().replace("\\%", "%");
    let o = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .envs(kit(&s.repo).get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))))
        .output()
        .unwrap();
    // No goal yet: ensure-alive refuses (exit 2), and says so in the cron log.
    assert_eq!(o.status.code(), Some(2), "{command}: {}", text(&o));
    let log = std::fs::read_to_string(s.repo.join("longrun/.runs/cron.log")).unwrap();
    assert!(log.contains("ensure-alive: the loop (pid "), "{log}");
    assert!(log.contains("exited 2: kit: error: "), "{log}");
    assert!(log.contains("goal.md rates level 0"), "the error is named: {log}");
}

#[test]
fn systemd_reads_the_units_as_written_where_systemd_analyze_is_installed() {
    // systemd's own parser is the judge of the quoting (a path with a space and a `%`); on a
    // machine without it there is nothing to ask, and the golden cases pin the text.
    let Some(analyze) = kit_core::proc::find_on_path("systemd-analyze") else { return };
    let dir = git_repo();
    let repo = dir.path().join("my 100% repo");
    std::fs::create_dir(&repo).unwrap();
    let init = Command::new("git").args(["init", "-q"]).current_dir(&repo).status().unwrap();
    assert!(init.success());
    assert!(kit(&repo).arg("init").output().unwrap().status.success());
    let units = dir.path().join("units");
    let o = kit(&repo)
        .args(["schedule", "install", "--systemd"])
        .env("KIT_SYSTEMD_USER_DIR", &units)
        .env("KIT_SYSTEMCTL", "true")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let files: Vec<std::path::PathBuf> = listing(&units).iter().map(|n| units.join(n)).collect();
    assert_eq!(files.len(), 2, "{files:?}");
    let o = Command::new(analyze).arg("verify").args(&files).current_dir(&units).output().unwrap();
    // Complaints about a file come as `FILE:LINE: …`.
    let t = text(&o);
    assert!(o.status.success(), "systemd-analyze verify: {t}");
    assert!(!t.contains(".service:") && !t.contains(".timer:"), "systemd-analyze verify: {t}");
}

/// Issue 22: a dry run needs no crontab program: it prints what it would write and says the
/// tool is missing; the real install still refuses (exit 2) naming it.
#[test]
fn a_cron_dry_run_without_crontab_shows_the_table_and_says_the_tool_is_missing() {
    let s = setup();
    let missing = s.repo.join("no-such-crontab");
    let run = |args: &[&str]| {
        kit(&s.repo).arg("schedule").args(args).env("KIT_CRONTAB", &missing).output().unwrap()
    };
    let o = run(&["install", "--cron", "--dry-run"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("note: cannot run ") && out.contains("install cron"), "{out}");
    assert!(out.contains("would install this crontab"), "{out}");
    assert!(out.contains("--ensure-alive"), "{out}");
    let o = run(&["install", "--cron"]);
    assert_eq!(o.status.code(), Some(2));
}
