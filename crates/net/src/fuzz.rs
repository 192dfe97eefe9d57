//! Fuzz target bodies for the bytes a socket hands the server and the client: each decodes
//! arbitrary bytes as a frame body and checks that a decoded frame re-encodes to bytes that decode
//! and encode to the same bytes again (compared as bytes: a NaN a frame carries is refused where it
//! is used, not here, and is never equal to itself).

use crate::protocol::{ClientFrame, ServerFrame};

/// A client frame's body: refused with a typed error, or decoded and re-encoded stably.
pub fn check_client_frame(data: &[u8]) {
    if let Ok(f) = ClientFrame::decode(data) {
        let mut out = Vec::new();
        f.encode(&mut out);
        let again = ClientFrame::decode(&out[4..]).expect("a re-encoded frame decodes");
        let mut out2 = Vec::new();
        again.encode(&mut out2);
        assert_eq!(out, out2, "a decoded frame re-encodes to itself");
    }
}

/// A server frame's body, the same way.
pub fn check_server_frame(data: &[u8]) {
    if let Ok(f) = ServerFrame::decode(data) {
        let mut out = Vec::new();
        f.encode(&mut out);
        let again = ServerFrame::decode(&out[4..]).expect("a re-encoded frame decodes");
        let mut out2 = Vec::new();
        again.encode(&mut out2);
        assert_eq!(out, out2, "a decoded frame re-encodes to itself");
    }
}

/// Bytes a browser viewer's connection hands the server: as an HTTP request head, routed without
/// a panic, and an asset path routed only when it names no parent, no escape and no other host;
/// as the text of a WebSocket message, refused or parsed into a request that (its numbers finite)
/// serializes and parses back to itself.
pub fn check_view_request(data: &[u8]) {
    use crate::view::fuzz_route;
    if let Some(path) = fuzz_route(data) {
        assert!(path.starts_with('/') && !path.contains("..") && !path.contains('%') && !path.contains('\\'));
    }
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(r) = serde_json::from_str::<crate::view::wire::ViewRequest>(text)
        && r.is_finite()
    {
        let again = serde_json::to_string(&r).expect("a request serializes");
        let back: crate::view::wire::ViewRequest =
            serde_json::from_str(&again).expect("a serialized request parses");
        assert_eq!(
            serde_json::to_string(&back).expect("serializes"),
            again,
            "a request re-serializes to itself"
        );
    }
}
