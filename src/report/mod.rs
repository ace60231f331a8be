//! Output: human tables, JSON, CSV, Markdown and advice; one file per format. Report
//! code reads measurements and never measures.

pub mod advice;
pub mod advise;
pub mod compare;
pub mod csv;
pub mod grid;
pub mod html;
pub mod json;
pub mod markdown;
pub mod openmetrics;
pub mod plots;
pub mod table;

use crate::error::UsageError;
use crate::present::Style;
use crate::results::Run;
use anyhow::{Context as _, Result};
use std::path::Path;

pub use crate::settings::Format;

/// Renders a run in `format`; stdout gets exactly this text. `id` is the run's id in
/// the store (evidence cites it), None for a run that was not saved.
pub fn render(run: &Run, id: Option<i64>, format: Format, st: &Style) -> Result<String> {
    render_with(
        run,
        &crate::probes::advice::recommendations(run, id),
        format,
        st,
    )
}

/// [`render`] with the recommendations given (`run`'s advice pooled with saved runs).
pub fn render_with(
    run: &Run,
    recs: &[crate::advice::Recommendation],
    format: Format,
    st: &Style,
) -> Result<String> {
    let recs = recs.to_vec();
    let obs = crate::probes::advice::observations(run);
    Ok(match format {
        Format::Table => table::render_run(run, &recs, &obs, st),
        Format::Json => json::render_run(run, &recs, &obs)?,
        Format::Csv => csv::render_run(run)?,
        Format::Markdown => markdown::render_run(run, &recs, &obs, st),
    })
}

/// Renders machine facts in `format` (CSV gets two columns: fact, value).
pub fn render_environment(
    env: &crate::sys::machine::Environment,
    format: Format,
    st: &Style,
) -> Result<String> {
    Ok(match format {
        Format::Table => table::render_environment(env, st),
        Format::Json => json::render_environment(env)?,
        Format::Markdown => markdown::render_environment(env),
        Format::Csv => csv::render_grid(&grid::environment_grid(env))?,
    })
}

/// Whether a file can be made in `path`'s directory (a temporary one, removed at once):
/// what `run --openmetrics` checks before it measures.
pub fn check_writable(path: &Path) -> Result<()> {
    temp_beside(path).map(drop)
}

/// A temporary file (0644 less the umask) in `path`'s directory, named
/// `.ioprobe-report-…`, which no textfile collector's `*.prom` matches.
fn temp_beside(path: &Path) -> Result<tempfile::NamedTempFile> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    tempfile::Builder::new()
        .prefix(".ioprobe-report-")
        .permissions(std::fs::Permissions::from_mode(0o644))
        .tempfile_in(dir)
        .map_err(|e| cannot_write(dir, &e))
}

/// "cannot write in DIR: Permission denied", without the temporary file's name.
fn cannot_write(dir: &Path, e: &std::io::Error) -> anyhow::Error {
    let why = e.raw_os_error().map_or_else(
        || crate::error::plain(e),
        |n| crate::error::plain(&std::io::Error::from_raw_os_error(n)),
    );
    anyhow::anyhow!(
        "cannot write in {}: {why}",
        crate::units::escape(&dir.display().to_string())
    )
}

/// Writes `text` to `path` through a temporary file made with O_EXCL in the same
/// directory (named `.ioprobe-report-…`, which no textfile collector's `*.prom` matches),
/// fsynced, then renamed over `path`, so a reader never sees half a file, a crash never
/// leaves an empty one, and a symlink planted at `path` is replaced, never followed.
/// The file is 0644 less the umask, like any file a user asks for. Refuses to replace
/// the results store.
pub fn write_atomically(path: &Path, text: &str, store: Option<&Path>) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let shown = crate::units::escape(&path.display().to_string());
    let same =
        |a: &std::fs::Metadata, b: &std::fs::Metadata| (a.dev(), a.ino()) == (b.dev(), b.ino());
    if let (Some(Ok(s)), Ok(target)) = (store.map(std::fs::metadata), std::fs::metadata(path))
        && same(&s, &target)
    {
        return Err(UsageError(format!(
            "{shown} is the results store; write the report elsewhere"
        ))
        .into());
    }
    let mut tmp = temp_beside(path)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())
        .and_then(|_| tmp.as_file().sync_all())
        .with_context(|| format!("writing {shown}"))?;
    tmp.persist(path)
        .map_err(|e| anyhow::anyhow!("writing {shown}: {}", e.error))?;
    Ok(())
}
