//! Fuzz target `view_request`: the body is `voxterra_net::fuzz::check_view_request`, which the crate's tests also
//! run over the committed corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| voxterra_net::fuzz::check_view_request(data));
