//! Fuzz target `chunk_record`: the body is `voxterra::fuzz::check_chunk_record`, which the facade's
//! tests also run over the committed corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxterra::fuzz::check_chunk_record(data));
