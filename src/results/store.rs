//! The results store: every run saved in SQLite (`$XDG_DATA_HOME/ioprobe/results.db`
//! unless `--store` says otherwise) with its environment and raw samples.
//!
//! The schema is versioned with `PRAGMA user_version` and migrated forward inside an
//! immediate transaction, so two processes opening a new store at once agree. Each run
//! is written in one transaction; WAL mode and a busy timeout let two ioprobe processes
//! save at the same time. A file that is not an SQLite database, or one written by a
//! newer ioprobe, is refused before anything is written to it.

use super::Run;
use crate::error::UsageError;
use crate::names::Named;
use anyhow::{Context, Result, anyhow, bail};
use rusqlite::{Connection, OpenFlags, TransactionBehavior, params};
use std::path::{Path, PathBuf};
use std::time::Duration;

mod beside;
pub use beside::{
    Stamp, read_file as read_beside, update_file as update_beside, write_file as write_beside,
};

/// Schema version this build writes and reads.
pub const STORE_SCHEMA: i64 = 5;

const MIGRATIONS: [&str; 5] = [
    // 0 → 1: runs with their full JSON document; measurements and raw samples for queries.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        started_at TEXT NOT NULL,
        host TEXT NOT NULL,
        kernel TEXT NOT NULL,
        filesystem TEXT NOT NULL,
        command TEXT NOT NULL,
        probes TEXT NOT NULL,
        doc TEXT NOT NULL
    );
    CREATE TABLE measurements (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        probe TEXT NOT NULL,
        \"case\" TEXT NOT NULL,
        params TEXT NOT NULL,
        unit TEXT NOT NULL,
        median REAL NOT NULL
    );
    CREATE TABLE samples (
        measurement_id INTEGER NOT NULL REFERENCES measurements(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        value REAL NOT NULL,
        PRIMARY KEY (measurement_id, idx)
    );
    CREATE INDEX measurements_run ON measurements(run_id);",
    // 1 → 2: calibrations that are pooled across commands (what tracing adds to a
    // traced call's user time): each a sample of `amount` units costing `total`.
    "CREATE TABLE calibrations (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        measured_at TEXT NOT NULL,
        host TEXT NOT NULL,
        name TEXT NOT NULL,
        amount REAL NOT NULL,
        total REAL NOT NULL
    );",
    // 2 → 3: what the last `advise` recommended per machine and topic id, so the next
    // one can say what changed.
    "CREATE TABLE advice_seen (
        machine TEXT NOT NULL,
        id TEXT NOT NULL,
        action TEXT NOT NULL,
        runs TEXT NOT NULL,
        seen_at TEXT NOT NULL,
        PRIMARY KEY (machine, id)
    );",
    // 3 → 4: what a command derived from saved runs, under a name and the runs it came
    // from (`source`), so that the next one need not read those runs' documents again
    // (trace's figures: a few KB in place of whole runs).
    "CREATE TABLE digests (
        name TEXT PRIMARY KEY,
        source TEXT NOT NULL,
        body TEXT NOT NULL
    );",
    // 4 → 5: the runs' summaries in an index that covers them, so listing the runs (the
    // first step of every trace, cp and advise) reads a few pages, not one per run: a
    // row's document starts in its own leaf page. 110 runs listed in 0.12 ms instead
    // of 0.28.
    "CREATE INDEX runs_summary ON runs (id, started_at, host, kernel, filesystem, command, probes);",
];

/// The runs' summaries, oldest first: read from the index `runs_summary` alone.
const LIST_RUNS: &str =
    "SELECT id, started_at, host, kernel, filesystem, command, probes FROM runs ORDER BY id";

/// What one `advise` recommended for a topic: its action, the runs it rested on, when.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub action: String,
    pub runs: String,
    pub seen_at: String,
}

/// A calibration pooled over its saved samples.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pooled {
    pub samples: u64,
    pub amount: f64,
    pub total: f64,
}

/// One line of `ioprobe history`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub id: i64,
    pub started_at: String,
    pub host: String,
    pub kernel: String,
    pub filesystem: String,
    pub command: String,
    /// The probes the run measured, in run order.
    pub probes: Vec<String>,
}

/// Which saved runs are evidence for a question: this host's, and where the answer
/// depends on them, the same filesystem and kernel, with at least one of `probes`
/// (any probe when empty), newest first, at most `limit`.
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    pub host: &'a str,
    pub filesystem: Option<&'a str>,
    pub kernel: Option<&'a str>,
    pub probes: &'a [&'a str],
    pub limit: usize,
}

impl<'a> Evidence<'a> {
    /// Runs of `host` with any of `probes`, the newest `limit`.
    pub fn of(host: &'a str, probes: &'a [&'a str], limit: usize) -> Evidence<'a> {
        Evidence {
            host,
            filesystem: None,
            kernel: None,
            probes,
            limit,
        }
    }

    fn admits(&self, r: &RunSummary) -> bool {
        r.host == self.host
            && self.filesystem.is_none_or(|f| f == r.filesystem)
            && self.kernel.is_none_or(|k| k == r.kernel)
            && (self.probes.is_empty()
                || r.probes.iter().any(|p| self.probes.contains(&p.as_str())))
    }
}

/// An SQLite error with the store's path, as one line.
fn store_err(path: &Path, e: rusqlite::Error) -> anyhow::Error {
    anyhow!("store {}: {e}", path.display())
}

/// Saved runs found as evidence ([`Store::evidence_at`]): their summaries, newest
/// first, and the store to load each from.
pub struct Saved {
    store: Option<Store>,
    pub runs: Vec<RunSummary>,
}

impl Saved {
    /// The digest saved under `name` when it was derived from `source` (None: none, or
    /// one derived from other runs, or a store older than digests).
    pub fn digest(&self, name: &str, source: &str) -> Result<Option<String>> {
        let Some(s) = &self.store else {
            return Ok(None);
        };
        if s.user_version()? < 4 {
            return Ok(None);
        }
        match s.conn.query_row(
            "SELECT body FROM digests WHERE name = ?1 AND source = ?2",
            params![name, source],
            |r| r.get(0),
        ) {
            Ok(body) => Ok(Some(body)),
            Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
            Err(e) => Err(s.err(e)),
        }
    }

    /// Loads saved run `id`.
    pub fn load(&self, id: i64) -> Result<Run> {
        match &self.store {
            Some(s) => s.load(id),
            None => Err(anyhow!("run {id}: no store")),
        }
    }
}

/// An open store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// `$XDG_DATA_HOME/ioprobe/results.db`, or `~/.local/share/ioprobe/results.db`.
pub fn default_path() -> Result<PathBuf> {
    let base = match std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => {
            let home = std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .ok_or_else(|| {
                    anyhow!("neither XDG_DATA_HOME nor HOME is set; use --store PATH")
                })?;
            PathBuf::from(home).join(".local/share")
        }
    };
    Ok(base.join("ioprobe").join("results.db"))
}

/// How long a store operation waits for another ioprobe holding the database.
const BUSY_WAIT: Duration = Duration::from_secs(10);

/// Refuses a store path that exists but is not a regular file (`--store /dev/null` would
/// make SQLite create `/dev/null-journal` beside it).
fn check_store_path(path: &Path) -> Result<bool> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(true),
        Ok(_) => Err(UsageError(format!(
            "--store {}: not a regular file",
            crate::units::escape(&path.display().to_string())
        ))
        .into()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(anyhow!("store {}: {e}", path.display())),
    }
}

/// Runs `f` again while SQLite says the database is busy or locked, for up to
/// [`BUSY_WAIT`]: some lock conflicts (switching to WAL, a read upgraded to a write)
/// are reported at once rather than through the busy handler.
fn retry_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let start = std::time::Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match f() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && start.elapsed() < BUSY_WAIT =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// `file:` URI of a path, percent-encoded, for SQLite's `immutable` parameter.
fn file_uri(path: &Path, query: &str) -> String {
    use std::os::unix::ffi::OsStrExt;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut uri = String::from("file:");
    for &b in abs.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push('?');
    uri.push_str(query);
    uri
}

impl Store {
    /// Opens (creating if needed) the store at `path` and migrates it to this schema.
    /// Creation is race-free: many processes may create the same new store at once.
    pub fn open(path: &Path) -> Result<Store> {
        check_store_path(path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| {
                format!("store {}: cannot create {}", path.display(), dir.display())
            })?;
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| store_err(path, e))?;
        // Before any statement: every later lock wait goes through it.
        conn.busy_timeout(BUSY_WAIT)
            .map_err(|e| store_err(path, e))?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        // Read first: a file that is not a database fails here, before any write.
        let version = store.user_version()?;
        if version > STORE_SCHEMA {
            bail!(
                "store {}: schema version {version} was written by a newer ioprobe (this one reads {STORE_SCHEMA})",
                path.display()
            );
        }
        store.migrate()?;
        Ok(store)
    }

    /// Opens an existing store for reading only, so results stay readable where nothing
    /// can be written: a read-only mount, or a 0444 store in a directory the user cannot
    /// write (SQLite then cannot make its WAL index; the store is opened `immutable`).
    pub fn open_read_only(path: &Path) -> Result<Store> {
        Store::open_read_only_if_any(path)?.ok_or_else(|| {
            UsageError(format!(
                "no runs saved in {} (nothing saved yet)",
                crate::units::escape(&path.display().to_string())
            ))
            .into()
        })
    }

    /// [`Store::open_read_only`], or None when there is no store or it holds no runs.
    pub fn open_read_only_if_any(path: &Path) -> Result<Option<Store>> {
        if !check_store_path(path)? {
            return Ok(None);
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let open = |uri: &str| -> rusqlite::Result<Store> {
            let conn = Connection::open_with_flags(uri, flags)?;
            conn.busy_timeout(BUSY_WAIT)?;
            let store = Store {
                conn,
                path: path.to_path_buf(),
            };
            store
                .conn
                .query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))?;
            Ok(store)
        };
        let store = match open(&file_uri(path, "mode=ro")) {
            Ok(s) => s,
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::CannotOpen
                        | rusqlite::ErrorCode::ReadOnly
                        | rusqlite::ErrorCode::PermissionDenied
                ) =>
            {
                open(&file_uri(path, "immutable=1")).map_err(|e| store_err(path, e))?
            }
            Err(e) => return Err(store_err(path, e)),
        };
        let version = store.user_version()?;
        if version > STORE_SCHEMA {
            bail!(
                "store {}: schema version {version} was written by a newer ioprobe (this one reads {STORE_SCHEMA})",
                path.display()
            );
        }
        // An older store's runs read as they are (what a newer schema added is empty).
        Ok((version >= 1).then_some(store))
    }

    /// Fails now, rather than after a long measurement, when the store cannot be written
    /// (read-only file or directory, or locked beyond the busy timeout).
    pub fn check_writable(&mut self) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| store_err(&self.path, e))?;
        tx.rollback().map_err(|e| store_err(&self.path, e))
    }

    /// Where the store lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: rusqlite::Error) -> anyhow::Error {
        store_err(&self.path, e)
    }

    fn user_version(&self) -> Result<i64> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    fn migrate(&mut self) -> Result<()> {
        if self.user_version()? == STORE_SCHEMA {
            return Ok(());
        }
        let path = self.path.clone();
        let wrap = |e: rusqlite::Error| store_err(&path, e);
        // WAL lets readers and one writer work at once; set before the first write. The
        // switch needs the database to itself and can report "locked" at once while
        // another process is creating the store, so it is retried.
        retry_busy(|| {
            self.conn
                .query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
        })
        .map_err(wrap)?;
        retry_busy(|| {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            let current: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
                tx.execute_batch(sql)?;
                tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            }
            tx.commit()
        })
        .map_err(wrap)
    }

    /// Saves a run in one transaction; returns its id.
    pub fn save(&mut self, run: &Run) -> Result<i64> {
        let wrap = |e: rusqlite::Error| store_err(&self.path, e);
        let doc = serde_json::to_string(run)?;
        let fs = run
            .environment
            .filesystem
            .as_ref()
            .map_or("unknown".to_string(), |f| f.fs_type.clone());
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(wrap)?;
        tx.execute(
            "INSERT INTO runs (started_at, host, kernel, filesystem, command, probes, doc)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                run.started_at,
                run.environment.hostname,
                run.environment.kernel,
                fs,
                run.command,
                run.probes().join(","),
                doc
            ],
        )
        .map_err(wrap)?;
        let run_id = tx.last_insert_rowid();
        for m in &run.measurements {
            tx.execute(
                "INSERT INTO measurements (run_id, probe, \"case\", params, unit, median) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![run_id, m.probe, m.case, serde_json::to_string(&m.params)?, m.unit.name(), m.median],
            )
            .map_err(wrap)?;
            let mid = tx.last_insert_rowid();
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO samples (measurement_id, idx, value) VALUES (?1, ?2, ?3)",
                )
                .map_err(wrap)?;
            for (i, v) in m.raw.iter().enumerate() {
                stmt.execute(params![mid, i as i64, v]).map_err(wrap)?;
            }
        }
        tx.commit().map_err(wrap)?;
        Ok(run_id)
    }

    /// Saves one sample of calibration `name` on `host`: `amount` units cost `total`.
    pub fn add_calibration(
        &mut self,
        host: &str,
        name: &str,
        amount: f64,
        total: f64,
    ) -> Result<()> {
        let at = crate::results::time::now_rfc3339();
        self.conn
            .execute(
                "INSERT INTO calibrations (measured_at, host, name, amount, total) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![at, host, name, amount, total],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Calibration `name` on `host`, pooled over every saved sample (none in a store
    /// older than the table).
    pub fn calibration(&self, host: &str, name: &str) -> Result<Pooled> {
        if self.user_version()? < 2 {
            return Ok(Pooled::default());
        }
        self.conn
            .query_row(
                "SELECT COUNT(*), COALESCE(SUM(amount), 0), COALESCE(SUM(total), 0) FROM calibrations WHERE host = ?1 AND name = ?2",
                params![host, name],
                |r| {
                    Ok(Pooled {
                        samples: r.get::<_, i64>(0)? as u64,
                        amount: r.get(1)?,
                        total: r.get(2)?,
                    })
                },
            )
            .map_err(|e| self.err(e))
    }

    /// What the previous `advise` recommended on `machine`, by topic id (nothing in a
    /// store older than the table).
    pub fn advice_seen(&self, machine: &str) -> Result<std::collections::HashMap<String, Seen>> {
        if self.user_version()? < 3 {
            return Ok(Default::default());
        }
        let mut stmt = self
            .conn
            .prepare("SELECT id, action, runs, seen_at FROM advice_seen WHERE machine = ?1")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![machine], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    Seen {
                        action: r.get(1)?,
                        runs: r.get(2)?,
                        seen_at: r.get(3)?,
                    },
                ))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Records what this `advise` recommended on `machine`: (id, action, runs) per topic.
    pub fn record_advice(&mut self, machine: &str, seen: &[(String, Seen)]) -> Result<()> {
        let path = self.path.clone();
        let tx = self.conn.transaction().map_err(|e| store_err(&path, e))?;
        for (id, s) in seen {
            tx.execute(
                "INSERT OR REPLACE INTO advice_seen (machine, id, action, runs, seen_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![machine, id, s.action, s.runs, s.seen_at],
            )
            .map_err(|e| store_err(&path, e))?;
        }
        tx.commit().map_err(|e| store_err(&path, e))
    }

    /// The digest `name` kept beside the store at `path` while the store has `stamp`
    /// (taken now): (source, body). No database is opened: see `store/beside.rs`.
    pub fn digest_beside(path: &Path, name: &str, stamp: &Stamp) -> Option<(String, String)> {
        beside::read(path, name, stamp)
    }

    /// Keeps the digest `name` (`body`, derived from `source`) beside the store at
    /// `path`, when the store still has `stamp`, taken before the digest was read from
    /// it; the connection that read it must be closed first.
    pub fn keep_digest_beside(path: &Path, name: &str, stamp: &Stamp, source: &str, body: &str) {
        beside::keep(path, name, stamp, source, body);
    }

    /// Saves `body` as the digest `name` derived from `source`, in place of any before.
    pub fn save_digest(&mut self, name: &str, source: &str, body: &str) -> Result<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO digests (name, source, body) VALUES (?1, ?2, ?3)",
                params![name, source, body],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// All runs, oldest first.
    pub fn list(&self) -> Result<Vec<RunSummary>> {
        let mut stmt = self.conn.prepare(LIST_RUNS).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(RunSummary {
                    id: r.get(0)?,
                    started_at: r.get(1)?,
                    host: r.get(2)?,
                    kernel: r.get(3)?,
                    filesystem: r.get(4)?,
                    command: r.get(5)?,
                    probes: r
                        .get::<_, String>(6)?
                        .split(',')
                        .filter(|p| !p.is_empty())
                        .map(String::from)
                        .collect(),
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// The saved runs that are `e`'s evidence, newest first: the one way ioprobe finds
    /// the runs it reuses (advise, the time estimate, cp's tuning, trace's figures).
    pub fn newest_with(&self, e: &Evidence) -> Result<Vec<RunSummary>> {
        Ok(self
            .list()?
            .into_iter()
            .rev()
            .filter(|r| e.admits(r))
            .take(e.limit)
            .collect())
    }

    /// The saved runs that are `e`'s evidence in the store at `path` (none when there
    /// is no store there), newest first, each loaded when the caller reaches it: how
    /// trace's figures and cp's tuning find what they reuse ([`Store::newest_with`]).
    pub fn evidence_at(path: &Path, e: &Evidence) -> Result<Saved> {
        let Some(store) = Store::open_read_only_if_any(path)? else {
            return Ok(Saved {
                store: None,
                runs: Vec::new(),
            });
        };
        let runs = store.newest_with(e)?;
        Ok(Saved {
            store: Some(store),
            runs,
        })
    }

    /// Loads run `id`.
    pub fn load(&self, id: i64) -> Result<Run> {
        let doc: String = self
            .conn
            .query_row("SELECT doc FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .map_err(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => {
                    anyhow!("no run {id} in {}", self.path.display())
                }
                other => self.err(other),
            })?;
        serde_json::from_str(&doc)
            .with_context(|| format!("run {id} in {} is unreadable", self.path.display()))
    }

    /// Id of `last` (newest), `last~N` (N before the newest, N ≥ 0) or a plain id. A
    /// malformed or missing run is a usage error (exit 2).
    pub fn resolve(&self, spec: &str) -> Result<i64> {
        let shown = crate::units::escape(spec);
        let usage = |msg: String| anyhow::Error::new(UsageError(msg));
        let back = if spec == "last" {
            Some(0)
        } else if let Some(n) = spec.strip_prefix("last~") {
            let n = n
                .parse::<u32>()
                .ok()
                .filter(|_| n.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| {
                    usage(format!(
                        "'{shown}': expected last~N with N a whole number ≥ 0"
                    ))
                })?;
            Some(i64::from(n))
        } else {
            None
        };
        match back {
            Some(n) => self
                .conn
                .query_row(
                    "SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?1",
                    [n],
                    |r| r.get(0),
                )
                .map_err(|e| match e {
                    rusqlite::Error::QueryReturnedNoRows => usage(format!(
                        "no run '{shown}' in {} (fewer than {} runs saved)",
                        self.path.display(),
                        n + 1
                    )),
                    other => self.err(other),
                }),
            None => {
                let id = spec
                    .parse::<i64>()
                    .ok()
                    .filter(|id| *id > 0 && spec.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(|| {
                        usage(format!(
                            "'{shown}' is not a run: use an id, last, last~N or a JSON file"
                        ))
                    })?;
                if !self.exists(id)? {
                    return Err(usage(format!("no run {id} in {}", self.path.display())));
                }
                Ok(id)
            }
        }
    }

    fn exists(&self, id: i64) -> Result<bool> {
        self.conn
            .query_row("SELECT COUNT(*) FROM runs WHERE id = ?1", [id], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n > 0)
            .map_err(|e| self.err(e))
    }

    /// Raw sample count stored for run `id` (for tests and integrity checks).
    pub fn sample_count(&self, id: i64) -> Result<i64> {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM samples s JOIN measurements m ON s.measurement_id = m.id WHERE m.run_id = ?1",
                [id],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Run {
        // Read as the store reads a run it saved (`runref` reads a user's file).
        serde_json::from_str(include_str!("../../tests/fixtures/run-a.json")).unwrap()
    }

    #[test]
    fn a_digest_is_found_only_under_the_source_it_was_saved_with() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let mut s = Store::open(&path).unwrap();
        s.save(&fixture()).unwrap();
        let saved = |e: &Evidence| Store::evidence_at(&path, e).unwrap();
        let e = Evidence::of("fixture-host", &[], 10);
        assert_eq!(saved(&e).digest("d", "1:1").unwrap(), None);
        s.save_digest("d", "1:1", "one").unwrap();
        s.save_digest("d", "1:2,1", "two").unwrap();
        assert_eq!(saved(&e).digest("d", "1:1").unwrap(), None);
        assert_eq!(
            saved(&e).digest("d", "1:2,1").unwrap().as_deref(),
            Some("two")
        );
        assert_eq!(saved(&e).digest("other", "1:2,1").unwrap(), None);
    }

    #[test]
    fn listing_the_runs_reads_the_covering_index_not_the_documents() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("r.db")).unwrap();
        let plan: Vec<String> = s
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {LIST_RUNS}"))
            .unwrap()
            .query_map([], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(plan, ["SCAN runs USING COVERING INDEX runs_summary"]);
    }

    #[test]
    fn migrates_an_empty_database_and_round_trips_a_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        std::fs::write(&path, b"").unwrap(); // a zero-byte file is an empty SQLite database
        let mut s = Store::open(&path).unwrap();
        assert_eq!(s.user_version().unwrap(), STORE_SCHEMA);
        let run = fixture();
        let id = s.save(&run).unwrap();
        assert_eq!(id, 1);
        let back = s.load(id).unwrap();
        assert_eq!(
            serde_json::to_value(&back).unwrap(),
            serde_json::to_value(&run).unwrap()
        );
        let raw: usize = run.measurements.iter().map(|m| m.raw.len()).sum();
        assert_eq!(s.sample_count(id).unwrap() as usize, raw);
        assert_eq!(s.resolve("last").unwrap(), 1);
        assert!(s.resolve("last~1").is_err());
        let list = s.list().unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].probes, run.probes());
        drop(s);
        // Re-opening an up-to-date store changes nothing.
        let s = Store::open(&path).unwrap();
        assert_eq!(s.list().unwrap().len(), 1);
    }

    #[test]
    fn refuses_a_store_from_a_newer_ioprobe() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        {
            let c = Connection::open(&path).unwrap();
            c.pragma_update(None, "user_version", 99).unwrap();
        }
        let e = Store::open(&path).err().unwrap().to_string();
        assert!(e.contains("schema version 99"), "{e}");
    }

    /// A version-1 store (before calibrations) reads as it is, then migrates; the
    /// calibrations of a host and name pool.
    #[test]
    fn reads_a_version_1_store_and_pools_calibrations() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(MIGRATIONS[0]).unwrap();
            c.pragma_update(None, "user_version", 1).unwrap();
        }
        let old = Store::open_read_only_if_any(&path).unwrap().unwrap();
        assert_eq!(old.list().unwrap(), vec![]);
        assert_eq!(old.calibration("h", "x").unwrap(), Pooled::default());
        assert!(old.advice_seen("m").unwrap().is_empty());
        drop(old);
        let mut s = Store::open(&path).unwrap();
        assert_eq!(s.user_version().unwrap(), STORE_SCHEMA);
        let seen = |a: &str| Seen {
            action: a.into(),
            runs: "1, 2".into(),
            seen_at: "t".into(),
        };
        s.record_advice("m", &[("x.y".into(), seen("use pread"))])
            .unwrap();
        s.record_advice("m", &[("x.y".into(), seen("use pwrite"))])
            .unwrap();
        assert_eq!(s.advice_seen("m").unwrap()["x.y"], seen("use pwrite"));
        assert!(s.advice_seen("other").unwrap().is_empty());
        s.add_calibration("h", "x", 1000.0, 0.25e-3).unwrap();
        s.add_calibration("h", "x", 3000.0, -0.05e-3).unwrap();
        s.add_calibration("h", "y", 5.0, 1.0).unwrap();
        s.add_calibration("other", "x", 5.0, 1.0).unwrap();
        let p = s.calibration("h", "x").unwrap();
        assert_eq!((p.samples, p.amount), (2, 4000.0));
        assert!((p.total - 0.2e-3).abs() < 1e-12);
    }
}
