//! What a command runs with, built from the command line by `cli` and free of clap:
//! every layer below `main` takes these.

use crate::harness;
use crate::results::store::Store;
use anyhow::Result;
use std::path::PathBuf;
use std::time::Duration;

/// The output format chosen on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
    Markdown,
}

/// How much work a probe's defaults ask for: `--quick`, nothing, `--thorough`, or the
/// short selection `ioprobe run` makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Quick,
    Default,
    Thorough,
    Run,
}

/// Settings shared by every command, free of clap.
#[derive(Debug, Clone)]
pub struct Settings {
    pub harness: harness::Config,
    pub mode: &'static str,
    pub scale: Scale,
    /// `--time-limit`: the whole command's.
    pub time_limit: Option<Duration>,
    /// Who set `time_limit` when the user did not (a run's warnings name it): None
    /// for `--time-limit`.
    pub time_limit_by: Option<&'static str>,
    /// Whether `--budget` was given (a per-case budget the user chose is not cut by a
    /// probe's default time limit).
    pub budget_given: bool,
    pub cpu: Option<usize>,
    pub dir: PathBuf,
    pub format: Format,
    pub store: Option<PathBuf>,
    pub no_save: bool,
    /// `run --fresh`: advice from the run alone, no saved runs pooled with it.
    pub fresh: bool,
    /// `run --precise`: every row sampled to ±1% (within twice the time limit), not
    /// until each answer is decided.
    pub precise: bool,
    /// `run --openmetrics FILE`: the run and its answers written there atomically.
    pub openmetrics: Option<PathBuf>,
    pub quiet: bool,
    pub verbose: bool,
    /// How text output is laid out (width, colour, verbose warnings).
    pub style: crate::present::Style,
}

impl Settings {
    /// The store saved runs go to and are found in: `--store`, else the default
    /// (`$XDG_DATA_HOME/ioprobe/results.db`).
    pub fn store_path(&self) -> Result<PathBuf> {
        match &self.store {
            Some(p) => Ok(p.clone()),
            None => crate::results::store::default_path(),
        }
    }

    /// Opens the store for saving, unless `--no-save`; done before measuring so a
    /// broken store fails fast.
    pub fn store_for_saving(&self) -> Result<Option<Store>> {
        if self.no_save {
            return Ok(None);
        }
        let mut store = Store::open(&self.store_path()?)?;
        store.check_writable()?;
        Ok(Some(store))
    }

    /// Opens the existing store, read only.
    pub fn open_store(&self) -> Result<Store> {
        Store::open_read_only(&self.store_path()?)
    }
}

/// What `export --format` can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Json,
    Csv,
    Markdown,
    Openmetrics,
}
