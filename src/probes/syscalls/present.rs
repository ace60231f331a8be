//! The syscalls table (seed 004's), its bar plot and its advice.

use super::{Derived, Params};
use crate::present::grid::{ci_text, notes_and_warnings};
use crate::present::{Grid, Plot, plot};
use crate::results::Measurement;
use crate::units::{format_count, format_size, sig3};
use anyhow::Result;

pub fn grid(rows: &[&Measurement]) -> Grid {
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
        format!(
            "syscalls: cost per call, {} I/O (seed 004)",
            format_size(io)
        ),
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
    );
    g.footnotes = notes_and_warnings(rows, &|m| m.case.clone());
    g
}

pub fn plots(rows: &[&Measurement]) -> Result<Vec<Plot>> {
    Ok(vec![Plot {
        probe: String::new(),
        name: "syscalls".into(),
        title: "syscalls: ns per call (median, 95% CI whiskers)".into(),
        svg: plot::bars(
            "syscalls: ns per call (median with 95% CI)",
            rows,
            1.0,
            "ns/op",
        )?,
    }])
}

fn find<'a>(rows: &[&'a Measurement], case: &str) -> Option<&'a Measurement> {
    rows.iter().copied().find(|m| m.case == case && m.is_ok())
}

pub fn advice(rows: &[&Measurement]) -> Vec<String> {
    let mut out = Vec::new();
    if let (Some(orc), Some(pr)) = (find(rows, "open_read_close"), find(rows, "pread")) {
        out.push(format!(
            "syscalls: keep descriptors open: open+read+close costs {}× a pread ({} vs {} ns)",
            sig3(orc.median / pr.median),
            sig3(orc.median),
            sig3(pr.median)
        ));
    } else if let (Some(oc), Some(pr)) = (find(rows, "open_close"), find(rows, "pread")) {
        out.push(format!(
            "syscalls: keep descriptors open: open+close alone costs {}× a pread ({} vs {} ns)",
            sig3(oc.median / pr.median),
            sig3(oc.median),
            sig3(pr.median)
        ));
    }
    if let (Some(lr), Some(pr)) = (find(rows, "lseek_read"), find(rows, "pread")) {
        out.push(format!(
            "syscalls: use pread instead of lseek+read: {} vs {} ns per read ({}% less)",
            sig3(pr.median),
            sig3(lr.median),
            sig3((1.0 - pr.median / lr.median) * 100.0)
        ));
    }
    if let (Some(lw), Some(pw)) = (find(rows, "lseek_write"), find(rows, "pwrite")) {
        out.push(format!(
            "syscalls: use pwrite instead of lseek+write: {} vs {} ns per write",
            sig3(pw.median),
            sig3(lw.median)
        ));
    }
    if let (Some(ml), Some(pr)) = (find(rows, "mmap_load"), find(rows, "pread")) {
        out.push(format!(
            "syscalls: a load from an existing mapping costs {} ns, {}× less than pread; mmap/munmap and page faults are extra and not in this figure",
            sig3(ml.median),
            sig3(pr.median / ml.median)
        ));
    }
    out
}
