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

pub(super) fn read_link(path: String) -> Option<String> {
    std::fs::read_link(path)
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}
