//! Fuzz target `client_frame`: the body is `voxterra_net::fuzz::check_client_frame`, which the crate's tests also
//! run over the committed corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxterra_net::fuzz::check_client_frame(data));
