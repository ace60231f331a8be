//! `ioprobe cp`: cp's semantics (a file to a file or into a directory, several into a
//! directory, `-r` trees, `-p`/`--preserve`, `-a`, `-n`, `-f`, `-v`), GNU cp's safety
//! (same-file and into-itself refusals, new files made with O_EXCL under a temporary
//! name and renamed at the end, attributes in cp's order, the size checked, a source
//! replaced between the walk and the open failed), with the data path of [`data`] and
//! a pool of workers that share the files of a tree.

pub mod data;
pub mod tuning;

use crate::sys::os;
use anyhow::{Context, Result, anyhow, bail};
use data::When;
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::Metadata;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, mpsc};

/// What `-p`/`--preserve` keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Preserve {
    pub mode: bool,
    pub ownership: bool,
    pub timestamps: bool,
    pub xattr: bool,
}

/// The cp command's options.
#[derive(Debug, Clone)]
pub struct Options {
    pub sources: Vec<OsString>,
    pub dest: OsString,
    pub recursive: bool,
    /// Symlinks copied as symlinks, hard links kept, special files made (-a).
    pub archive: bool,
    pub preserve: Preserve,
    pub no_clobber: bool,
    pub verbose: bool,
    pub debug: bool,
    pub reflink: When,
    pub sparse: When,
    pub jobs: usize,
}

/// One file to copy, as queued: inside a tree its metadata is read by the worker (a
/// regular file's from its open descriptor), so the walk makes no call per file.
struct Task {
    /// Its directory was made by this run: nothing can be in the way.
    fresh: bool,
    src: PathBuf,
    dst: PathBuf,
    meta: Option<Metadata>,
    /// The directory entry says regular file (no stat made yet).
    regular: bool,
}

/// One file to copy, its metadata known.
struct Job {
    fresh: bool,
    src: PathBuf,
    dst: PathBuf,
    meta: Metadata,
}

/// What a copy needs of its source, from the descriptor it reads.
#[derive(Debug, Clone, Copy)]
struct Stat {
    dev: u64,
    ino: u64,
    size: u64,
    blocks: u64,
    mode: u32,
}

impl Stat {
    fn of(m: &Metadata) -> Stat {
        Stat {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            blocks: m.blocks(),
            mode: m.mode(),
        }
    }
}

/// What the run shares between workers.
struct Shared {
    opts: Options,
    path: data::Path,
    /// Splice capacity for pipe sources (from a saved pipe run, else 1 MiB).
    pipe_capacity: usize,
    umask: u32,
    /// (dev, ino) of a source with several links → its first destination (-a).
    links: Mutex<HashMap<(u64, u64), PathBuf>>,
    errors: Mutex<Vec<String>>,
    lines: Mutex<Vec<String>>,
    /// Files and bytes found so far by the walk, and files done.
    planned_files: std::sync::atomic::AtomicU64,
    planned_bytes: std::sync::atomic::AtomicU64,
    done_files: std::sync::atomic::AtomicU64,
    /// The walk is over: the totals are final.
    planned: std::sync::atomic::AtomicBool,
}

/// The process umask (read once; umask(2) has no "get").
fn umask() -> u32 {
    let old = rustix::process::umask(Mode::from_raw_mode(0o022));
    rustix::process::umask(old);
    old.as_raw_mode() as u32
}

/// A temporary name beside `dst`: same directory, so the final rename is atomic.
fn temp_beside(dst: &Path, n: u64) -> PathBuf {
    let name = dst
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    static PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    dst.with_file_name(format!(
        ".{}.ioprobe-cp-{}-{n}",
        name.chars().take(100).collect::<String>(),
        PID.get_or_init(std::process::id)
    ))
}

static TEMP_SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A file being written under a temporary name: removed on drop unless kept.
struct Temp<'a> {
    path: std::borrow::Cow<'a, Path>,
    keep: bool,
}

impl Drop for Temp<'_> {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn q(p: &Path) -> String {
    format!("'{}'", crate::units::escape(&p.display().to_string()))
}

fn same_file(a: &Metadata, b: &Metadata) -> bool {
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// Runs the copy; Err only for a usage problem. Per-file failures are reported and make
/// the exit status 1, as cp does.
pub fn run(opts: Options) -> Result<i32> {
    crate::harness::interrupt::install()?;
    // A write past `ulimit -f` fails with EFBIG (and the file is removed) instead of
    // killing ioprobe with SIGXFSZ.
    crate::sys::signals::install().map_err(|e| anyhow!("cannot set signal dispositions: {e}"))?;
    if opts.sources.is_empty() {
        return crate::error::usage("cp: missing destination file operand");
    }
    let dest = PathBuf::from(&opts.dest);
    let dest_meta = std::fs::metadata(&dest).ok();
    let into_dir = dest_meta.as_ref().is_some_and(|m| m.is_dir());
    if opts.sources.len() > 1 && !into_dir {
        return crate::error::usage(format!("cp: target {} is not a directory", q(&dest)));
    }
    // What ioprobe measured on this host and the destination's filesystem, if saved.
    let dest_dir = if into_dir {
        dest.clone()
    } else {
        match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        }
    };
    let tuning = tuning::for_destination(&dest_dir);
    if opts.debug {
        crate::progress::note(&format!("cp: file data: {}", tuning.copy_from));
        crate::progress::note(&format!("cp: pipe sources: {}", tuning.pipe_from));
    }
    let shared = Arc::new(Shared {
        path: data::Path {
            reflink: opts.reflink,
            sparse: opts.sparse,
            buffer: tuning.buffer,
            chunk: 64 << 20,
            offload_first: tuning.offload_first,
        },
        pipe_capacity: tuning.pipe_capacity,
        umask: umask(),
        links: Mutex::new(HashMap::new()),
        errors: Mutex::new(Vec::new()),
        lines: Mutex::new(Vec::new()),
        planned_files: Default::default(),
        planned_bytes: Default::default(),
        done_files: Default::default(),
        planned: Default::default(),
        opts,
    });
    let progress = progress(Arc::clone(&shared));
    // Files go to the workers in batches: one channel operation per batch, not per file.
    // Room for 1,024 batches (a directory each, at most 256 names): with 64, the walk
    // filled the channel at once and then slept and woke once per batch a worker took,
    // 250 context switches for 10,000 files in 100 directories (cpz: 14); now 15.
    let (tx, rx) = mpsc::sync_channel::<Batch>(1024);
    let mut queue = Queue {
        tx,
        tops: Vec::new(),
        sent: Vec::new(),
    };
    let rx = Arc::new(Mutex::new(rx));
    let workers: Vec<_> = (0..shared.opts.jobs.max(1))
        .map(|_| {
            let rx = Arc::clone(&rx);
            let sh = Arc::clone(&shared);
            std::thread::spawn(move || {
                // A worker opens and closes every descriptor it uses: in a table of its
                // own, two workers' opens do not contend for one lock. Where unshare is
                // refused (a container's seccomp filter), the shared table only costs
                // time.
                let _ = os::own_fd_table();
                loop {
                    let batch = match rx.lock() {
                        Ok(r) => r.recv(),
                        Err(_) => return,
                    };
                    let Ok(batch) = batch else { return };
                    let mut bytes = 0;
                    let n = match batch {
                        Batch::Tasks(tasks) => {
                            let n = tasks.len();
                            for task in tasks {
                                if let Err(e) = copy_task(&sh, task, None, &mut bytes) {
                                    fail(&sh, format!("{e:#}"));
                                }
                            }
                            n
                        }
                        Batch::Dir(b) => copy_dir_batch(&sh, b, &mut bytes),
                    };
                    // The shared counters once a batch, not per file: two workers
                    // updating them per file keep passing their cache line around.
                    sh.planned_bytes.fetch_add(bytes, Relaxed);
                    data::flush_moved();
                    sh.done_files.fetch_add(n as u64, Relaxed);
                }
            })
        })
        .collect();
    // Directories whose attributes are set once their contents are written, deepest last.
    let mut dirs: Vec<(PathBuf, Metadata, bool)> = Vec::new();
    for s in &shared.opts.sources {
        let src = PathBuf::from(s);
        let dst = if into_dir {
            match src.file_name() {
                Some(n) => dest.join(n),
                None => dest.join(
                    src.canonicalize()
                        .ok()
                        .and_then(|c| c.file_name().map(|n| n.to_owned()))
                        .unwrap_or_default(),
                ),
            }
        } else {
            dest.clone()
        };
        if let Err(e) = plan(&shared, &mut queue, &src, &dst, (true, false), &mut dirs) {
            fail(&shared, format!("{e:#}"));
        }
        if crate::harness::interrupt::requested() {
            break;
        }
    }
    shared.planned.store(true, Relaxed);
    let _ = queue.flush();
    if !crate::harness::interrupt::requested() {
        let _ = queue.send_again();
    }
    drop(queue);
    for w in workers {
        let _ = w.join();
    }
    shared.done_files.store(u64::MAX, Relaxed);
    if let Some(p) = progress {
        let _ = p.join();
    }
    for (dst, meta, created) in dirs.iter().rev() {
        if let Err(e) = dir_attributes(&shared, dst, meta, *created) {
            fail(&shared, format!("setting attributes of {}: {e:#}", q(dst)));
        }
    }
    crate::harness::interrupt::check()?;
    let lines = std::mem::take(&mut *shared.lines.lock().map_err(|_| anyhow!("lock"))?);
    for l in lines {
        println!("{l}");
    }
    let errors = std::mem::take(&mut *shared.errors.lock().map_err(|_| anyhow!("lock"))?);
    for e in &errors {
        eprintln!("ioprobe: cp: {e}");
    }
    Ok(if errors.is_empty() { 0 } else { 1 })
}

fn fail(sh: &Shared, msg: String) {
    if let Ok(mut e) = sh.errors.lock() {
        e.push(crate::units::escape(&msg));
    }
}

fn say(sh: &Shared, line: String) {
    if let Ok(mut l) = sh.lines.lock() {
        l.push(line);
    }
}

/// Files for a worker to copy.
enum Batch {
    /// Command-line operands (whole paths, metadata read).
    Tasks(Vec<Task>),
    /// Entries of one directory.
    Dir(Arc<DirBatch>),
}

/// Up to [`Queue::BATCH`] entries of one directory, as the walk read them: no path and
/// no allocation per file on the walk's side (paths made by one thread and freed by
/// another, and moved about in large tasks, were most of a small-file copy's user time).
struct DirBatch {
    /// The source directory and its copy.
    dirs: Arc<(PathBuf, PathBuf)>,
    /// The copy was made by this run.
    fresh: bool,
    /// The names end to end.
    names: Vec<u8>,
    /// Per entry: where its name ends in `names`, and whether its directory entry says
    /// regular file.
    ends: Vec<(usize, bool)>,
    /// The next entry to take: a batch is sent again once the walk is over, so that a
    /// worker with nothing left helps with one still in progress (a directory's few
    /// large files would otherwise be copied by one worker while the others wait).
    next: std::sync::atomic::AtomicUsize,
}

/// Files on their way to the workers.
struct Queue {
    tx: mpsc::SyncSender<Batch>,
    tops: Vec<Task>,
    /// Directory batches sent and perhaps not finished, to send again at the end.
    sent: Vec<Arc<DirBatch>>,
}

impl Queue {
    /// Most files per batch: a typical directory in one batch, a large one shared out.
    const BATCH: usize = 256;

    /// A command-line operand.
    fn push(&mut self, job: Task) -> Result<()> {
        self.tops.push(job);
        if self.tops.len() >= Self::BATCH {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if !self.tops.is_empty() {
            let tops = std::mem::take(&mut self.tops);
            self.send(Batch::Tasks(tops))?;
        }
        Ok(())
    }

    fn send(&self, b: Batch) -> Result<()> {
        self.tx.send(b).map_err(|_| anyhow!("workers stopped"))
    }

    fn send_dir(&mut self, b: DirBatch) -> Result<()> {
        let b = Arc::new(b);
        if self.sent.len() >= 64 {
            self.sent.retain(|b| !b.finished());
        }
        self.sent.push(Arc::clone(&b));
        self.send(Batch::Dir(b))
    }

    /// Once the walk is over: the batches not yet finished, again, for workers that
    /// would otherwise wait.
    fn send_again(&mut self) -> Result<()> {
        for b in std::mem::take(&mut self.sent) {
            if !b.finished() {
                self.send(Batch::Dir(b))?;
            }
        }
        Ok(())
    }
}

impl DirBatch {
    fn finished(&self) -> bool {
        self.next.load(Relaxed) >= self.ends.len()
    }
}

/// Walks `src` (a command-line operand when `top`; `fresh`: its destination directory
/// was made by this run): makes directories, queues files.
fn plan(
    sh: &Shared,
    tx: &mut Queue,
    src: &Path,
    dst: &Path,
    (top, fresh): (bool, bool),
    dirs: &mut Vec<(PathBuf, Metadata, bool)>,
) -> Result<()> {
    let o = &sh.opts;
    if src.as_os_str() == "-" && top {
        let meta = std::fs::metadata("/dev/stdin").context("cannot stat standard input")?;
        sh.planned_files.fetch_add(1, Relaxed);
        tx.push(Task {
            fresh: false,
            src: src.into(),
            dst: dst.into(),
            meta: Some(meta),
            regular: false,
        })?;
        return Ok(());
    }
    // Command-line operands are followed unless -a; inside a -r tree, symlinks stay links.
    let follow = top && !o.archive;
    let meta = if follow {
        std::fs::metadata(src)
    } else {
        std::fs::symlink_metadata(src)
    }
    .with_context(|| format!("cannot stat {}", q(src)))?;
    if meta.is_dir() {
        if !o.recursive {
            bail!("-r not specified; omitting directory {}", q(src));
        }
        // In a directory this run made, the name is free and is not the source: only
        // make it (the checks below, a stat and a path walk per directory, were most
        // of the walk's time on a tree of small directories).
        if fresh {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(dst)
                .with_context(|| format!("cannot create directory {}", q(dst)))?;
            return walk_dir(sh, tx, src, dst, meta, true, dirs);
        }
        if let Ok(d) = std::fs::metadata(dst)
            && same_file(&d, &meta)
        {
            bail!(
                "cannot copy a directory, {}, into itself, {}",
                q(src),
                q(dst)
            );
        }
        // The destination inside the source tree: the copy would never end.
        if let (Ok(s), Some(parent)) = (src.canonicalize(), dst.parent()) {
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            if let Ok(p) = parent.canonicalize()
                && p.starts_with(&s)
            {
                bail!(
                    "cannot copy a directory, {}, into itself, {}",
                    q(src),
                    q(dst)
                );
            }
        }
        let created = match std::fs::symlink_metadata(dst) {
            Ok(m) if m.is_dir() => false,
            Ok(_) => bail!(
                "cannot overwrite non-directory {} with directory {}",
                q(dst),
                q(src)
            ),
            Err(_) => {
                std::fs::DirBuilder::new()
                    .mode(0o700)
                    .create(dst)
                    .with_context(|| format!("cannot create directory {}", q(dst)))?;
                true
            }
        };
        return walk_dir(sh, tx, src, dst, meta, created, dirs);
    }
    sh.planned_files.fetch_add(1, Relaxed);
    if meta.is_file() {
        sh.planned_bytes.fetch_add(meta.len(), Relaxed);
    }
    tx.push(Task {
        fresh,
        src: src.into(),
        dst: dst.into(),
        meta: Some(meta),
        regular: false,
    })
}

/// The directory `src`, its copy `dst` made (`created`: by this run): queues its files,
/// then walks its subdirectories.
fn walk_dir(
    sh: &Shared,
    tx: &mut Queue,
    src: &Path,
    dst: &Path,
    meta: Metadata,
    created: bool,
    dirs: &mut Vec<(PathBuf, Metadata, bool)>,
) -> Result<()> {
    if sh.opts.verbose {
        say(sh, format!("{} -> {}", q(src), q(dst)));
    }
    dirs.push((dst.to_path_buf(), meta, created));
    // Names in order (each name read once: a sort key made per comparison
    // allocated a dozen names per entry).
    let mut entries: Vec<(OsString, Option<std::fs::FileType>)> = std::fs::read_dir(src)
        .with_context(|| format!("cannot read directory {}", q(src)))?
        .filter_map(|e| e.ok())
        .map(|e| (e.file_name(), e.file_type().ok()))
        .collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    // Anything but a directory goes to the workers unexamined, the directory's
    // files in batches of their own: two workers seldom create files in the same
    // directory at once (each create holds the directory's lock), unless it is
    // one large directory, whose batches they share.
    let mut subdirs = Vec::new();
    let pair = Arc::new((src.to_path_buf(), dst.to_path_buf()));
    let new_batch = || DirBatch {
        dirs: Arc::clone(&pair),
        fresh: created,
        names: Vec::new(),
        ends: Vec::new(),
        next: Default::default(),
    };
    let mut batch = new_batch();
    for (name, t) in entries {
        if crate::harness::interrupt::requested() {
            return Ok(());
        }
        if let Some(t) = t
            && !t.is_dir()
        {
            batch.names.extend_from_slice(name.as_bytes());
            batch.ends.push((batch.names.len(), t.is_file()));
            if batch.ends.len() >= Queue::BATCH {
                sh.planned_files.fetch_add(batch.ends.len() as u64, Relaxed);
                tx.send_dir(std::mem::replace(&mut batch, new_batch()))?;
            }
        } else {
            subdirs.push(name);
        }
    }
    if !batch.ends.is_empty() {
        sh.planned_files.fetch_add(batch.ends.len() as u64, Relaxed);
        tx.send_dir(batch)?;
    }
    for name in subdirs {
        if crate::harness::interrupt::requested() {
            return Ok(());
        }
        if let Err(err) = plan(
            sh,
            tx,
            &src.join(&name),
            &dst.join(&name),
            (false, created),
            dirs,
        ) {
            fail(sh, format!("{err:#}"));
        }
    }
    Ok(())
}

/// The progress display: on stderr, only when it is a terminal and the copy lasts more
/// than about a second: bytes and files done, the rate and (once the walk is over) the
/// time left. Ends when `done_files` is set to u64::MAX.
fn progress(sh: Arc<Shared>) -> Option<std::thread::JoinHandle<()>> {
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) || sh.opts.debug {
        return None;
    }
    Some(std::thread::spawn(move || {
        let start = std::time::Instant::now();
        let mut bar: Option<indicatif::ProgressBar> = None;
        loop {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let done = sh.done_files.load(Relaxed);
            if done == u64::MAX {
                if let Some(b) = bar {
                    b.finish_and_clear();
                }
                return;
            }
            if start.elapsed() < std::time::Duration::from_secs(1) {
                continue;
            }
            let b = bar.get_or_insert_with(|| {
                let b = indicatif::ProgressBar::new(0);
                if let Ok(s) = indicatif::ProgressStyle::with_template(
                    "cp [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} {msg} eta {eta}",
                ) {
                    b.set_style(s.progress_chars("=> "));
                }
                b
            });
            let total = sh.planned_bytes.load(Relaxed);
            b.set_length(total.max(1));
            b.set_position(data::MOVED.load(Relaxed).min(total));
            b.set_message(format!(
                "{done}/{}{} files",
                sh.planned_files.load(Relaxed),
                if sh.planned.load(Relaxed) { "" } else { "+" }
            ));
        }
    }))
}

/// Whether `dst` may be replaced; Ok(false): keep it (-n). Refuses the source itself.
fn may_replace(sh: &Shared, job: &Job) -> Result<bool> {
    if job.fresh {
        return Ok(true);
    }
    match std::fs::symlink_metadata(&job.dst) {
        Err(_) => Ok(true),
        Ok(d) => {
            if let Ok(dt) = std::fs::metadata(&job.dst)
                && same_file(&dt, &job.meta)
                && !(sh.opts.archive && job.meta.file_type().is_symlink())
            {
                bail!("{} and {} are the same file", q(&job.src), q(&job.dst));
            }
            if d.is_dir() {
                bail!(
                    "cannot overwrite directory {} with non-directory",
                    q(&job.dst)
                );
            }
            Ok(!sh.opts.no_clobber)
        }
    }
}

/// A file named in a directory: the *at calls' directories and its name (one path
/// component looked up per call, not the whole path from the working directory).
#[derive(Clone, Copy)]
struct At<'a> {
    src: rustix::fd::BorrowedFd<'a>,
    dst: rustix::fd::BorrowedFd<'a>,
    name: &'a std::ffi::OsStr,
}

/// `dir/name`, allocated once (`Path::join` copies `dir`, then grows it for the name:
/// a realloc per path, 3% of a copy of empty files).
fn joined(dir: &Path, name: &std::ffi::OsStr) -> PathBuf {
    let mut p = PathBuf::with_capacity(dir.as_os_str().len() + 1 + name.len());
    p.push(dir);
    p.push(name);
    p
}

/// openat(2) of `name` in `dir`; an error says "cannot `verb` `shown`: why" in one line.
fn open_at(
    (dir, name): (rustix::fd::BorrowedFd, &Path),
    flags: OFlags,
    mode: Mode,
    (verb, shown): (&str, &Path),
) -> Result<OwnedFd> {
    rustix::fs::openat(dir, name, flags, mode).map_err(|e| {
        anyhow!(
            "cannot {verb} {}: {}",
            q(shown),
            crate::error::plain(&e.into())
        )
    })
}

/// Copies the entries of a directory batch that no other worker has taken; returns
/// how many it copied. The directories are opened once for the batch; where one cannot
/// be, whole paths are used.
fn copy_dir_batch(sh: &Shared, b: Arc<DirBatch>, bytes: &mut u64) -> usize {
    if b.finished() {
        return 0;
    }
    let (src, dst) = (&b.dirs.0, &b.dirs.1);
    let open = |p: &Path| rustix::fs::open(p, os::dir_handle_flags(), Mode::empty()).ok();
    let fds = open(src).zip(open(dst));
    let mut copied = 0;
    loop {
        let i = b.next.fetch_add(1, Relaxed);
        let Some(&(end, regular)) = b.ends.get(i) else {
            break;
        };
        let start = if i == 0 { 0 } else { b.ends[i - 1].0 };
        let name = std::ffi::OsStr::from_bytes(&b.names[start..end]);
        copied += 1;
        let task = Task {
            fresh: b.fresh,
            src: joined(src, name),
            dst: joined(dst, name),
            meta: None,
            regular,
        };
        let at = fds.as_ref().map(|(s, d)| At {
            src: rustix::fd::AsFd::as_fd(s),
            dst: rustix::fd::AsFd::as_fd(d),
            name,
        });
        if let Err(e) = copy_task(sh, task, at, bytes) {
            fail(sh, format!("{e:#}"));
        }
    }
    copied
}

/// Reads a queued file's metadata (a regular file's from the descriptor it is then
/// copied from), then copies it.
fn copy_task(sh: &Shared, t: Task, at: Option<At>, bytes: &mut u64) -> Result<()> {
    let mut opened = None;
    let meta = match t.meta {
        Some(m) => m,
        None if t.regular => {
            // O_NOFOLLOW: a symlink put in its place since the walk is not followed.
            let (dir, name) = match at {
                Some(a) => (a.src, Path::new(a.name)),
                None => (rustix::fs::CWD, t.src.as_path()),
            };
            let f = std::fs::File::from(open_at(
                (dir, name),
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::CLOEXEC,
                Mode::empty(),
                ("open", &t.src),
            )?);
            let m = f.metadata()?;
            if m.is_file() {
                *bytes += m.len();
                opened = Some(f);
            }
            m
        }
        None => std::fs::symlink_metadata(&t.src)
            .with_context(|| format!("cannot stat {}", q(&t.src)))?,
    };
    let job = Job {
        fresh: t.fresh,
        src: t.src,
        dst: t.dst,
        meta,
    };
    copy_one(sh, &job, opened, at)
}

/// What [`copy_one`] made at the destination.
enum Made {
    Symlink,
    HardLink,
    Special,
    /// A file with the source's bytes, and how they moved.
    Data(data::Used),
}

fn copy_one(sh: &Shared, job: &Job, opened: Option<std::fs::File>, at: Option<At>) -> Result<()> {
    crate::harness::interrupt::check()?;
    if !may_replace(sh, job)? {
        if sh.opts.debug || sh.opts.verbose {
            say(
                sh,
                format!(
                    "{} -> {}: skipped, it exists (-n)",
                    q(&job.src),
                    q(&job.dst)
                ),
            );
        }
        return Ok(());
    }
    let o = &sh.opts;
    let ft = job.meta.file_type();
    // In a directory this run made, nothing else can hold the name: the file is made
    // under its final name (still O_EXCL) and removed on any error or Ctrl-C, which
    // saves a rename per file; elsewhere it is written under a temporary name beside
    // the destination and renamed over it at the end.
    let direct = job.fresh;
    let mut temp = Temp {
        path: if direct {
            std::borrow::Cow::Borrowed(job.dst.as_path())
        } else {
            let seq = TEMP_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            std::borrow::Cow::Owned(temp_beside(&job.dst, seq))
        },
        keep: false,
    };
    let made;
    if ft.is_symlink() {
        let target = std::fs::read_link(&job.src)
            .with_context(|| format!("cannot read the symlink {}", q(&job.src)))?;
        std::os::unix::fs::symlink(&target, &temp.path)
            .with_context(|| format!("cannot create the symlink {}", q(&job.dst)))?;
        made = Made::Symlink;
    } else if o.archive && job.meta.nlink() > 1 && !ft.is_dir() && {
        let mut links = sh.links.lock().map_err(|_| anyhow!("lock"))?;
        match links.get(&(job.meta.dev(), job.meta.ino())) {
            Some(first) => {
                std::fs::hard_link(first, &temp.path)?;
                true
            }
            None => {
                links.insert((job.meta.dev(), job.meta.ino()), job.dst.clone());
                false
            }
        }
    } {
        made = Made::HardLink;
    } else if o.archive
        && (ft.is_fifo() || ft.is_block_device() || ft.is_char_device() || ft.is_socket())
    {
        if !rustix::process::geteuid().is_root() {
            bail!(
                "special file {} not copied: making it needs root",
                q(&job.src)
            );
        }
        let kind = if ft.is_fifo() {
            "fifo"
        } else if ft.is_block_device() {
            "block"
        } else if ft.is_char_device() {
            "char"
        } else {
            "socket"
        };
        os::make_special(&temp.path, kind, job.meta.rdev())
            .with_context(|| format!("cannot create the special file {}", q(&job.dst)))?;
        made = Made::Special;
    } else {
        made = Made::Data(
            copy_data(sh, job, opened, &temp.path, at)
                .with_context(|| format!("cannot copy {} to {}", q(&job.src), q(&job.dst)))?,
        );
    }
    if matches!(made, Made::Symlink | Made::Special) {
        attributes(sh, job, &temp.path)
            .with_context(|| format!("setting the attributes of {}", q(&job.dst)))?;
    }
    if !direct {
        std::fs::rename(&temp.path, &job.dst)
            .with_context(|| format!("renaming into {}", q(&job.dst)))?;
    }
    temp.keep = true;
    if o.debug {
        let what = match made {
            Made::Symlink => "symlink".into(),
            Made::HardLink => "hard link".into(),
            Made::Special => "special file".into(),
            Made::Data(used) => format!(
                "method: {}, copy offload: {}, reflink: {}, sparse detection: {}",
                used.method, used.offload, used.reflink, used.sparse
            ),
        };
        say(sh, format!("{} -> {}: {what}", q(&job.src), q(&job.dst)));
    } else if o.verbose {
        say(sh, format!("{} -> {}", q(&job.src), q(&job.dst)));
    }
    Ok(())
}

/// The bytes of a regular file, a pipe or another readable source into a new file at
/// `temp`; returns the --debug description.
fn copy_data(
    sh: &Shared,
    job: &Job,
    opened: Option<std::fs::File>,
    temp: &Path,
    at: Option<At>,
) -> Result<data::Used> {
    let stdin = job.src.as_os_str() == "-";
    let opened_fd = opened.is_some();
    let src: OwnedFd = if let Some(f) = opened {
        OwnedFd::from(f)
    } else if stdin {
        rustix::io::dup(rustix::stdio::stdin())?
    } else {
        open_at(
            (rustix::fs::CWD, &job.src),
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY,
            Mode::empty(),
            ("open", &job.src),
        )?
    };
    // What the source is, from its descriptor: the walk's view when it came from the
    // descriptor already (one fstat saved per file), else a fresh fstat.
    let fresh_fd = job.meta.file_type().is_file() && !stdin && opened_fd;
    let before = if fresh_fd {
        Stat::of(&job.meta)
    } else {
        let st = rustix::fs::fstat(&src)?;
        Stat {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: st.st_size as u64,
            blocks: st.st_blocks as u64,
            mode: st.st_mode as u32,
        }
    };
    if !stdin && (before.dev != job.meta.dev() || before.ino != job.meta.ino()) {
        bail!("{} was replaced while being copied", q(&job.src));
    }
    // In a directory this run made the file is made under its own name, from the
    // directory's descriptor; a temporary name, by its whole path.
    let (dir, name) = match at {
        Some(a) if job.fresh => (a.dst, Path::new(a.name)),
        _ => (rustix::fs::CWD, temp),
    };
    let mut dst = open_at(
        (dir, name),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::from_raw_mode(create_mode(sh, job) as _),
        ("create", temp),
    )?;
    let kind = rustix::fs::FileType::from_raw_mode(before.mode as _);
    let used = if kind == rustix::fs::FileType::Fifo {
        data::from_pipe(&src, &dst, sh.pipe_capacity, &sh.path)?
    } else {
        data::regular(
            &src,
            &mut dst,
            (&job.src, temp),
            before.size,
            before.blocks,
            &sh.path,
        )
        .map_err(|e| {
            if let Some(s) = e.downcast_ref::<crate::sys::calls::SysError>()
                && s.is_no_space()
            {
                return anyhow!("{}: {}", q(&job.dst), s.short());
            }
            e
        })?
    };
    // A regular source must come out whole: a short copy reported as success is a
    // failure here (the size check GNU cp makes).
    if kind == rustix::fs::FileType::RegularFile {
        // Counted as written, or (reflink, holes) as the file now says.
        let got = if matches!(used.method, "reflink") || used.sparse.contains("holes kept") {
            rustix::fs::fstat(&dst)?.st_size
        } else {
            used.bytes as i64
        };
        if before.size > 0 && got as u64 != before.size {
            bail!(
                "short copy: {} of {} bytes ({}): not renamed into place",
                got,
                before.size,
                used.method
            );
        }
    }
    let cloned = used.method == "reflink";
    fd_attributes(sh, job, (&src, &dst), cloned)
        .with_context(|| format!("setting the attributes of {}", q(&job.dst)))?;
    Ok(used)
}

/// The mode a new file gets: the source's (with -p: setuid/setgid/sticky too), else
/// masked by the umask; standard input's as a shell redirection makes it.
fn new_mode(sh: &Shared, job: &Job) -> u32 {
    if job.src.as_os_str() == "-" {
        0o666 & !sh.umask
    } else if sh.opts.preserve.mode {
        job.meta.mode() & 0o7777
    } else {
        job.meta.mode() & 0o777 & !sh.umask
    }
}

/// The mode a new file is created with: its final permissions (the kernel applies the
/// umask), except that, as GNU cp does, group and others get nothing while its owner
/// may still change (ownership preserved), so that no one reads it under the wrong
/// owner. In a directory this run made, which stays 0700 until its contents are
/// written, no one else can reach the file anyway: it gets its final permissions at
/// once, and most files then need no chmod. setuid, setgid and sticky bits come only
/// with the final fchmod, after any chown.
fn create_mode(sh: &Shared, job: &Job) -> u32 {
    let omitted = if sh.opts.preserve.ownership && !job.fresh {
        0o077
    } else {
        0
    };
    new_mode(sh, job) & 0o777 & !omitted
}

/// [`attributes`] on the open descriptors of a copied file, in the same order. Like
/// GNU cp, it asks the new file what it already is (one fstat) and skips a chown to
/// the owner it already has and a chmod to the mode it already has: each would be a
/// journalled inode update on ext4.
fn fd_attributes(
    sh: &Shared,
    job: &Job,
    (src, dst): (&OwnedFd, &OwnedFd),
    cloned: bool,
) -> Result<()> {
    let p = sh.opts.preserve;
    let m = &job.meta;
    if p.timestamps {
        rustix::fs::futimens(dst, &timestamps(m))?;
    }
    // Without -p the file was created with its final mode: nothing to compare (a
    // clone made by path, as on macOS, has the source's).
    let now = if p.mode || p.ownership || cloned {
        Some(rustix::fs::fstat(dst)?)
    } else {
        None
    };
    let (mut chowned, mut lost_owner) = (false, false);
    if p.ownership
        && let Some(now) = &now
        && (now.st_uid, now.st_gid) != (m.uid(), m.gid())
    {
        match rustix::fs::fchown(
            dst,
            Some(rustix::fs::Uid::from_raw(m.uid())),
            Some(rustix::fs::Gid::from_raw(m.gid())),
        ) {
            Ok(()) => chowned = true,
            // Not permitted (not root): the copy stays ours, as with GNU cp, and so
            // loses setuid and setgid, which would otherwise grant our identity.
            Err(rustix::io::Errno::PERM) => lost_owner = true,
            Err(e) => bail!("preserving ownership: {}", crate::error::plain(&e.into())),
        }
    }
    if p.xattr
        && let Err(e) = os::copy_xattrs(src, dst)
        && !e.is_missing()
    {
        return Err(e.into());
    }
    let mut mode = new_mode(sh, job);
    if lost_owner {
        mode &= !0o6000;
    }
    #[allow(clippy::unnecessary_cast)] // st_mode is a u16 on macOS
    let differs = match &now {
        Some(now) => now.st_mode as u32 & 0o7777 != mode,
        None => false,
    };
    if chowned || differs {
        rustix::fs::fchmod(dst, Mode::from_raw_mode(mode as _))?;
    }
    Ok(())
}

/// Sets the new file's attributes in cp's order: timestamps, owner, xattrs, then mode
/// (so a chown cannot clear setuid/setgid bits set before it).
fn attributes(sh: &Shared, job: &Job, path: &Path) -> Result<()> {
    let p = sh.opts.preserve;
    let m = &job.meta;
    if job.meta.file_type().is_symlink() {
        times_and_owner(p, path, m, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)?;
        return Ok(());
    }
    let special = !job.meta.is_file();
    if p.timestamps {
        rustix::fs::utimensat(
            rustix::fs::CWD,
            path,
            &timestamps(m),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )?;
    }
    if p.ownership {
        match rustix::fs::chownat(
            rustix::fs::CWD,
            path,
            Some(rustix::fs::Uid::from_raw(m.uid())),
            Some(rustix::fs::Gid::from_raw(m.gid())),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        ) {
            Ok(()) | Err(rustix::io::Errno::PERM) => {}
            Err(e) => {
                return Err(anyhow!(
                    "preserving ownership: {}",
                    crate::error::plain(&e.into())
                ));
            }
        }
    }
    if p.xattr && !special {
        let src = rustix::fs::open(&job.src, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
        let dst = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        )?;
        if let Err(e) = os::copy_xattrs(&src, &dst)
            && !e.is_missing()
        {
            return Err(e.into());
        }
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(new_mode(sh, job)))?;
    Ok(())
}

/// The source's timestamps (with -p) and owner (with --preserve=ownership; refused
/// quietly when not permitted, as cp does) on `path`, by path with `flags`.
fn times_and_owner(
    p: Preserve,
    path: &Path,
    m: &Metadata,
    flags: rustix::fs::AtFlags,
) -> Result<()> {
    if p.timestamps {
        rustix::fs::utimensat(rustix::fs::CWD, path, &timestamps(m), flags)?;
    }
    if p.ownership {
        let _ = rustix::fs::chownat(
            rustix::fs::CWD,
            path,
            Some(rustix::fs::Uid::from_raw(m.uid())),
            Some(rustix::fs::Gid::from_raw(m.gid())),
            flags,
        );
    }
    Ok(())
}

fn timestamps(m: &Metadata) -> rustix::fs::Timestamps {
    let t = |s: i64, ns: i64| rustix::fs::Timespec {
        tv_sec: s,
        tv_nsec: ns as _,
    };
    rustix::fs::Timestamps {
        last_access: t(m.atime(), m.atime_nsec()),
        last_modification: t(m.mtime(), m.mtime_nsec()),
    }
}

/// A directory's attributes, once its contents are in: timestamps (with -p), then mode
/// (the source's with -p, else masked by the umask; an existing directory keeps its
/// own unless -p).
fn dir_attributes(sh: &Shared, dst: &Path, m: &Metadata, created: bool) -> Result<()> {
    let p = sh.opts.preserve;
    times_and_owner(p, dst, m, rustix::fs::AtFlags::empty())?;
    if p.mode || created {
        let mode = if p.mode {
            m.mode() & 0o7777
        } else {
            m.mode() & 0o777 & !sh.umask
        };
        std::fs::set_permissions(dst, std::fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

/// `--preserve=LIST` parsed (mode, ownership, timestamps, xattr, all).
pub fn parse_preserve(list: &str) -> Result<Preserve, String> {
    let mut p = Preserve::default();
    for w in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        match w {
            "mode" => p.mode = true,
            "ownership" => p.ownership = true,
            "timestamps" => p.timestamps = true,
            "xattr" => p.xattr = true,
            "all" => {
                p = Preserve {
                    mode: true,
                    ownership: true,
                    timestamps: true,
                    xattr: true,
                }
            }
            other => {
                return Err(format!(
                    "unknown attribute '{}' (mode, ownership, timestamps, xattr, all)",
                    crate::units::escape(other)
                ));
            }
        }
    }
    Ok(p)
}
