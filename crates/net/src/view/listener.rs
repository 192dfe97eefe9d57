//! The viewers' HTTP listener.

use super::http::Assets;
use super::owner::ViewCmd;
use super::session::http_connection;
use super::shared::ViewShared;
use crate::config::{ServerConfig, ServerEvent, ViewConfig};
use crate::error::NetError;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Binds the HTTP listener and starts accepting; its address and the accepting task. Fails when
/// the bundle is missing or the address is not loopback.
pub(crate) async fn start(
    server: &ServerConfig,
    view: &ViewConfig,
    cmds: mpsc::Sender<ViewCmd>,
    events: mpsc::Sender<ServerEvent>,
) -> Result<(SocketAddr, JoinHandle<()>), NetError> {
    if !view.listen.ip().is_loopback() {
        return Err(NetError::NotLoopback(view.listen));
    }
    let assets = Assets::load(&view.assets)?;
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
            tokio::spawn(http_connection(stream, peer, shared.clone()));
        }
    });
    Ok((addr, accept))
}
