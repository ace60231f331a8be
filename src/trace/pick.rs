//! Which tracer `--tracer auto` takes for a command, from this command's earlier traces
//! on this machine.
//!
//! eBPF costs a command the loading and detaching of its programs (about 2 ms of the
//! kernel's here, whatever the command), ptrace a stop at each traced call (50–100 µs
//! here, where a stop wakes a halted vCPU; a few µs on bare metal). A command of a few
//! traced calls therefore ends sooner under ptrace, one of many under eBPF, and where
//! the line falls depends on the machine: it is measured, per command, not assumed.
//!
//! Each trace keeps, beside the store (`<store>-tracers`, written only where the store
//! is), the command's traced calls and how long ioprobe took from its start to the
//! report under the tracer that ran: the last [`KEPT_TIMES`] per tracer, for the last
//! [`KEPT_COMMANDS`] commands (the whole argument list is the command, kept as a hash
//! only: an argument may be a secret). A trace that
//! measured its figures first keeps its calls but no time; one within [`NEAR`] of its
//! tracer's kept median is not kept (nothing the rule reads would change, and the file
//! is not written). `auto` then takes:
//! - ptrace, when this command's median time under it is below its median under the
//!   tracer `auto` takes otherwise here (eBPF, or preload where eBPF cannot load);
//! - ptrace once, to try it, when the command was never traced with ptrace here and
//!   its last trace made at most [`TRY_CALLS`] traced calls (at 100 µs a stop, the try
//!   costs at most about 10 ms more than eBPF's start would have);
//! - otherwise its usual order.
//!
//! A tracer named with `--tracer` is taken as named; its times are kept all the same.
//! Where ptrace is refused here, auto takes its usual order instead (`super::spawn`).

use crate::harness::stats::median;
use crate::sys::trace::Tracer;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Instant;

/// The file's suffix beside the store.
const SUFFIX: &str = "-tracers";

/// A command whose last trace made at most this many traced calls is tried once under
/// ptrace.
const TRY_CALLS: u64 = 100;

/// Times kept per tracer and command.
const KEPT_TIMES: usize = 3;

/// Commands kept (the least recently traced go first).
const KEPT_COMMANDS: usize = 256;

/// One command's traces here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Entry {
    /// Traced calls in its last trace.
    calls: u64,
    /// When it was last traced (seconds since the epoch).
    seen: u64,
    /// The tracer `auto` takes here when it picks none.
    usual: Option<Tracer>,
    /// Seconds from ioprobe's start to the report, per tracer, newest last.
    took: BTreeMap<Tracer, Vec<f64>>,
}

/// A kept time within this share of its tracer's median is not written.
const NEAR: f64 = 0.1;

/// Why `auto` takes ptrace for this command (None: its usual order).
fn rule(e: &Entry) -> Option<String> {
    let median = |t: Tracer| median(e.took.get(&t)?);
    let usual = match e.usual {
        Some(Tracer::Ptrace) => return None,
        Some(u) => u,
        None => [Tracer::Ebpf, Tracer::Preload]
            .into_iter()
            .find(|&t| median(t).is_some())?,
    };
    let theirs = median(usual)?;
    let shown = |s: f64| crate::units::format_ns(s * 1e9);
    let name = usual.shown();
    match median(Tracer::Ptrace) {
        Some(p) if p < theirs => Some(format!(
            "auto: tracing this command here took ioprobe {} under ptrace, {} under {name}, medians from its start to its report",
            shown(p),
            shown(theirs)
        )),
        Some(_) => None,
        None if e.calls <= TRY_CALLS => Some(format!(
            "auto, trying it: this command made {} traced calls here, so few that their stops may cost less than {name}'s start; tracing it took ioprobe {} under {name}",
            e.calls,
            shown(theirs)
        )),
        None => None,
    }
}

/// The key of a command: a hash of its arguments.
fn key(command: &[OsString]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    command.hash(&mut h);
    format!("{:016x}", h.finish())
}

fn book(store: &Path) -> BTreeMap<String, Entry> {
    crate::results::store::read_beside(store, SUFFIX)
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// The entry last read: the store, the command's key, the entry.
type Read = Option<(std::path::PathBuf, String, Option<Entry>)>;
static READ: std::sync::Mutex<Read> = std::sync::Mutex::new(None);

/// The entry of `command` beside `store`, read once per process (the early choice and
/// the parsed one ask the same).
fn entry(store: &Path, command: &[OsString]) -> Option<Entry> {
    let k = key(command);
    let mut read = READ.lock().unwrap_or_else(|e| e.into_inner());
    match &*read {
        Some((p, rk, e)) if p == store && *rk == k => e.clone(),
        _ => {
            let e = book(store).remove(&k);
            *read = Some((store.to_path_buf(), k, e.clone()));
            e
        }
    }
}

/// Why `auto` (`named` None) takes ptrace for `command` (None: `named`, or auto's
/// usual order).
pub(super) fn choose(
    named: Option<Tracer>,
    command: &[OsString],
    store: Option<&Path>,
) -> Option<String> {
    if named.is_some() || command.is_empty() {
        return None;
    }
    rule(&entry(store?, command)?)
}

static STARTED: OnceLock<Instant> = OnceLock::new();

/// Starts the clock a trace's time is kept from (first thing in `main`).
pub fn start_clock() {
    STARTED.get_or_init(Instant::now);
}

/// A finished trace of `command`: its `calls`, and under `tracer` (`usual`: the one
/// `auto` takes when it picks none) the time since [`start_clock`], unless `timed` is
/// false (the figures were measured first).
pub(super) fn keep(
    store: &Path,
    command: &[OsString],
    tracer: Tracer,
    usual: bool,
    calls: u64,
    timed: bool,
) {
    let took = STARTED.get().map(|s| s.elapsed().as_secs_f64());
    *READ.lock().unwrap_or_else(|e| e.into_inner()) = None;
    let seen = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let trace = Kept {
        key: key(command),
        tracer,
        usual,
        calls,
        took: took.filter(|_| timed),
        seen,
    };
    // Under the store's lock: traces at once each add their own entry to the others'.
    crate::results::store::update_beside(store, SUFFIX, |text| {
        let mut all: BTreeMap<String, Entry> = text
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        trace
            .add_to(&mut all)
            .then(|| serde_json::to_string(&all).ok())?
    });
}

/// One finished trace, as [`keep`] adds it to the book.
struct Kept {
    key: String,
    tracer: Tracer,
    usual: bool,
    calls: u64,
    /// The time since [`start_clock`], where it counts.
    took: Option<f64>,
    seen: u64,
}

impl Kept {
    /// Adds this trace to `all`; false where nothing the rule reads changed (the file
    /// is then left as it is: writing it costs a short trace about 0.1 ms).
    fn add_to(&self, all: &mut BTreeMap<String, Entry>) -> bool {
        let mut changed = all.get(&self.key).is_none_or(|e| e.calls != self.calls);
        let e = all.entry(self.key.clone()).or_default();
        e.calls = self.calls;
        if self.usual && e.usual != Some(self.tracer) {
            e.usual = Some(self.tracer);
            changed = true;
        }
        if let Some(t) = self.took {
            let v = e.took.entry(self.tracer).or_default();
            // A time within NEAR of the kept ones' median changes nothing the rule reads.
            let near =
                v.len() >= KEPT_TIMES && median(v).is_some_and(|m| (t - m).abs() <= NEAR * m);
            if !near {
                v.push(t);
                let extra = v.len().saturating_sub(KEPT_TIMES);
                v.drain(..extra);
                changed = true;
            }
        }
        if !changed {
            return false;
        }
        e.seen = self.seen;
        while all.len() > KEPT_COMMANDS {
            let oldest = all
                .iter()
                .min_by_key(|(_, e)| e.seen)
                .map(|(k, _)| k.clone());
            all.remove(&oldest.unwrap_or_default());
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use Tracer::{Ebpf, Preload, Ptrace};

    fn entry(calls: u64, usual: Option<Tracer>, took: &[(Tracer, &[f64])]) -> Entry {
        Entry {
            calls,
            seen: 0,
            usual,
            took: took.iter().map(|&(t, v)| (t, v.to_vec())).collect(),
        }
    }

    #[test]
    fn a_command_faster_under_ptrace_than_under_ebpf_is_traced_with_ptrace() {
        let e = entry(
            19,
            Some(Ebpf),
            &[(Ebpf, &[5.4e-3, 5.9e-3, 5.2e-3]), (Ptrace, &[3.3e-3])],
        );
        let why = rule(&e).expect("ptrace");
        assert!(
            why.contains("3.30 ms under ptrace, 5.40 ms under eBPF"),
            "{why}"
        );
        // Slower under ptrace (its median, not its best): the usual order.
        let e = entry(
            19,
            Some(Ebpf),
            &[(Ebpf, &[5.4e-3]), (Ptrace, &[6e-3, 3e-3, 7e-3])],
        );
        assert_eq!(rule(&e), None);
    }

    #[test]
    fn ptrace_is_tried_once_for_a_command_of_few_calls_and_never_for_many() {
        let e = entry(19, Some(Ebpf), &[(Ebpf, &[5.4e-3])]);
        assert!(rule(&e).expect("tried").contains("trying it"));
        let e = entry(TRY_CALLS + 1, Some(Ebpf), &[(Ebpf, &[5.4e-3])]);
        assert_eq!(rule(&e), None);
        // Nothing timed yet (its figures were measured first): nothing to weigh.
        assert_eq!(rule(&entry(19, Some(Ebpf), &[])), None);
    }

    #[test]
    fn ptrace_is_weighed_against_the_tracer_auto_takes_here() {
        // eBPF cannot load here (preload is usual): eBPF's faster times, kept by a
        // trace with privileges, do not count.
        let e = entry(
            19,
            Some(Preload),
            &[(Ebpf, &[2e-3]), (Preload, &[3.7e-3]), (Ptrace, &[3.3e-3])],
        );
        assert!(rule(&e).expect("ptrace").contains("under preload"));
        // Where ptrace is what auto takes anyway, nothing is picked.
        assert_eq!(rule(&entry(19, Some(Ptrace), &[(Ptrace, &[3e-3])])), None);
        // Only named tracers kept times: eBPF's stands for the usual one.
        let e = entry(19, None, &[(Ebpf, &[5e-3]), (Ptrace, &[3e-3])]);
        assert!(rule(&e).is_some());
    }

    #[test]
    fn a_trace_kept_beside_the_store_is_found_by_its_command_alone() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("s.db");
        let cmd: Vec<OsString> = vec!["true".into()];
        start_clock();
        keep(&db, &cmd, Ebpf, true, 19, true);
        assert_eq!(
            choose(None, &cmd, Some(&db)),
            None,
            "no store, nothing kept"
        );
        std::fs::write(&db, "").unwrap();
        keep(&db, &cmd, Ebpf, true, 19, true);
        assert!(
            choose(None, &cmd, Some(&db)).is_some(),
            "tried under ptrace"
        );
        assert_eq!(
            choose(Some(Ebpf), &cmd, Some(&db)),
            None,
            "a named tracer stays"
        );
        let other: Vec<OsString> = vec!["true".into(), "x".into()];
        assert_eq!(choose(None, &other, Some(&db)), None);
        for _ in 0..5 {
            keep(&db, &cmd, Ptrace, false, 19, true);
        }
        let kept = book(&db);
        assert_eq!(kept[&key(&cmd)].took[&Ptrace].len(), KEPT_TIMES);
        assert_eq!(kept[&key(&cmd)].usual, Some(Ebpf));
    }
}
