//! The JSON import path: validation, show, report (see `ioprobe::fuzzing::check_import`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    ioprobe::fuzzing::check_import(data, dir.path());
});
