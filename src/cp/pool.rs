//! The pool of workers a directory operand's files go to: the walk sends each
//! directory's names as one batch (no path and no allocation per file on its side), a
//! worker opens the batch's two directories once and copies each entry by name; once
//! the walk is over, unfinished batches are sent again so idle workers help.

use super::file::{self, At, Item};
use super::{Shared, fail, q};
use crate::sys::os;
use anyhow::{Context, Result, anyhow, bail};
use rustix::fs::{Mode, OFlags};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, mpsc};

/// The workers of one directory operand and the queue to them.
pub(super) struct Pool {
    pub queue: Queue,
    workers: Vec<std::thread::JoinHandle<()>>,
}

impl Pool {
    /// Starts `-j` workers (none with `-j 1` or under `ulimit -v`: the walk's thread
    /// then copies each batch as it is made).
    pub fn start(sh: &Arc<Shared>) -> Pool {
        // Files go to the workers in batches: one channel operation per batch, not per file.
        // Room for 1,024 batches (a directory each, at most 256 names): with 64, the walk
        // filled the channel at once and then slept and woke once per batch a worker took,
        // 250 context switches for 10,000 files in 100 directories (cpz: 14); now 15.
        let (tx, rx) = mpsc::sync_channel::<Batch>(1024);
        // -j 1, or a finite address-space limit (`ulimit -v`: each thread's stack and
        // malloc arena reserve tens of MiB), copies on this thread as the walk goes.
        let inline = sh.opts.jobs <= 1 || crate::sys::process::address_space_limited();
        let queue = Queue {
            tx,
            sent: Vec::new(),
            inline: inline.then(|| Arc::clone(sh)),
        };
        let rx = Arc::new(Mutex::new(rx));
        let workers = (0..if inline { 0 } else { sh.opts.jobs })
            .map(|_| {
                let rx = Arc::clone(&rx);
                let sh = Arc::clone(sh);
                std::thread::spawn(move || worker(&sh, &rx))
            })
            .collect();
        Pool { queue, workers }
    }

    /// Once the walk is over: unfinished batches sent again, then every worker joined.
    pub fn finish(mut self) {
        if !crate::interrupt::requested() {
            let _ = self.queue.send_again();
        }
        drop(self.queue);
        for t in self.workers {
            let _ = t.join();
        }
    }
}

/// A worker: takes batches until the walk is over and the channel empty.
fn worker(sh: &Shared, rx: &Mutex<mpsc::Receiver<Batch>>) {
    // A worker opens and closes every descriptor it uses: in a table of its own, two
    // workers' opens do not contend for one lock. Where unshare is refused (a
    // container's seccomp filter), the shared table only costs time.
    let _ = os::own_fd_table();
    loop {
        let batch = match rx.lock() {
            Ok(r) => r.recv(),
            Err(_) => return,
        };
        let Ok(Batch::Dir(b)) = batch else { return };
        let n = copy_dir_batch(sh, b);
        // The shared counters once a batch (or a large file), not per file: two
        // workers updating them per file keep passing their cache line around.
        super::data::flush_moved();
        sh.counters.done_files.fetch_add(n, Relaxed);
    }
}

/// Files for a worker to copy.
enum Batch {
    /// Entries of one directory.
    Dir(Arc<DirBatch>),
}

/// Up to [`Queue::BATCH`] entries of one directory, as the walk read them: no path and
/// no allocation per file on the walk's side (paths made by one thread and freed by
/// another, and moved about in large tasks, were most of a small-file copy's user time).
pub(super) struct DirBatch {
    /// The source directory and its copy.
    pub dirs: Arc<(PathBuf, PathBuf)>,
    /// The copy was made by this run.
    pub fresh: bool,
    /// The names end to end.
    pub names: Vec<u8>,
    /// Per entry: where its name ends in `names`, and whether its directory entry says
    /// regular file.
    pub ends: Vec<(usize, bool)>,
    /// The next entry to take: a batch is sent again once the walk is over, so that a
    /// worker with nothing left helps with one still in progress (a directory's few
    /// large files would otherwise be copied by one worker while the others wait).
    pub next: std::sync::atomic::AtomicUsize,
}

/// Files on their way to the workers.
pub(super) struct Queue {
    tx: mpsc::SyncSender<Batch>,
    /// Directory batches sent and perhaps not finished, to send again at the end.
    sent: Vec<Arc<DirBatch>>,
    /// No workers: each batch is copied when it is made.
    inline: Option<Arc<Shared>>,
}

impl Queue {
    /// Most files per batch: a typical directory in one batch, a large one shared out.
    pub const BATCH: usize = 256;

    /// No workers: batches are copied on the walk's thread as they are made.
    pub fn is_inline(&self) -> bool {
        self.inline.is_some()
    }

    fn send(&self, b: Batch) -> Result<()> {
        self.tx.send(b).map_err(|_| anyhow!("workers stopped"))
    }

    pub fn send_dir(&mut self, b: DirBatch) -> Result<()> {
        let b = Arc::new(b);
        if let Some(sh) = &self.inline {
            let n = copy_dir_batch(sh, b);
            super::data::flush_moved();
            sh.counters.done_files.fetch_add(n, Relaxed);
            return Ok(());
        }
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

/// Copies the entries of a directory batch that no other worker has taken; returns
/// how many it copied. The directories are opened once for the batch; where one cannot
/// be, whole paths are used.
fn copy_dir_batch(sh: &Shared, b: Arc<DirBatch>) -> u64 {
    if b.finished() {
        return 0;
    }
    let (src, dst) = (&b.dirs.0, &b.dirs.1);
    let open = |p: &Path| {
        let p = if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        };
        rustix::fs::open(p, os::dir_handle_flags(), Mode::empty()).ok()
    };
    let fds = open(src).zip(open(dst));
    let (mut copied, mut published, mut bytes) = (0, 0, 0);
    loop {
        let i = b.next.fetch_add(1, Relaxed);
        let Some(&(end, regular)) = b.ends.get(i) else {
            break;
        };
        let start = if i == 0 { 0 } else { b.ends[i - 1].0 };
        let name = OsStr::from_bytes(&b.names[start..end]);
        copied += 1;
        let at = fds.as_ref().map(|(s, d)| At {
            src: rustix::fd::AsFd::as_fd(s),
            dst: rustix::fd::AsFd::as_fd(d),
            name,
        });
        let (s, d) = (joined(src, name), joined(dst, name));
        let before = bytes;
        if let Err(e) = copy_entry(sh, &s, &d, b.fresh, regular, at, &mut bytes) {
            fail(sh, format!("{e:#}"));
        }
        // A large file is counted done at once (its copy outlasts a counter update
        // by far), so the display moves within a batch of large files.
        if bytes - before >= LARGE {
            super::data::flush_moved();
            sh.counters
                .done_files
                .fetch_add(copied - published, Relaxed);
            published = copied;
        }
    }
    copied - published
}

/// A file this large is counted done on its own, not with its batch.
const LARGE: u64 = 1 << 20;

/// Reads a queued file's metadata (a regular file's from the descriptor it is then
/// copied from), then copies it.
fn copy_entry(
    sh: &Shared,
    src: &Path,
    dst: &Path,
    fresh: bool,
    regular: bool,
    at: Option<At>,
    bytes: &mut u64,
) -> Result<()> {
    let mut opened = None;
    let follow = sh.follows(false);
    let meta = if regular && sh.opts.link == super::LinkMode::Copy && !sh.opts.attributes_only {
        // O_NOFOLLOW: a symlink put in its place since the walk is not followed.
        let (dir, name) = match at {
            Some(a) => (a.src, Path::new(a.name)),
            None => (rustix::fs::CWD, src),
        };
        let f = std::fs::File::from(
            rustix::fs::openat(
                dir,
                name,
                OFlags::RDONLY
                    | OFlags::NOCTTY
                    | OFlags::CLOEXEC
                    | if follow {
                        OFlags::empty()
                    } else {
                        OFlags::NOFOLLOW
                    },
                Mode::empty(),
            )
            .map_err(|e| {
                anyhow!(
                    "cannot open {} for reading: {}",
                    q(src),
                    crate::error::plain(&e.into())
                )
            })?,
        );
        let m = f.metadata()?;
        if m.is_file() {
            *bytes += m.len();
            opened = Some(f);
        }
        m
    } else if follow {
        std::fs::metadata(src).with_context(|| format!("cannot stat {}", q(src)))?
    } else {
        std::fs::symlink_metadata(src).with_context(|| format!("cannot stat {}", q(src)))?
    };
    if meta.is_dir() {
        bail!("{} became a directory while being copied", q(src));
    }
    file::copy_nondir(
        sh,
        Item {
            src,
            dst,
            top: false,
            fresh,
            at,
        },
        &meta,
        opened,
    )
}

/// `dir/name`, allocated once (`Path::join` copies `dir`, then grows it for the name:
/// a realloc per path, 3% of a copy of empty files).
fn joined(dir: &Path, name: &OsStr) -> PathBuf {
    let mut p = PathBuf::with_capacity(dir.as_os_str().len() + 1 + name.len());
    p.push(dir);
    p.push(name);
    p
}
