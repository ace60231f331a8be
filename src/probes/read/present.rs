//! The read table (seed 000's), its throughput-versus-block plot and its advice.

use super::super::sweep;
use super::{Method, Params, Populate};
use crate::advice::Recommendation;
use crate::advice::{self, Words};
use crate::names::Named;
use crate::present::Style;
use crate::present::grid::notes_and_warnings;
use crate::present::{Grid, Plot, distinct, with_params};
use crate::results::Measurement;
use crate::sys::machine::Environment;
use crate::units::format_size;
use anyhow::Result;

/// A series: one method, one way of populating the page cache (None in older runs),
/// one file size.
type Series = (Method, Option<Populate>, u64);

/// The series of `typed`, in the order they first appear.
fn series(typed: &[(&Measurement, Params)]) -> Vec<Series> {
    distinct(typed.iter().map(|t| (t.1.method, t.1.populate, t.1.file_size)))
}

/// Whether `typed` read files of more than one size (then each series says its own).
fn many_files(typed: &[(&Measurement, Params)]) -> bool {
    distinct(typed.iter().map(|t| t.1.file_size)).len() > 1
}

fn points<'a>(typed: &[(&'a Measurement, Params)], s: Series) -> Vec<(u64, &'a Measurement)> {
    typed
        .iter()
        .filter(|(_, p)| (p.method, p.populate, p.file_size) == s)
        .map(|(m, p)| (p.block_size, *m))
        .collect()
}

fn populate_name(p: Option<Populate>) -> &'static str {
    p.map_or("unrecorded", |p| p.name())
}

/// "read, populated by write" (", 64 MiB file" added where files of several sizes
/// were read).
fn label((method, populate, file): Series, many: bool) -> String {
    let mut l = match populate {
        Some(p) => format!("{}, populated by {}", method.name(), p.name()),
        None => method.name().to_string(),
    };
    if many {
        l.push_str(&format!(", {} file", format_size(file)));
    }
    l
}

pub fn grid(rows: &[&Measurement], st: &Style) -> Grid {
    let typed = with_params::<Params>(rows);
    let many = many_files(&typed);
    let body = typed
        .iter()
        .map(|(m, p)| {
            let mut row = vec![
                p.method.name().to_string(),
                populate_name(p.populate).to_string(),
            ];
            if many {
                row.push(format_size(p.file_size));
            }
            row.push(format_size(p.block_size));
            row.extend(sweep::cells(m, false, false));
            row
        })
        .collect();
    let first = typed.first().map(|(_, p)| p);
    let title = if many {
        "read: files from the page cache, by size and block size".to_string()
    } else {
        format!(
            "read: {} file from the page cache, by block size",
            format_size(first.map_or(0, |p| p.file_size))
        )
    };
    let file_column: &[&str] = if many { &["file"] } else { &[] };
    let headers: Vec<&str> = ["method", "populated by"]
        .into_iter()
        .chain(file_column.iter().copied())
        .chain([
            "block",
            "GB/s (10^9 B/s)",
            "95% CI",
            "s / 10 GiB",
            "ns/call",
            "fits in",
            "vol cs/GiB",
            "invol cs/GiB",
        ])
        .collect();
    let mut g = Grid::numeric(title, &headers, body)
    .optional(&["s / 10 GiB", "fits in", "ns/call"])
    .best_by(|i| typed.get(i).filter(|t| t.0.is_ok()).map(|t| t.0.median));
    let mut modes: Vec<Populate> = typed.iter().filter_map(|t| t.1.populate).collect();
    modes.dedup();
    for m in modes {
        g.footnotes
            .push(format!("populated by {}: {}", m.name(), m.describe()));
    }
    if let Some(p) = first {
        g.footnotes.push(format!("page cache: {}", p.page_cache));
    }
    g.footnotes.extend(notes_and_warnings(
        rows,
        &|m| {
            m.params_as::<Params>()
                .map_or(m.case.clone(), |p| p.method.name().to_string())
        },
        st.verbose,
    ));
    g
}

pub fn plots(rows: &[&Measurement], env: &Environment) -> Result<Vec<Plot>> {
    let typed = with_params::<Params>(rows);
    let many = many_files(&typed);
    let pts = typed
        .iter()
        .map(|(m, p)| (label((p.method, p.populate, p.file_size), many), p.block_size, *m))
        .collect();
    Ok(vec![sweep::plot(
        ("read", "read: throughput by block size (page cache)"),
        pts,
        env,
        |_| advice::RERUN_NOISE_MEMORY,
    )?])
}

/// Observations per series, in the order the series first appear.
pub fn advice(rows: &[&Measurement], env: &Environment) -> Vec<String> {
    let typed = with_params::<Params>(rows);
    let caches = env.data_caches();
    let many = many_files(&typed);
    let mut out: Vec<String> = series(&typed)
        .into_iter()
        .flat_map(|s| {
            sweep::advice(
                &format!("read ({})", label(s, many)),
                &points(&typed, s),
                &caches,
                s.0 != Method::Mmap,
            )
        })
        .collect();
    out.extend(evicting_schemes(env));
    out
}

/// What a DAMON scheme evicting the page cache means for reads here: these figures
/// are a cached file's (each sample checked resident), and a file left idle longer
/// than the scheme's age is read from the disk again.
fn evicting_schemes(env: &Environment) -> Vec<String> {
    let schemes = env.tuning.as_ref().map_or(&[][..], |t| &t.damon[..]);
    schemes
        .iter()
        .filter(|s| s.action == "pageout" && s.operations == "paddr")
        .map(|s| {
            format!(
                "this machine evicts idle page cache (DAMON: {}): a file left unread for longer is read from its disk again, not from the page cache these figures measured",
                s.describe()
            )
        })
        .collect()
}

/// The read buffer to use, per method and way the file entered the page cache: the
/// smallest block tied with the best. The summary row is the first `read` series.
pub fn recommend(rows: &[&Measurement], env: &Environment) -> Vec<Recommendation> {
    let typed = with_params::<Params>(rows);
    // What a cold read would add, where there can be one.
    let cold = match env.memory_fs() {
        Some(fs) => format!("{fs} has no disk: every read of its files is a page-cache read like these"),
        None => "reading from a cold disk is bound by the device, where larger requests matter more".into(),
    };
    let many = many_files(&typed);
    let mut headline = false;
    series(&typed)
        .into_iter()
        .filter_map(|s| {
            let (method, populate, file) = s;
            let first_read = method == Method::Read && !headline;
            let populated = populate.map_or("unknown", |p| p.name());
            let size = format_size(file);
            // A second file size's answers are their own ("buffer.read.write.64mib").
            let id = if many {
                advice::id(&["buffer", method.name(), populated, &size])
            } else {
                advice::id(&["buffer", method.name(), populated])
            };
            let r = sweep::recommend(
                Words {
                    id,
                    topic: "read loop buffer",
                    rerun_noise: advice::RERUN_NOISE_MEMORY,
                    scope: format!("{}, {size} file in the page cache", label(s, false)),
                    operation: first_read.then_some("reading a file sequentially"),
                    noun: if method == Method::Mmap { "copies out of the mapping" } else { "buffers" },
                    caveats: vec![
                        format!(
                            "page cache warm (verified with mincore); the file was {}",
                            populate.map_or("populated in a way this run did not record", |p| p.describe())
                        ),
                        cold.clone(),
                    ],
                },
                &points(&typed, s),
            );
            headline |= first_read && r.is_some();
            r
        })
        .collect()
}
