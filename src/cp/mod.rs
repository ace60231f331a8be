//! `ioprobe cp`: GNU cp 9.1's semantics and options (docs/cp.md lists the deliberate
//! differences): the operands and the target here, a directory operand in [`walk`]
//! (whose batches of names go to the workers of `pool`), one non-directory as GNU's
//! copy_internal treats it (an existing destination included) in `file`, its bytes in
//! [`data`].

pub mod args;
mod attrs;
pub mod backup;
pub mod data;
mod file;
mod pool;
mod progress;
pub mod tuning;
mod walk;

use anyhow::{Result, anyhow};
pub use backup::Backup;
use data::When;
use rustix::fs::Mode;
use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::Metadata;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Condvar, Mutex};

/// What `-p`/`--preserve` keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Preserve {
    pub mode: bool,
    pub ownership: bool,
    pub timestamps: bool,
    pub xattr: bool,
    /// Hard links between the sources are hard links between the copies.
    pub links: bool,
    /// Asked for by name (SELinux contexts: refused, as GNU does without SELinux).
    pub context: bool,
    /// `--no-preserve=mode`: new files get 0666 (directories 0777) less the umask.
    pub no_mode: bool,
}

impl Preserve {
    /// `--preserve=all` (context only where it can be kept: never here).
    pub fn all() -> Preserve {
        Preserve {
            mode: true,
            ownership: true,
            timestamps: true,
            xattr: true,
            links: true,
            context: false,
            no_mode: false,
        }
    }

    /// Adds what `other` names.
    pub fn add(&mut self, other: &Preserve) {
        self.mode |= other.mode;
        self.ownership |= other.ownership;
        self.timestamps |= other.timestamps;
        self.xattr |= other.xattr;
        self.links |= other.links;
        self.context |= other.context;
        if other.mode {
            self.no_mode = false;
        }
    }

    /// Takes away what `other` names (`--no-preserve`).
    pub fn remove(&mut self, other: &Preserve) {
        self.mode &= !other.mode;
        self.ownership &= !other.ownership;
        self.timestamps &= !other.timestamps;
        self.xattr &= !other.xattr;
        self.links &= !other.links;
        self.context &= !other.context;
        if other.mode {
            self.no_mode = true;
        }
    }
}

/// Which symbolic links in the sources are followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deref {
    /// -P (the default with -r): links are copied as links.
    Never,
    /// -H: those named on the command line are followed.
    CommandLine,
    /// -L (the default without -r): all are followed.
    Always,
}

/// What to do with an existing destination file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interactive {
    Overwrite,
    /// -i: ask on stderr, read the answer from stdin.
    Ask,
    /// -n: keep it.
    Never,
}

/// What is made at the destination of a non-directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkMode {
    Copy,
    /// -l
    Hard,
    /// -s
    Symbolic,
}

/// The cp command's options (clap-free; `cli` builds them).
#[derive(Debug, Clone)]
pub struct Options {
    /// The operands as given: the sources, then (without -t) the destination.
    pub operands: Vec<OsString>,
    pub target_directory: Option<OsString>,
    pub no_target_directory: bool,
    pub recursive: bool,
    pub deref: Deref,
    pub preserve: Preserve,
    pub interactive: Interactive,
    pub update: bool,
    pub force: bool,
    pub remove_destination: bool,
    pub backup: Backup,
    pub suffix: OsString,
    pub link: LinkMode,
    pub parents: bool,
    pub one_file_system: bool,
    pub attributes_only: bool,
    /// Special files (FIFOs, devices) are read like files, not made (without -r, or
    /// with --copy-contents).
    pub copy_as_regular: bool,
    /// POSIXLY_CORRECT: a dangling symlink destination is written through (GNU's
    /// historical behaviour), not refused.
    pub open_dangling_dest_symlink: bool,
    pub strip_trailing_slashes: bool,
    pub verbose: bool,
    pub debug: bool,
    pub reflink: When,
    pub sparse: When,
    pub jobs: usize,
}

/// The state of a source inode with several links (`--preserve=links`): its first
/// copy is being made, or is in place under a name the others link to.
enum LinkState {
    Pending,
    Done(PathBuf),
}

/// Hard links in the copy: a second name of an inode is linked only to a first copy
/// that is complete and in place (a worker that meets it sooner waits).
#[derive(Default)]
struct Links {
    map: Mutex<HashMap<(u64, u64), LinkState>>,
    cond: Condvar,
}

/// What [`Links::claim`] says to do.
enum Claim<'a> {
    /// Link to this finished first copy.
    Link(PathBuf),
    /// Copy it; publish the copy once it is in place (dropped unpublished, the next
    /// claimant copies it instead).
    First(FirstCopy<'a>),
}

struct FirstCopy<'a> {
    links: &'a Links,
    key: (u64, u64),
    dst: Option<PathBuf>,
}

impl FirstCopy<'_> {
    fn publish(mut self) {
        if let (Some(dst), Ok(mut m)) = (self.dst.take(), self.links.map.lock()) {
            m.insert(self.key, LinkState::Done(dst));
        }
        self.links.cond.notify_all();
    }
}

impl Drop for FirstCopy<'_> {
    fn drop(&mut self) {
        if self.dst.is_some() {
            if let Ok(mut m) = self.links.map.lock() {
                m.remove(&self.key);
            }
            self.links.cond.notify_all();
        }
    }
}

impl Links {
    /// For a name of the inode that already exists and is kept (-u): the first copy to
    /// link it to, or None when it is the first name (then published at once).
    fn claim_existing(&self, key: (u64, u64), dst: &Path) -> Result<Option<PathBuf>> {
        Ok(match self.claim(key, dst)? {
            Claim::First(f) => {
                f.publish();
                None
            }
            Claim::Link(to) => Some(to),
        })
    }

    fn claim(&self, key: (u64, u64), dst: &Path) -> Result<Claim<'_>> {
        let mut m = self.map.lock().map_err(|_| anyhow!("lock"))?;
        loop {
            match m.get(&key) {
                Some(LinkState::Done(p)) => return Ok(Claim::Link(p.clone())),
                Some(LinkState::Pending) => {
                    crate::interrupt::check()?;
                    m = self
                        .cond
                        .wait_timeout(m, std::time::Duration::from_millis(100))
                        .map_err(|_| anyhow!("lock"))?
                        .0;
                }
                None => {
                    m.insert(key, LinkState::Pending);
                    return Ok(Claim::First(FirstCopy {
                        links: self,
                        key,
                        dst: Some(dst.to_path_buf()),
                    }));
                }
            }
        }
    }
}

/// What the run shares between workers.
struct Shared {
    opts: Options,
    path: data::Path,
    /// Capacity asked for a pipe source (from a saved pipe run, else 1 MiB).
    pipe_capacity: usize,
    umask: u32,
    links: Links,
    /// Destinations made for command-line operands, when there are several: one is
    /// never overwritten by a later operand ("will not overwrite just-created").
    dest_info: Option<Mutex<HashSet<(u64, u64)>>>,
    errors: std::sync::atomic::AtomicU64,
    /// -i asks one question at a time.
    asking: Mutex<()>,
    /// What the progress display shows.
    counters: progress::Counters,
}

impl Shared {
    /// The state every worker shares, for `opts` with the `tuning` measured here;
    /// `several`: several sources into a directory (a later one must not overwrite what
    /// an earlier one made).
    fn new(opts: Options, tuning: &tuning::Tuning, several: bool) -> Shared {
        Shared {
            path: data::Path {
                reflink: opts.reflink,
                sparse: opts.sparse,
                buffer: tuning.buffer,
                chunk: 64 << 20,
                offload_first: tuning.offload_first,
            }
            .for_tests(),
            pipe_capacity: tuning.pipe_capacity,
            umask: umask(),
            links: Links::default(),
            dest_info: several.then(|| Mutex::new(HashSet::new())),
            errors: Default::default(),
            asking: Mutex::new(()),
            counters: Default::default(),
            opts,
        }
    }

    /// Whether a symlink at `top` level (a command-line operand) or inside a tree is
    /// followed.
    fn follows(&self, top: bool) -> bool {
        match self.opts.deref {
            Deref::Always => true,
            Deref::CommandLine => top,
            Deref::Never => false,
        }
    }
}

/// The process umask (read once; umask(2) has no "get").
fn umask() -> u32 {
    let old = rustix::process::umask(Mode::from_raw_mode(0o022));
    rustix::process::umask(old);
    old.as_raw_mode() as u32
}

/// An errno as one line, as the other errors read.
fn errno_text(e: rustix::io::Errno) -> String {
    crate::error::plain(&e.into())
}

/// A name as GNU cp quotes it in messages.
fn q(p: &Path) -> String {
    format!("'{}'", crate::units::escape(&p.display().to_string()))
}

fn same_file(a: &Metadata, b: &Metadata) -> bool {
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// A usage error of cp's: GNU's wording, exit status 1 (as GNU cp).
fn usage<T>(msg: impl std::fmt::Display) -> Result<T> {
    Err(crate::error::Exit::with(1, format!("cp: {msg} (see 'ioprobe cp --help')")).into())
}

/// The last component of `p` without trailing slashes, as GNU's `last_component`
/// (`D/.` gives `.`, which Path::file_name would drop), `..` becoming `.`.
fn base_name(p: &OsStr) -> &OsStr {
    let b = p.as_bytes();
    let end = b.iter().rposition(|&c| c != b'/').map_or(0, |i| i + 1);
    let start = b[..end]
        .iter()
        .rposition(|&c| c == b'/')
        .map_or(0, |i| i + 1);
    let base = OsStr::from_bytes(&b[start..end]);
    if base == ".." { OsStr::new(".") } else { base }
}

/// `dir/name` with one slash between them.
fn concat(dir: &OsStr, name: &OsStr) -> PathBuf {
    let mut s = dir.as_bytes().to_vec();
    let name = name.as_bytes();
    let name = &name[name.iter().position(|&c| c != b'/').unwrap_or(name.len())..];
    if !s.is_empty() && !s.ends_with(b"/") {
        s.push(b'/');
    }
    s.extend_from_slice(name);
    PathBuf::from(OsStr::from_bytes(&s))
}

fn strip_trailing_slashes(s: &OsStr) -> OsString {
    let b = s.as_bytes();
    let end = b
        .iter()
        .rposition(|&c| c != b'/')
        .map_or(b.len().min(1), |i| i + 1);
    OsStr::from_bytes(&b[..end]).to_os_string()
}

/// Where the sources go.
enum Dest {
    /// Into this directory.
    Into(PathBuf),
    /// To this name (one source).
    As(PathBuf),
}

/// The operands sorted as GNU's do_copy does: sources, and the target.
fn operands(o: &Options) -> Result<(Vec<OsString>, Dest)> {
    let mut files = o.operands.clone();
    let n = files.len();
    if n <= usize::from(o.target_directory.is_none()) {
        return if n == 0 {
            usage("missing file operand")
        } else {
            usage(format!(
                "missing destination file operand after {}",
                q(Path::new(&files[0]))
            ))
        };
    }
    if o.no_target_directory {
        if o.target_directory.is_some() {
            return usage("cannot combine --target-directory (-t) and --no-target-directory (-T)");
        }
        if n > 2 {
            return usage(format!("extra operand {}", q(Path::new(&files[2]))));
        }
    }
    let dest = if let Some(t) = &o.target_directory {
        match std::fs::metadata(t) {
            Ok(m) if m.is_dir() => Dest::Into(PathBuf::from(t)),
            Ok(_) => {
                return usage(format!(
                    "target directory {}: Not a directory",
                    q(Path::new(t))
                ));
            }
            Err(e) => {
                return usage(format!(
                    "target directory {}: {}",
                    q(Path::new(t)),
                    crate::error::plain(&e)
                ));
            }
        }
    } else {
        let last = files.pop().unwrap_or_default();
        match std::fs::metadata(&last) {
            Ok(m) if m.is_dir() && !o.no_target_directory => Dest::Into(PathBuf::from(&last)),
            other => {
                if n > 2 {
                    let why = match other {
                        Ok(_) => "Not a directory".to_string(),
                        Err(e) => crate::error::plain(&e),
                    };
                    return Err(crate::error::Exit::with(
                        1,
                        format!("cp: target {}: {why}", q(Path::new(&last))),
                    )
                    .into());
                }
                if o.parents {
                    return usage("with --parents, the destination must be a directory");
                }
                Dest::As(PathBuf::from(&last))
            }
        }
    };
    if o.strip_trailing_slashes {
        for f in &mut files {
            *f = strip_trailing_slashes(f);
        }
    }
    Ok((files, dest))
}

/// Runs the copy; Err only for a usage problem. Per-file failures are reported as they
/// happen and make the exit status 1, as cp does.
pub fn run(mut opts: Options) -> Result<i32> {
    crate::interrupt::install()?;
    data::hook_slow_for_tests();
    // A write past `ulimit -f` fails with EFBIG (and the file is removed) instead of
    // killing ioprobe with SIGXFSZ.
    crate::sys::signals::install().map_err(|e| anyhow!("cannot set signal dispositions: {e}"))?;
    let (sources, dest) = operands(&opts)?;
    let dest = backup_is_the_copy(&mut opts, &sources, dest);
    // What ioprobe measured on this host and the destination's filesystem, if saved.
    let tuning = tuning::for_destination(&dest_dir(&dest));
    if opts.debug {
        crate::progress::note(&format!("cp: file data: {}", tuning.copy_from));
        crate::progress::note(&format!("cp: pipe sources: {}", tuning.pipe_from));
    }
    let several = sources.len() >= 2 && matches!(dest, Dest::Into(_));
    let shared = Arc::new(Shared::new(opts, &tuning, several));
    let progress = progress::start(Arc::clone(&shared), sources.clone());
    copy_operands(&shared, &sources, &dest, several);
    shared.counters.done_files.store(u64::MAX, Relaxed);
    if let Some(p) = progress {
        let _ = p.join();
    }
    crate::interrupt::check()?;
    Ok(if shared.errors.load(Relaxed) == 0 {
        0
    } else {
        1
    })
}

/// `cp --force --backup F F` is `cp F F~` (GNU's do_copy): the backup is the copy.
fn backup_is_the_copy(opts: &mut Options, sources: &[OsString], dest: Dest) -> Dest {
    if let Dest::As(d) = &dest
        && opts.force
        && opts.backup != Backup::None
        && sources.len() == 1
        && sources[0] == d.as_os_str()
        && std::fs::metadata(d).is_ok_and(|m| m.is_file())
    {
        let copy = Dest::As(backup::name_for(d, opts.backup, &opts.suffix));
        opts.backup = Backup::None;
        return copy;
    }
    dest
}

/// The directory the copies land in (whose filesystem the tuning is read for).
fn dest_dir(dest: &Dest) -> PathBuf {
    match dest {
        Dest::Into(d) => d.clone(),
        Dest::As(d) => match d.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        },
    }
}

/// Each command-line operand in order, with `--parents`' directories made before it and
/// given their attributes after it.
fn copy_operands(shared: &Arc<Shared>, sources: &[OsString], dest: &Dest, several: bool) {
    let mut seen_sources = HashSet::new();
    for s in sources {
        if crate::interrupt::requested() {
            break;
        }
        let src = PathBuf::from(s);
        let (dst, parents) = match dest {
            Dest::Into(dir) if shared.opts.parents => {
                let dst = concat(dir.as_os_str(), &strip_trailing_slashes(s));
                match walk::make_parents(shared, dir, s) {
                    Ok(made) => (dst, made),
                    Err(e) => {
                        fail(shared, format!("{e:#}"));
                        continue;
                    }
                }
            }
            Dest::Into(dir) => (concat(dir.as_os_str(), base_name(s)), Vec::new()),
            Dest::As(d) => (d.clone(), Vec::new()),
        };
        if let Err(e) = operand(shared, &src, &dst, several, &mut seen_sources) {
            fail(shared, format!("{e:#}"));
        }
        for (d, _, meta, made) in parents.iter().rev() {
            if let Err(e) = walk::dir_attributes(shared, d, &attrs::Attrs::of(meta), *made) {
                fail(shared, format!("setting attributes of {}: {e:#}", q(d)));
            }
        }
    }
}

/// One command-line operand: a directory is walked by [`walk::tree`], anything else is
/// copied here, in order (as GNU does, so that a later operand sees what an earlier one
/// made).
fn operand(
    sh: &Arc<Shared>,
    src: &Path,
    dst: &Path,
    several: bool,
    seen: &mut HashSet<(u64, u64, OsString)>,
) -> Result<()> {
    let meta = if sh.follows(true) {
        std::fs::metadata(src)
    } else {
        std::fs::symlink_metadata(src)
    }
    .map_err(|e| anyhow!("cannot stat {}: {}", q(src), crate::error::plain(&e)))?;
    if meta.is_dir() && !sh.opts.recursive {
        anyhow::bail!("-r not specified; omitting directory {}", q(src));
    }
    if several
        && !meta.is_dir()
        && sh.opts.backup == Backup::None
        && !seen.insert((meta.dev(), meta.ino(), src.as_os_str().to_os_string()))
    {
        eprintln!(
            "ioprobe: cp: warning: source file {} specified more than once",
            q(src)
        );
        return Ok(());
    }
    if meta.is_dir() {
        walk::tree(sh, src, dst, meta)
    } else {
        file::copy_nondir(
            sh,
            file::Item {
                src,
                dst,
                top: true,
                fresh: false,
                at: None,
            },
            &meta,
            None,
        )
    }
}

/// Reports a failure (one line, naming the file) and makes the exit status 1.
fn fail(sh: &Shared, msg: String) {
    sh.errors.fetch_add(1, Relaxed);
    eprintln!("ioprobe: cp: {}", crate::units::escape(&msg));
}

/// A line on stdout (-v); a closed stdout is not an error.
fn say(line: String) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
}

/// `--preserve=LIST` parsed (mode, ownership, timestamps, links, context, xattr, all).
pub fn parse_preserve(list: &str) -> Result<Preserve, String> {
    let mut p = Preserve::default();
    for w in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        match w {
            "mode" => p.mode = true,
            "ownership" => p.ownership = true,
            "timestamps" => p.timestamps = true,
            "links" => p.links = true,
            "context" => p.context = true,
            "xattr" => p.xattr = true,
            "all" => p.add(&Preserve::all()),
            other => {
                return Err(format!(
                    "invalid argument '{}' for '--preserve' (mode, ownership, timestamps, links, context, xattr, all)",
                    crate::units::escape(other)
                ));
            }
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_names_as_gnu_takes_them() {
        assert_eq!(base_name(OsStr::new("D/.")), ".");
        assert_eq!(base_name(OsStr::new("a/b/")), "b");
        assert_eq!(base_name(OsStr::new("a/..")), ".");
        assert_eq!(base_name(OsStr::new("f")), "f");
        assert_eq!(
            concat(OsStr::new("E/"), OsStr::new(".")),
            PathBuf::from("E/.")
        );
        assert_eq!(
            concat(OsStr::new("E"), OsStr::new("/a/b")),
            PathBuf::from("E/a/b")
        );
        assert_eq!(strip_trailing_slashes(OsStr::new("a//")), "a");
        assert_eq!(strip_trailing_slashes(OsStr::new("/")), "/");
    }

    #[test]
    fn preserve_lists_add_and_remove() {
        let mut p = parse_preserve("mode,links").unwrap();
        assert!(p.mode && p.links && !p.ownership);
        p.remove(&parse_preserve("mode").unwrap());
        assert!(!p.mode && p.no_mode);
        assert!(parse_preserve("all").unwrap().xattr);
        assert!(parse_preserve("bogus").is_err());
    }
}
