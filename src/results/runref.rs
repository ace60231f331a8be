//! Turning a RUN argument into a run: a stored id, `last`, `last~N`, or a JSON file
//! written by `--json` / `ioprobe export` (schema version 1 only).

use super::store::Store;
use super::{Run, SCHEMA_VERSION};
use anyhow::{Context, Result, anyhow, bail};
use std::path::Path;

/// Parses and validates a JSON run document.
pub fn parse_run_json(text: &str, origin: &str) -> Result<Run> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| anyhow!("{origin}: malformed JSON ({e})"))?;
    match v.get("schema_version").and_then(|s| s.as_u64()) {
        Some(n) if n == u64::from(SCHEMA_VERSION) => {}
        Some(n) => {
            bail!("{origin}: schema version {n}, this ioprobe reads version {SCHEMA_VERSION}")
        }
        None => bail!("{origin}: not an ioprobe run (no schema_version)"),
    }
    serde_json::from_value(v).map_err(|e| anyhow!("{origin}: not a valid ioprobe run ({e})"))
}

/// Reads a JSON run file.
pub fn load_json_file(path: &Path) -> Result<Run> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse_run_json(&text, &path.display().to_string())
}

/// A run named on the command line, with a label for headings.
pub struct Named {
    pub label: String,
    pub run: Run,
}

/// Resolves `spec`: an existing file is read as JSON; anything else is looked up in the
/// store (opened lazily through `store`).
pub fn resolve(spec: &str, store: &mut dyn FnMut() -> Result<Store>) -> Result<Named> {
    let p = Path::new(spec);
    if p.is_file() {
        return Ok(Named {
            label: spec.to_string(),
            run: load_json_file(p)?,
        });
    }
    if spec.ends_with(".json") {
        bail!("{spec}: no such file");
    }
    let store = store()?;
    let id = store.resolve(spec)?;
    Ok(Named {
        label: format!("run {id}"),
        run: store.load(id)?,
    })
}
