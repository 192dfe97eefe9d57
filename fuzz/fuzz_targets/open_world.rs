//! Fuzz target `open_world`: the body is `voxterra_codec::fuzz::check_open_world`, which the codec's tests also run
//! over the committed corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxterra_codec::fuzz::check_open_world(data));
