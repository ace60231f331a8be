//! Which file a traced command's name runs: the one rule for every tracer's exec and for
//! what is checked before it (a 32-bit program refused, a static one kept from the
//! preload tracer, a missing interpreter named).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// glibc's execvp searches this when PATH is unset (`_CS_PATH`).
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// The file execvp would run for `prog`: `prog` itself when it names a path (it may not
/// exist), else the first entry of PATH (unset: glibc's default; an empty entry: the
/// working directory) holding a regular file this process may execute. None when no
/// entry has one: execvp then fails as it would untraced (not found, or permission
/// denied).
pub fn program_path(prog: &OsStr) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| DEFAULT_PATH.into());
    program_path_in(prog, &path)
}

/// [`program_path`] with `path` as PATH.
fn program_path_in(prog: &OsStr, path: &OsStr) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    if prog.is_empty() {
        return None;
    }
    if prog.as_bytes().contains(&b'/') {
        return Some(PathBuf::from(prog));
    }
    std::env::split_paths(path)
        .map(|d| {
            if d.as_os_str().is_empty() {
                Path::new(".").join(prog)
            } else {
                d.join(prog)
            }
        })
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file())
                && rustix::fs::access(p, rustix::fs::Access::EXEC_OK).is_ok()
        })
}

#[cfg(test)]
mod tests {
    use super::program_path_in;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_program_is_found_where_execvp_would_run_it() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        for (d, mode) in [(&a, 0o644), (&b, 0o755)] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("prog"), b"#!/bin/sh\n").unwrap();
            std::fs::set_permissions(d.join("prog"), std::fs::Permissions::from_mode(mode))
                .unwrap();
        }
        std::fs::create_dir(dir.path().join("c")).unwrap();
        std::fs::create_dir(dir.path().join("c/prog")).unwrap();
        // A dangling symlink is no program either.
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::os::unix::fs::symlink("nowhere", dir.path().join("d/prog")).unwrap();
        let path = std::env::join_paths([dir.path().join("d"), dir.path().join("c"), a, b.clone()])
            .unwrap();
        // Not a directory, not a file it may not execute: the first it may.
        assert_eq!(
            program_path_in("prog".as_ref(), &path),
            Some(b.join("prog"))
        );
        assert_eq!(
            program_path_in("./prog".as_ref(), &path),
            Some("./prog".into())
        );
        assert_eq!(program_path_in("none".as_ref(), &path), None);
        assert_eq!(program_path_in("".as_ref(), &path), None);
    }
}
