//! `kit init`, `kit freeze` and the loop's frozen-file guard, on real git repositories.
//! The cheat catalogue (DESIGN §12): each cheat is applied to a frozen tree, the guard must name
//! it, and `Guard::restore` must put the tree back byte for byte (modes and links included).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::Command;

use kit_harness::frozen::guard::{Drift, DriftKind, Guard};
use kit_harness::frozen::manifest::Manifest;
use kit_harness::longrun::event::newer_fixture;
use kit_harness::longrun::Project;
use sha2::{Digest, Sha256};

use crate::util::{fake_agent_bin, git_repo, kit, kit_bin};

const TEST_X: &str = "import unittest\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(1 + 1, 2)\n";
const HELPER: &str = "def helper():\n    return 42\n";
const RUN_SH: &str = "#!/bin/sh\nexec python3 -m unittest discover -s tests\n";

fn git(dir: &Path, args: &[&str]) {
    let bins = kit_course::golden::Binaries { kit: kit_bin(), fake_agent: Some(fake_agent_bin()) };
    let st = Command::new("git")
        .args(args)
        .current_dir(dir)
        .envs(kit_course::golden::golden_env(dir, &bins))
        .output()
        .unwrap();
    assert!(st.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&st.stderr));
}

fn run_kit(dir: &Path, args: &[&str]) -> (i32, String) {
    let o = kit(dir).args(args).output().unwrap();
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&o.stderr));
    (o.status.code().unwrap_or(-1), text)
}

/// A repository with `longrun/` and a frozen `tests/` folder (two files, one executable, one in
/// a sub-folder), the tests committed after the first commit.
fn frozen_repo() -> tempfile::TempDir {
    let d = git_repo();
    let root = d.path();
    fs::create_dir_all(root.join("tests/data")).unwrap();
    fs::write(root.join("tests/test_x.py"), TEST_X).unwrap();
    fs::write(root.join("tests/data/helper.py"), HELPER).unwrap();
    fs::write(root.join("tests/run.sh"), RUN_SH).unwrap();
    fs::set_permissions(root.join("tests/run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    git(root, &["add", "tests"]);
    git(root, &["commit", "-q", "-m", "tests"]);
    assert_eq!(run_kit(root, &["init"]).0, 0);
    let (code, text) = run_kit(root, &["freeze", "tests"]);
    assert_eq!(code, 0, "{text}");
    d
}

/// Every file, link and folder under `root` except `.git` and `.home`: the sha256 of the bytes
/// and the permission bits, link targets.
fn snapshot(root: &Path) -> BTreeMap<String, (String, String, u32)> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (String, String, u32)>) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel == ".git" || rel == ".home" {
                continue;
            }
            let m = fs::symlink_metadata(&p).unwrap();
            let perm = m.permissions().mode() & 0o7777;
            if m.file_type().is_symlink() {
                let t = fs::read_link(&p).unwrap().to_string_lossy().into_owned();
                out.insert(rel, ("link".into(), t, 0));
            } else if m.is_dir() {
                out.insert(rel.clone(), ("dir".into(), String::new(), perm));
                walk(root, &p, out);
            } else {
                let sha = hex::encode(Sha256::digest(fs::read(&p).unwrap()));
                out.insert(rel, ("file".into(), sha, perm));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn drift(path: &str, kind: DriftKind) -> Drift {
    Drift { path: path.to_string(), kind }
}

fn object_path(root: &Path, content: &str) -> String {
    let _ = root;
    format!("longrun/.frozen/objects/{}", hex::encode(Sha256::digest(content.as_bytes())))
}

/// Capture a guard, apply `cheat`, expect `expected` drift, restore, and prove the tree is back
/// byte for byte and `kit freeze --check` is clean.
fn assert_cheat_reverted(cheat: impl FnOnce(&Path), expected: &[Drift]) {
    let d = frozen_repo();
    let root = d.path();
    let before = snapshot(root);
    let guard = Guard::capture(&Project::at(root)).unwrap();
    assert_eq!(guard.check(), vec![], "a fresh tree has no drift");
    cheat(root);
    assert_eq!(guard.check(), expected);
    let reverts = guard.restore().unwrap();
    let got: Vec<(String, DriftKind)> = reverts.into_iter().map(|r| (r.path, r.kind)).collect();
    let want: Vec<(String, DriftKind)> =
        expected.iter().map(|d| (d.path.clone(), d.kind)).collect();
    assert_eq!(got, want);
    assert_eq!(snapshot(root), before, "the tree is back byte for byte");
    assert_eq!(guard.check(), vec![]);
    let (code, text) = run_kit(root, &["freeze", "--check"]);
    assert_eq!(code, 0, "{text}");
}

#[test]
fn init_creates_the_seven_files_and_the_gitignore_entries() {
    let d = git_repo();
    let (code, text) = run_kit(d.path(), &["init"]);
    assert_eq!(code, 0, "{text}");
    for name in kit_harness::longrun::STATE_FILES {
        let p = d.path().join("longrun").join(name);
        assert!(p.is_file(), "{name}");
        assert!(text.contains(&format!("created longrun/{name}")), "{text}");
        let template = kit_harness::templates::kit_file(&format!("templates/{name}")).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), template);
    }
    assert_eq!(fs::read(d.path().join("longrun/journal.jsonl")).unwrap(), b"");
    let ignore = fs::read_to_string(d.path().join(".gitignore")).unwrap();
    for e in
        ["longrun/.lock", "longrun/.frozen/", "longrun/.runs/", "longrun/.hook/", "longrun/PAUSE"]
    {
        assert_eq!(ignore.lines().filter(|l| *l == e).count(), 1, "{e} in {ignore}");
    }
    assert!(text.contains("kit goal check"), "{text}");
}

#[test]
fn init_twice_loses_nothing_and_lists_what_exists() {
    let d = git_repo();
    let root = d.path();
    fs::write(root.join(".gitignore"), "target/\n/longrun/.lock").unwrap();
    fs::set_permissions(root.join(".gitignore"), fs::Permissions::from_mode(0o664)).unwrap();
    assert_eq!(run_kit(root, &["init"]).0, 0);
    let mode = fs::metadata(root.join(".gitignore")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o664, "a shared checkout's .gitignore keeps its mode");
    let ignore = fs::read_to_string(root.join(".gitignore")).unwrap();
    assert!(ignore.starts_with("target/\n/longrun/.lock\n# kit"), "{ignore}");
    assert!(!ignore.contains("\nlongrun/.lock"), "an entry with a leading / counts: {ignore}");

    let goal = root.join("longrun/goal.md");
    fs::write(&goal, "# Goal: mine\n").unwrap();
    fs::remove_file(root.join("longrun/progress.md")).unwrap();
    let (code, text) = run_kit(root, &["init"]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(fs::read_to_string(&goal).unwrap(), "# Goal: mine\n");
    assert!(text.contains("exists  longrun/goal.md"), "{text}");
    assert!(text.contains("created longrun/progress.md"), "{text}");
    assert!(text.contains("created 1 missing file; the 6 existing left unchanged"), "{text}");
    assert_eq!(fs::read_to_string(root.join(".gitignore")).unwrap(), ignore);

    let (code, text) = run_kit(root, &["init"]);
    assert_eq!(code, 0);
    assert!(text.contains("already initialised"), "{text}");
}

#[test]
fn init_in_a_subfolder_creates_longrun_at_the_git_root() {
    let d = git_repo();
    fs::create_dir_all(d.path().join("src/deep")).unwrap();
    let (code, text) = run_kit(d.path(), &["init", "src/deep"]);
    assert_eq!(code, 0, "{text}");
    assert!(d.path().join("longrun/goal.md").is_file());
    assert!(!d.path().join("src/deep/longrun").exists());
}

#[test]
fn init_outside_git_exits_2_and_names_git_init() {
    let d = tempfile::tempdir().unwrap();
    let (code, text) = run_kit(d.path(), &["init"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("not inside a git repository"), "{text}");
    assert!(text.contains("next: git init"), "{text}");
    assert!(!d.path().join("longrun").exists());
}

#[test]
fn the_config_template_parses_with_the_defaults() {
    let text = kit_harness::templates::kit_file("templates/config.toml").unwrap();
    let parsed =
        kit_harness::longrun::config::Config::parse(Path::new("config.toml"), text).unwrap();
    let defaults = kit_harness::longrun::config::Config::default();
    assert_eq!(
        serde_json::to_value(&parsed).unwrap(),
        serde_json::to_value(&defaults).unwrap(),
        "every field in the template is its default"
    );
}

#[test]
fn freeze_records_sha256_size_mode_and_stores_copies() {
    let d = frozen_repo();
    let root = d.path();
    let m = Manifest::load(&root.join("longrun/frozen.toml")).unwrap();
    assert_eq!(m.dirs, vec!["tests".to_string()]);
    let head = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(root).output().unwrap();
    assert_eq!(m.base_commit, String::from_utf8_lossy(&head.stdout).trim());
    let keys: Vec<&str> = m.files.keys().map(String::as_str).collect();
    assert_eq!(keys, ["tests/data/helper.py", "tests/run.sh", "tests/test_x.py"]);
    for (rel, content, mode) in
        [("tests/test_x.py", TEST_X, "100644"), ("tests/run.sh", RUN_SH, "100755")]
    {
        let e = &m.files[rel];
        assert_eq!(e.sha256, hex::encode(Sha256::digest(content.as_bytes())));
        assert_eq!(e.size, content.len() as u64);
        assert_eq!(e.mode, mode);
        assert_eq!(fs::read_to_string(root.join(object_path(root, content))).unwrap(), content);
    }
}

#[test]
fn freeze_again_updates_entries_and_drops_files_gone_from_a_refrozen_folder() {
    let d = frozen_repo();
    let root = d.path();
    fs::write(root.join("tests/test_x.py"), "# changed on purpose\n").unwrap();
    fs::remove_file(root.join("tests/data/helper.py")).unwrap();
    fs::write(root.join("setup.cfg"), "[tool]\n").unwrap();
    let (code, text) = run_kit(root, &["freeze", "tests", "setup.cfg"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("updated   tests/test_x.py"), "{text}");
    assert!(text.contains("dropped   tests/data/helper.py"), "{text}");
    assert!(text.contains("added     setup.cfg"), "{text}");
    assert!(text.contains("unchanged tests/run.sh"), "{text}");
    let m = Manifest::load(&root.join("longrun/frozen.toml")).unwrap();
    assert_eq!(m.files.len(), 3);
    assert_eq!(m.files["tests/test_x.py"].size, 21);
    assert_eq!(run_kit(root, &["freeze", "--check"]).0, 0);
}

#[test]
fn freeze_refuses_missing_outside_and_linked_paths_and_writes_nothing() {
    let d = frozen_repo();
    let root = d.path();
    let before = fs::read(root.join("longrun/frozen.toml")).unwrap();
    let outside = tempfile::NamedTempFile::new().unwrap();
    symlink(root.join("tests/test_x.py"), root.join("link.py")).unwrap();
    fs::write(root.join("tests/new.py"), "x").unwrap();
    for (args, msg) in [
        (vec!["freeze", "tests/new.py", "nope.py"], "nope.py: no such file or folder"),
        (vec!["freeze", outside.path().to_str().unwrap()], "is outside the repository"),
        (vec!["freeze", "link.py"], "link.py is a symbolic link"),
        (vec!["freeze", "."], "refusing to freeze the whole repository"),
        (vec!["freeze", "longrun/goal.md"], "belongs to kit or git"),
    ] {
        let (code, text) = run_kit(root, &args);
        assert_eq!(code, 2, "{args:?}: {text}");
        assert!(text.contains(msg), "{args:?}: {text}");
        assert!(text.contains("next: "), "{args:?}: {text}");
    }
    symlink("test_x.py", root.join("tests/alias.py")).unwrap();
    let (code, text) = run_kit(root, &["freeze", "tests"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("tests/alias.py is a symbolic link inside tests/"), "{text}");
    assert_eq!(fs::read(root.join("longrun/frozen.toml")).unwrap(), before);
}

#[test]
fn freeze_check_names_each_drift_and_exits_1() {
    let d = frozen_repo();
    let root = d.path();
    assert_eq!(run_kit(root, &["freeze", "--check"]).0, 0);
    fs::write(root.join("tests/test_x.py"), "weakened").unwrap();
    fs::remove_file(root.join("tests/data/helper.py")).unwrap();
    fs::set_permissions(root.join("tests/run.sh"), fs::Permissions::from_mode(0o644)).unwrap();
    fs::write(root.join("tests/conftest.py"), "skip all").unwrap();
    let (code, text) = run_kit(root, &["freeze", "--check"]);
    assert_eq!(code, 1, "{text}");
    for line in [
        "new file in a frozen folder  tests/conftest.py",
        "deleted                      tests/data/helper.py",
        "mode changed                 tests/run.sh  (100755 → 100644)",
        "modified                     tests/test_x.py",
        "4 paths drifted from longrun/frozen.toml",
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
    let (code, text) = run_kit(root, &["freeze", "--restore"]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(fs::read_to_string(root.join("tests/test_x.py")).unwrap(), TEST_X);
    assert_eq!(run_kit(root, &["freeze", "--check"]).0, 0);
}

#[test]
fn freeze_outside_an_initialised_repo_names_kit_init() {
    let d = git_repo();
    fs::create_dir(d.path().join("tests")).unwrap();
    let (code, text) = run_kit(d.path(), &["freeze", "tests"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("next: kit init"), "{text}");
}

#[test]
fn a_malformed_manifest_is_named_with_its_line() {
    let d = frozen_repo();
    let p = d.path().join("longrun/frozen.toml");
    let text = fs::read_to_string(&p).unwrap().replace("mode = \"100755\"", "mode = \"777\"");
    fs::write(&p, &text).unwrap();
    let line = text.lines().position(|l| l.contains("[files.\"tests/run.sh\"]")).unwrap() + 1;
    for flag in ["--check", "--list"] {
        let (code, out) = run_kit(d.path(), &["freeze", flag]);
        assert_eq!(code, 2, "{flag}: {out}");
        assert!(out.contains(&format!("frozen.toml:{line}: tests/run.sh: mode")), "{flag}: {out}");
    }
}

#[test]
fn freeze_list_names_each_frozen_folder_and_each_file_outside_them() {
    let d = frozen_repo();
    let root = d.path();
    fs::write(root.join("setup.cfg"), "[tool]\n").unwrap();
    assert_eq!(run_kit(root, &["freeze", "tests/data/helper.py", "setup.cfg"]).0, 0);
    let (code, out) = run_kit(root, &["freeze", "--list"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, "setup.cfg\ntests/\n");
    // Given them again, kit freeze writes the same manifest.
    let before = fs::read(root.join("longrun/frozen.toml")).unwrap();
    assert_eq!(run_kit(root, &["freeze", "setup.cfg", "tests/"]).0, 0);
    assert_eq!(fs::read(root.join("longrun/frozen.toml")).unwrap(), before);
}

// ---- the cheat catalogue -------------------------------------------------------------------

#[test]
fn cheat_edit_is_reverted() {
    assert_cheat_reverted(
        |r| fs::write(r.join("tests/test_x.py"), TEST_X.replace("1 + 1, 2", "2, 2")).unwrap(),
        &[drift("tests/test_x.py", DriftKind::Modified)],
    );
}

#[test]
fn cheat_delete_is_reverted() {
    assert_cheat_reverted(
        |r| fs::remove_file(r.join("tests/test_x.py")).unwrap(),
        &[drift("tests/test_x.py", DriftKind::Deleted)],
    );
}

#[test]
fn cheat_delete_of_the_whole_frozen_folder_is_reverted() {
    assert_cheat_reverted(
        |r| fs::remove_dir_all(r.join("tests")).unwrap(),
        &[
            drift("tests/data/helper.py", DriftKind::Deleted),
            drift("tests/run.sh", DriftKind::Deleted),
            drift("tests/test_x.py", DriftKind::Deleted),
        ],
    );
}

#[test]
fn cheat_rename_is_reverted() {
    assert_cheat_reverted(
        |r| fs::rename(r.join("tests/test_x.py"), r.join("tests/disabled_x.py")).unwrap(),
        &[
            drift("tests/disabled_x.py", DriftKind::NewFile),
            drift("tests/test_x.py", DriftKind::Deleted),
        ],
    );
}

#[test]
fn cheat_truncate_is_reverted() {
    assert_cheat_reverted(
        |r| {
            fs::OpenOptions::new()
                .write(true)
                .open(r.join("tests/test_x.py"))
                .unwrap()
                .set_len(0)
                .unwrap()
        },
        &[drift("tests/test_x.py", DriftKind::Modified)],
    );
}

#[test]
fn cheat_chmod_plus_x_is_reverted() {
    assert_cheat_reverted(
        |r| {
            fs::set_permissions(r.join("tests/test_x.py"), fs::Permissions::from_mode(0o755))
                .unwrap()
        },
        &[drift("tests/test_x.py", DriftKind::ModeChanged)],
    );
}

#[test]
fn cheat_symlink_swap_is_reverted() {
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("weak.py");
    fs::write(&target, "pass\n").unwrap();
    assert_cheat_reverted(
        |r| {
            fs::remove_file(r.join("tests/test_x.py")).unwrap();
            symlink(&target, r.join("tests/test_x.py")).unwrap();
        },
        &[drift("tests/test_x.py", DriftKind::ReplacedByLink)],
    );
    assert_eq!(fs::read_to_string(&target).unwrap(), "pass\n", "the link's target is untouched");
}

#[test]
fn cheat_folder_swapped_for_a_link_is_reverted() {
    let elsewhere = tempfile::tempdir().unwrap();
    fs::write(elsewhere.path().join("weak.py"), "pass\n").unwrap();
    assert_cheat_reverted(
        |r| {
            fs::remove_dir_all(r.join("tests/data")).unwrap();
            symlink(elsewhere.path(), r.join("tests/data")).unwrap();
        },
        &[
            drift("tests/data", DriftKind::NewFile),
            drift("tests/data/helper.py", DriftKind::ReplacedByLink),
        ],
    );
    assert!(elsewhere.path().join("weak.py").is_file());
    assert!(!elsewhere.path().join("helper.py").exists(), "nothing written through the link");
}

#[test]
fn cheat_new_file_in_a_frozen_folder_is_removed() {
    assert_cheat_reverted(
        |r| {
            fs::write(r.join("tests/conftest.py"), "collect_ignore = ['test_x.py']\n").unwrap();
            fs::create_dir_all(r.join("tests/extra/deeper")).unwrap();
            fs::write(r.join("tests/extra/deeper/skip.py"), "x").unwrap();
        },
        &[
            drift("tests/conftest.py", DriftKind::NewFile),
            drift("tests/extra/deeper/skip.py", DriftKind::NewFile),
        ],
    );
}

#[test]
fn cheat_edit_of_goal_config_and_manifest_is_reverted() {
    assert_cheat_reverted(
        |r| {
            fs::write(r.join("longrun/goal.md"), "# Goal: nothing\n").unwrap();
            fs::write(r.join("longrun/config.toml"), "[caps]\nmax_iterations = 999\n").unwrap();
            fs::write(r.join("longrun/frozen.toml"), "format_version = 1\n").unwrap();
        },
        &[
            drift("longrun/config.toml", DriftKind::Modified),
            drift("longrun/frozen.toml", DriftKind::Modified),
            drift("longrun/goal.md", DriftKind::Modified),
        ],
    );
}

#[test]
fn cheat_manifest_rewritten_to_bless_an_edit_is_still_reverted() {
    // The agent edits a test, then re-freezes it so frozen.toml and the stored copy agree with
    // the edit: the guard loaded the manifest at the start and is not fooled.
    assert_cheat_reverted(
        |r| {
            fs::write(r.join("tests/test_x.py"), "pass\n").unwrap();
            let (code, text) = run_kit(r, &["freeze", "tests/test_x.py"]);
            assert_eq!(code, 0, "{text}");
        },
        &[
            drift(&object_path(Path::new(""), "pass\n"), DriftKind::NewFile),
            drift("longrun/frozen.toml", DriftKind::Modified),
            drift("tests/test_x.py", DriftKind::Modified),
        ],
    );
}

#[test]
fn cheat_edit_and_delete_of_stored_copies_is_reverted() {
    assert_cheat_reverted(
        |r| {
            fs::write(r.join(object_path(r, TEST_X)), "pass\n").unwrap();
            fs::remove_file(r.join(object_path(r, RUN_SH))).unwrap();
        },
        &{
            let mut v = vec![
                drift(&object_path(Path::new(""), TEST_X), DriftKind::Modified),
                drift(&object_path(Path::new(""), RUN_SH), DriftKind::Deleted),
            ];
            v.sort();
            v
        },
    );
}

#[test]
fn cheat_git_commit_of_a_modified_frozen_file_is_reverted() {
    assert_cheat_reverted(
        |r| {
            fs::write(r.join("tests/test_x.py"), "pass\n").unwrap();
            git(r, &["commit", "-q", "-am", "simplify tests"]);
        },
        &[drift("tests/test_x.py", DriftKind::Modified)],
    );
}

#[test]
fn cheat_git_reset_to_before_the_tests_existed_is_reverted() {
    assert_cheat_reverted(
        |r| git(r, &["reset", "-q", "--hard", "HEAD~1"]),
        &[
            drift("tests/data/helper.py", DriftKind::Deleted),
            drift("tests/run.sh", DriftKind::Deleted),
            drift("tests/test_x.py", DriftKind::Deleted),
        ],
    );
}

#[test]
fn restore_deletes_bytecode_caches_beside_frozen_tests() {
    // A crafted .pyc whose source stamp matches a frozen test would run instead of it. Caches
    // are not drift (Python writes them on every run) but every restore deletes them.
    assert_cheat_reverted(
        |r| {
            fs::create_dir_all(r.join("tests/__pycache__")).unwrap();
            fs::write(r.join("tests/__pycache__/test_x.cpython-312.pyc"), "crafted").unwrap();
        },
        &[],
    );
}

#[test]
fn capture_falls_back_to_the_tree_when_a_stored_copy_is_damaged() {
    let d = frozen_repo();
    let root = d.path();
    let obj = root.join(object_path(root, TEST_X));
    fs::write(&obj, "damaged").unwrap();
    let guard = Guard::capture(&Project::at(root)).unwrap();
    assert_eq!(
        guard.check(),
        vec![drift(&object_path(Path::new(""), TEST_X), DriftKind::Modified)]
    );
    guard.restore().unwrap();
    assert_eq!(fs::read_to_string(&obj).unwrap(), TEST_X);

    fs::write(&obj, "damaged").unwrap();
    fs::write(root.join("tests/test_x.py"), "also changed").unwrap();
    let err = Guard::capture(&Project::at(root)).unwrap_err().to_string();
    assert!(err.contains("cannot protect tests/test_x.py"), "{err}");
}

#[test]
fn cheat_frozen_folder_replaced_by_a_file_is_reverted() {
    assert_cheat_reverted(
        |r| {
            fs::remove_dir_all(r.join("tests/data")).unwrap();
            fs::write(r.join("tests/data"), "not a folder").unwrap();
        },
        &[
            drift("tests/data", DriftKind::NewFile),
            drift("tests/data/helper.py", DriftKind::Deleted),
        ],
    );
}

#[test]
fn cheat_file_replaced_by_a_folder_is_reverted() {
    assert_cheat_reverted(
        |r| {
            fs::remove_file(r.join("tests/test_x.py")).unwrap();
            fs::create_dir(r.join("tests/test_x.py")).unwrap();
            fs::write(r.join("tests/test_x.py/__init__.py"), "").unwrap();
        },
        &[
            drift("tests/test_x.py", DriftKind::Modified),
            drift("tests/test_x.py/__init__.py", DriftKind::NewFile),
        ],
    );
}

#[test]
fn drift_kinds_serialise_in_snake_case_for_the_journal() {
    let kinds = [
        (DriftKind::Modified, "modified"),
        (DriftKind::Deleted, "deleted"),
        (DriftKind::ModeChanged, "mode_changed"),
        (DriftKind::ReplacedByLink, "replaced_by_link"),
        (DriftKind::NewFile, "new_file"),
    ];
    for (kind, name) in kinds {
        let json = serde_json::to_value(drift("tests/a.py", kind)).unwrap();
        assert_eq!(json, serde_json::json!({"path": "tests/a.py", "kind": name}));
    }
}

#[test]
fn cheat_rewriting_the_journals_history_is_reverted_but_appends_are_not_drift() {
    let d = frozen_repo();
    let root = d.path();
    let journal_path = root.join("longrun/journal.jsonl");
    let journal = kit_harness::longrun::journal::Journal::new(&journal_path);
    use kit_harness::longrun::event::{self as ev, Event};
    journal.append(&Event::LoopStart(ev::LoopStart::default())).unwrap();
    let cheat = ev::Cheat { path: "tests/test_x.py".into(), ..ev::Cheat::default() };
    journal.append(&Event::Cheat(cheat)).unwrap();
    let mut guard = Guard::capture(&Project::at(root)).unwrap();

    journal.append(&Event::Criteria(ev::Criteria::default())).unwrap();
    assert_eq!(guard.check(), vec![], "kit's own appends are not drift");
    guard.seal_journal().unwrap();
    let sealed = fs::read_to_string(&journal_path).unwrap();
    assert_eq!(sealed.lines().count(), 3);

    let without_cheat: String =
        sealed.lines().filter(|l| !l.contains("cheat")).map(|l| format!("{l}\n")).collect();
    let done = newer_fixture("done", serde_json::json!({})).to_string();
    fs::write(&journal_path, without_cheat + &done + "\n").unwrap();
    assert_eq!(guard.check(), vec![drift("longrun/journal.jsonl", DriftKind::Modified)]);
    guard.restore().unwrap();
    assert_eq!(fs::read_to_string(&journal_path).unwrap(), sealed);

    fs::remove_file(&journal_path).unwrap();
    assert_eq!(guard.check(), vec![drift("longrun/journal.jsonl", DriftKind::Deleted)]);
    guard.restore().unwrap();
    assert_eq!(fs::read_to_string(&journal_path).unwrap(), sealed);
}

#[test]
fn a_hand_written_manifest_missing_the_folders_files_is_refused_and_nothing_is_removed() {
    // QA: frozen.toml edited to list the folder with no [files]: `kit freeze --restore` removed
    // every test as "new", with no stored copy to put back.
    let d = frozen_repo();
    let root = d.path();
    let manifest = fs::read_to_string(root.join("longrun/frozen.toml")).unwrap();
    let base = manifest.lines().find(|l| l.starts_with("base_commit")).unwrap().to_string();
    fs::write(
        root.join("longrun/frozen.toml"),
        format!("format_version = 1\n{base}\ndirs = [\"tests\"]\n\n[files]\n"),
    )
    .unwrap();
    let before = snapshot(root);
    for args in [&["freeze", "--restore"][..], &["freeze", "--check"]] {
        let (code, text) = run_kit(root, args);
        assert_eq!(code, 2, "{args:?}: {text}");
        assert!(
            text.contains("longrun/frozen.toml does not list tests/")
                && text.contains("next: kit freeze tests records"),
            "{args:?}: {text}"
        );
    }
    let after = snapshot(root);
    assert_eq!(before, after, "nothing may be removed");
    // The fix it names works.
    assert_eq!(run_kit(root, &["freeze", "tests"]).0, 0);
    let (code, text) = run_kit(root, &["freeze", "--check"]);
    assert_eq!(code, 0, "{text}");
}
