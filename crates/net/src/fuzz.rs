//! Fuzz target bodies for the bytes a socket hands the server and the client: each decodes
//! arbitrary bytes as a frame body and checks that a decoded frame encodes back to the same bytes.

use crate::protocol::{ClientFrame, ServerFrame};

/// A client frame's body: refused with a typed error, or decoded and re-encoded identically.
pub fn check_client_frame(data: &[u8]) {
    if let Ok(f) = ClientFrame::decode(data) {
        let mut out = Vec::new();
        f.encode(&mut out);
        assert_eq!(ClientFrame::decode(&out[4..]).as_ref(), Ok(&f), "a decoded frame re-encodes to itself");
    }
}

/// A server frame's body, the same way.
pub fn check_server_frame(data: &[u8]) {
    if let Ok(f) = ServerFrame::decode(data) {
        let mut out = Vec::new();
        f.encode(&mut out);
        assert_eq!(ServerFrame::decode(&out[4..]).as_ref(), Ok(&f), "a decoded frame re-encodes to itself");
    }
}
