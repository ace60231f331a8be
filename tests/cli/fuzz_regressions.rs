//! Every input a fuzzer found (`fuzz/regressions/<target>/`) replayed through the same
//! checks the fuzz targets run, so each crasher stays a regression test.

use crate::*;

fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(target);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn parser_crashers_stay_fixed() {
    let found = inputs("parse");
    assert!(!found.is_empty());
    for (_, data) in found {
        ioprobe::fuzzing::check_parsers(&data);
    }
}

#[test]
fn import_crashers_stay_fixed() {
    let dir = tempfile::tempdir().unwrap();
    for (_, data) in inputs("import") {
        ioprobe::fuzzing::check_import(&data, dir.path());
    }
}
