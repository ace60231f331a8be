//! CSV (`--csv`): one row per measurement. Fixed columns first, then every parameter,
//! derived figure and normalised rusage counter that any row carries, then each
//! process's counters (`writer_user_s`, ...) when the work ran in other processes.

use crate::names::Named;
use crate::results::Run;
use anyhow::Result;
use serde_json::Value;

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Per-process counters in CSV, each prefixed with the process's role.
const PROCESS_FIELDS: [&str; 4] = ["user_s", "sys_s", "voluntary_cs", "involuntary_cs"];

/// The fixed columns, first in every row.
const FIXED: [&str; 13] = [
    "probe",
    "case",
    "unit",
    "median",
    "ci95_low",
    "ci95_high",
    "min",
    "max",
    "mean",
    "stddev",
    "cv",
    "samples",
    "iterations",
];

/// The normalised rusage columns, after the params and derived figures.
const RUSAGE: [&str; 9] = [
    "rusage_per",
    "user_s",
    "sys_s",
    "voluntary_cs",
    "involuntary_cs",
    "minor_faults",
    "major_faults",
    "blocks_in",
    "blocks_out",
];

/// The columns any row carries beyond the fixed ones: params, derived figures and the
/// process roles, each in order of first appearance.
struct Columns<'a> {
    params: Vec<String>,
    derived: Vec<String>,
    roles: Vec<&'a String>,
}

impl<'a> Columns<'a> {
    fn of(run: &'a Run) -> Columns<'a> {
        let mut c = Columns {
            params: Vec::new(),
            derived: Vec::new(),
            roles: Vec::new(),
        };
        for m in &run.measurements {
            for k in m.params.keys() {
                if !c.params.contains(k) {
                    c.params.push(k.clone());
                }
            }
            for k in m.derived.keys() {
                if !c.derived.contains(k) {
                    c.derived.push(k.clone());
                }
            }
            for role in m.rusage.processes.keys() {
                if !c.roles.contains(&role) {
                    c.roles.push(role);
                }
            }
        }
        c
    }

    fn header(&self) -> Vec<String> {
        let mut header: Vec<String> = FIXED.iter().map(|s| s.to_string()).collect();
        header.extend(self.params.iter().cloned());
        header.extend(self.derived.iter().cloned());
        header.extend(RUSAGE.iter().map(|s| s.to_string()));
        for role in &self.roles {
            header.extend(PROCESS_FIELDS.iter().map(|f| format!("{role}_{f}")));
        }
        header.extend(["status".to_string(), "reason".to_string()]);
        header
    }

    /// One measurement's record, in [`Columns::header`]'s order.
    fn record(&self, m: &crate::results::Measurement) -> Vec<String> {
        let r = &m.rusage.normalised;
        let mut rec: Vec<String> = vec![
            m.probe.clone(),
            m.case.clone(),
            m.unit.name().to_string(),
            m.median.to_string(),
            m.ci95[0].to_string(),
            m.ci95[1].to_string(),
            m.min.to_string(),
            m.max.to_string(),
            m.mean.to_string(),
            m.stddev.to_string(),
            m.cv.to_string(),
            m.samples.to_string(),
            m.iterations.to_string(),
        ];
        rec.extend(
            self.params
                .iter()
                .map(|k| m.params.get(k).map(text).unwrap_or_default()),
        );
        rec.extend(
            self.derived
                .iter()
                .map(|k| m.derived.get(k).map(text).unwrap_or_default()),
        );
        rec.extend([
            r.per.clone(),
            r.user_s.to_string(),
            r.sys_s.to_string(),
            r.voluntary_cs.to_string(),
            r.involuntary_cs.to_string(),
            r.minor_faults.to_string(),
            r.major_faults.to_string(),
            r.blocks_in.to_string(),
            r.blocks_out.to_string(),
        ]);
        for role in &self.roles {
            match m.rusage.processes.get(*role) {
                Some(p) => {
                    let n = &p.normalised;
                    rec.extend(
                        [n.user_s, n.sys_s, n.voluntary_cs, n.involuntary_cs]
                            .map(|v| v.to_string()),
                    )
                }
                None => rec.extend(PROCESS_FIELDS.map(|_| String::new())),
            }
        }
        rec.extend([
            m.status.name().to_string(),
            m.reason.clone().unwrap_or_default(),
        ]);
        rec
    }
}

/// Renders the run's measurements as CSV.
pub fn render_run(run: &Run) -> Result<String> {
    let cols = Columns::of(run);
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(cols.header())?;
    for m in &run.measurements {
        w.write_record(cols.record(m))?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// A grid (headers and rows) as CSV.
pub fn render_grid(g: &super::grid::Grid) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&g.headers)?;
    for r in &g.rows {
        w.write_record(r)?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}
