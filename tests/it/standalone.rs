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
