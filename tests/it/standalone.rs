//! The repository stands alone: a fresh clone with nothing beside it passes `cargo test`, and the
//! `kit` binary alone is the whole kit (it is also the fake agent).

use std::path::Path;

/// No source or test reads data from a folder beside the checkout: a path into the spec's
/// `shared` folder may appear in a doc comment, never in code. (`.ci/run` also tests a clone with
/// nothing beside it; this catches the slip before CI does.)
#[test]
fn no_code_reads_a_folder_beside_the_checkout() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Spelled in pieces so this file does not match itself.
    let needles = [format!("../{}", "shared"), format!("{}/samples", "shared")];
    let mut hits = Vec::new();
    for dir in ["src", "tests", "fake-agent/src"] {
        walk(&root.join(dir), &mut |p| {
            if p.extension().is_none_or(|e| e != "rs") {
                return;
            }
            let text = std::fs::read_to_string(p).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.trim_start();
                if code.starts_with("//") {
                    continue;
                }
                if needles.iter().any(|s| code.contains(s.as_str())) {
                    hits.push(format!("{}:{}: {}", p.display(), n + 1, code));
                }
            }
        });
    }
    assert!(hits.is_empty(), "code reading outside the repository:\n{}", hits.join("\n"));
}

fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, f);
        } else {
            f(&p);
        }
    }
}

/// `kit` copied alone into an empty folder, and the environment to run it with: the golden one,
/// with a `PATH` that leaves out the cargo target folder (so no `fake-agent` binary is found).
fn lone_kit(d: &Path) -> (std::path::PathBuf, Vec<(String, String)>) {
    let bin = d.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let lone = bin.join("kit");
    std::fs::copy(crate::util::kit_bin(), &lone).unwrap();
    let target = crate::util::kit_bin().parent().unwrap().to_path_buf();
    let old = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&old).filter(|p| !p.starts_with(&target));
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(dirs)).unwrap();
    let bins = kit_course::golden::Binaries { kit: lone.clone(), fake_agent: None };
    let mut env = kit_course::golden::golden_env(d, &bins);
    env.retain(|(k, _)| k != "PATH");
    env.push(("PATH".into(), path.to_string_lossy().into_owned()));
    (lone, env)
}

/// The `kit` binary alone, with no `fake-agent` beside it or on `PATH`, verifies the course (it
/// is the fake agent too), and deterministically. Lesson 1's share holds every kind of case
/// (catalogue, exercise start, solution, variants, cheats, the lesson), so it stands for the whole
/// (`tests/cases.rs` runs every case once already): two runs from two folders,
/// under another `HOME` and `TMPDIR`, one piped and one on a terminal (`script`), with different
/// `--jobs`, print the same bytes (a terminal's CR aside).
#[test]
fn kit_alone_verifies_everything_and_says_the_same_twice() {
    let d = tempfile::tempdir().unwrap();
    let (lone, env) = lone_kit(d.path());
    let run = |name: &str, tty: bool, jobs: &str| {
        let work = d.path().join(name);
        for sub in ["cwd", "home", "tmp"] {
            std::fs::create_dir_all(work.join(sub)).unwrap();
        }
        let mut env = env.clone();
        env.retain(|(k, _)| k != "HOME" && k != "TMPDIR");
        env.push(("HOME".into(), work.join("home").display().to_string()));
        env.push(("TMPDIR".into(), work.join("tmp").display().to_string()));
        let verify = format!("{} verify --lesson 1 --jobs {jobs}", lone.display());
        let mut cmd = if tty {
            let mut c = std::process::Command::new("script");
            c.args(["-qec", &verify, "/dev/null"]);
            c
        } else {
            let mut c = std::process::Command::new(&lone);
            c.args(["verify", "--lesson", "1", "--jobs", jobs]);
            c
        };
        let out = cmd
            .current_dir(work.join("cwd"))
            .env_clear()
            .envs(env)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
        (out.status.code(), text, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, piped, err) = run("a", false, "3");
    let last = piped.lines().last().unwrap_or_default();
    assert!(last.ends_with(" passed, 0 failed"), "{piped}{err}");
    assert_eq!(code, Some(0), "{piped}");
    let (code, tty, err) = run("b", true, "8");
    assert_eq!(code, Some(0), "{tty}{err}");
    assert_eq!(piped, tty, "kit verify printed different text on a terminal, from another folder");
}

/// `kit loop --agent fake:finish` from the `kit` binary alone runs the built-in fake agent
/// (`kit fake-agent …`) and is done.
#[test]
fn kit_alone_loops_with_the_built_in_fake_agent() {
    let d = tempfile::tempdir().unwrap();
    let (lone, env) = lone_kit(d.path());
    let proj = d.path().join("project");
    std::fs::create_dir(&proj).unwrap();
    kit_course::golden::build_sandbox("rehearsal", &proj, &env).unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(&lone)
            .args(args)
            .current_dir(&proj)
            .env_clear()
            .envs(env.iter().cloned())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), text)
    };
    let (code, text) = run(&["init"]);
    assert_eq!(code, Some(0), "{text}");
    std::fs::write(proj.join("longrun/goal.md"), kit_course::rehearse::sample::goal_text())
        .unwrap();
    let (code, text) = run(&["freeze", "tests", "tools"]);
    assert_eq!(code, Some(0), "{text}");
    let (code, text) = run(&["loop", "--agent", "fake:finish"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("done"), "{text}");
    let (code, text) = run(&["fake-agent", "--list"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("finish"), "{text}");
}
