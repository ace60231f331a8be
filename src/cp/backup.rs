//! `-b`/`--backup[=CONTROL]`/`-S SUFFIX`: an existing destination is renamed aside
//! before it is replaced, with GNU's names (`name~`, `name.~N~`).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// Which backups to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backup {
    None,
    /// `name` + suffix.
    Simple,
    /// `name.~N~`, N one more than the highest there.
    Numbered,
    /// Numbered where a numbered backup exists already, else simple.
    Existing,
}

impl Backup {
    /// CONTROL as GNU reads it, a unique abbreviation accepted.
    pub fn parse(control: &str) -> Result<Backup, String> {
        const NAMES: [(&str, Backup); 8] = [
            ("none", Backup::None),
            ("off", Backup::None),
            ("simple", Backup::Simple),
            ("never", Backup::Simple),
            ("existing", Backup::Existing),
            ("nil", Backup::Existing),
            ("numbered", Backup::Numbered),
            ("t", Backup::Numbered),
        ];
        if let Some((_, b)) = NAMES.iter().find(|(n, _)| *n == control) {
            return Ok(*b);
        }
        let hits: Vec<Backup> = NAMES
            .iter()
            .filter(|(n, _)| !control.is_empty() && n.starts_with(control))
            .map(|(_, b)| *b)
            .collect();
        match hits.first() {
            Some(b) if hits.iter().all(|h| h == b) => Ok(*b),
            _ => Err(format!(
                "invalid argument '{}' for 'backup type' (none, off, simple, never, existing, nil, numbered, t)",
                crate::units::escape(control)
            )),
        }
    }
}

/// The highest N of `name.~N~` in `dir`, if any.
fn highest_numbered(dir: &Path, name: &OsStr) -> Option<u64> {
    let prefix = [name.as_bytes(), b".~"].concat();
    let entries = std::fs::read_dir(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    })
    .ok()?;
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n = e.file_name().into_vec();
            let rest = n.strip_prefix(prefix.as_slice())?.strip_suffix(b"~")?;
            if rest.is_empty() || rest[0] == b'0' || !rest.iter().all(u8::is_ascii_digit) {
                return None;
            }
            std::str::from_utf8(rest).ok()?.parse::<u64>().ok()
        })
        .max()
}

/// The name `dst`'s backup gets.
pub fn name_for(dst: &Path, kind: Backup, suffix: &OsStr) -> PathBuf {
    let dir = dst.parent().unwrap_or(Path::new(""));
    let name = dst.file_name().unwrap_or_default();
    let numbered = |n: u64| {
        let mut s = name.to_os_string();
        s.push(format!(".~{n}~"));
        dst.with_file_name(s)
    };
    let simple = || {
        let mut s: OsString = name.to_os_string();
        s.push(suffix);
        dst.with_file_name(s)
    };
    match kind {
        Backup::None | Backup::Simple => simple(),
        Backup::Numbered => numbered(highest_numbered(dir, name).unwrap_or(0) + 1),
        Backup::Existing => match highest_numbered(dir, name) {
            Some(n) => numbered(n + 1),
            None => simple(),
        },
    }
}

/// Renames `dst` to its backup name (replacing an older simple backup, as GNU does);
/// returns that name.
pub fn rename_aside(dst: &Path, kind: Backup, suffix: &OsStr) -> std::io::Result<PathBuf> {
    let to = name_for(dst, kind, suffix);
    std::fs::rename(dst, &to)?;
    Ok(to)
}

/// Whether the source is the destination's own simple backup (`cp --b=simple a~ a`
/// would otherwise rename the source away and copy nothing).
pub fn source_is_backup(
    src: &Path,
    src_meta: &std::fs::Metadata,
    dst: &Path,
    suffix: &OsStr,
) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (Some(s), Some(d)) = (src.file_name(), dst.file_name()) else {
        return false;
    };
    let mut want = d.to_os_string();
    want.push(suffix);
    if s != want.as_os_str() {
        return false;
    }
    let mut b = dst.as_os_str().to_os_string();
    b.push(suffix);
    std::fs::metadata(Path::new(&b))
        .is_ok_and(|m| m.dev() == src_meta.dev() && m.ino() == src_meta.ino())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_words_and_abbreviations() {
        assert_eq!(Backup::parse("numbered"), Ok(Backup::Numbered));
        assert_eq!(Backup::parse("t"), Ok(Backup::Numbered));
        assert_eq!(Backup::parse("nil"), Ok(Backup::Existing));
        assert_eq!(Backup::parse("ex"), Ok(Backup::Existing));
        assert_eq!(Backup::parse("off"), Ok(Backup::None));
        assert!(Backup::parse("n").is_err(), "none, never, nil, numbered");
        assert!(Backup::parse("bogus").is_err());
    }

    #[test]
    fn numbered_names_count_up_from_the_highest() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        assert_eq!(
            name_for(&f, Backup::Numbered, OsStr::new("~")),
            d.path().join("f.~1~")
        );
        assert_eq!(
            name_for(&f, Backup::Existing, OsStr::new("~")),
            d.path().join("f~")
        );
        std::fs::write(d.path().join("f.~7~"), "").unwrap();
        std::fs::write(d.path().join("f.~x~"), "").unwrap();
        assert_eq!(
            name_for(&f, Backup::Existing, OsStr::new("~")),
            d.path().join("f.~8~")
        );
        assert_eq!(
            name_for(&f, Backup::Simple, OsStr::new(".bak")),
            d.path().join("f.bak")
        );
    }
}
