//! One case's workload: a transfer between two processes over a socket pair of one
//! family, method and chunk size; and whether the case can run here (zero copy, a
//! datagram's largest size, the file a sendfile or splice case sends).

use super::*;

/// One row: a transfer repeated once per sample.
pub(super) struct Row {
    pub(super) spec: Spec,
    pub(super) file: Option<Rc<rustix::fd::OwnedFd>>,
    pub(super) range: Option<(u64, u64)>,
    pub(super) verified: bool,
    pub(super) last: Vec<Outcome>,
    pub(super) granted: Option<(u64, u64)>,
    pub(super) writer_calls: u64,
    pub(super) reader_calls: u64,
    pub(super) sent: u64,
    pub(super) received: u64,
    pub(super) lost: u64,
    pub(super) chunks: u64,
    pub(super) copied: u64,
    pub(super) segments: u64,
    pub(super) pass_total: u64,
    /// A byte stream's connection, kept and warmed for its samples (a TCP row's for
    /// [`TCP_SAMPLES_PER_CONNECTION`] at a time); the warm-ups of all of them, and how
    /// many samples the current one has run and how many connections the row opened.
    pub(super) connection: Option<Connection>,
    pub(super) warmed: Option<Warmed>,
    pub(super) on_connection: usize,
    pub(super) connections: u32,
    /// A TCP row's samples per connection.
    pub(super) per_connection: usize,
    /// How long each connection's warm-up lasts at least ([`transfer::warm_least`]).
    pub(super) warm_least: (u64, usize),
}

/// A TCP row's samples per connection: each connection and its two processes settle
/// into a regime of their own (1 MiB chunks on one CPU, a bare C loop's connections:
/// 3.6–3.75 GB/s in 7 of 10, 4.35–4.8 in the others; sendfile at 256 KiB held 2.3 GB/s for
/// all 35 samples of one run's connection and 2.7–3.0 in others), so a row's samples
/// come from several, each warmed, and its median is the usual connection's.
pub(super) const TCP_SAMPLES_PER_CONNECTION: usize = 8;

/// A TCP row's samples per connection past the sweep's edges: such a row runs alone
/// for its few samples (6 in `run`), which on one connection gave that connection's
/// rate. sendfile at 4 MiB chunks, 10 idle runs of `run` (27 Nov 2026): 2.12–3.50 GB/s
/// on one connection each, while its 1 MiB row, 4–7 connections each, held 2.26–2.36.
pub(super) const EDGE_SAMPLES_PER_CONNECTION: usize = 2;

impl Workload for Row {
    fn pass_range(&self) -> Option<(u64, u64)> {
        self.range
    }

    /// A kept TCP connection runs differently back to back (see the trait). A Unix
    /// stream's rows moved 2–4% between twins either way (p95, idle), and under two
    /// `yes` loads kept in the rotation their two chunk answers changed in 5 of 10 twins
    /// in each of two sittings, against 0–2 in three sittings leaving it: they leave
    /// it at their target.
    fn stays_in_rotation(&self) -> bool {
        self.spec.shape.family == Family::Tcp
    }

    fn before_sample(&mut self) -> Result<()> {
        // Every byte checked once, outside the timing (timed passes check the stamps
        // and the last byte of every read).
        if !self.verified {
            let mut v = self.spec.clone();
            v.full_check = true;
            v.shape.total = v.shape.total.min((4 << 20).max(2 * v.shape.chunk));
            transfer::run(&v, self.file.as_deref(), &interrupt::requested)
                .map_err(|e| e.context("verification pass (every byte checked)"))?;
        }
        self.verified = true;
        if self.spec.shape.family == Family::Tcp && self.on_connection >= self.per_connection {
            // Dropped: its two processes are killed and reaped.
            self.connection = None;
        }
        if !self.spec.shape.family.datagram() && self.connection.is_none() {
            let mut c = Connection::open(&self.spec, self.file.as_deref())?;
            let w = c
                .warm(self.spec.shape.chunk, self.warm_least, &interrupt::requested)
                .map_err(|e| e.context("warming the connection"))?;
            self.warmed = Some(self.warmed.map_or(w, |a| a.and(w)));
            self.connection = Some(c);
            self.connections += 1;
            self.on_connection = 0;
        }
        self.on_connection += 1;
        Ok(())
    }

    fn run(&mut self, iters: u64) -> Result<()> {
        self.last.clear();
        let (transfers, spec) = match self.range {
            Some(_) => {
                let mut s = self.spec.clone();
                s.shape.total = iters.saturating_mul(s.shape.chunk);
                (1, s)
            }
            None => (iters, self.spec.clone()),
        };
        self.pass_total = spec.shape.total;
        for _ in 0..transfers {
            let o = match &mut self.connection {
                Some(c) => c.transfer(spec.shape.total, &interrupt::requested)?,
                None => transfer::run(&spec, self.file.as_deref(), &interrupt::requested)?,
            };
            // A requested buffer is granted the same every time; one left to the
            // kernel is autotuned (TCP sizes a new connection's send buffer from the
            // route's cached metrics), so it may start elsewhere on the next pair: the
            // first pair's is kept.
            let first = *self.granted.get_or_insert(o.granted);
            let t = &spec.tuning;
            if (t.sndbuf.is_some() && first.0 != o.granted.0)
                || (t.rcvbuf.is_some() && first.1 != o.granted.1)
            {
                bail!("the socket buffers granted changed between samples");
            }
            self.writer_calls += o.writer.0.calls;
            self.reader_calls += o.reader.0.calls;
            self.sent += o.writer.0.bytes;
            self.received += o.reader.0.bytes;
            self.lost += o.reader.0.extra[0];
            self.chunks += spec.shape.total.div_ceil(spec.shape.chunk);
            self.copied += o.writer.0.extra[0];
            self.segments += o.writer.0.extra[1];
            self.last.push(o);
        }
        Ok(())
    }

    fn external(&mut self) -> Option<External> {
        let mut w = crate::harness::rusage::RusageDelta::default();
        let mut r = w;
        let mut ns = 0u64;
        for o in &self.last {
            // UDP: the time per byte delivered (goodput), so a lost datagram counts as
            // time spent for nothing.
            let scale = o.writer.0.bytes as f64 / o.reader.0.bytes.max(1) as f64;
            ns += (o.elapsed_ns as f64 * scale) as u64;
            w.add(&o.writer.1);
            r.add(&o.reader.1);
        }
        Some(External {
            elapsed_ns: Some(ns),
            processes: vec![("writer".into(), w), ("reader".into(), r)],
        })
    }
}

pub(super) fn method_note(c: &Case, per_connection: usize) -> String {
    let reader = if c.family == Family::Udp {
        "the reader recv(2)s without blocking and polls between datagrams (a lost datagram would block a read forever), counting the lost ones; throughput is bytes delivered per second"
    } else {
        "the reader checks every stamp"
    };
    let how = match c.method {
        Method::WriteRead => "writer write(2)s stamped chunks, reader read(2)s them",
        Method::SendRecv => "writer send(2)s stamped chunks, reader recv(2)s them",
        Method::SendmsgRecvmsg => {
            "writer sendmsg(2)s each chunk in 4 iovecs, reader recvmsg(2)s into 4 iovecs"
        }
        Method::Sendfile => {
            "writer sendfile(2)s a page-cache file larger than the CPU caches (64 MiB at least, wrapping around it), reader read(2)s"
        }
        Method::Splice => {
            "writer splice(2)s a page-cache file larger than the CPU caches into a pipe (capacity up to the chunk, 1 MiB at most) and the pipe into the socket, reader read(2)s"
        }
        Method::Zerocopy => {
            "writer send(2)s with MSG_ZEROCOPY from rotating buffers, reaping completions from the error queue before reusing one (all reaped inside the time), reader recv(2)s"
        }
    };
    let kept = if c.family.datagram() {
        "a fresh pair and processes per sample".to_string()
    } else if c.family == Family::Tcp {
        format!(
            "a connection and its two processes kept for {per_connection} samples, then a new one (each connection settles into a rate of its own), each warmed first until its rate stopped rising (see derived.connections, derived.warmup_s; the start in derived.start_bytes_per_s)"
        )
    } else {
        "one connection and its two processes kept for every sample, warmed first until its rate stopped rising (see derived.warmup_s; its start in derived.start_bytes_per_s)".to_string()
    };
    format!(
        "{how}; {reader}; every byte checked on an untimed first pass; {kept}; time = release of both processes → reader's last byte"
    )
}

/// Why a case cannot run here, found before anything is measured: the kernel refuses
/// zerocopy on the family, a datagram too large, a method a datagram family has no
/// stream for, an OS without splice or sendfile to a socket.
pub(super) struct Support {
    pub(super) ipv6: bool,
    pub(super) pinning: Result<(), String>,
    pub(super) zerocopy: BTreeMap<(&'static str, bool), Result<(), String>>,
    pub(super) fits: BTreeMap<(&'static str, bool, u64, Option<u64>), bool>,
}

impl Support {
    pub(super) fn new() -> Support {
        Support {
            ipv6: sockets::has_ipv6_loopback(),
            pinning: crate::sys::affinity::pinning(),
            zerocopy: BTreeMap::new(),
            fits: BTreeMap::new(),
        }
    }

    pub(super) fn reason(&mut self, c: &Case, spec: &Spec) -> Option<String> {
        let v6 = c.ip == Some(Ip::V6);
        if v6 && !self.ipv6 {
            return Some("no IPv6 loopback (::1) here".into());
        }
        if c.placement != Placement::Any
            && let Err(e) = &self.pinning
        {
            return Some(e.clone());
        }
        if c.method == Method::Zerocopy {
            let kind = spec.kind();
            let r = self
                .zerocopy
                .entry((c.family.name(), v6))
                .or_insert_with(|| zerocopy_support(kind));
            if let Err(e) = r {
                return Some(e.clone());
            }
        }
        if c.family.datagram() {
            let kind = spec.kind();
            let tuning = spec.tuning;
            let fits = *self
                .fits
                .entry((c.family.name(), v6, c.chunk, tuning.sndbuf))
                .or_insert_with(|| datagram_fits(kind, &tuning, c.chunk));
            if !fits {
                return Some(format!(
                    "a datagram of {} is larger than the family's maximum here",
                    format_size(c.chunk)
                ));
            }
        }
        None
    }
}

/// Whether the kernel takes SO_ZEROCOPY on a `kind` socket.
pub(super) fn zerocopy_support(kind: sockets::Kind) -> Result<(), String> {
    let (w, _r) = sockets::pair(kind, &sockets::Tuning::default()).map_err(|e| e.to_string())?;
    sockets::enable_zerocopy(&w).map_err(|e| {
        if e.is_missing() {
            e.to_string()
        } else {
            format!("the kernel refuses SO_ZEROCOPY ({})", e.short())
        }
    })
}

/// Whether one datagram of `size` bytes goes through a fresh `kind` pair.
pub(super) fn datagram_fits(kind: sockets::Kind, t: &sockets::Tuning, size: u64) -> bool {
    let Ok((w, _r)) = sockets::pair(kind, t) else {
        return false;
    };
    let buf = vec![0u8; size as usize];
    matches!(sockets::send(&w, &buf), Ok(n) if n as u64 == size)
}

/// The page-cache file the file methods send, made once for every row of a run: at
/// least [`FILE_MIN`], twice the largest CPU cache and one largest chunk, stamped every
/// [`ends::FILE_GRID`] bytes; checked resident in the page cache.
pub(super) fn stream_file(ctx: &Context, o: &Options) -> Result<(Rc<rustix::fd::OwnedFd>, u64)> {
    let path = ctx.scratch.path().join(FILE_NAME);
    let llc = ctx.env.caches.iter().map(|c| c.size_bytes).max().unwrap_or(0);
    let largest = o.chunk_sizes.iter().copied().max().unwrap_or(0);
    let len = FILE_MIN
        .max(2 * llc)
        .max(largest)
        .next_multiple_of(ends::FILE_GRID);
    let bytes = ends::file_bytes(ends::FILE_GRID, len / ends::FILE_GRID, o.corrupt);
    ctx.scratch.ensure_space(len, "the socket probe's file")?;
    let fd = crate::sys::calls::open(
        &path,
        rustix::fs::OFlags::RDWR
            | rustix::fs::OFlags::CREATE
            | rustix::fs::OFlags::EXCL
            | rustix::fs::OFlags::CLOEXEC,
        0o600,
    )?;
    crate::sys::calls::pwrite_all(&fd, &bytes, 0)?;
    let (resident, pages) = crate::sys::mapping::file_residency(&fd, len)?;
    if resident < pages {
        bail!(
            "the socket probe's file is not in the page cache ({resident} of {pages} pages) right after it was written: memory is short"
        );
    }
    Ok((Rc::new(fd), len))
}

impl Row {
    /// A row not yet run: nothing sent, nothing verified.
    pub(super) fn new(spec: Spec, file: Option<Rc<rustix::fd::OwnedFd>>, range: Option<(u64, u64)>) -> Row {
        Row {
            spec,
            file,
            range,
            verified: false,
            last: Vec::new(),
            granted: None,
            writer_calls: 0,
            reader_calls: 0,
            sent: 0,
            received: 0,
            lost: 0,
            chunks: 0,
            copied: 0,
            segments: 0,
            pass_total: 0,
            connection: None,
            warmed: None,
            on_connection: 0,
            connections: 0,
            per_connection: TCP_SAMPLES_PER_CONNECTION,
            warm_least: (transfer::WARM_MIN_NS, transfer::WARM_WINDOWS),
        }
    }

    /// The row with its connections' warm-ups at least `least` ([`transfer::warm_least`]).
    pub(super) fn warmed_at_least(self, least: (u64, usize)) -> Row {
        Row {
            warm_least: least,
            ..self
        }
    }

    /// The row with a TCP connection renewed every `n` samples.
    pub(super) fn per_connection(self, n: usize) -> Row {
        Row {
            per_connection: n.max(1),
            ..self
        }
    }
}
