//! The browser viewer's side of a server ([`ServerConfig::view`](crate::ServerConfig::view)): an
//! HTTP listener that serves one page and its assets (the bundle `cargo xtask web` makes) and a
//! WebSocket at `/ws`. A page proves itself with the server's token as its first message (the
//! token travels in the page's URL fragment, which browsers never send), then states where its
//! camera is and gets the terrain as levels-of-detail meshes made for that camera — a
//! [`LodView`](voxterra::lod::LodView) per page, nearest nodes first, replaced as the camera
//! moves and as edits land — and edits through the same validation as game clients. The
//! messages are in [`wire`].

mod http;
mod listener;
pub(crate) mod owner;
mod physics;
mod session;
mod shared;
pub mod wire;

pub(crate) use listener::start;

/// Routes `head` as the viewer's HTTP side does; the asset path it would look up, if any.
#[cfg(feature = "fuzzing")]
pub(crate) fn fuzz_route(head: &[u8]) -> Option<String> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(s) if s.is_complete() => match http::route(&req) {
            http::Route::Asset { path, .. } => Some(path),
            _ => None,
        },
        _ => None,
    }
}
