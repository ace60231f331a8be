//! A probe's cases as data: each row is ready to measure or unsupported here with its
//! reason. The runner (written once, here) measures the ready rows, one case at a
//! time or round-robin, puts the unsupported rows in place and returns every row in
//! plan order.

use super::Context;
use crate::harness::{Sampled, Workload};
use crate::results::{Measurement, Status, Unit};
use crate::sys::copyfile::Eviction;
use crate::sys::machine::Environment;
use anyhow::Result;
use serde::Serialize;

/// One case of a plan, with its typed params.
enum Row<P, W> {
    Ready {
        case: String,
        params: P,
        work: W,
    },
    /// Not measured: unsupported here, or skipped (the filesystem gives it no meaning).
    NotRun {
        case: String,
        params: P,
        leave: Leave,
    },
}

/// Why a case is not measured here: `Skip` where the filesystem gives it no meaning (a
/// cold source or durability on tmpfs), `Unsupported` where the OS lacks the mechanism.
#[derive(Debug, Clone, PartialEq)]
pub enum Leave {
    Skip(String),
    Unsupported(String),
}

impl Leave {
    /// Whether a case needing a cold page cache is left out, from the scratch
    /// directory's `eviction` check (None: it can run).
    pub fn cold(env: &Environment, eviction: &Eviction) -> Option<Leave> {
        match eviction {
            Eviction::Works => None,
            Eviction::Missing(why) => Some(Leave::Unsupported(why.clone())),
            Eviction::Stays(why) => Some(Leave::Skip(match env.memory_fs() {
                Some(fs) => {
                    format!("no cold state on {fs}: its files live in the page cache ({why})")
                }
                None => format!("eviction does not take on this filesystem: {why}"),
            })),
        }
    }

    /// The same, its reason after `prefix`.
    pub fn prefixed(&self, prefix: &str) -> Leave {
        match self {
            Leave::Skip(r) => Leave::Skip(format!("{prefix}{r}")),
            Leave::Unsupported(r) => Leave::Unsupported(format!("{prefix}{r}")),
        }
    }

    /// Whether a durable case (fsync, O_DSYNC) is left out: on a memory-backed
    /// filesystem fsync returns at once and nothing survives a reboot.
    pub fn durable(env: &Environment) -> Option<Leave> {
        env.memory_fs().map(|fs| {
            Leave::Skip(format!(
                "no durability on {fs}: fsync returns at once and nothing survives a reboot"
            ))
        })
    }
}

/// A plan cut in two: the ready rows, and a slot per row (filled for unsupported ones).
type Split<P, W> = (Vec<(String, P, W)>, Vec<Option<Measurement>>);

/// The cases of one probe run, in table order.
pub struct Plan<P, W> {
    rows: Vec<Row<P, W>>,
    /// `ns/op` or `bytes/s`: the unit of every row, unsupported ones included.
    unit: Unit,
}

impl<P: Serialize, W> Plan<P, W> {
    pub fn new(unit: Unit) -> Plan<P, W> {
        Plan {
            rows: Vec::new(),
            unit,
        }
    }

    /// A case to measure with `work`.
    pub fn ready(&mut self, case: String, params: P, work: W) {
        self.rows.push(Row::Ready { case, params, work });
    }

    /// A case this machine cannot run, and why (the call and errno).
    pub fn unsupported(&mut self, case: String, params: P, reason: String) {
        self.leave(case, params, Leave::Unsupported(reason));
    }

    /// A case left out here, and why: `skipped` (not a failure) or `unsupported`.
    pub fn leave(&mut self, case: String, params: P, leave: Leave) {
        self.rows.push(Row::NotRun {
            case,
            params,
            leave,
        });
    }

    /// Keeps the cases `keep` names (a revisit of some rows of a probe, see
    /// [`Context::only`]).
    fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.rows.retain(|r| match r {
            Row::Ready { case, .. } | Row::NotRun { case, .. } => keep(case),
        });
    }

    /// Number of cases, unsupported ones included.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Splits the plan into its ready rows and the slots [`merge`] fills back in plan
    /// order.
    fn split(self, probe: &str) -> Split<P, W> {
        let mut ready = Vec::new();
        let mut slots = Vec::new();
        for row in self.rows {
            match row {
                Row::Ready { case, params, work } => {
                    ready.push((case, params, work));
                    slots.push(None);
                }
                Row::NotRun {
                    case,
                    params,
                    leave,
                } => {
                    let why = match leave {
                        Leave::Skip(r) => (Status::Skipped, r),
                        Leave::Unsupported(r) => (Status::Unsupported, r),
                    };
                    slots.push(Some(Measurement::not_run(
                        probe, &case, params, self.unit, why,
                    )));
                }
            }
        }
        (ready, slots)
    }
}

/// Fills the empty slots with `done`, in order.
fn merge(slots: Vec<Option<Measurement>>, done: Vec<Measurement>) -> Vec<Measurement> {
    let mut done = done.into_iter();
    slots
        .into_iter()
        .filter_map(|s| s.or_else(|| done.next()))
        .collect()
}

impl Context<'_> {
    /// The plan's ready rows and slots, of the cases [`Context::only`] names when it
    /// names some.
    fn split_only<P: Serialize, W>(&self, probe: &str, mut plan: Plan<P, W>) -> Split<P, W> {
        if let Some(only) = self.only {
            plan.retain(|c| only.contains(c));
        }
        plan.split(probe)
    }

    /// Unsupported rows take no time: they give their share of a time limit back.
    fn skip_unsupported(&self, probe: &str, slots: &[Option<Measurement>]) {
        let keys: Vec<String> = slots
            .iter()
            .flatten()
            .map(|m| crate::harness::TimeLimit::key(probe, &m.case))
            .collect();
        self.limit.skip(&keys);
    }

    /// Measures every ready row one case at a time with `one(case, params, work)`
    /// (which runs [`Context::measure`] and builds the row), in plan order.
    pub fn run_plan_each<P: Serialize, W>(
        &self,
        probe: &str,
        plan: Plan<P, W>,
        mut one: impl FnMut(&str, P, W) -> Result<Measurement>,
    ) -> Result<Vec<Measurement>> {
        let (ready, slots) = self.split_only(probe, plan);
        self.skip_unsupported(probe, &slots);
        let mut done = Vec::new();
        for (case, params, work) in ready {
            done.push(one(&case, params, work)?);
        }
        Ok(merge(slots, done))
    }

    /// Measures every ready row round-robin (one pass per row per round, so drift hits
    /// all alike), then builds each row with `finish(case, params, work, sampled)`.
    pub fn run_plan<P: Serialize, W: Workload>(
        &self,
        probe: &str,
        plan: Plan<P, W>,
        mut finish: impl FnMut(&str, P, &W, &Sampled) -> Result<Measurement>,
    ) -> Result<Vec<Measurement>> {
        let (ready, slots) = self.split_only(probe, plan);
        self.skip_unsupported(probe, &slots);
        let (mut keys, mut works) = (Vec::new(), Vec::new());
        for (case, params, work) in ready {
            keys.push((case, params));
            works.push(work);
        }
        let names: Vec<&str> = keys.iter().map(|k| k.0.as_str()).collect();
        let sampled = self.measure_rounds(probe, &names, &mut works)?;
        let mut done = Vec::new();
        for (((case, params), work), s) in keys.into_iter().zip(&works).zip(&sampled) {
            done.push(finish(&case, params, work, s)?);
        }
        Ok(merge(slots, done))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(case: &str) -> Measurement {
        Measurement::unsupported("p", case, serde_json::Map::new(), Unit::NsPerOp, "x")
    }

    #[test]
    fn results_go_back_between_the_unsupported_rows() {
        let slots = vec![None, Some(row("b")), None, Some(row("d"))];
        let out = merge(slots, vec![row("a"), row("c")]);
        let cases: Vec<&str> = out.iter().map(|m| m.case.as_str()).collect();
        assert_eq!(cases, ["a", "b", "c", "d"]);
    }

    #[test]
    fn unsupported_rows_keep_their_typed_params_and_unit() {
        let mut plan: Plan<serde_json::Value, ()> = Plan::new(Unit::BytesPerSec);
        plan.unsupported("m/1".into(), serde_json::json!({"k": 1}), "EINVAL".into());
        plan.ready("m/2".into(), serde_json::json!({"k": 2}), ());
        let (ready, slots) = plan.split("p");
        assert_eq!(ready.len(), 1);
        let m = slots[0].as_ref().unwrap();
        assert_eq!(
            (m.unit, m.reason.as_deref()),
            (Unit::BytesPerSec, Some("EINVAL"))
        );
        assert_eq!(m.params.get("k"), Some(&serde_json::json!(1)));
        assert!(slots[1].is_none());
    }

    /// The environment of this machine, its measured filesystem said to be `fs_type`.
    fn on(fs_type: &str) -> Environment {
        let mut env = Environment::collect(Some(std::path::Path::new(".")));
        env.filesystem.as_mut().expect("a filesystem").fs_type = fs_type.into();
        env
    }

    #[test]
    fn a_memory_backed_filesystem_skips_cold_and_durable_rows_with_their_reason() {
        let stays = Eviction::Stays("4 of 4 pages stayed".into());
        let tmpfs = on("tmpfs");
        let Some(Leave::Skip(why)) = Leave::durable(&tmpfs) else {
            panic!("durable rows on tmpfs are skipped");
        };
        assert!(why.starts_with("no durability on tmpfs"), "{why}");
        let Some(Leave::Skip(why)) = Leave::cold(&tmpfs, &stays) else {
            panic!("cold rows on tmpfs are skipped");
        };
        assert!(
            why.starts_with("no cold state on tmpfs") && why.contains("4 of 4"),
            "{why}"
        );
        // A disk filesystem: durable rows run; a cold row runs where eviction works,
        // is skipped where the pages stay, unsupported where the OS has no way.
        let ext4 = on("ext4");
        assert_eq!(Leave::durable(&ext4), None);
        assert_eq!(Leave::cold(&ext4, &Eviction::Works), None);
        assert!(
            matches!(Leave::cold(&ext4, &stays), Some(Leave::Skip(w)) if w.starts_with("eviction does not take"))
        );
        assert_eq!(
            Leave::cold(&ext4, &Eviction::Missing("ENOSYS".into())),
            Some(Leave::Unsupported("ENOSYS".into()))
        );
        // In the plan: a skipped row, not a failed or unsupported one.
        let mut plan: Plan<serde_json::Value, ()> = Plan::new(Unit::BytesPerSec);
        plan.leave(
            "c/1".into(),
            serde_json::json!({"k": 1}),
            Leave::durable(&tmpfs).unwrap(),
        );
        let (_, slots) = plan.split("p");
        let m = slots[0].as_ref().unwrap();
        assert!(m.is_skipped() && !m.is_ok(), "{:?}", m.status);
        assert!(
            m.note.starts_with("skipped: no durability on tmpfs"),
            "{}",
            m.note
        );
    }
}
