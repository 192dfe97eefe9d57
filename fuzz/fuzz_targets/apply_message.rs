//! Fuzz target `apply_message`: the body is `voxterra::fuzz::check_apply_message`, which the facade's
//! tests also run over the committed corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxterra::fuzz::check_apply_message(data));
