//! The size and duration parsers (see `ioprobe::fuzzing::check_parsers`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ioprobe::fuzzing::check_parsers(data));
