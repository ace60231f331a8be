//! Where a trace's figures come from: the runs `--figures` names, else this host's
//! saved figures (a digest in the store, or the newest runs), else a quick measurement
//! of the few cases pricing needs. The saved ones are read on a thread while the
//! command starts ([`Pending`]): the command is held at its exec until they are in,
//! so it never runs when they cannot be had.

use super::figures::Figures;
use crate::results::Run;
use crate::results::store::{Evidence, Saved, Stamp, Store};
use crate::settings::Settings;
use anyhow::Result;
use std::collections::BTreeMap;

/// The probes a trace prices with.
const WANTED: [&str; 6] = ["read", "write", "pipe", "socket", "syscalls", "copy"];

/// The digest's version: a change to its layout or to how the figures are chosen
/// (`Figures::from_runs`, the probes' readers) must bump it, which makes older
/// digests unread (and then replaced).
const FIGURES_DIGEST: u32 = 1;

/// What the store gave.
enum Found {
    /// Figures enough to price with.
    Enough(Box<Figures>),
    /// Not enough: the runs that gave some, oldest first (a measurement adds to them).
    Short(Vec<(i64, Run)>),
}

/// A trace's figures: being read on a thread, read, or to be measured first.
pub(super) struct Pending(State);

enum State {
    Reading(std::thread::JoinHandle<Result<Found>>),
    /// (figures, the id of the run measured for them).
    Ready(Box<Figures>, Option<i64>),
    /// None saved are enough: measured before the command runs.
    Short(Vec<(i64, Run)>),
    /// Reading them failed: the trace stops before the command runs.
    Failed(anyhow::Error),
}

impl Pending {
    /// The figures for a trace: the runs `figures` names (resolved now), else this
    /// host's saved ones, read on a thread from now on.
    pub(super) fn start(figures: &[String], settings: &Settings) -> Result<Pending> {
        if !figures.is_empty() {
            let mut runs = Vec::new();
            for spec in figures {
                let named = crate::probes::resolve(settings, spec)?;
                runs.push((named.id.unwrap_or(0), named.run));
            }
            return Ok(Pending(State::Ready(
                Box::new(Figures::from_runs(&runs)),
                None,
            )));
        }
        let path = settings.store_path()?;
        if let Some(f) = FiguresDigest::beside(&path) {
            return Ok(Pending(State::Ready(Box::new(f), None)));
        }
        let reading = std::thread::Builder::new()
            .name("figures".into())
            .spawn(move || saved(&path))
            .map_err(|e| anyhow::anyhow!("trace: cannot start a thread: {e}"))?;
        Ok(Pending(State::Reading(reading)))
    }

    fn take_state(&mut self) -> State {
        std::mem::replace(&mut self.0, State::Short(Vec::new()))
    }

    /// Waits for the reading; true when the figures are there (the command may start).
    pub(super) fn ready(&mut self) -> bool {
        if let State::Reading(_) = self.0 {
            let State::Reading(h) = self.take_state() else {
                unreachable!("matched above")
            };
            self.0 = match h.join() {
                Ok(Ok(Found::Enough(f))) => State::Ready(f, None),
                Ok(Ok(Found::Short(runs))) => State::Short(runs),
                Ok(Err(e)) => State::Failed(e),
                Err(_) => State::Failed(anyhow::anyhow!("reading the saved figures panicked")),
            };
        }
        matches!(self.0, State::Ready(..))
    }

    /// The figures to price a command with that has run: those read, or none when the
    /// command ended before its exec (then nothing waited for them).
    pub(super) fn figures(&mut self) -> Result<&Figures> {
        if !self.ready() {
            if let State::Failed(e) = self.take_state() {
                return Err(e);
            }
            self.0 = State::Ready(Box::default(), None);
        }
        match &self.0 {
            State::Ready(f, _) => Ok(f),
            _ => unreachable!("ready or replaced above"),
        }
    }

    /// The figures, measured first when none saved were enough (no eBPF program may
    /// be loaded then: its program on every system call would weigh on the figures):
    /// (figures, run measured).
    fn get(mut self, settings: &Settings) -> Result<(Figures, Option<i64>)> {
        self.ready();
        match self.take_state() {
            State::Ready(f, id) => Ok((*f, id)),
            State::Short(runs) => measure(settings, runs),
            State::Failed(e) => Err(e),
            State::Reading(_) => unreachable!("ready() joined the reading"),
        }
    }

    /// Measures the figures when none saved were enough (see [`Pending::get`]); after
    /// it, they are ready.
    pub(super) fn measure_if_short(&mut self, settings: &Settings) -> Result<()> {
        let taken = Pending(self.take_state());
        let (f, id) = taken.get(settings)?;
        self.0 = State::Ready(Box::new(f), id);
        Ok(())
    }

    /// The figures read or measured, and the run measured for them; none when they
    /// never were.
    pub(super) fn take(&mut self) -> (Figures, Option<i64>) {
        match self.take_state() {
            State::Ready(f, id) => (*f, id),
            _ => (Figures::default(), None),
        }
    }
}

impl Drop for Pending {
    /// A reading still under way is waited for (it may be saving its digest).
    fn drop(&mut self) {
        if let State::Reading(h) = self.take_state() {
            drop(h.join());
        }
    }
}

/// Trace's figures as a digest in the store: the few KB pricing takes, saved under
/// the ids of the runs they were chosen from, so a trace reads them in place of whole
/// runs (one run's document is about 130 KB) until a run is saved or removed.
struct FiguresDigest {
    name: String,
    source: String,
}

impl FiguresDigest {
    fn name(host: &str) -> String {
        format!("trace figures on {host}")
    }

    fn of(host: &str, saved: &Saved) -> FiguresDigest {
        let ids: Vec<String> = saved.runs.iter().map(|r| r.id.to_string()).collect();
        FiguresDigest {
            name: FiguresDigest::name(host),
            source: format!("{FIGURES_DIGEST}:{}", ids.join(",")),
        }
    }

    /// The figures a digest's `body` holds, when they are enough.
    fn parse(body: &str) -> Option<Figures> {
        let (mut f, ci): (Figures, BTreeMap<String, [f64; 2]>) = serde_json::from_str(body).ok()?;
        f.calls_ci = ci;
        f.enough().then_some(f)
    }

    /// The saved figures, when they were derived from these runs and are enough:
    /// (figures, the digest's body).
    fn read(&self, saved: &Saved) -> Option<(Figures, String)> {
        let body = saved.digest(&self.name, &self.source).ok()??;
        FiguresDigest::parse(&body).map(|f| (f, body))
    }

    /// This host's figures kept beside the store at `path` (its database unopened),
    /// while the store is as it was when they were read from it.
    fn beside(path: &std::path::Path) -> Option<Figures> {
        let name = FiguresDigest::name(&crate::sys::machine::hostname());
        let (source, body) = Store::digest_beside(path, &name, &Stamp::of(path))?;
        let version = source.split_once(':')?.0;
        (version == FIGURES_DIGEST.to_string())
            .then(|| FiguresDigest::parse(&body))
            .flatten()
    }

    /// Saves `f` for the next trace. A store that cannot be written (read-only) only
    /// loses the shortcut: the next trace reads the runs again.
    fn write(&self, path: &std::path::Path, f: &Figures) {
        let saved = serde_json::to_string(&(f, &f.calls_ci))
            .map_err(anyhow::Error::from)
            .and_then(|body| Store::open(path)?.save_digest(&self.name, &self.source, &body));
        // Deliberately quiet: the trace itself is whole without it.
        drop(saved);
    }
}

/// This host's saved figures in the store at `path`: the digest when it is current,
/// else each probe from the newest run that measured it.
fn saved(path: &std::path::Path) -> Result<Found> {
    let host = crate::sys::machine::hostname();
    let evidence = Evidence::of(&host, &WANTED, 40);
    // Before the database is opened: the digest is kept beside it only when nothing
    // changed the store while it was read.
    let stamp = Stamp::of(path);
    let saved = Store::evidence_at(path, &evidence)?;
    let digest = FiguresDigest::of(&host, &saved);
    if let Some((f, body)) = digest.read(&saved) {
        drop(saved);
        Store::keep_digest_beside(path, &digest.name, &stamp, &digest.source, &body);
        return Ok(Found::Enough(Box::new(f)));
    }
    // Newest first, only the runs that give a probe not yet found: the figures take
    // each probe from the newest run that measured it (Figures::from_runs), so the
    // older runs' documents need not be read.
    let mut runs: Vec<(i64, Run)> = Vec::new();
    let mut needed: Vec<&str> = WANTED.to_vec();
    for r in &saved.runs {
        if !r.probes.iter().any(|p| needed.contains(&p.as_str())) {
            continue;
        }
        let run = saved.load(r.id)?;
        needed.retain(|p| !run.of_probe(p).any(|m| m.is_ok()));
        runs.push((r.id, run));
        if needed.is_empty() {
            break;
        }
    }
    runs.reverse();
    let f = Figures::from_runs(&runs);
    if f.enough() {
        digest.write(path, &f);
        return Ok(Found::Enough(Box::new(f)));
    }
    Ok(Found::Short(runs))
}

/// A quick measurement of the few cases pricing needs, added to `runs` (saved too,
/// unless --no-save): (figures, run measured).
fn measure(settings: &Settings, mut runs: Vec<(i64, Run)>) -> Result<(Figures, Option<i64>)> {
    let probes = crate::probes::for_pricing();
    let scale = crate::settings::Scale::Quick;
    // As short as pricing needs: unless --time-limit says otherwise, the rows' least
    // (their warm-up and minimum samples), shared out as any time limit is.
    let least = crate::session::least_seconds_of(settings, &probes);
    let settings = &Settings {
        time_limit: settings
            .time_limit
            .or(Some(std::time::Duration::from_secs_f64(least))),
        time_limit_by: settings
            .time_limit
            .is_none()
            .then_some("trace's first figures: each row's warm-up and minimum samples"),
        ..settings.clone()
    };
    let seconds = crate::session::expected_seconds(settings, &probes, scale, "trace");
    crate::progress::note(&format!(
        "no saved read and syscalls figures on this host: measuring the few cases pricing needs first (about {})",
        crate::units::format_minutes(seconds)
    ));
    let mut store = settings.store_for_saving()?;
    let run = crate::session::run_probes(settings, probes, "trace", scale)?;
    let id = crate::session::save(store.as_mut(), &run)?;
    runs.push((id.unwrap_or(0), run));
    Ok((Figures::from_runs(&runs), Some(id.unwrap_or(0))))
}
