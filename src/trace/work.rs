//! The work a trace found: its processes' user CPU time less what tracing added to it
//! ([`super::overhead`]) plus its traced calls at this machine's measured cost.

use super::figures::Figures;
use super::overhead;
use super::price;
use super::profile::Profile;
use super::running::Tracing;
use crate::settings::Settings;
use serde::Serialize;

/// How long the run took under trace, and the work it would be here without tracing:
/// its processes' user CPU time less what tracing added to it ([`overhead`]) plus its
/// traced calls at this machine's measured cost. Waiting (a disk, the network, a sleep)
/// and untraced system calls are not in the estimate.
#[derive(Debug, Clone, Serialize)]
pub struct Work {
    pub traced_wall_s: f64,
    /// User CPU time without tracing, estimated: `user_correction` says how.
    pub user_cpu_s: f64,
    pub user_correction: overhead::Correction,
    pub priced_calls_s: f64,
    /// The program's own work between its timed calls, measured (eBPF: the time from
    /// one call's end to the next, less the call and the tracer's cost; 0 where calls
    /// are not timed). It is part of the user CPU time, which is counted in scheduler
    /// ticks: the work's user part is the larger of the two.
    pub own_work_s: f64,
    /// The context switches its pipes' ends made beyond the pipe probe's for the same
    /// bytes, priced at a switch's cost here ([`price::pipe_switches`]; eBPF only, which
    /// counts them).
    pub switches_s: f64,
    /// max(user CPU, own work) + priced calls + switches.
    pub estimate_s: f64,
    /// The tracer that ran.
    pub tracer: Tracing,
    /// What tracing puts in a timed pair's interval (eBPF), which the program's own
    /// work per call is found without ([`overhead::tracer_cost`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tracer_cost: Option<overhead::TracerCost>,
}

impl Work {
    /// The work of a trace that took `seconds`: `user` CPU seconds less what tracing
    /// added to `stopped` calls ([`overhead`]), plus the profile's calls priced with
    /// `figures`.
    pub(super) fn of(
        prof: &Profile,
        figures: &Figures,
        settings: &Settings,
        (user, stopped): (f64, u64),
        seconds: f64,
        (tracer, tracer_cost): (Tracing, Option<overhead::TracerCost>),
    ) -> Work {
        let (user_cpu, correction) = {
            let host = crate::sys::machine::hostname();
            // The store is opened only when the calls are enough to correct for.
            let mut store = (stopped >= overhead::MIN_CALLS)
                .then(|| settings.store_for_saving().ok().flatten())
                .flatten();
            overhead::correct(user, stopped, store.as_mut(), &host)
        };
        let priced = priced(prof, figures);
        let switches: f64 = (0..prof.targets.len())
            .filter_map(|t| price::pipe_switches(prof, figures, t).map(|(_, s)| s))
            .sum();
        let own = tracer_cost.map_or(0.0, |c| {
            super::findings::own_work_total(prof, figures, c.per_call_s)
        });
        Work {
            traced_wall_s: seconds,
            user_cpu_s: user_cpu,
            user_correction: correction,
            priced_calls_s: priced,
            own_work_s: own,
            switches_s: switches,
            estimate_s: user_cpu.max(own) + priced + switches,
            tracer,
            tracer_cost,
        }
    }
}

/// What the profile's calls would take here, at `figures`.
fn priced(prof: &Profile, figures: &Figures) -> f64 {
    prof.ops
        .iter()
        .filter_map(|(&(_, t, op), s)| {
            price::time_here(
                figures,
                &prof.targets[t],
                op,
                s,
                prof.pipe_sizes.contains_key(&t),
            )
        })
        .sum()
}
