//! Fuzz target `decode_packet`: the body is `voxterra_codec::fuzz::check_decode_packet`, which the codec's
//! tests also run over the committed corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxterra_codec::fuzz::check_decode_packet(data));
