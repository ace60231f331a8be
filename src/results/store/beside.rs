//! Digests kept beside the store in a plain file (`<store>-digests`), for a reader that
//! needs one small digest and nothing else (a trace of a short command): reading one
//! takes two stats and one small file, where opening the database and listing its runs
//! takes about 0.5 ms of CPU.
//!
//! An entry is trusted only while the database and its WAL look as they did before
//! the digest was read from the database, and again after it (the connection closed):
//! a commit in WAL mode appends frames to the WAL (its size grows) or restarts it (its
//! header's salts change); in rollback mode it bumps the database header's change
//! counter. Sizes and modification times are compared too. A change made between the
//! two looks keeps the entry from being written at all.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A file kept beside the store may be read up to this size (an entry is a few KB).
const MOST: u64 = 1 << 20;

/// How one of the store's files looks: (device, inode, size, modification time in
/// seconds and nanoseconds), and its header in hex (the database's first 100 bytes,
/// the WAL's first 32). Change times are left out: SQLite, run as root, chowns the WAL
/// to the database's owner at every open, which changes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Look([i64; 5], String);

impl Look {
    fn of(path: &Path, header: u64) -> Option<Look> {
        use std::os::unix::fs::MetadataExt;
        let f = std::fs::File::open(path).ok()?;
        let m = f.metadata().ok()?;
        let mut head = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(&f, header), &mut head).ok()?;
        let whole = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        Some(Look(
            [
                whole(m.dev()),
                whole(m.ino()),
                whole(m.size()),
                m.mtime(),
                m.mtime_nsec(),
            ],
            head.iter().map(|b| format!("{b:02x}")).collect(),
        ))
    }
}

/// How the store's files look: the database, then its WAL (None where absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp([Option<Look>; 2]);

impl Stamp {
    /// The stamp of the store at `store` now.
    pub fn of(store: &Path) -> Stamp {
        Stamp([Look::of(store, 100), Look::of(&sibling(store, "-wal"), 32)])
    }

    /// A store is there to stamp.
    fn exists(&self) -> bool {
        self.0[0].is_some()
    }
}

/// One digest kept: the store's stamp when it held it, what it was derived from, and
/// its body.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    stamp: Stamp,
    source: String,
    body: String,
}

/// `store` with `suffix` appended to its file name (`results.db-wal`).
fn sibling(store: &Path, suffix: &str) -> PathBuf {
    let mut name = store.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// The file the digests are kept in.
#[cfg(test)]
fn file(store: &Path) -> PathBuf {
    sibling(store, "-digests")
}

fn entries(store: &Path) -> BTreeMap<String, Entry> {
    read_file(store, "-digests")
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// The text of the file kept beside `store` under `suffix` (at most [`MOST`] bytes),
/// or None when there is none to read.
pub fn read_file(store: &Path, suffix: &str) -> Option<String> {
    let f = std::fs::File::open(sibling(store, suffix)).ok()?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(f, MOST), &mut text).ok()?;
    Some(text)
}

/// Writes `text` to the file kept beside `store` under `suffix`, whole or not at all
/// (written aside, the old file removed, the new one renamed into its place: a reader
/// finds the old, none, or the new), and only where the store itself is there:
/// nothing is created in a directory ioprobe has not made its store in. Nothing is
/// said when it cannot be written: the next reader only takes the longer way.
pub fn write_file(store: &Path, suffix: &str, text: &str) {
    if !store.is_file() {
        return;
    }
    let aside = sibling(store, &format!("{suffix}.{}.tmp", std::process::id()));
    let path = sibling(store, suffix);
    // The old file goes first: ext4 flushes a file renamed over another at once (its
    // `auto_da_alloc`, about 0.3 ms here); a reader meanwhile finds none.
    let _ = std::fs::remove_file(&path);
    if std::fs::write(&aside, text).is_err() || std::fs::rename(&aside, &path).is_err() {
        let _ = std::fs::remove_file(&aside);
    }
}

/// Reads, changes and writes the file kept beside `store` under `suffix` while holding
/// an exclusive lock (flock(2) on `<store><suffix>.lock`), so that writers at once never
/// lose each other's changes (each read the file, added its own entry and wrote it
/// back over the others'): `change` gets the text as it is now (None where there is
/// none) and returns the new text, or None to leave the file as it is. Only where the
/// store itself is there; where the lock cannot be had, the change is made unlocked.
pub fn update_file(
    store: &Path,
    suffix: &str,
    change: impl FnOnce(Option<String>) -> Option<String>,
) {
    if !store.is_file() {
        return;
    }
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(sibling(store, &format!("{suffix}.lock")));
    let held = lock
        .ok()
        .filter(|f| rustix::fs::flock(f, rustix::fs::FlockOperation::LockExclusive).is_ok());
    if let Some(text) = change(read_file(store, suffix)) {
        write_file(store, suffix, &text);
    }
    drop(held); // closing the lock file releases the lock
}

/// The digest `name` kept beside `store` while it had `stamp`: (source, body).
pub(super) fn read(store: &Path, name: &str, stamp: &Stamp) -> Option<(String, String)> {
    if !stamp.exists() {
        return None;
    }
    let e = entries(store).remove(name)?;
    (e.stamp == *stamp).then_some((e.source, e.body))
}

/// Keeps `body` (derived from `source`) as the digest `name` of `store` as stamped,
/// when the store still has that stamp. Nothing is said when it cannot be written:
/// the next reader only takes the longer way.
pub(super) fn keep(store: &Path, name: &str, stamp: &Stamp, source: &str, body: &str) {
    if !stamp.exists() || Stamp::of(store) != *stamp {
        return;
    }
    let mut all = entries(store);
    all.insert(
        name.to_string(),
        Entry {
            stamp: stamp.clone(),
            source: source.to_string(),
            body: body.to_string(),
        },
    );
    if let Ok(text) = serde_json::to_string(&all) {
        write_file(store, "-digests", &text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_kept_beside_is_read_only_while_the_store_is_as_stamped() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("s.db");
        assert!(!Stamp::of(&db).exists());
        keep(&db, "d", &Stamp::of(&db), "1:1", "body");
        assert!(!file(&db).exists(), "no store, nothing kept");
        std::fs::write(&db, "one").unwrap();
        let stamp = Stamp::of(&db);
        keep(&db, "d", &stamp, "1:1", "body");
        keep(&db, "e", &stamp, "1:2", "other");
        assert_eq!(
            read(&db, "d", &stamp),
            Some(("1:1".to_string(), "body".to_string()))
        );
        assert_eq!(
            read(&db, "e", &stamp).map(|e| e.1).as_deref(),
            Some("other")
        );
        assert_eq!(read(&db, "f", &stamp), None);
        // A write to the WAL (a commit) or to the database makes the entry stale.
        std::fs::write(sibling(&db, "-wal"), "frames").unwrap();
        let now = Stamp::of(&db);
        assert_ne!(now, stamp);
        assert_eq!(read(&db, "d", &now), None);
        // A restarted WAL (same size, same time, new salts in its header) too.
        let wal = sibling(&db, "-wal");
        let when = std::fs::metadata(&wal).unwrap().modified().unwrap();
        keep(&db, "d", &now, "1:1", "body");
        std::fs::write(&wal, "FRAMES").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&wal)
            .unwrap()
            .set_modified(when)
            .unwrap();
        assert_eq!(read(&db, "d", &Stamp::of(&db)), None);
        // A stamp the store no longer has is not kept under.
        keep(&db, "d", &stamp, "1:1", "late");
        assert_eq!(read(&db, "d", &now).map(|e| e.1).as_deref(), Some("body"));
        assert_eq!(read(&db, "d", &stamp), None);
        std::fs::write(&db, "two, longer").unwrap();
        assert_eq!(read(&db, "d", &Stamp::of(&db)), None);
        // An unreadable file is no digest.
        std::fs::write(file(&db), "{not json").unwrap();
        assert_eq!(read(&db, "d", &Stamp::of(&db)), None);
    }

    /// 16 writers at once, each adding its own key to the set kept beside a store, 50
    /// rounds: how many rounds lost a key (`locked`: through [`update_file`]; else
    /// read, add and write as `trace` did, which loses keys, and here, the threads
    /// sharing one process's temporary name, even garbles the file).
    fn writers_at_once(locked: bool) -> usize {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("s.db");
        std::fs::write(&store, "").unwrap();
        let add = |text: Option<String>, i: usize| -> String {
            let mut keys: std::collections::BTreeSet<usize> = text
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default();
            keys.insert(i);
            serde_json::to_string(&keys).unwrap()
        };
        let mut short = 0;
        for _ in 0..50 {
            let _ = std::fs::remove_file(sibling(&store, "-set"));
            std::thread::scope(|s| {
                for i in 0..16 {
                    let (store, add) = (&store, &add);
                    s.spawn(move || {
                        if locked {
                            update_file(store, "-set", |t| Some(add(t, i)));
                        } else {
                            let text = add(read_file(store, "-set"), i);
                            write_file(store, "-set", &text);
                        }
                    });
                }
            });
            let keys: Vec<usize> =
                serde_json::from_str(&read_file(&store, "-set").unwrap()).unwrap();
            short += usize::from(keys.len() != 16);
        }
        short
    }

    #[test]
    fn writers_at_once_under_the_lock_lose_nothing() {
        assert_eq!(writers_at_once(true), 0, "rounds that lost a writer's key");
    }
}
