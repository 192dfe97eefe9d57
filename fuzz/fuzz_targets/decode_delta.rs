//! Fuzz target `decode_delta`: the body is `voxterra_codec::fuzz::check_decode_delta`, which the codec's
//! tests also run over the committed corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxterra_codec::fuzz::check_decode_delta(data));
