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
