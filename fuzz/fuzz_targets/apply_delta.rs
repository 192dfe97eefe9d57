//! Fuzz target `apply_delta`: the body is `voxterra::fuzz::check_apply_delta`, which the facade's tests also run
//! over the committed corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxterra::fuzz::check_apply_delta(data));
