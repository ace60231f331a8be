//! The syscalls table (seed 004's), its bar plot and its advice.

use super::{Case, Derived, Params};
use crate::names::Named;
use crate::advice::Recommendation;
use crate::advice::{self, Opt, Words, Work};
use crate::present::Style;
use crate::present::grid::{ci_text, notes_and_warnings};
use crate::present::{Grid, Plot, plot};
use crate::results::Measurement;
use crate::units::{format_count, format_size, sig3};
use anyhow::Result;

pub fn grid(rows: &[&Measurement], st: &Style) -> Grid {
    let body = rows
        .iter()
        .map(|m| {
            let d: Derived = m.derived_as();
            vec![
                m.case.clone(),
                sig3(m.median),
                ci_text(m, &sig3),
                format_count(d.ops_per_s.unwrap_or(1e9 / m.median)),
                d.x_null.map_or("-".into(), |x| format!("{}×", sig3(x))),
                sig3(d.voluntary_cs_per_mop.unwrap_or(f64::NAN)),
                sig3(d.involuntary_cs_per_mop.unwrap_or(f64::NAN)),
            ]
        })
        .collect();
    let io = rows
        .first()
        .and_then(|m| m.params_as::<Params>())
        .map_or(0, |p| p.io_size);
    let mut g = Grid::numeric(
        format!("syscalls: cost per call, {} I/O", format_size(io)),
        &[
            "case",
            "ns/op",
            "95% CI",
            "ops/s",
            "× null",
            "vol cs/Mop",
            "invol cs/Mop",
        ],
        body,
    )
    .optional(&["ops/s"]);
    g.footnotes = notes_and_warnings(rows, &|m| m.case.clone(), st.verbose);
    g
}

pub fn plots(rows: &[&Measurement]) -> Result<Vec<Plot>> {
    let rows: Vec<&Measurement> = rows.iter().copied().filter(|m| m.is_ok()).collect();
    Ok(vec![Plot {
        probe: String::new(),
        name: "syscalls".into(),
        title: "syscalls: ns per call (median, 95% CI whiskers)".into(),
        svg: plot::bars(
            "syscalls: ns per call (median with 95% CI)",
            &rows,
            1.0,
            "ns/op",
        )?,
    }])
}

fn find<'a>(rows: &[&'a Measurement], case: &str) -> Option<&'a Measurement> {
    rows.iter().copied().find(|m| m.case == case && m.is_ok())
}

/// Per-call patterns: pread instead of lseek+read (and pwrite instead of lseek+write),
/// and keeping a descriptor open instead of opening and closing it for every read.
pub fn recommend(rows: &[&Measurement]) -> Vec<Recommendation> {
    let pick = |id: &str,
                topic: &str,
                scope: &str,
                operation: Option<&str>,
                options: &[(&str, Case)],
                baseline: &str| {
        let opts: Vec<(String, Opt)> = options
            .iter()
            .filter_map(|&(label, case)| {
                let m = find(rows, case.name())?;
                // Every case chosen between moves the same bytes once.
                let work = Work::exact(case.calls(), "operation");
                Some((label.to_string(), Opt { m, cost: 0.0, work, floor: None }))
            })
            .collect();
        if opts.len() < 2 {
            return None;
        }
        advice::methods(
            Words {
                id: id.into(),
                topic,
                rerun_noise: advice::RERUN_NOISE_LOOP,
                scope: scope.into(),
                operation,
                noun: "",
                caveats: vec![
                    "one small I/O (--io-size) on a page-cache-resident file; the saving per call is what matters, not the ratio, once each call moves much data".into(),
                ],
            },
            &opts,
            Some(baseline),
        )
    };
    let reuse_from = if find(rows, Case::OpenReadClose.name()).is_some() {
        ("open+read+close for each read", Case::OpenReadClose)
    } else {
        ("open+close for each access", Case::OpenClose)
    };
    [
        pick(
            "positioned.reads",
            "positioned I/O",
            "reads",
            Some("reading at an offset"),
            &[("lseek+read", Case::LseekRead), ("pread", Case::Pread)],
            "lseek+read",
        ),
        pick(
            "positioned.writes",
            "positioned I/O",
            "writes",
            Some("writing at an offset"),
            &[("lseek+write", Case::LseekWrite), ("pwrite", Case::Pwrite)],
            "lseek+write",
        ),
        pick(
            "descriptor-reuse",
            "descriptor reuse",
            "",
            Some("reading a file repeatedly"),
            &[reuse_from, ("one descriptor kept open (pread)", Case::Pread)],
            reuse_from.0,
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// What is not a choice: a load from an existing mapping against pread.
pub fn advice(rows: &[&Measurement]) -> Vec<String> {
    let mut out = Vec::new();
    if let (Some(ml), Some(pr)) = (find(rows, "mmap_load"), find(rows, "pread")) {
        out.push(format!(
            "syscalls: a load from an existing mapping costs {} ns, {}× less than pread; mmap/munmap and page faults are extra and not in this figure",
            sig3(ml.median),
            sig3(pr.median / ml.median)
        ));
    }
    out
}
