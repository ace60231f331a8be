//! The layers ARCHITECTURE.md declares, kept true: every `crate::…` path in `src/`
//! names a module of its own layer's module or of a layer below it. The check itself is
//! tested on a deliberately wrong import, so that it cannot pass by reading nothing.

use std::collections::{BTreeMap, BTreeSet};
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

/// The module path of a file under `src/` (`trace/running.rs`: trace::running;
/// `trace/mod.rs`: trace; `lib.rs`: the crate root).
fn module_path(relative: &Path) -> Vec<String> {
    let mut v: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = v.pop().unwrap_or_default();
    let stem = last.strip_suffix(".rs").unwrap_or(&last);
    if !matches!(stem, "mod" | "lib" | "main") {
        v.push(stem.to_string());
    }
    v
}

/// The module paths a line of code names through `crate::` or `super::` (resolved
/// from module `at`), each as far as its first segments go; `{…}` groups expanded one
/// level.
fn named_paths(code: &str, at: &[String]) -> Vec<Vec<String>> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        let starts = rest.starts_with("crate::") || rest.starts_with("super::");
        let before = code[..i].chars().next_back();
        if !starts || before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        }
        let mut path: Vec<String> = Vec::new();
        let mut r = rest;
        if let Some(after) = r.strip_prefix("crate::") {
            r = after;
        } else {
            path = at.to_vec();
            while let Some(after) = r.strip_prefix("super::") {
                path.pop();
                r = after;
            }
        }
        loop {
            if let Some(group) = r.strip_prefix('{') {
                let mut depth = 1;
                let end = group
                    .char_indices()
                    .find(|&(_, c)| {
                        depth += i32::from(c == '{') - i32::from(c == '}');
                        depth == 0
                    })
                    .map_or(group.len(), |(e, _)| e);
                let mut d = 0;
                let mut item = String::new();
                for c in group[..end].chars().chain([',']) {
                    d += i32::from(c == '{') - i32::from(c == '}');
                    if c == ',' && d == 0 {
                        let name = ident(item.trim());
                        if !name.is_empty() && name != "self" {
                            out.push([path.clone(), vec![name]].concat());
                        }
                        item.clear();
                    } else {
                        item.push(c);
                    }
                }
                out.push(path.clone());
                r = &group[end..];
                break;
            }
            let name = ident(r);
            if name.is_empty() {
                out.push(path.clone());
                break;
            }
            path.push(name.clone());
            match r[name.len()..].strip_prefix("::") {
                Some(after) => r = after,
                None => {
                    out.push(path.clone());
                    break;
                }
            }
        }
        i = code.len() - r.len();
    }
    out
}

/// The modules a file names by their last segment through its `use` lines (`use
/// crate::report::{self, …}` or `use crate::report;`: `report` stands for
/// crate::report afterwards).
fn aliases(text: &str, at: &[String]) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("").trim();
        let Some(used) = code
            .strip_prefix("use ")
            .or_else(|| code.strip_prefix("pub use "))
        else {
            continue;
        };
        let used = used.trim_end_matches(';');
        let whole = if let Some((prefix, group)) = used.split_once("::{") {
            let has_self = group
                .trim_end_matches('}')
                .split(',')
                .any(|i| i.trim() == "self");
            if !has_self {
                continue;
            }
            prefix
        } else {
            used
        };
        if let Some(path) = named_paths(whole, at).pop()
            && let Some(last) = path.last()
        {
            out.push((last.clone(), path));
        }
    }
    out
}

/// The module paths a line names through an alias of [`aliases`] (`report::table`).
fn aliased_paths(code: &str, aliases: &[(String, Vec<String>)]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (name, path) in aliases {
        let needle = format!("{name}::");
        for (i, _) in code.match_indices(&needle) {
            let before = code[..i].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let next: String = code[i + needle.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !next.is_empty() {
                out.push([path.clone(), vec![next]].concat());
            }
        }
    }
    out
}

/// A folder's module path.
type Folder = Vec<String>;

/// What the folders of `src/` hold: each folder's children (files but `mod.rs`, and
/// subfolders), and the names each folder's `mod.rs` re-exports from a child.
struct Folders {
    children: BTreeMap<Folder, BTreeSet<String>>,
    reexports: BTreeMap<(Folder, String), String>,
}

impl Folders {
    fn of(files: &[(PathBuf, String)]) -> Folders {
        let mut f = Folders {
            children: BTreeMap::new(),
            reexports: BTreeMap::new(),
        };
        for (path, text) in files {
            let m = module_path(path);
            if let Some((last, folder)) = m.split_last() {
                let kids = f.children.entry(folder.to_vec()).or_default();
                kids.insert(last.clone());
            }
            if !(path.ends_with("mod.rs") || path.ends_with("lib.rs")) {
                continue;
            }
            for line in text.lines().filter(|l| l.trim_start().starts_with("pub")) {
                let Some(used) = line.split("use ").nth(1) else {
                    continue;
                };
                let used = used.trim_end_matches(';');
                let Some((child, names)) = used.split_once("::") else {
                    continue;
                };
                if matches!(child, "crate" | "super" | "self") {
                    continue;
                }
                for n in names.trim_matches(|c| c == '{' || c == '}').split(',') {
                    let n = n.rsplit(" as ").next().unwrap_or(n).trim();
                    f.reexports
                        .insert((m.clone(), n.to_string()), child.to_string());
                }
            }
        }
        f
    }

    /// The edge module `from` names by `named`: (folder, from's child, named's child)
    /// in the deepest folder both are in (a name its mod.rs re-exports stands for the
    /// child it comes from); None for its own module, below it, or a folder it is in.
    fn edge(&self, from: &[String], named: &[String]) -> Option<(Folder, String, String)> {
        let c = from.iter().zip(named).take_while(|(a, b)| a == b).count();
        if c >= from.len() || c >= named.len() {
            return None;
        }
        let folder = from[..c].to_vec();
        let (a, mut b) = (from[c].clone(), named[c].clone());
        if !self.children.get(&folder).is_some_and(|k| k.contains(&b)) {
            b = self.reexports.get(&(folder.clone(), b))?.clone();
        }
        (a != b).then_some((folder, a, b))
    }
}

/// Every edge between two children of one folder, with where it was first seen
/// ("src/FILE:LINE").
fn edges(files: &[(PathBuf, String)]) -> BTreeMap<(Folder, String, String), String> {
    let folders = Folders::of(files);
    let mut out = BTreeMap::new();
    for (path, text) in files {
        let from = module_path(path);
        let mut at = from.clone();
        let aliases = aliases(text, &at);
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.trim_start().starts_with("mod tests") || code.contains("mod tests {") {
                at.push("tests".into());
            }
            let through_alias = aliased_paths(code, &aliases);
            for named in named_paths(code, &at).into_iter().chain(through_alias) {
                if let Some(e) = folders.edge(&from, &named) {
                    out.entry(e)
                        .or_insert_with(|| format!("src/{}:{}", path.display(), n + 1));
                }
            }
        }
    }
    out
}

/// The import circles between the files (and subfolders) of one folder: for each
/// folder, its children but `mod.rs` (the folder's face) as nodes, an edge where one
/// names another; each circle one line, "folder: {a, b, …}", then its edges.
fn circles(files: &[(PathBuf, String)]) -> Vec<String> {
    let seen_at = edges(files);
    let mut graphs: BTreeMap<&Folder, BTreeMap<&String, BTreeSet<&String>>> = BTreeMap::new();
    for (f, a, b) in seen_at.keys() {
        graphs.entry(f).or_default().entry(a).or_default().insert(b);
    }
    let mut out = Vec::new();
    for (folder, graph) in graphs {
        let reach = |from: &String| -> BTreeSet<&String> {
            let mut seen = BTreeSet::new();
            let mut todo = vec![from];
            while let Some(n) = todo.pop() {
                for &m in graph.get(n).into_iter().flatten() {
                    if seen.insert(m) {
                        todo.push(m);
                    }
                }
            }
            seen
        };
        let mut done: BTreeSet<&String> = BTreeSet::new();
        for &n in graph.keys() {
            if done.contains(n) || !reach(n).contains(n) {
                continue;
            }
            let circle: BTreeSet<&String> = reach(n)
                .into_iter()
                .filter(|m| reach(m).contains(n))
                .collect();
            done.extend(circle.iter().copied());
            let why: String = seen_at
                .iter()
                .filter(|((f, a, b), _)| f == folder && circle.contains(a) && circle.contains(b))
                .map(|((_, a, b), at)| format!("\n  {a} -> {b} ({at})"))
                .collect();
            let names: Vec<&str> = circle.iter().map(|s| s.as_str()).collect();
            let shown = if folder.is_empty() {
                "src".to_string()
            } else {
                folder.join("/")
            };
            out.push(format!("{shown}: {{{}}}{why}", names.join(", ")));
        }
    }
    out
}

#[test]
fn no_two_files_of_a_folder_import_each_other() {
    let (files, _) = tree();
    let found = circles(&files);
    assert!(
        found.is_empty(),
        "import circles inside a folder:\n{}",
        found.join("\n")
    );
}

#[test]
fn an_import_circle_inside_a_folder_is_caught() {
    let (mut files, _) = tree();
    // Two new files of trace/ naming each other, one through `super::`, one through
    // a crate path and a group; and a subfolder's file naming its folder's sibling.
    files.push((
        PathBuf::from("trace/wrong_a.rs"),
        "use super::wrong_b::B;\n".into(),
    ));
    files.push((
        PathBuf::from("trace/wrong_b.rs"),
        "use crate::trace::{figures, wrong_a::{A, C}};\n".into(),
    ));
    files.push((
        PathBuf::from("sys/wrong_c/mod.rs"),
        "pub use inner::X;\nmod inner;\n".into(),
    ));
    files.push((
        PathBuf::from("sys/wrong_c/inner.rs"),
        "fn f() { super::super::wrong_d::g(); }\n".into(),
    ));
    files.push((
        PathBuf::from("sys/wrong_d.rs"),
        "use super::wrong_c::X; // crate::sys::rusage in a comment\n".into(),
    ));
    // Through a `self` alias of their folder.
    files.push((
        PathBuf::from("report/wrong_e.rs"),
        "use crate::report::{self, grid};\nfn f() { report::wrong_f::g(); }\n".into(),
    ));
    files.push((
        PathBuf::from("report/wrong_f.rs"),
        "use super::wrong_e;\n".into(),
    ));
    let found = circles(&files);
    assert!(
        found
            .iter()
            .any(|c| c.starts_with("trace: {wrong_a, wrong_b}\n")),
        "{found:#?}"
    );
    assert!(
        found
            .iter()
            .any(|c| c.starts_with("sys: {wrong_c, wrong_d}\n")
                && c.contains("wrong_c -> wrong_d (src/sys/wrong_c/inner.rs:1)")),
        "{found:#?}"
    );
    assert!(
        found
            .iter()
            .any(|c| c.starts_with("report: {wrong_e, wrong_f}\n")),
        "{found:#?}"
    );
    // The paths a line names, resolved.
    let at = ["trace".to_string(), "running".to_string()];
    let named = named_paths("use super::{profile::Profile, work};", &at);
    assert!(named.contains(&vec!["trace".into(), "profile".into()]));
    assert!(named.contains(&vec!["trace".into(), "work".into()]));
}
