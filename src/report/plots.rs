//! The run's plots: every probe draws its own from its measured rows (see
//! [`ProbeKind::plots`](crate::probes::ProbeKind::plots)); this collects them in run
//! order and labels each with its probe.

pub use crate::present::Plot;
use crate::probes::kinds_of;
use crate::results::{Measurement, Run};
use anyhow::Result;

/// Every plot the run supports, in probe order.
pub fn plots(run: &Run) -> Result<Vec<Plot>> {
    let mut out = Vec::new();
    for k in kinds_of(run) {
        // Every row but the skipped (the filesystem gave them no meaning): a plot may
        // show what was not measured (as an empty row, say).
        let rows: Vec<&Measurement> = run.of_probe(k.name()).filter(|m| !m.is_skipped()).collect();
        if !rows.iter().any(|m| m.is_ok()) {
            continue;
        }
        for mut p in k.plots(&rows, &run.environment)? {
            p.probe = k.name().to_string();
            out.push(p);
        }
    }
    Ok(out)
}
