//! One open descriptor as the profile knows it, and the path helpers.

/// What ioprobe knows of one open descriptor.
#[derive(Debug, Clone, Copy)]
pub(super) struct Fd {
    pub(super) target: usize,
    /// The file position (read/write/lseek move it).
    pub(super) pos: u64,
    /// Where the last data call on it ended (for sequential or random).
    pub(super) end: Option<u64>,
    pub(super) after_lseek: bool,
}

impl Fd {
    /// A descriptor just opened on `target`, at offset 0.
    pub(super) fn at(target: usize) -> Fd {
        Fd {
            target,
            pos: 0,
            end: None,
            after_lseek: false,
        }
    }
}

/// `p` without its `.` components and doubled slashes (`..` is kept: a symbolic link
/// may stand before it).
pub(super) fn normal(p: &std::path::Path) -> String {
    p.components()
        .filter(|c| *c != std::path::Component::CurDir)
        .collect::<std::path::PathBuf>()
        .to_string_lossy()
        .into_owned()
}

/// `path` as process `pid` names it: the links that point at the process reading
/// them (`/proc/self`, `/proc/thread-self`, `/dev/fd`, `/dev/stdin`…) made its own, so
/// that resolving them here, in ioprobe, does not give ioprobe's.
pub(super) fn as_seen_by(pid: i32, path: &str) -> String {
    let me = format!("/proc/{pid}");
    for (from, to) in [
        ("/proc/self", me.clone()),
        ("/proc/thread-self", me.clone()),
        ("/dev/fd", format!("{me}/fd")),
    ] {
        if let Some(rest) = path.strip_prefix(from)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return format!("{to}{rest}");
        }
    }
    match path {
        "/dev/stdin" => format!("{me}/fd/0"),
        "/dev/stdout" => format!("{me}/fd/1"),
        "/dev/stderr" => format!("{me}/fd/2"),
        _ => path.to_string(),
    }
}

pub(super) fn read_link(path: String) -> Option<String> {
    std::fs::read_link(path)
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::as_seen_by;

    #[test]
    fn links_to_the_reading_process_are_made_the_traced_process_s() {
        assert_eq!(as_seen_by(7, "/proc/self/maps"), "/proc/7/maps");
        assert_eq!(as_seen_by(7, "/proc/self"), "/proc/7");
        assert_eq!(as_seen_by(7, "/proc/thread-self/fd/3"), "/proc/7/fd/3");
        assert_eq!(as_seen_by(7, "/dev/fd/4"), "/proc/7/fd/4");
        assert_eq!(as_seen_by(7, "/dev/stdout"), "/proc/7/fd/1");
        assert_eq!(as_seen_by(7, "/proc/selfish"), "/proc/selfish");
        assert_eq!(as_seen_by(7, "/etc/passwd"), "/etc/passwd");
    }
}
