//! `ioprobe import FILE…`: runs from JSON files into the store.

use crate::results::store::Store;
use crate::results::{Run, runref};
use crate::settings::Settings;
use anyhow::Result;
use std::path::PathBuf;

/// `ioprobe import FILE…`: every file validated first, then all saved.
pub fn import(settings: &Settings, files: &[PathBuf]) -> Result<String> {
    let runs: Vec<Run> = files
        .iter()
        .map(|f| runref::load_json_file(f, crate::probes::check_measurement))
        .collect::<Result<_>>()?;
    let mut store = Store::open(&settings.store_path()?)?;
    let mut out = String::new();
    for (f, run) in files.iter().zip(&runs) {
        let id = store.save(run)?;
        out.push_str(&format!("imported {} as run {id}\n", f.display()));
    }
    Ok(out)
}
