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
    pub estimate_s: f64,
    /// The tracer that ran.
    pub tracer: Tracing,
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
        tracer: Tracing,
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
        Work {
            traced_wall_s: seconds,
            user_cpu_s: user_cpu,
            user_correction: correction,
            priced_calls_s: priced,
            estimate_s: user_cpu + priced,
            tracer,
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
