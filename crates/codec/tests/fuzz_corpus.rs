//! Replays the committed fuzz corpus (fuzz/corpus/<target>/*) through the target bodies on stable.

use std::path::Path;

fn replay(target: &str, body: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("readable corpus directory").path();
        if path.is_file() {
            body(&std::fs::read(&path).expect("readable corpus file"));
            n += 1;
        }
    }
    assert!(n > 0, "the corpus of {target} is empty");
}

#[test]
fn decode_rle_corpus() {
    replay("decode_rle", voxterra_codec::fuzz::decode_rle);
}

#[test]
fn roundtrip_corpus() {
    replay("roundtrip", voxterra_codec::fuzz::roundtrip);
}

#[test]
fn open_world_corpus() {
    replay("open_world", voxterra_codec::fuzz::open_world);
}

#[test]
fn decode_delta_corpus() {
    replay("decode_delta", voxterra_codec::fuzz::decode_delta);
}
