//! The guard on kit's layering (the list in `src/lib.rs`'s module doc): reads every `.rs` file
//! under `src/` and `crates/*/src/`, collects the `crate::NAME` and `kit_…::NAME` paths it uses
//! (outside comments; a crate's `lib.rs` brings the lower crates' modules in under their
//! `crate::` names), and fails when
//!
//! - two or more top-level modules import each other, directly or round a circle (the message
//!   names the circle and one line per import in it);
//! - a module imports from a layer above its own in the list (a harness module that imports the
//!   course is named as crossing that border);
//! - a top-level module is missing from the list, or two crates have a module of one name;
//! - the files of one folder (`crates/kit-harness/src/goal/lint/*.rs`, …) import each other
//!   round a circle, by
//!   `super::NAME` or by their full `crate::…` path ([`KNOWN_FOLDER_CIRCLES`] lists the ones not
//!   yet undone).
//!
//! It also holds every crate's `Cargo.toml` to ARCHITECTURE.md's crate table: its `kit-*`
//! `[dependencies]` are exactly the row's "may depend on" column.
//!
//! A module may import from its own layer as long as that makes no circle. Between crates Cargo
//! enforces the order (`kit-core` <- `kit-transcript` <- `kit-harness` <- `kit-course` <- `kit`;
//! the harness cannot name the course); this check keeps the finer order inside a crate. It
//! reads the source as text, as a reviewer does; it compiles into the unit tests only.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `from -> to -> the lines (file:line) where `from` names `crate::to` (or `kit_…::to`).
type Imports = BTreeMap<String, BTreeMap<String, Vec<String>>>;

/// The first layer of the course in `src/lib.rs`'s list: layers below it are the harness, which
/// must not import the course (and cannot: the course's crate depends on the harness's).
const COURSE_LAYER: usize = 7;

/// Circles between the files of one folder that are known and still to be undone (folder, the
/// files in the circle, sorted). The test does not fail on these; remove a row once its circle
/// is gone.
const KNOWN_FOLDER_CIRCLES: &[(&str, &[&str])] = &[];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Module names found in more than one source folder, with those folders.
type Twice = Vec<(String, Vec<PathBuf>)>;

/// The path prefixes by which a file names a top-level module: its own crate, or a kit crate's
/// library by name.
const PREFIXES: &[&str] =
    &["crate::", "kit_core::", "kit_transcript::", "kit_harness::", "kit_course::"];

/// The source folders of the workspace, relative to the repository root: the `kit` package's
/// `src/` and every `crates/*/src/`, sorted.
fn source_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::from("src")];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| p.strip_prefix(root).unwrap().join("src"))
        .collect();
    crates.sort();
    dirs.extend(crates);
    dirs
}

/// The top-level module a file under a `src/` belongs to (`None`: the crate root or a binary).
fn top_module(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main")).then(|| name.to_string())
}

/// The lowercase names `line` reaches as `crate::NAME` or `kit_…::NAME` ([`PREFIXES`]) before
/// any `//` comment.
fn crate_paths(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut out = Vec::new();
    for prefix in PREFIXES {
        let mut rest = code;
        while let Some(at) = rest.find(prefix) {
            let before = &rest[..at];
            rest = &rest[at + prefix.len()..];
            if before.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
                continue; // `$crate::`, `mycrate::`
            }
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
                .collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out
}

/// The top-level modules of every source folder under `root` ([`source_dirs`]) and the imports
/// between them; a module name found in two source folders goes into `twice` (name, folders).
fn imports(root: &Path) -> (BTreeSet<String>, Imports, Twice) {
    let mut modules = BTreeSet::new();
    let mut edges = Imports::new();
    let mut homes: BTreeMap<String, BTreeSet<PathBuf>> = BTreeMap::new();
    for src in source_dirs(root) {
        let mut files = Vec::new();
        rust_files(&root.join(&src), &mut files);
        for f in files {
            let rel = f.strip_prefix(root.join(&src)).unwrap();
            let Some(from) = top_module(rel) else { continue };
            if from == "layering" {
                continue;
            }
            modules.insert(from.clone());
            homes.entry(from.clone()).or_default().insert(src.clone());
            let text = std::fs::read_to_string(&f).unwrap();
            for (i, line) in text.lines().enumerate() {
                for to in crate_paths(line) {
                    if to != from {
                        let at = format!("{}:{}", src.join(rel).display(), i + 1);
                        edges.entry(from.clone()).or_default().entry(to).or_default().push(at);
                    }
                }
            }
        }
    }
    let twice = homes
        .into_iter()
        .filter(|(_, h)| h.len() > 1)
        .map(|(m, h)| (m, h.into_iter().collect()))
        .collect();
    (modules, edges, twice)
}

/// The strongly connected components of more than one module (Tarjan), each sorted.
fn circles(modules: &BTreeSet<String>, edges: &Imports) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a Imports,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on_stack: BTreeSet<String>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    fn visit(w: &mut Walk<'_>, v: &str) {
        w.index.insert(v.to_string(), w.next);
        w.low.insert(v.to_string(), w.next);
        w.next += 1;
        w.stack.push(v.to_string());
        w.on_stack.insert(v.to_string());
        let targets: Vec<String> =
            w.edges.get(v).map(|t| t.keys().cloned().collect()).unwrap_or_default();
        for t in targets {
            if !w.index.contains_key(&t) {
                visit(w, &t);
                let l = w.low[v].min(w.low[&t]);
                w.low.insert(v.to_string(), l);
            } else if w.on_stack.contains(&t) {
                let l = w.low[v].min(w.index[&t]);
                w.low.insert(v.to_string(), l);
            }
        }
        if w.low[v] == w.index[v] {
            let mut comp = Vec::new();
            loop {
                let x = w.stack.pop().unwrap();
                w.on_stack.remove(&x);
                let done = x == v;
                comp.push(x);
                if done {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                w.found.push(comp);
            }
        }
    }
    let mut w = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for m in modules {
        if !w.index.contains_key(m) {
            visit(&mut w, m);
        }
    }
    w.found.sort();
    w.found
}

/// The layers of `src/lib.rs`'s doc, lowest first: each `//! N. label: `a`, `b`` line of its
/// `# Layers` section gives the backticked module names of layer N.
fn layers(lib_rs: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let mut inside = false;
    let mut current = None;
    for line in lib_rs.lines() {
        let Some(doc) = line.strip_prefix("//!") else { continue };
        let doc = doc.trim();
        if doc.starts_with('#') {
            inside = doc.trim_start_matches('#').trim() == "Layers";
            current = None;
            continue;
        }
        if !inside || doc.is_empty() {
            current = None;
            continue;
        }
        // `N. label: `a`, `b`` opens layer N; an indented line goes on with the layer before it.
        let rest = match doc.split_once(". ").and_then(|(n, r)| Some((n.parse::<usize>().ok()?, r)))
        {
            Some((n, r)) => {
                current = Some(n);
                r
            }
            None => doc,
        };
        let Some(n) = current else { continue };
        for (i, part) in rest.split('`').enumerate() {
            if i % 2 == 1 {
                out.insert(part.to_string(), n);
            }
        }
    }
    out
}

fn describe(circle: &[String], edges: &Imports) -> String {
    let mut s = format!("circle between top-level modules: {}\n", circle.join(" <-> "));
    for a in circle {
        for b in circle {
            if let Some(at) = edges.get(a).and_then(|t| t.get(b)) {
                s += &format!("  {a} -> {b}: {}\n", at.join(", "));
            }
        }
    }
    s
}

/// The sibling module a line of a file in `folder` names (`super::NAME` in a file directly in
/// it, or `crate::PATH::NAME` where `PATH` is the folder's module path), for each such name.
fn sibling_paths(line: &str, module_path: &str, direct: bool) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut out = Vec::new();
    let mut prefixes = vec![format!("crate::{module_path}::")];
    if direct {
        prefixes.push("super::".to_string());
    }
    for prefix in &prefixes {
        let mut rest = code;
        while let Some(at) = rest.find(prefix.as_str()) {
            let before = &rest[..at];
            rest = &rest[at + prefix.len()..];
            if before.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue; // `super::super::`, `self::super::`
            }
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
                .collect();
            if !name.is_empty() && rest[name.len()..].starts_with("::") {
                out.push(name);
            }
        }
    }
    out
}

/// For every folder under `src` (a source folder relative to `root`): its child modules (`NAME.rs`, `NAME/`) and the imports
/// between them, read from `NAME.rs`, `NAME/mod.rs` and every file under `NAME/` (full paths
/// only for the latter). The folder's own `mod.rs` is not a node: it declares the children.
fn folder_imports(root: &Path, src: &Path) -> Vec<(String, BTreeSet<String>, Imports)> {
    let label = src;
    let src = &root.join(src);
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut folders: BTreeMap<PathBuf, (BTreeSet<String>, Imports)> = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(src).unwrap();
        // Each ancestor folder (below src/) of this file, with the child it belongs to there.
        let parts: Vec<&str> = rel.iter().filter_map(|c| c.to_str()).collect();
        for depth in 1..parts.len() {
            let folder: PathBuf = parts[..depth].iter().collect();
            let child = parts[depth].strip_suffix(".rs").unwrap_or(parts[depth]);
            if child == "mod" && depth + 1 == parts.len() {
                continue;
            }
            let direct = depth + 1 == parts.len()
                || (depth + 2 == parts.len() && parts[depth + 1] == "mod.rs");
            let module_path = parts[..depth].join("::");
            let entry = folders.entry(folder.clone()).or_default();
            entry.0.insert(child.to_string());
            let text = std::fs::read_to_string(f).unwrap();
            for (i, line) in text.lines().enumerate() {
                for to in sibling_paths(line, &module_path, direct) {
                    if to != child {
                        let at = format!("{}:{}", label.join(rel).display(), i + 1);
                        entry
                            .1
                            .entry(child.to_string())
                            .or_default()
                            .entry(to)
                            .or_default()
                            .push(at);
                    }
                }
            }
        }
    }
    folders
        .into_iter()
        .map(|(folder, (modules, mut edges))| {
            // Only names that are children of this folder count (`super::Lint` is an item).
            for targets in edges.values_mut() {
                targets.retain(|to, _| modules.contains(to));
            }
            (label.join(folder).display().to_string(), modules, edges)
        })
        .collect()
}

#[test]
fn the_files_of_a_folder_form_no_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    let folders = source_dirs(root).into_iter().flat_map(|src| folder_imports(root, &src));
    for (folder, modules, edges) in folders {
        for circle in circles(&modules, &edges) {
            let known = KNOWN_FOLDER_CIRCLES.iter().any(|(f, c)| {
                *f == folder && c.iter().copied().eq(circle.iter().map(String::as_str))
            });
            if !known {
                let text = describe(&circle, &edges).replacen("top-level modules", "files", 1);
                problems.push(format!("in {folder}: {text}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "files of one folder import each other round a circle:\n{}",
        problems.concat()
    );
}

#[test]
fn top_level_modules_form_no_circle_and_keep_to_their_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (modules, edges, twice) = imports(root);
    let mut problems: Vec<String> =
        circles(&modules, &edges).iter().map(|c| describe(c, &edges)).collect();
    for (m, homes) in &twice {
        let homes: Vec<String> = homes.iter().map(|h| h.display().to_string()).collect();
        problems.push(format!("module `{m}` is in more than one crate: {}\n", homes.join(", ")));
    }
    let layer = layers(&std::fs::read_to_string(root.join("src/lib.rs")).unwrap());
    for m in &modules {
        if !layer.contains_key(m) {
            problems.push(format!("module `{m}` is in no layer of src/lib.rs's `# Layers` list\n"));
        }
    }
    for (from, targets) in &edges {
        for (to, at) in targets {
            if let (Some(a), Some(b)) = (layer.get(from), layer.get(to)) {
                if *a < COURSE_LAYER && *b == COURSE_LAYER {
                    problems.push(format!(
                        "harness module `{from}` (layer {a}) imports course module `{to}`: the \
                         harness knows nothing of the course, which passes down what it needs \
                         (a parameter, the sandbox's environment): {}\n",
                        at.join(", ")
                    ));
                } else if b > a {
                    problems.push(format!(
                        "`{from}` (layer {a}) imports `{to}` from the layer above it ({b}): {}\n",
                        at.join(", ")
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "kit's layering is broken:\n{}", problems.concat());
}

#[test]
fn the_guard_sees_a_circle_and_names_it() {
    let mut edges = Imports::new();
    let mut add = |a: &str, b: &str| {
        edges
            .entry(a.into())
            .or_default()
            .entry(b.into())
            .or_default()
            .push(format!("src/{a}.rs:1"))
    };
    add("cache", "hook");
    add("hook", "handoff");
    add("handoff", "cache");
    add("hook", "error");
    let modules: BTreeSet<String> =
        ["cache", "error", "handoff", "hook"].iter().map(|s| s.to_string()).collect();
    let found = circles(&modules, &edges);
    assert_eq!(found, vec![vec!["cache".to_string(), "handoff".into(), "hook".into()]]);
    let text = describe(&found[0], &edges);
    assert!(text.starts_with("circle between top-level modules: cache <-> handoff <-> hook\n"));
    assert!(text.contains("  hook -> handoff: src/hook.rs:1\n"));
    assert_eq!(crate_paths("use crate::measure::thousands; // crate::x"), vec!["measure"]);
    assert_eq!(
        sibling_paths(
            "use super::runner::{a, b}; super::Lint; crate::goal::lint::expect::x",
            "goal::lint",
            true
        ),
        vec!["expect", "runner"]
    );
    assert_eq!(
        sibling_paths("super::super::shell::x; super::runner::y", "goal::lint", false),
        Vec::<String>::new()
    );
    assert_eq!(crate_paths("$crate::atomic::write(crate::Error::x)"), Vec::<String>::new());
    assert_eq!(
        crate_paths("use kit_core::units; kit_harness::looprun::x; ::kit_course::verify"),
        vec!["units", "looprun", "verify"]
    );
    assert_eq!(
        layers("//! `a`\n//! # Layers\n//! See `x`.\n//!\n//! 1. base: `error`,\n//!    `atomic`\n//! 2. `longrun`\n//! # Next\n//! 3. `y`"),
        [("atomic".to_string(), 1), ("error".into(), 1), ("longrun".into(), 2)].into()
    );
}

/// The `may depend on` column of ARCHITECTURE.md's crate table: crate name -> the `kit-*`
/// crates it may depend on (`none`: no kit crate). Rows are `| `name` | … | `a`, `b` |`.
fn allowed_dependencies(architecture: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for line in architecture.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let ticked = |cell: &str| -> Vec<String> {
            cell.split('`').skip(1).step_by(2).map(str::to_string).collect()
        };
        let (Some(name), Some(may)) = (ticked(cells[0]).first().cloned(), cells.last()) else {
            continue;
        };
        out.insert(name, ticked(may).into_iter().collect());
    }
    out
}

/// The `kit-*` crates of a `Cargo.toml`'s `[dependencies]`.
fn kit_dependencies(manifest: &str) -> BTreeSet<String> {
    let doc: toml::Table = manifest.parse().unwrap();
    doc.get("dependencies")
        .and_then(toml::Value::as_table)
        .map(|deps| deps.keys().filter(|k| k.starts_with("kit-")).cloned().collect())
        .unwrap_or_default()
}

/// Each crate's manifest against its row: the differences, one line per crate (empty: they
/// agree). `manifests` is (crate name, Cargo.toml text).
fn dependency_differences(
    table: &BTreeMap<String, BTreeSet<String>>,
    manifests: &[(String, String)],
) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, manifest) in manifests {
        let Some(allowed) = table.get(name) else {
            problems.push(format!("crate `{name}` has no row in ARCHITECTURE.md's crate table"));
            continue;
        };
        let has = kit_dependencies(manifest);
        let extra: Vec<&String> = has.difference(allowed).collect();
        let missing: Vec<&String> = allowed.difference(&has).collect();
        if !extra.is_empty() || !missing.is_empty() {
            problems.push(format!(
                "crate `{name}`: Cargo.toml depends on {extra:?} beyond ARCHITECTURE.md's table, \
                 and not on {missing:?} that the table lists"
            ));
        }
    }
    for name in table.keys().filter(|n| !manifests.iter().any(|(m, _)| m == *n)) {
        problems.push(format!("ARCHITECTURE.md lists crate `{name}`, which the workspace lacks"));
    }
    problems
}

#[test]
fn crate_dependencies_match_architecture_md() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let table =
        allowed_dependencies(&std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap());
    let mut manifests = vec![("kit".to_string(), root.join("Cargo.toml"))];
    for src in source_dirs(root).into_iter().skip(1) {
        let dir = src.parent().unwrap();
        manifests.push((
            dir.file_name().unwrap().to_str().unwrap().to_string(),
            root.join(dir).join("Cargo.toml"),
        ));
    }
    let manifests: Vec<(String, String)> =
        manifests.into_iter().map(|(n, p)| (n, std::fs::read_to_string(p).unwrap())).collect();
    let problems = dependency_differences(&table, &manifests);
    assert!(problems.is_empty(), "crates and ARCHITECTURE.md disagree:\n{}", problems.join("\n"));
    assert_eq!(table.len(), 5, "{table:?}");
}

#[test]
fn the_dependency_check_names_the_crate_and_the_difference() {
    let table = allowed_dependencies(
        "| crate | owns | may depend on |\n|---|---|---|\n| `kit-core` | base | none |\n\
         | `kit-harness` | the `longrun` state | `kit-core`, `kit-transcript` |\n",
    );
    assert_eq!(table["kit-core"], BTreeSet::new());
    let harness = |deps: &str| {
        ("kit-harness".to_string(), format!("[package]\nname = \"kit-harness\"\n[dependencies]\n{deps}serde = \"1\"\n[dev-dependencies]\nkit-course = \"0\"\n"))
    };
    let core = ("kit-core".to_string(), "[dependencies]\nnix = \"0.29\"\n".to_string());
    let ok = harness("kit-core.workspace = true\nkit-transcript = { path = \"x\" }\n");
    assert_eq!(dependency_differences(&table, &[core.clone(), ok]), Vec::<String>::new());
    let bad = harness("kit-core.workspace = true\nkit-course.workspace = true\n");
    assert_eq!(
        dependency_differences(&table, &[core, bad]),
        vec![
            "crate `kit-harness`: Cargo.toml depends on [\"kit-course\"] beyond ARCHITECTURE.md's \
             table, and not on [\"kit-transcript\"] that the table lists"
                .to_string()
        ]
    );
    assert_eq!(
        dependency_differences(&table, &[]),
        vec![
            "ARCHITECTURE.md lists crate `kit-core`, which the workspace lacks".to_string(),
            "ARCHITECTURE.md lists crate `kit-harness`, which the workspace lacks".to_string()
        ]
    );
}
