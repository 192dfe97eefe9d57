//! The browser viewer's side of a server ([`ServerConfig::view`](crate::ServerConfig::view)): an
//! HTTP listener that serves one page and its assets (the bundle `cargo xtask web` makes) and a
//! WebSocket at `/ws`. A page proves itself with the server's token as its first message (the
//! token travels in the page's URL fragment, which browsers never send), then states where its
//! camera is and gets the terrain as levels-of-detail meshes made for that camera — a
//! [`LodView`](voxterra::lod::LodView) per page, nearest nodes first, replaced as the camera
//! moves and as edits land — and edits through the same validation as game clients. The
//! messages are in [`wire`].

mod http;
pub(crate) mod owner;
mod physics;
mod session;
pub mod wire;

use crate::error::NetError;
use crate::server::{ServerConfig, ServerEvent};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use voxterra::core::Material;
use voxterra::lod::LodConfig;

/// How a server serves browser viewers.
#[derive(Clone, Debug)]
pub struct ViewConfig {
    /// Where the HTTP listener listens (plain HTTP: loopback only).
    pub listen: SocketAddr,
    /// The page's bundle: a directory holding `index.html` and its assets (`web/dist`, made by
    /// `cargo xtask web`). Read once, when the server starts.
    pub assets: PathBuf,
    /// Levels of detail around a page's camera (voxels).
    pub lod: LodConfig,
    /// Bytes of meshes a page is sent per tick at most (at least one mesh goes each tick).
    pub budget: usize,
    /// Largest WebSocket message a page may send, bytes.
    pub max_message: usize,
    /// What a page's raise brush adds.
    pub raise_material: Material,
}

impl ViewConfig {
    /// Serves `assets` on `listen`: the default levels of detail, 1 MiB a tick, 4 KiB messages,
    /// raising dirt.
    pub fn new(listen: SocketAddr, assets: impl Into<PathBuf>) -> Self {
        ViewConfig {
            listen,
            assets: assets.into(),
            lod: LodConfig::default(),
            budget: 1 << 20,
            max_message: 4096,
            raise_material: voxterra::core::materials::DIRT,
        }
    }
}

/// What the viewers' connections share.
pub(crate) struct ViewShared {
    pub(crate) server: ServerConfig,
    pub(crate) view: ViewConfig,
    pub(crate) assets: http::Assets,
    pub(crate) cmds: mpsc::Sender<owner::ViewCmd>,
    pub(crate) events: mpsc::Sender<ServerEvent>,
    pub(crate) live: AtomicUsize,
}

/// Binds the HTTP listener and starts accepting; its address and the accepting task. Fails when
/// the bundle is missing or the address is not loopback.
pub(crate) async fn start(
    server: &ServerConfig,
    view: &ViewConfig,
    cmds: mpsc::Sender<owner::ViewCmd>,
    events: mpsc::Sender<ServerEvent>,
) -> Result<(SocketAddr, JoinHandle<()>), NetError> {
    if !view.listen.ip().is_loopback() {
        return Err(NetError::NotLoopback(view.listen));
    }
    let assets = http::Assets::load(&view.assets)?;
    let listener = TcpListener::bind(view.listen).await?;
    let addr = listener.local_addr()?;
    let shared = Arc::new(ViewShared {
        server: server.clone(),
        view: view.clone(),
        assets,
        cmds,
        events,
        live: AtomicUsize::new(0),
    });
    let accept = tokio::spawn(async move {
        loop {
            let Ok((stream, peer)) = listener.accept().await else { continue };
            tokio::spawn(session::http_connection(stream, peer, shared.clone()));
        }
    });
    Ok((addr, accept))
}
