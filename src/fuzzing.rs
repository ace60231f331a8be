//! The properties the fuzz targets in `fuzz/` check, shared with the test that replays
//! every input the fuzzers ever found (`fuzz/regressions/`), so a crasher stays a test.

use crate::report::{self, Format};
use crate::results::runref::parse_run_json;
use crate::units::{MAX_SIZE, parse_duration, parse_size, parse_size_or_zero, size_label};

/// Sizes and durations: never panic; an accepted size is a whole number of bytes whose
/// exact label parses back to it; an accepted duration is positive and has a unit.
pub fn check_parsers(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(v) = parse_size(text) {
        assert!(v > 0 && v <= MAX_SIZE);
        assert!(!text.contains(char::is_whitespace), "{text:?} accepted");
        assert_eq!(parse_size(&size_label(v)), Ok(v), "{text:?}");
    }
    let _ = parse_size_or_zero(text);
    if let Ok(d) = parse_duration(text) {
        assert!(!d.is_zero(), "{text:?} accepted as zero");
        assert!(text.ends_with('s'), "{text:?} has no unit");
    }
}

/// The import path: validation, every `show` format, then the report (HTML and SVG
/// plots) written into `dir`. A document that passes validation must render.
pub fn check_import(data: &[u8], dir: &std::path::Path) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(run) = parse_run_json(text, "fuzz", crate::probes::check_measurement) else {
        return;
    };
    for f in [Format::Table, Format::Json, Format::Csv, Format::Markdown] {
        let _ = report::render(&run, None, f, &Default::default());
    }
    let Ok(plots) = report::plots::plots(&run) else {
        return;
    };
    if let Ok(page) = report::html::page(&run, None, "fuzz", &plots, &Default::default()) {
        std::fs::write(dir.join("r.html"), page).expect("writing the report");
    }
    for (p, path) in plots.iter().zip(report::html::svg_paths(&plots, dir)) {
        assert!(path.starts_with(dir), "{} escapes", path.display());
        std::fs::write(path, &p.svg).expect("writing a plot");
    }
}
