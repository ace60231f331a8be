//! Pipe tables (seed 002's shape): one per (method, placement), rows chunk size × pipe
//! capacity, with each process's CPU time and context switches per GiB; the
//! throughput-versus-chunk plot; and the advice: the chunk size to use, what a larger
//! pipe buys, and what splitting writer and reader across CPUs costs.

use super::{Derived, Method, Params, Placement};
use crate::advice::Recommendation;
use crate::advice::{self, Opt, Words};
use crate::harness::rusage::RusagePer;
use crate::names::Named;
use crate::present::Style;
use crate::present::grid::{ci_text, notes_and_warnings};
use crate::present::{Grid, Plot, distinct, plot, with_params};
use crate::results::Measurement;
use crate::units::{format_gbps, format_size, sig3};
use anyhow::Result;

type Typed<'a> = (&'a Measurement, Params);

fn per_process(m: &Measurement, role: &str, f: &dyn Fn(&RusagePer) -> String) -> String {
    m.rusage
        .processes
        .get(role)
        .map_or("-".into(), |p| f(&p.normalised))
}

const HEADERS: [&str; 11] = [
    "chunk",
    "pipe size",
    "GB/s (10^9 B/s)",
    "95% CI",
    "s/GiB",
    "CPU s/GiB writer / reader",
    "writer usr/sys s/GiB",
    "reader usr/sys s/GiB",
    "writer cs/GiB vol/invol",
    "reader cs/GiB vol/invol",
    "calls/GiB w/r",
];

/// Left out first when the terminal is narrow: the breakdowns the CPU column sums.
const OPTIONAL: [&str; 4] = [
    "calls/GiB w/r",
    "s/GiB",
    "reader usr/sys s/GiB",
    "writer usr/sys s/GiB",
];

fn row((m, p): &Typed) -> Vec<String> {
    let chunk = format_size(p.chunk_size);
    let cap = p
        .pipe_size
        .map_or_else(|| p.pipe_size_requested.clone(), format_size);
    if !m.is_ok() {
        let mut r = vec![
            chunk,
            cap,
            format!("unsupported: {}", m.reason.as_deref().unwrap_or("?")),
        ];
        r.resize(HEADERS.len(), "-".into());
        return r;
    }
    let cpu = |p: &RusagePer| format!("{} / {}", sig3(p.user_s), sig3(p.sys_s));
    let total = |p: &RusagePer| sig3(p.user_s + p.sys_s);
    let cs = |p: &RusagePer| format!("{} / {}", sig3(p.voluntary_cs), sig3(p.involuntary_cs));
    let d: Derived = m.derived_as();
    vec![
        chunk,
        cap,
        format_gbps(m.median),
        ci_text(m, &format_gbps),
        sig3((1u64 << 30) as f64 / m.median),
        format!(
            "{} / {}",
            per_process(m, "writer", &total),
            per_process(m, "reader", &total)
        ),
        per_process(m, "writer", &cpu),
        per_process(m, "reader", &cpu),
        per_process(m, "writer", &cs),
        per_process(m, "reader", &cs),
        format!(
            "{} / {}",
            sig3(d.writer_calls_per_gib.unwrap_or(f64::NAN)),
            sig3(d.reader_calls_per_gib.unwrap_or(f64::NAN))
        ),
    ]
}

/// One grid per (method, placement), in run order.
pub fn grids(rows: &[&Measurement], st: &Style) -> Vec<Grid> {
    let mut groups: Vec<(Method, Placement, Vec<Typed>)> = Vec::new();
    for t in with_params::<Params>(rows) {
        let (method, place) = (t.1.method, t.1.placement);
        match groups.iter_mut().find(|g| g.0 == method && g.1 == place) {
            Some(g) => g.2.push(t),
            None => groups.push((method, place, vec![t])),
        }
    }
    groups
        .into_iter()
        .map(|(method, place, ts)| {
            let first = &ts[0].1;
            let ms: Vec<&Measurement> = ts.iter().map(|t| t.0).collect();
            let mut g = Grid::numeric(
                format!(
                    "pipe: {}, placement {}, {} per sample",
                    method.name(),
                    place.name(),
                    totals(ts.iter().filter(|t| t.0.is_ok()).map(|t| t.1.total))
                ),
                &HEADERS,
                ts.iter().map(row).collect(),
            )
            .optional(&OPTIONAL)
            .best_by(|i| ts.get(i).filter(|t| t.0.is_ok()).map(|t| t.0.median));
            let list = |v: &[usize]| serde_json::to_string(v).unwrap_or_default();
            g.footnotes.push(format!(
                "writer on CPUs {}, reader on {}",
                list(&first.writer_cpus),
                list(&first.reader_cpus)
            ));
            g.footnotes.extend(notes_and_warnings(
                &ms,
                &|_| method.name().to_string(),
                st.verbose,
            ));
            g
        })
        .collect()
}

/// Throughput against chunk size, one line per method, placement and capacity, each
/// with its plateau and knee.
pub fn plots(rows: &[&Measurement]) -> Result<Vec<Plot>> {
    let series: Vec<(String, u64, &Measurement)> = with_params::<Params>(rows)
        .into_iter()
        .filter(|(m, _)| m.is_ok())
        .map(|(m, p)| {
            let cap = p
                .pipe_size
                .map_or("?".into(), |b| format_size(b).replace(' ', ""));
            (
                format!("{} {} pipe {cap}", p.method.name(), p.placement.name()),
                p.chunk_size,
                m,
            )
        })
        .collect();
    let spans = crate::probes::sweep::spans(&series, |m| {
        with_params::<Params>(&[m]).first().map_or(advice::RERUN_NOISE_SPLICE, |t| floor(t.1.method))
    });
    let pts: Vec<plot::Point> = series
        .into_iter()
        .map(|(s, b, m)| plot::Point::of(s, b, m))
        .collect();
    Ok(vec![Plot {
        probe: String::new(),
        name: "pipe".into(),
        title: "pipe: throughput against chunk size, per method, placement and capacity".into(),
        svg: plot::lines(
            "pipe: throughput by chunk size",
            "chunk size (log2 scale)",
            &pts,
            (&[], &spans),
        )?,
    }])
}

/// Advice per method, in the order the methods first appear.
pub fn advice(rows: &[&Measurement]) -> Vec<String> {
    let typed: Vec<Typed> = with_params::<Params>(rows)
        .into_iter()
        .filter(|t| t.0.is_ok())
        .collect();
    let methods = distinct(typed.iter().map(|t| t.1.method));
    methods
        .into_iter()
        .flat_map(|method| {
            let rows: Vec<&Typed> = typed.iter().filter(|t| t.1.method == method).collect();
            method_advice(method, &rows)
        })
        .collect()
}

fn best<'a, 'b>(rows: impl Iterator<Item = &'b &'a Typed<'a>>) -> Option<&'a Typed<'a>>
where
    'a: 'b,
{
    rows.copied()
        .max_by(|a, b| a.0.median.total_cmp(&b.0.median))
}

/// Advice for one method's measured rows.
fn method_advice(method: Method, rows: &[&Typed]) -> Vec<String> {
    let Some(top) = best(rows.iter()) else {
        return Vec::new();
    };
    let m = method.name();
    let tp = &top.1;
    let mut out = Vec::new();
    // 3. Placement: same CPU against split, at the best chunk and capacity.
    let at = |p: Placement| {
        rows.iter().copied().find(|t| {
            t.1.placement == p && t.1.pipe_size == tp.pipe_size && t.1.chunk_size == tp.chunk_size
        })
    };
    if let (Some(one), Some(two)) = (at(Placement::Same), at(Placement::Split)) {
        let r = two.0.median / one.0.median;
        let verdict = if r < 1.0 {
            format!("splitting costs {}%", sig3((1.0 - r) * 100.0))
        } else {
            format!("splitting gains ×{}", sig3(r))
        };
        out.push(format!(
            "pipe ({m}): writer and reader on different CPUs: {} GB/s against {} GB/s on one CPU at {} chunks, pipe {} ({verdict}){}",
            format_gbps(two.0.median),
            format_gbps(one.0.median),
            format_size(tp.chunk_size),
            tp.pipe_size.map_or("?".into(), format_size),
            at(Placement::Any).map_or(String::new(), |a| format!(
                "; unpinned {} GB/s",
                format_gbps(a.0.median)
            ))
        ));
    }
    out
}

/// The bytes per sample of a table's rows: one size, or the range fitted passes span.
fn totals(v: impl Iterator<Item = u64>) -> String {
    let (lo, hi) = v.fold((u64::MAX, 0), |(lo, hi), t| (lo.min(t), hi.max(t)));
    match (lo, hi) {
        (u64::MAX, _) => "nothing".into(),
        (lo, hi) if lo == hi => format_size(lo),
        (lo, hi) => format!("{}–{}", format_size(lo), format_size(hi)),
    }
}

/// The rerun floor of a method's rows: a write-read pass's, or a vmsplice-splice pass's,
/// which moves more ([`advice::RERUN_NOISE_SPLICE`]).
fn floor(method: Method) -> f64 {
    match method {
        Method::WriteRead => advice::RERUN_NOISE_PIPE,
        Method::VmspliceSplice => advice::RERUN_NOISE_SPLICE,
    }
}

/// A capacity as advice names it: "default (64 KiB)", "1 MiB", or the request.
fn cap_label(c: Option<u64>, req: &str) -> String {
    match c {
        Some(c) if req == "default" => format!("default ({})", format_size(c)),
        Some(c) => format_size(c),
        None => req.to_string(),
    }
}

/// Each requested capacity's row at `placement` and `chunk`, as an option costing the
/// capacity it was granted, with the capacity's request.
fn capacity_options<'a>(
    ok: &[&'a Typed<'a>],
    (placement, chunk): (Placement, u64),
    caps: &[String],
) -> Vec<(String, Opt<'a>, String)> {
    caps.iter()
        .filter_map(|c| {
            let b = ok.iter().find(|t| {
                t.1.placement == placement && t.1.pipe_size_requested == *c && t.1.chunk_size == chunk
            })?;
            let cost = b.1.pipe_size.unwrap_or(u64::MAX) as f64;
            Some((cap_label(b.1.pipe_size, c), Opt::new(b.0, cost), c.clone()))
        })
        .collect()
}

/// The one chunk size capacities are compared at: a chunk measured at every capacity,
/// the smallest of them inside every capacity's plateau (from the largest of their
/// plateaus' first sizes on), else the largest. Comparing each capacity at its own
/// best chunk compared the noise's picks (the best of a noisy curve moves from run to
/// run), and comparing at the default's knee compared a size where a larger pipe has
/// not reached its plateau yet whenever that knee fell at 64 KiB rather than 256 KiB:
/// equal there, ×1.12 at 256 KiB, in twin runs of one machine.
fn common_chunk(ok: &[&Typed], (method, placement): (Method, Placement), caps: &[String]) -> Option<u64> {
    let rows = |c: &String| -> Vec<(u64, &Measurement)> {
        let mut v: Vec<(u64, &Measurement)> = ok
            .iter()
            .filter(|t| t.1.placement == placement && t.1.pipe_size_requested == *c)
            .map(|t| (t.1.chunk_size, t.0))
            .collect();
        v.sort_unstable_by_key(|r| r.0);
        v
    };
    let first = caps.iter().find(|c| *c == "default").or(caps.first())?;
    let common: Vec<u64> = rows(first)
        .into_iter()
        .map(|r| r.0)
        .filter(|b| caps.iter().all(|c| rows(c).iter().any(|r| r.0 == *b)))
        .collect();
    let from = caps
        .iter()
        .map(|c| advice::knee_and_plateau(&rows(c), floor(method)).map(|(_, p)| p.from))
        .collect::<Option<Vec<u64>>>()
        .and_then(|f| f.into_iter().max());
    from.and_then(|k| common.iter().copied().find(|&b| b >= k))
        .or_else(|| common.last().copied())
}

/// Whether raising the pipe's capacity pays, for `method` at `placement` (every
/// capacity at one chunk size, [`common_chunk`]), and the capacity the chunk advice is
/// given at: the smallest of the recommended one and those tied with it, or the only
/// one measured.
fn capacity(method: Method, placement: Placement, ok: &[&Typed]) -> (Option<Recommendation>, String) {
    let caps = distinct(
        ok.iter()
            .filter(|t| t.1.placement == placement)
            .map(|t| t.1.pipe_size_requested.clone()),
    );
    let chunk = common_chunk(ok, (method, placement), &caps);
    let options = chunk.map_or(Vec::new(), |c| capacity_options(ok, (placement, c), &caps));
    let baseline = options.iter().find(|o| o.0.starts_with("default")).map(|o| o.0.clone());
    let named: Vec<(String, Opt)> = options.iter().map(|o| (o.0.clone(), o.1)).collect();
    let rec = (caps.len() >= 2 && options.len() >= 2)
        .then(|| {
            advice::methods(
                Words {
                    id: advice::id(&["capacity", method.name(), placement.name()]),
                    topic: "pipe capacity",
                    rerun_noise: floor(method),
                    scope: format!(
                        "{}, placement {}, every capacity at {} chunks",
                        method.name(),
                        placement.name(),
                        chunk.map_or("?".into(), format_size)
                    ),
                    operation: None,
                    noun: "",
                    caveats: vec![
                        "a capacity above the default needs F_SETPIPE_SZ (at most /proc/sys/fs/pipe-max-size for unprivileged processes)".into(),
                    ],
                },
                &named,
                baseline.as_deref(),
            )
        })
        .flatten();
    // The chunk advice is given at the smallest capacity tied with the best: a 1 MiB
    // pipe ×1.04–1.06 ahead of the default at 256 KiB chunks, the default tied, was
    // picked in some runs and not in others, and the chunk answer, given at the pick,
    // moved with it (its knee 256 KiB in a 1 MiB pipe, 64 KiB in the default).
    let chosen = match &rec {
        Some(Recommendation { choice: advice::Choice::Method { name, tied }, .. }) => options
            .iter()
            .filter(|o| &o.0 == name || tied.contains(&o.0))
            .min_by(|a, b| a.1.cost.total_cmp(&b.1.cost))
            .map(|o| o.2.clone()),
        _ => None,
    };
    (rec, chosen.or_else(|| caps.first().cloned()).unwrap_or_default())
}

/// Per method and placement: the chunk size to use at the smallest capacity tied with
/// the best, the recommended one or the default equal to it (the
/// capacity is a field of the recommendation, not part of its topic, so the topic's id
/// never depends on the capacity pick), and whether raising the pipe's capacity pays.
pub fn recommend(rows: &[&Measurement]) -> Vec<Recommendation> {
    let typed: Vec<Typed> = with_params::<Params>(rows);
    let methods = distinct(typed.iter().map(|t| t.1.method));
    let caveats = |p: &Params| {
        vec![format!(
            "{} per sample between two processes (placement {}); the reader checks every byte",
            format_size(p.total),
            p.placement.name()
        )]
    };
    let mut out = Vec::new();
    for method in methods {
        let ok: Vec<&Typed> = typed
            .iter()
            .filter(|t| t.1.method == method && t.0.is_ok())
            .collect();
        let placements = distinct(ok.iter().map(|t| t.1.placement));
        for (i, &placement) in placements.iter().enumerate() {
            let (cap_rec, cap) = capacity(method, placement, &ok);
            let at: Vec<&Typed> = ok
                .iter()
                .copied()
                .filter(|t| t.1.placement == placement && t.1.pipe_size_requested == cap)
                .collect();
            let chunks: Vec<(u64, &Measurement)> = at.iter().map(|t| (t.1.chunk_size, t.0)).collect();
            let Some(first) = at.first() else { continue };
            let cap_text = cap_label(first.1.pipe_size, &cap);
            let chunk = advice::sizes(
                Words {
                    id: advice::id(&["chunk", method.name(), placement.name()]),
                    topic: "pipe chunk",
                    rerun_noise: floor(method),
                    scope: format!(
                        "{}, placement {}, at the smallest tied capacity",
                        method.name(),
                        placement.name()
                    ),
                    operation: (method == Method::WriteRead && i == 0)
                        .then_some("moving data through a pipe"),
                    noun: "chunks",
                    caveats: caveats(&first.1),
                },
                &chunks,
                4096,
            );
            out.extend(chunk.map(|mut r| {
                // "in a default pipe", "in a 1 MiB pipe" (the default's size is in the
                // context): two lines at most in the summary at 100 columns.
                r.action = if cap_text.starts_with("default") {
                    format!("{} in a default pipe", r.action)
                } else {
                    format!("{} in a {cap_text} pipe", r.action)
                };
                r.context.insert("capacity".into(), cap_text.clone());
                // Given at a capacity of the capacity answer: no surer than that answer.
                if let Some(c) = &cap_rec
                    && c.confidence.level < r.confidence.level
                {
                    r.confidence.cap(
                        c.confidence.level,
                        format!(
                            "given at a capacity the capacity answer names ({cap_text}), itself at {} confidence",
                            c.confidence.level.name()
                        ),
                    );
                }
                r
            }));
            out.extend(cap_rec);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advice::testing::m;

    /// Twin runs' figures (GB/s, chunks 64 KiB … 4 MiB) for `method`: the default pipe
    /// reaches its plateau at 64 KiB, a 1 MiB pipe at 256 KiB, where it is ×1.12 faster.
    fn twin_figures(method: Method) -> Vec<(Measurement, Params)> {
        let chunks = [64u64 << 10, 256 << 10, 1 << 20, 4 << 20];
        let figures = [
            ("default", 65536u64, [4.88, 5.03, 4.98, 4.86]),
            ("1MiB", 1 << 20, [4.91, 5.61, 5.58, 5.41]),
        ];
        figures
            .iter()
            .flat_map(|&(cap, granted, gbps)| {
                chunks.iter().zip(gbps).map(move |(&chunk, g)| {
                    let p = Params {
                        method,
                        placement: Placement::Same,
                        chunk_size: chunk,
                        read_size: chunk,
                        pipe_size_requested: cap.into(),
                        total: 1 << 30,
                        writer_cpus: vec![0],
                        reader_cpus: vec![0],
                        pipe_size: Some(granted),
                    };
                    (m(&format!("{cap}/{chunk}"), g * 1e9, 0.005), p)
                })
            })
            .collect()
    }

    #[test]
    fn capacities_are_compared_at_the_smallest_chunk_inside_every_plateau() {
        let rows = twin_figures(Method::WriteRead);
        let typed: Vec<Typed> = rows.iter().map(|(m, p)| (m, p.clone())).collect();
        let ok: Vec<&Typed> = typed.iter().collect();
        let caps = vec!["default".to_string(), "1MiB".to_string()];
        let at = (Method::WriteRead, Placement::Same);
        assert_eq!(common_chunk(&ok, at, &caps), Some(256 << 10));
        let (rec, chosen) = capacity(Method::WriteRead, Placement::Same, &ok);
        let rec = rec.unwrap();
        assert!(rec.scope.ends_with("every capacity at 256 KiB chunks"), "{}", rec.scope);
        assert_eq!((rec.action.as_str(), chosen.as_str()), ("use 1 MiB", "1MiB"));
    }

    #[test]
    fn a_capacity_lead_is_judged_at_its_methods_rerun_floor() {
        // ×1.12 rules the default out for write-read rows (2.5% floor), and ties it for
        // vmsplice-splice rows, which move twice as much between runs: 1 MiB is chosen
        // in both, and a rerun choosing the default (tied) keeps that answer.
        let pick = |method| {
            let rows = twin_figures(method);
            let typed: Vec<Typed> = rows.iter().map(|(m, p)| (m, p.clone())).collect();
            let ok: Vec<&Typed> = typed.iter().collect();
            let (rec, chosen) = capacity(method, Placement::Same, &ok);
            let rec = rec.unwrap();
            (rec.choice, rec.confidence.level, chosen)
        };
        let method = |name: &str, tied: &[&str]| advice::Choice::Method {
            name: name.into(),
            tied: tied.iter().map(|t| t.to_string()).collect(),
        };
        let high = advice::Level::High;
        assert_eq!(
            pick(Method::WriteRead),
            (method("1 MiB", &[]), high, "1MiB".into())
        );
        // The chunk advice is then given at the default: the smallest capacity tied
        // with the best.
        assert_eq!(
            pick(Method::VmspliceSplice),
            (method("1 MiB", &["default (64 KiB)"]), high, "default".into())
        );
    }
}
