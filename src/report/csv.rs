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

/// Renders the run's measurements as CSV.
pub fn render_run(run: &Run) -> Result<String> {
    let mut param_keys: Vec<String> = Vec::new();
    let mut derived_keys: Vec<String> = Vec::new();
    for m in &run.measurements {
        for k in m.params.keys() {
            if !param_keys.contains(k) {
                param_keys.push(k.clone());
            }
        }
        for k in m.derived.keys() {
            if !derived_keys.contains(k) {
                derived_keys.push(k.clone());
            }
        }
    }
    let fixed = [
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
    let rusage = [
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
    let mut roles: Vec<&String> = Vec::new();
    for m in &run.measurements {
        for role in m.rusage.processes.keys() {
            if !roles.contains(&role) {
                roles.push(role);
            }
        }
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = fixed.iter().map(|s| s.to_string()).collect();
    header.extend(param_keys.iter().cloned());
    header.extend(derived_keys.iter().cloned());
    header.extend(rusage.iter().map(|s| s.to_string()));
    for role in &roles {
        header.extend(PROCESS_FIELDS.iter().map(|f| format!("{role}_{f}")));
    }
    header.extend(["status".to_string(), "reason".to_string()]);
    w.write_record(&header)?;
    for m in &run.measurements {
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
            param_keys
                .iter()
                .map(|k| m.params.get(k).map(text).unwrap_or_default()),
        );
        rec.extend(
            derived_keys
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
        for role in &roles {
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
        w.write_record(&rec)?;
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
