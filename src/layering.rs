//! The guard on kit's layering (the list in `src/lib.rs`'s module doc): reads every `src/**/*.rs`
//! file, collects the `crate::NAME` paths it uses (outside comments), and fails when
//!
//! - two or more top-level modules import each other, directly or round a circle (the message
//!   names the circle and one line per import in it);
//! - a module imports from a layer above its own in the list;
//! - a top-level module is missing from the list.
//!
//! A module may import from its own layer as long as that makes no circle. The check reads the
//! source as text, as a reviewer does; it compiles into the unit tests only.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `from -> to -> the lines (file:line) where `from` names `crate::to`.
type Imports = BTreeMap<String, BTreeMap<String, Vec<String>>>;

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

/// The top-level module a file under `src/` belongs to (`None`: the crate root or the binary).
fn top_module(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main")).then(|| name.to_string())
}

/// The lowercase names `line` reaches as `crate::NAME` before any `//` comment.
fn crate_paths(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = &rest[..at];
        rest = &rest[at + "crate::".len()..];
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
    out
}

fn imports(src: &Path) -> (BTreeSet<String>, Imports) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut modules = BTreeSet::new();
    let mut edges = Imports::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap();
        let Some(from) = top_module(rel) else { continue };
        if from == "layering" {
            continue;
        }
        modules.insert(from.clone());
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            for to in crate_paths(line) {
                if to != from {
                    let at = format!("src/{}:{}", rel.display(), i + 1);
                    edges.entry(from.clone()).or_default().entry(to).or_default().push(at);
                }
            }
        }
    }
    (modules, edges)
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

#[test]
fn top_level_modules_form_no_circle_and_keep_to_their_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (modules, edges) = imports(&root.join("src"));
    let mut problems: Vec<String> =
        circles(&modules, &edges).iter().map(|c| describe(c, &edges)).collect();
    let layer = layers(&std::fs::read_to_string(root.join("src/lib.rs")).unwrap());
    for m in &modules {
        if !layer.contains_key(m) {
            problems.push(format!("module `{m}` is in no layer of src/lib.rs's `# Layers` list\n"));
        }
    }
    for (from, targets) in &edges {
        for (to, at) in targets {
            if let (Some(a), Some(b)) = (layer.get(from), layer.get(to)) {
                if b > a {
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
    assert_eq!(crate_paths("$crate::atomic::write(crate::Error::x)"), Vec::<String>::new());
    assert_eq!(
        layers("//! `a`\n//! # Layers\n//! See `x`.\n//!\n//! 1. base: `error`,\n//!    `atomic`\n//! 2. `longrun`\n//! # Next\n//! 3. `y`"),
        [("atomic".to_string(), 1), ("error".into(), 1), ("longrun".into(), 2)].into()
    );
}
