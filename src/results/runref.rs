//! Turning a RUN argument into a run: a stored id, `last`, `last~N`, or a JSON file
//! written by `--json` / `ioprobe export` (schema version 1 only).

use super::store::Store;
use super::{Measurement, Run, SCHEMA_VERSION};
use crate::error::UsageError;
use crate::error::plain;
use anyhow::{Context, Result};
use std::path::Path;

/// Largest JSON run file read (a run with millions of raw samples is still far below).
pub const MAX_RUN_FILE: u64 = 256 << 20;

/// Checks one measurement's params against its probe's contract, given by the caller
/// (the probes know it; results names none).
pub type ParamsCheck = fn(&Measurement) -> Result<(), String>;

/// Parses and validates a JSON run document, each row's params with `check`. Every
/// problem is a usage error (exit 2): the document is the user's input.
pub fn parse_run_json(text: &str, origin: &str, check: ParamsCheck) -> Result<Run> {
    let origin = crate::units::escape(origin);
    let bad = |msg: String| anyhow::Error::new(UsageError(format!("{origin}: {msg}")));
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| bad(format!("malformed JSON ({e})")))?;
    match v.get("schema_version").and_then(|s| s.as_u64()) {
        Some(n) if n == u64::from(SCHEMA_VERSION) => {}
        Some(n) => {
            return Err(bad(format!(
                "schema version {n}, this ioprobe reads version {SCHEMA_VERSION}"
            )));
        }
        None => return Err(bad("not an ioprobe run (no schema_version)".into())),
    }
    let run: Run =
        serde_json::from_value(v).map_err(|e| bad(format!("not a valid ioprobe run ({e})")))?;
    for (i, m) in run.measurements.iter().enumerate() {
        check_measurement(m, check).map_err(|e| bad(format!("measurement {}: {e}", i + 1)))?;
    }
    Ok(run)
}

/// Characters a case name may use (they come from sizes, method names and states).
fn safe_name(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+-/".contains(&b))
}

/// The generic shape every measurement must have, then its probe's own params.
fn check_measurement(m: &Measurement, check: ParamsCheck) -> Result<(), String> {
    if !safe_name(&m.case, 200) {
        return Err(format!(
            "case name '{}' is not made of letters, digits and ._+-/",
            crate::units::escape(&m.case)
        ));
    }
    check(m)?;
    let figures = [
        m.median, m.ci95[0], m.ci95[1], m.min, m.max, m.mean, m.stddev, m.cv, m.mad,
    ];
    if figures
        .iter()
        .chain(&m.raw)
        .any(|v| !v.is_finite() || *v < 0.0)
    {
        return Err(format!("{}: a figure is negative or not a number", m.case));
    }
    Ok(())
}

/// Reads a JSON run file: a regular file (opened without blocking, so a FIFO with no
/// writer is refused rather than waited on) of at most [`MAX_RUN_FILE`] bytes.
pub fn load_json_file(path: &Path, check: ParamsCheck) -> Result<Run> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let shown = crate::units::escape(&path.display().to_string());
    let usage = |msg: String| anyhow::Error::new(UsageError(format!("{shown}: {msg}")));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| usage(plain(&e)))?;
    let meta = file.metadata().map_err(|e| usage(plain(&e)))?;
    if !meta.is_file() {
        return Err(usage("not a regular file".into()));
    }
    if meta.len() > MAX_RUN_FILE {
        return Err(usage(format!(
            "{} is larger than the {} a run file may be",
            crate::units::format_size(meta.len()),
            crate::units::format_size(MAX_RUN_FILE)
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_RUN_FILE + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {shown}"))?;
    if bytes.len() as u64 > MAX_RUN_FILE {
        return Err(usage(
            "grew beyond the size a run file may be while read".into(),
        ));
    }
    let text = String::from_utf8(bytes).map_err(|_| usage("not UTF-8 text".into()))?;
    parse_run_json(&text, &path.display().to_string(), check)
}

/// A run named on the command line, with a label for headings.
pub struct Named {
    pub label: String,
    pub run: Run,
    /// The id in the store; None for a file.
    pub id: Option<i64>,
}

/// Resolves `spec`: an existing file is read as JSON; anything else is looked up in the
/// store (opened lazily through `store`).
pub fn resolve(
    spec: &str,
    store: &mut dyn FnMut() -> Result<Store>,
    check: ParamsCheck,
) -> Result<Named> {
    let p = Path::new(spec);
    // An existing path (a FIFO or directory too: refused there) or a *.json name is a file.
    if p.exists() || spec.ends_with(".json") {
        return Ok(Named {
            label: spec.to_string(),
            run: load_json_file(p, check)?,
            id: None,
        });
    }
    let store = store()?;
    let id = store.resolve(spec)?;
    Ok(Named {
        label: format!("run {id}"),
        run: store.load(id)?,
        id: Some(id),
    })
}
