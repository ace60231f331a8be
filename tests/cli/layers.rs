//! The layers ARCHITECTURE.md declares, kept true: every `crate::…` path in `src/`
//! names a module of its own layer's module or of a layer below it. The check itself is
//! tested on a deliberately wrong import, so that it cannot pass by reading nothing.

use std::path::{Path, PathBuf};

/// The layers, top first, from ARCHITECTURE.md's ```layers block: one line per layer,
/// the top-level modules of `src/` on it.
fn declared_layers(architecture: &str) -> Vec<Vec<String>> {
    let block = architecture
        .split("```layers\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("ARCHITECTURE.md has a ```layers block");
    block
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .filter(|l| !l.is_empty())
        .collect()
}

/// The top-level module a file under `src/` belongs to (`src/trace/profile/data.rs`:
/// `trace`; `src/session.rs`: `session`).
fn module_of(relative: &Path) -> String {
    let first = relative.components().next().expect("a path under src");
    let name = first.as_os_str().to_string_lossy();
    name.strip_suffix(".rs").unwrap_or(&name).to_string()
}

/// The top-level modules `text` names as `crate::NAME` outside comments (`$crate::`,
/// a macro's own path, is not one).
fn imports(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let before = rest[..at].chars().next_back();
            let after = &rest[at + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
                && !name.is_empty()
            {
                out.push(name);
            }
            rest = after;
        }
    }
    out
}

/// Each import in `files` (path under `src/`, text) that climbs: one line naming the
/// file, the module imported, and both layers. Also each top-level module missing
/// from the layers.
fn violations(files: &[(PathBuf, String)], layers: &[Vec<String>]) -> Vec<String> {
    let layer_of = |m: &str| layers.iter().position(|l| l.iter().any(|x| x == m));
    let mut out = Vec::new();
    for (path, text) in files {
        let from = module_of(path);
        if from == "lib" {
            continue;
        }
        let Some(own) = layer_of(&from) else {
            out.push(format!(
                "src/{}: module {from} is on no layer",
                path.display()
            ));
            continue;
        };
        for to in imports(text) {
            if to == from {
                continue;
            }
            match layer_of(&to) {
                Some(l) if l > own => {}
                Some(l) => out.push(format!(
                    "src/{}: {from} (layer {}) imports crate::{to} (layer {}), not below it",
                    path.display(),
                    own + 1,
                    l + 1
                )),
                None => out.push(format!(
                    "src/{}: crate::{to} is on no layer",
                    path.display()
                )),
            }
        }
    }
    out
}

/// Every `.rs` file under `dir`, with its path relative to `root`.
fn sources(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    for e in std::fs::read_dir(dir).expect("src is readable") {
        let p = e.expect("a directory entry").path();
        if p.is_dir() {
            sources(root, &p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&p).expect("a source file");
            out.push((p.strip_prefix(root).expect("under src").to_path_buf(), text));
        }
    }
}

fn tree() -> (Vec<(PathBuf, String)>, Vec<Vec<String>>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let arch = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut files = Vec::new();
    sources(&root.join("src"), &root.join("src"), &mut files);
    (files, declared_layers(&arch))
}

#[test]
fn every_import_stays_in_its_layer_or_goes_below() {
    let (files, layers) = tree();
    assert!(files.len() > 100, "read {} files", files.len());
    let bad = violations(&files, &layers);
    assert!(bad.is_empty(), "imports that climb:\n{}", bad.join("\n"));
    // Every layer's module exists.
    for m in layers.iter().flatten() {
        assert!(
            files.iter().any(|(p, _)| module_of(p) == *m),
            "ARCHITECTURE.md's layer names {m}, which src/ does not have"
        );
    }
}

#[test]
fn an_import_that_climbs_is_caught() {
    let (mut files, layers) = tree();
    // advice/ may import nothing above results: a deliberate climb to session, and one
    // from sys up to trace.
    files.push((
        PathBuf::from("advice/wrong.rs"),
        "use crate::results::Run;\nuse crate::session::measure;\n".into(),
    ));
    files.push((
        PathBuf::from("sys/wrong.rs"),
        "fn f() { crate::trace::run(); } // crate::report in a comment is not one\n".into(),
    ));
    let bad = violations(&files, &layers);
    assert_eq!(bad.len(), 2, "{bad:#?}");
    assert!(bad[0].contains("advice/wrong.rs: advice"), "{bad:#?}");
    assert!(bad[0].contains("crate::session"), "{bad:#?}");
    assert!(bad[1].contains("sys/wrong.rs: sys"), "{bad:#?}");
    // A module on no layer is named too.
    files.push((PathBuf::from("newthing.rs"), String::new()));
    assert!(
        violations(&files, &layers)
            .iter()
            .any(|v| v.contains("newthing") && v.contains("no layer"))
    );
}
