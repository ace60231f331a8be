//! Socket tables (pipe's shape): one per (family and address, placement), rows method ×
//! buffers × chunk, with ns per call and each process's CPU time and context switches
//! per GiB; the throughput-versus-chunk plot; and the advice: the chunk per family and
//! method, whether send/recv or sendmsg differ from write/read, whether sendfile or
//! splice from a file pays and from what size, what a larger buffer changes, and where
//! zerocopy breaks even.

use super::{Derived, Family, Method, Params, Placement};
use crate::advice::{self, Opt, Recommendation, Words};
use crate::harness::rusage::RusagePer;
use crate::names::Named;
use crate::present::Style;
use crate::present::grid::{ci_text, notes_and_warnings};
use crate::present::{Grid, Plot, distinct, plot, with_params};
use crate::results::Measurement;
use crate::units::{format_gbps, format_size, sig3};
use anyhow::Result;

type Typed<'a> = (&'a Measurement, Params);

const HEADERS: [&str; 10] = [
    "method",
    "chunk",
    "buffers snd / rcv",
    "GB/s (10^9 B/s)",
    "95% CI",
    "ns/call w / r",
    "CPU s/GiB w / r",
    "writer cs/GiB vol/invol",
    "reader cs/GiB vol/invol",
    "notes",
];

const OPTIONAL: [&str; 3] = [
    "reader cs/GiB vol/invol",
    "writer cs/GiB vol/invol",
    "ns/call w / r",
];

fn per_process(m: &Measurement, role: &str, f: &dyn Fn(&RusagePer) -> String) -> String {
    m.rusage
        .processes
        .get(role)
        .map_or("-".into(), |p| f(&p.normalised))
}

/// The granted size ("208 KiB"), marked when asked for ("8 MiB*"), or the request
/// where nothing was granted (an unsupported row).
fn buffer_text(req: &str, granted: Option<u64>) -> String {
    match granted {
        Some(g) if req == "default" => format_size(g),
        Some(g) => format!("{}*", format_size(g)),
        None => req.to_string(),
    }
}

fn row((m, p): &Typed) -> Vec<String> {
    let method = match p.nodelay {
        Some(true) => format!("{} nodelay", p.method.name()),
        _ => p.method.name().to_string(),
    };
    let buffers = format!(
        "{} / {}",
        buffer_text(&p.sndbuf_requested, p.sndbuf),
        buffer_text(&p.rcvbuf_requested, p.rcvbuf)
    );
    let chunk = format_size(p.chunk_size);
    if !m.is_ok() {
        let mut r = vec![
            method,
            chunk,
            buffers,
            format!("unsupported: {}", m.reason.as_deref().unwrap_or("?")),
        ];
        r.resize(HEADERS.len(), "-".into());
        return r;
    }
    let d: Derived = m.derived_as();
    let total = |p: &RusagePer| sig3(p.user_s + p.sys_s);
    let cs = |p: &RusagePer| format!("{} / {}", sig3(p.voluntary_cs), sig3(p.involuntary_cs));
    let ns = |v: Option<f64>| v.map_or("-".into(), sig3);
    let mut notes = Vec::new();
    if let Some(s) = d.segments_per_mib {
        notes.push(format!("{} segments/MiB", sig3(s)));
    }
    if let Some(l) = d.lost_share {
        notes.push(format!("{}% lost", sig3(l * 100.0)));
    }
    if let Some(c) = d.zerocopy_copied_share {
        notes.push(format!("{}% copied", sig3(c * 100.0)));
    }
    vec![
        method,
        chunk,
        buffers,
        format_gbps(m.median),
        ci_text(m, &format_gbps),
        format!(
            "{} / {}",
            ns(d.writer_ns_per_call),
            ns(d.reader_ns_per_call)
        ),
        format!(
            "{} / {}",
            per_process(m, "writer", &total),
            per_process(m, "reader", &total)
        ),
        per_process(m, "writer", &cs),
        per_process(m, "reader", &cs),
        if notes.is_empty() {
            "-".into()
        } else {
            notes.join(", ")
        },
    ]
}

/// The family as tables and advice name it: "tcp", "tcp ::1".
fn family_label(p: &Params) -> String {
    match p.address.as_deref() {
        Some("::1") => format!("{} ::1", p.family.name()),
        _ => p.family.name().to_string(),
    }
}

/// One grid per (family and address, placement), in run order.
pub fn grids(rows: &[&Measurement], st: &Style) -> Vec<Grid> {
    let mut groups: Vec<(String, Placement, Vec<Typed>)> = Vec::new();
    for t in with_params::<Params>(rows) {
        let (fam, place) = (family_label(&t.1), t.1.placement);
        match groups.iter_mut().find(|g| g.0 == fam && g.1 == place) {
            Some(g) => g.2.push(t),
            None => groups.push((fam, place, vec![t])),
        }
    }
    groups
        .into_iter()
        .map(|(fam, place, ts)| {
            let first = &ts[0].1;
            let ms: Vec<&Measurement> = ts.iter().map(|t| t.0).collect();
            let mut g = Grid::numeric(
                format!("socket: {fam}, placement {}", place.name()),
                &HEADERS,
                ts.iter().map(row).collect(),
            )
            .optional(&OPTIONAL)
            .best_by(|i| ts.get(i).filter(|t| t.0.is_ok()).map(|t| t.0.median));
            let list = |v: &[usize]| serde_json::to_string(v).unwrap_or_default();
            g.footnotes.push(format!(
                "writer on CPUs {}, reader on {}; loopback only, a fresh connection per sample (set-up outside the time); buffers as the kernel granted them (Linux reports twice the request), * = asked for with SO_SNDBUF/SO_RCVBUF",
                list(&first.writer_cpus),
                list(&first.reader_cpus)
            ));
            g.footnotes.extend(notes_and_warnings(
                &ms,
                &|m| {
                    with_params::<Params>(&[m])
                        .first()
                        .map_or(String::new(), |t| t.1.method.name().to_string())
                },
                st.verbose,
            ));
            g
        })
        .collect()
}

/// The rerun floor of a family's rows: a TCP stream's own, the pass floor for the rest.
/// Also what `trace` asks of larger buffers before it names them.
pub fn floor(family: Family) -> f64 {
    if family == Family::Tcp {
        advice::RERUN_NOISE_TCP
    } else {
        advice::RERUN_NOISE_PASS
    }
}

/// Throughput against chunk size, one line per family and method (kernel buffers),
/// each with its plateau and knee.
pub fn plots(rows: &[&Measurement]) -> Result<Vec<Plot>> {
    let series: Vec<(String, u64, &Measurement)> = with_params::<Params>(rows)
        .into_iter()
        .filter(|(m, p)| m.is_ok() && p.is_base())
        .map(|(m, p)| {
            (
                format!("{} {} {}", p.family.name(), p.method.name(), p.placement.name()),
                p.chunk_size,
                m,
            )
        })
        .collect();
    let spans = crate::probes::sweep::spans(&series, |m| {
        with_params::<Params>(&[m])
            .first()
            .map_or(advice::RERUN_NOISE_PASS, |(_, p)| floor(p.family))
    });
    let pts: Vec<plot::Point> = series
        .into_iter()
        .map(|(s, b, m)| plot::Point::of(s, b, m))
        .collect();
    Ok(vec![Plot {
        probe: String::new(),
        name: "socket".into(),
        title: "socket: throughput against chunk size, per family, method and placement (kernel buffers)".into(),
        svg: plot::lines(
            "socket: throughput by chunk size",
            "chunk size (log2 scale)",
            &pts,
            (&[], &spans),
        )?,
    }])
}

fn best<'a>(rows: impl Iterator<Item = &'a Typed<'a>>) -> Option<&'a Typed<'a>> {
    rows.max_by(|a, b| a.0.median.total_cmp(&b.0.median))
}

/// The base rows (kernel buffers, Nagle, 127.0.0.1) measured, per (family, placement).
fn base<'a>(typed: &'a [Typed<'a>]) -> Vec<&'a Typed<'a>> {
    typed
        .iter()
        .filter(|t| t.0.is_ok() && t.1.is_base())
        .collect()
}

/// The operation a family's write-read chunk answers, as the summary names it.
fn operation(family: Family) -> &'static str {
    match family {
        Family::Unix => "moving data through a unix socket",
        Family::Tcp => "moving data through a TCP socket",
        Family::UnixDgram => "sending unix datagrams",
        Family::Udp => "sending UDP datagrams",
    }
}

/// The work a method does per MiB, to break ties: calls per chunk and copies through
/// the CPU (the reader's read is one copy in every method).
fn work(method: Method, chunk: u64) -> advice::Work {
    let per_mib = ((1u64 << 20) as f64 / chunk as f64).max(1.0);
    let (calls, copies) = match method {
        Method::WriteRead | Method::SendRecv | Method::SendmsgRecvmsg => (2.0, 2.0),
        Method::Sendfile => (2.0, 1.0),
        Method::Splice => (3.0, 1.0),
        Method::Zerocopy => (2.0, 1.0),
    };
    advice::Work::calls(calls * per_mib, copies, "MiB")
}

/// One series' chunks, unsupported ones too: a datagram over the family's maximum says
/// where the sweep ends, so its largest size is no edge.
fn chunk_points<'a>(typed: &[Typed<'a>], series: (Family, Placement, Method)) -> Vec<(u64, &'a Measurement)> {
    typed
        .iter()
        .filter(|t| t.1.is_base() && (t.1.family, t.1.placement, t.1.method) == series)
        .map(|t| (t.1.chunk_size, t.0))
        .collect()
}

/// Per (family, placement): the chunk per method; which method, each at its best chunk;
/// and whether a larger buffer pays (write-read, each buffer at its best chunk).
pub fn recommend(rows: &[&Measurement]) -> Vec<Recommendation> {
    let typed: Vec<Typed> = with_params::<Params>(rows);
    let ok = base(&typed);
    let mut out = Vec::new();
    let caveats = |p: &Params| {
        vec![format!(
            "loopback {} between two processes (placement {}), kernel buffers; the reader checks every stamp",
            p.family.name(),
            p.placement.name()
        )]
    };
    for family in distinct(ok.iter().map(|t| t.1.family)) {
        let of: Vec<&Typed> = ok.iter().copied().filter(|t| t.1.family == family).collect();
        for placement in distinct(of.iter().map(|t| t.1.placement)) {
            let at: Vec<&Typed> = of
                .iter()
                .copied()
                .filter(|t| t.1.placement == placement)
                .collect();
            let mut memory: Vec<(String, Opt)> = Vec::new();
            let mut file: Vec<(String, Opt)> = Vec::new();
            for method in distinct(at.iter().map(|t| t.1.method)) {
                let rows: Vec<&Typed> = at.iter().copied().filter(|t| t.1.method == method).collect();
                let points = chunk_points(&typed, (family, placement, method));
                out.extend(advice::sizes(
                    Words {
                        id: advice::id(&["chunk", family.name(), method.name(), placement.name()]),
                        topic: "socket chunk",
                        rerun_noise: floor(family),
                        scope: format!("{} {}, placement {}", family.name(), method.name(), placement.name()),
                        operation: (method == Method::WriteRead).then_some(operation(family)),
                        noun: "chunks",
                        caveats: caveats(&rows[0].1),
                    },
                    &points,
                    4096,
                ));
                if let Some(b) = best(rows.iter().copied()) {
                    let mut o = Opt::new(b.0, 0.0);
                    o.work = work(method, b.1.chunk_size);
                    let to = if method.from_file() { &mut file } else { &mut memory };
                    to.push((method.name().to_string(), o));
                }
            }
            // Sending from memory and sending a file are different questions: a program
            // that reads the file first pays that read too (the observations compare
            // sendfile with write-read by chunk).
            for (kind, options, baseline, caveat) in [
                ("memory", &memory, Method::WriteRead, "each method sends from memory: the same bytes, other calls"),
                ("file", &file, Method::Sendfile, "each method sends a page-cache file larger than the CPU caches"),
            ] {
                if options.len() < 2 {
                    continue;
                }
                out.extend(advice::methods(
                    Words {
                        id: advice::id(&["method", kind, family.name(), placement.name()]),
                        topic: if kind == "memory" {
                            "socket method (from memory)"
                        } else {
                            "socket method (from a file)"
                        },
                        rerun_noise: floor(family),
                        scope: format!("{}, placement {}, each method at its best chunk", family.name(), placement.name()),
                        operation: None,
                        noun: "",
                        caveats: vec![caveat.into()],
                    },
                    options,
                    Some(baseline.name()),
                ));
            }
        }
        out.extend(buffer_choice(&typed, family));
    }
    out
}

/// Whether asking for larger socket buffers pays for `family` (write-read at one CPU
/// placement, each buffer setting at its best chunk).
fn buffer_choice(typed: &[Typed], family: Family) -> Option<Recommendation> {
    let rows: Vec<&Typed> = typed
        .iter()
        .filter(|t| {
            t.0.is_ok()
                && t.1.family == family
                && t.1.method == Method::WriteRead
                && t.1.nodelay != Some(true)
                && t.1.address.as_deref() != Some("::1")
        })
        .collect();
    let placement = rows.first()?.1.placement;
    let settings = distinct(
        rows.iter()
            .filter(|t| t.1.placement == placement)
            .map(|t| (t.1.sndbuf_requested.clone(), t.1.rcvbuf_requested.clone())),
    );
    if settings.len() < 2 {
        return None;
    }
    let mut options: Vec<(String, Opt)> = Vec::new();
    for (s, r) in &settings {
        let b = best(rows.iter().copied().filter(|t| {
            t.1.placement == placement && &t.1.sndbuf_requested == s && &t.1.rcvbuf_requested == r
        }))?;
        let name = if s == "default" && r == "default" {
            "kernel default".to_string()
        } else {
            format!(
                "SO_SNDBUF {} / SO_RCVBUF {}",
                buffer_text(s, b.1.sndbuf),
                buffer_text(r, b.1.rcvbuf)
            )
        };
        let cost = (b.1.sndbuf.unwrap_or(0) + b.1.rcvbuf.unwrap_or(0)) as f64
            + if s == "default" && r == "default" { 0.0 } else { 1.0 };
        options.push((name, Opt::new(b.0, cost)));
    }
    advice::methods(
        Words {
            id: advice::id(&["buffer", family.name(), placement.name()]),
            topic: "socket buffer",
            rerun_noise: floor(family),
            scope: format!("{} write-read, placement {}, each setting at its best chunk", family.name(), placement.name()),
            operation: None,
            noun: "",
            caveats: vec![
                "setting SO_RCVBUF turns TCP's receive-buffer autotuning off for that socket; unprivileged requests are capped by net.core.wmem_max / rmem_max".into(),
            ],
        },
        &options,
        Some("kernel default"),
    )
}

/// The smallest chunk from which `a` is at least as fast as `b` at every larger
/// measured chunk (both base rows of one family and placement), with the figures there.
fn break_even<'a>(rows: &[&'a Typed<'a>], a: Method, b: Method) -> Option<(u64, f64, f64)> {
    let at = |m: Method, c: u64| {
        rows.iter()
            .find(|t| t.1.method == m && t.1.chunk_size == c)
            .map(|t| t.0.median)
    };
    let mut chunks: Vec<u64> = distinct(rows.iter().map(|t| t.1.chunk_size));
    chunks.sort_unstable();
    let mut found = None;
    for &c in chunks.iter().rev() {
        match (at(a, c), at(b, c)) {
            (Some(x), Some(y)) if x >= y => found = Some((c, x, y)),
            (Some(_), Some(_)) => break,
            _ => {}
        }
    }
    found
}

/// Observations: where sendfile and zerocopy break even against write-read and
/// send-recv, what TCP_NODELAY does to small chunks, UDP's losses.
pub fn advice(rows: &[&Measurement]) -> Vec<String> {
    let typed: Vec<Typed> = with_params::<Params>(rows);
    let ok = base(&typed);
    let mut out = Vec::new();
    for family in distinct(ok.iter().map(|t| t.1.family)) {
        let of: Vec<&Typed> = ok.iter().copied().filter(|t| t.1.family == family).collect();
        let f = family.name();
        for (a, b) in [
            (Method::Sendfile, Method::WriteRead),
            (Method::Splice, Method::WriteRead),
            (Method::Zerocopy, Method::SendRecv),
        ] {
            let has = |m: Method| of.iter().any(|t| t.1.method == m);
            if !has(a) || !has(b) {
                continue;
            }
            out.push(match break_even(&of, a, b) {
                Some((c, x, y)) => format!(
                    "socket ({f}): {} is at least as fast as {} from {} chunks up ({} against {} GB/s there)",
                    a.name(),
                    b.name(),
                    format_size(c),
                    format_gbps(x),
                    format_gbps(y)
                ),
                None => {
                    let copied = of
                        .iter()
                        .filter(|t| t.1.method == Method::Zerocopy)
                        .filter_map(|t| t.0.derived_as::<Derived>().zerocopy_copied_share)
                        .fold(0.0f64, f64::max);
                    let top = of.iter().map(|t| t.1.chunk_size).max().unwrap_or(0);
                    let at = |m: Method| {
                        of.iter()
                            .find(|t| t.1.method == m && t.1.chunk_size == top)
                            .map_or("-".into(), |t| format_gbps(t.0.median))
                    };
                    format!(
                        "socket ({f}): {} is slower than {} up to the largest chunk measured ({} against {} GB/s at {}){}",
                        a.name(),
                        b.name(),
                        at(a),
                        at(b),
                        format_size(top),
                        if a == Method::Zerocopy && copied > 0.5 {
                            format!(
                                " (the kernel copied {}% of the zerocopy sends: loopback delivers them by copy, so zerocopy only adds its completions here; it pays on a real NIC)",
                                sig3(copied * 100.0)
                            )
                        } else {
                            String::new()
                        }
                    )
                }
            });
        }
        if family == Family::Udp {
            let worst = of
                .iter()
                .filter_map(|t| Some((t.0.derived_as::<Derived>().lost_share?, t.1.chunk_size)))
                .max_by(|a, b| a.0.total_cmp(&b.0));
            if let Some((l, c)) = worst.filter(|w| w.0 > 0.0) {
                out.push(format!(
                    "socket (udp): the reader lost up to {}% of the datagrams (at {} chunks): UDP drops what the receive buffer cannot hold, and its figures are bytes delivered",
                    sig3(l * 100.0),
                    format_size(c)
                ));
            }
        }
    }
    out.extend(nodelay(&typed));
    out
}

/// TCP_NODELAY against Nagle at each small chunk measured with both.
fn nodelay(typed: &[Typed]) -> Vec<String> {
    let tcp: Vec<&Typed> = typed
        .iter()
        .filter(|t| t.0.is_ok() && t.1.family == Family::Tcp && t.1.method == Method::WriteRead)
        .filter(|t| t.1.sndbuf_requested == "default" && t.1.address.as_deref() != Some("::1"))
        .collect();
    let pairs: Vec<String> = tcp
        .iter()
        .filter(|t| t.1.nodelay == Some(true))
        .filter_map(|on| {
            let off = tcp.iter().find(|t| {
                t.1.nodelay == Some(false)
                    && t.1.chunk_size == on.1.chunk_size
                    && t.1.placement == on.1.placement
            })?;
            Some(format!(
                "{}: ×{}",
                format_size(on.1.chunk_size),
                sig3(on.0.median / off.0.median)
            ))
        })
        .collect();
    if pairs.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "socket (tcp): TCP_NODELAY against Nagle's algorithm, throughput ratio per chunk: {} (Nagle coalesces small writes; NODELAY sends each at once: it trades throughput for latency)",
        pairs.join(", ")
    )]
}
