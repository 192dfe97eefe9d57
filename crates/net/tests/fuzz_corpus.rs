//! Replays the committed fuzz corpus (fuzz/corpus/<target>/*) through the target bodies on stable.

use voxterra_test_support::replay_corpus as replay;

#[test]
fn client_frame_corpus() {
    replay("client_frame", voxterra_net::fuzz::check_client_frame);
}

#[test]
fn server_frame_corpus() {
    replay("server_frame", voxterra_net::fuzz::check_server_frame);
}

#[test]
fn view_request_corpus() {
    replay("view_request", voxterra_net::fuzz::check_view_request);
}
