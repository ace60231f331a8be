//! Runs probes end to end: signal handling, pinning, scratch directory, machine facts,
//! validation, harness overhead, then every probe's cases in order.

use crate::cli::Settings;
use crate::error::UsageError;
use crate::harness::{interrupt, measure_overhead};
use crate::probes::{Context, Probe};
use crate::progress::Progress;
use crate::results::{HarnessInfo, Run, SCHEMA_VERSION, Tool, time::now_rfc3339};
use crate::sys::affinity;
use crate::sys::machine::Environment;
use crate::sys::scratch::Scratch;
use anyhow::Result;

/// Pins the calling thread when asked; a CPU outside the allowed set is a usage error.
fn pin(cpu: Option<usize>) -> Result<()> {
    let Some(cpu) = cpu else { return Ok(()) };
    let allowed = affinity::allowed_cpus()?;
    if !allowed.contains(&cpu) {
        return Err(UsageError(format!(
            "--cpu {cpu}: not available to this process (allowed: {})",
            allowed
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ))
        .into());
    }
    affinity::pin_to(cpu)?;
    Ok(())
}

/// Runs `probes` under `settings` and returns the run; scratch is gone when this returns.
pub fn run_probes(settings: &Settings, probes: Vec<Box<dyn Probe>>, command: &str) -> Result<Run> {
    interrupt::install()?;
    crate::sys::signals::install()
        .map_err(|e| anyhow::anyhow!("cannot set signal dispositions: {e}"))?;
    let cpus = affinity::allowed_cpus()?;
    pin(settings.cpu)?;
    for s in crate::sys::scratch::reclaim_stale(&settings.dir) {
        crate::progress::note(&format!(
            "removed {} ({}) left behind by ioprobe process {}, which is gone",
            s.path.display(),
            crate::units::format_size(s.bytes),
            s.pid
        ));
    }
    let scratch = Scratch::create_in(&settings.dir)?;
    let result = run_in(settings, &probes, command, &scratch, &cpus);
    let removed = scratch_cleanup(scratch);
    let run = result?;
    removed?;
    Ok(run)
}

fn scratch_cleanup(s: Scratch) -> Result<()> {
    let path = s.path().to_path_buf();
    drop(s);
    if path.exists() {
        anyhow::bail!("could not remove scratch directory {}", path.display());
    }
    Ok(())
}

fn run_in(
    settings: &Settings,
    probes: &[Box<dyn Probe>],
    command: &str,
    scratch: &Scratch,
    cpus: &[usize],
) -> Result<Run> {
    let started_at = now_rfc3339();
    let mut env = Environment::collect(Some(scratch.parent()));
    env.pinned_cpu = settings.cpu;
    for p in probes {
        p.validate(&env, scratch)?;
    }
    let total: usize = probes.iter().map(|p| p.case_count()).sum();
    let progress = Progress::new(total as u64);
    if let Some(fs) = &env.filesystem {
        progress.note(&format!(
            "measuring in {} ({} on {})",
            fs.path, fs.fs_type, fs.source
        ));
    }
    progress.start("harness", "timer and loop overhead");
    let overhead = measure_overhead(&settings.harness)?;
    let ctx = Context {
        harness: &settings.harness,
        env: &env,
        overhead,
        scratch,
        progress: &progress,
        cpus,
    };
    let mut measurements = Vec::new();
    for p in probes {
        let r = p.run(&ctx);
        match r {
            Ok(m) => measurements.extend(m),
            Err(e) => {
                progress.finish();
                return Err(e.context(format!("probe {}", p.kind().name())));
            }
        }
    }
    progress.finish();
    let mut warnings = Vec::new();
    if env.build_profile == "debug" {
        warnings.push("debug build: figures are not representative; build with --release".into());
    }
    let h = &settings.harness;
    Ok(Run {
        schema_version: SCHEMA_VERSION,
        tool: Tool::this(),
        started_at,
        command: command.into(),
        environment: env,
        harness: HarnessInfo {
            mode: settings.mode.into(),
            sample_time_s: h.sample_time.as_secs_f64(),
            warmup_s: h.warmup.as_secs_f64(),
            budget_per_case_s: h.budget.as_secs_f64(),
            min_samples: h.min_samples,
            target_rel_ci: h.target_rel_ci,
            overhead,
            ci_method: "order statistics of the binomial (distribution-free)".into(),
        },
        measurements,
        warnings,
    })
}
