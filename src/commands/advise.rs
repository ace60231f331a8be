//! `ioprobe advise`: what to do on each machine, from the newest saved evidence.

use crate::advice::{advice_of_run, advise_from_store, render_advice};
use crate::settings::Settings;
use anyhow::Result;

/// `ioprobe advise`: from the newest saved evidence, or from a run measured first when
/// nothing is saved yet.
pub fn advise(settings: &Settings) -> Result<String> {
    let blocks = match advise_from_store(settings)? {
        Some(blocks) => blocks,
        None => {
            crate::progress::note("nothing saved yet; measuring with a quick run first");
            let m = crate::session::measure(
                settings,
                "run",
                (crate::probes::registry(), crate::settings::Scale::Run),
                true,
            )?;
            if let Some(e) = m.failure() {
                return Err(e);
            }
            advice_of_run(&m.run, m.id)
        }
    };
    render_advice(&blocks, settings.format, &settings.style)
}
