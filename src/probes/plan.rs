//! A probe's cases as data: each row is ready to measure or unsupported here with its
//! reason. The runner (written once, here) measures the ready rows, one case at a
//! time or round-robin, puts the unsupported rows in place and returns every row in
//! plan order.

use super::Context;
use crate::harness::{Sampled, Workload};
use crate::results::{Measurement, Unit};
use anyhow::Result;
use serde::Serialize;

/// One case of a plan, with its typed params.
enum Row<P, W> {
    Ready {
        case: String,
        params: P,
        work: W,
    },
    Unsupported {
        case: String,
        params: P,
        reason: String,
    },
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
        self.rows.push(Row::Unsupported {
            case,
            params,
            reason,
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
                Row::Unsupported {
                    case,
                    params,
                    reason,
                } => slots.push(Some(Measurement::unsupported(
                    probe, &case, params, self.unit, reason,
                ))),
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
        let (ready, slots) = plan.split(probe);
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
        let (ready, slots) = plan.split(probe);
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
}
