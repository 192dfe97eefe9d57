//! Replays the committed fuzz corpus (fuzz/corpus/<target>/*) through the target bodies on stable.

use voxterra_test_support::replay_corpus as replay;

#[test]
fn decode_rle_corpus() {
    replay("decode_rle", voxterra_codec::fuzz::check_decode_rle);
}

#[test]
fn roundtrip_corpus() {
    replay("roundtrip", voxterra_codec::fuzz::check_roundtrip);
}

#[test]
fn open_world_corpus() {
    replay("open_world", voxterra_codec::fuzz::check_open_world);
}

#[test]
fn decode_delta_corpus() {
    replay("decode_delta", voxterra_codec::fuzz::check_decode_delta);
}

#[test]
fn decode_packet_corpus() {
    replay("decode_packet", voxterra_codec::fuzz::check_decode_packet);
}
