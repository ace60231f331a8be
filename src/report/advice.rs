//! Advice: what the measurements say a programmer should do, each line with the
//! figures that justify it. Every probe writes its own (see
//! [`ProbeKind::advice`](crate::probes::ProbeKind::advice)); this collects them in run
//! order.

use super::grid::kinds_of;
use crate::results::{Measurement, Run};

/// All advice lines for a run.
pub fn advise(run: &Run) -> Vec<String> {
    kinds_of(run)
        .into_iter()
        .flat_map(|k| {
            let rows: Vec<&Measurement> = run.of_probe(k.name()).collect();
            k.advice(&rows, &run.environment)
        })
        .collect()
}
