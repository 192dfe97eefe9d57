//! One viewer's connection: the HTTP request, then (for `/ws`) the WebSocket — its first message
//! the token within the handshake deadline, then camera moves and edits until it leaves. Every
//! read has a deadline, every message a size cap; a connection that misbehaves is closed and
//! costs only itself.

use super::http::{Route, read_head, respond, route, upgrade_response};
use super::owner::{ViewCmd, ViewOut};
use super::shared::ViewShared;
use super::wire::ViewRequest;
use crate::config::{ServerEvent, ViewConfig};
use crate::error::NetError;
use crate::rate::Rate;
use futures_util::{SinkExt, StreamExt};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use subtle::ConstantTimeEq;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use voxterra::core::nalgebra::Point3;
use voxterra::{Brush, BrushOp, BrushShape};

/// Frames queued for a viewer at most; the owner holds the rest until there is room.
pub(crate) const QUEUE: usize = 256;

/// Serves one HTTP connection.
pub(crate) async fn http_connection(mut tcp: TcpStream, addr: SocketAddr, shared: Arc<ViewShared>) {
    let _ = tcp.set_nodelay(true);
    let cfg = &shared.server;
    let head = match tokio::time::timeout(cfg.handshake_timeout, read_head(&mut tcp)).await {
        Ok(Ok(Some(head))) => head,
        Ok(Ok(None)) => {
            let _ = respond(&mut tcp, 431, "Request Header Fields Too Large", "text/plain", b"", false).await;
            return;
        }
        Ok(Err(_)) | Err(_) => return,
    };
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut headers);
    let routed = match req.parse(&head) {
        Ok(s) if s.is_complete() => route(&req),
        _ => Route::Refuse(400, "Bad Request"),
    };
    let _ = match routed {
        Route::Refuse(status, reason) => {
            log::info!("refused {addr}: HTTP {status}");
            respond(&mut tcp, status, reason, "text/plain; charset=utf-8", reason.as_bytes(), false).await
        }
        Route::Asset { path, head } => match shared.assets.get(&path) {
            Some((ty, body)) => respond(&mut tcp, 200, "OK", ty, body, head).await,
            None => {
                respond(&mut tcp, 404, "Not Found", "text/plain; charset=utf-8", b"Not Found", head).await
            }
        },
        Route::Socket(key) => {
            if tcp.write_all(upgrade_response(&key).as_bytes()).await.is_err() {
                return;
            }
            let ws_config = WebSocketConfig::default()
                .max_message_size(Some(shared.view.max_message))
                .max_frame_size(Some(shared.view.max_message));
            let ws = WebSocketStream::from_raw_socket(tcp, Role::Server, Some(ws_config)).await;
            let full = shared.live.fetch_add(1, Ordering::SeqCst) >= cfg.max_clients;
            let r =
                if full { refuse(ws, "the server is full").await } else { socket(ws, addr, &shared).await };
            shared.live.fetch_sub(1, Ordering::SeqCst);
            if let Err(e) = r {
                log::info!("viewer {addr}: {e}");
            }
            Ok(())
        }
    };
}

async fn refuse(mut ws: WebSocketStream<TcpStream>, why: &str) -> Result<(), NetError> {
    let frame = CloseFrame { code: CloseCode::Policy, reason: why.to_owned().into() };
    ws.close(Some(frame)).await?;
    Ok(())
}

/// The WebSocket after the upgrade.
async fn socket(
    mut ws: WebSocketStream<TcpStream>,
    addr: SocketAddr,
    shared: &ViewShared,
) -> Result<(), NetError> {
    let cfg = &shared.server;
    let event = |why| {
        let _ = shared.events.try_send(ServerEvent::Refused { addr, why });
    };
    // The token first, as text, in time; anything else ends the connection with nothing sent.
    let first = tokio::time::timeout(cfg.handshake_timeout, ws.next()).await;
    let token = match first {
        Ok(Some(Ok(Message::Text(t)))) => match serde_json::from_str::<ViewRequest>(&t) {
            Ok(ViewRequest::Token(token)) => token,
            _ => {
                event(crate::protocol::RefusedWhy::Handshake);
                return refuse(ws, "the first message is not a token").await;
            }
        },
        _ => {
            event(crate::protocol::RefusedWhy::Handshake);
            return refuse(ws, "no token").await;
        }
    };
    let ok = token.len() == cfg.token.len() && bool::from(token.as_bytes().ct_eq(&cfg.token));
    if !ok || cfg.token.is_empty() {
        log::warn!("refused viewer {addr}: wrong token");
        event(crate::protocol::RefusedWhy::Token);
        return refuse(ws, "wrong token").await;
    }
    let (frames, mut rx) = mpsc::channel::<ViewOut>(QUEUE);
    let (reply, welcome) = oneshot::channel();
    shared.cmds.send(ViewCmd::Join { reply, frames }).await.map_err(|_| NetError::Closed)?;
    let (id, hello) = welcome.await.map_err(|_| NetError::Closed)?;
    let (mut sink, mut stream) = ws.split();
    sink.send(Message::Text(hello.into())).await?;
    // The writer: whatever the owner queues, in order, until the owner drops the queue.
    let writer = tokio::spawn(async move {
        while let Some(out) = rx.recv().await {
            let m = match out {
                ViewOut::Binary(b) => Message::Binary(b.into()),
                ViewOut::Text(t) => Message::Text(t.into()),
            };
            if sink.send(m).await.is_err() {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let why = read_loop(&mut stream, id, &shared.view, shared).await;
    let _ = shared.cmds.send(ViewCmd::Leave { id }).await;
    log::info!("viewer {addr} left: {why}");
    writer.abort();
    Ok(())
}

/// The page's messages after the token, each within the idle timeout; edits within the rate.
/// Returns why it ended.
async fn read_loop<S>(stream: &mut S, id: u64, view: &ViewConfig, shared: &ViewShared) -> String
where
    S: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    let cfg = &shared.server;
    let mut rate = Rate::new(cfg.edit_rate);
    loop {
        let text = match tokio::time::timeout(cfg.idle_timeout, stream.next()).await {
            Err(_) => return "idle".into(),
            Ok(None) => return "closed".into(),
            Ok(Some(Err(e))) => return e.to_string(),
            Ok(Some(Ok(Message::Text(t)))) => t,
            Ok(Some(Ok(Message::Close(_)))) => return "closed".into(),
            Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => continue,
            Ok(Some(Ok(_))) => return "a message that is not text".into(),
        };
        let cmd = match serde_json::from_str::<ViewRequest>(&text) {
            Err(e) => return format!("a message that does not parse: {e}"),
            Ok(ViewRequest::Token(_)) => return "a second token".into(),
            Ok(ViewRequest::Camera(at)) => {
                if !at.iter().all(|c| c.is_finite()) {
                    return "a camera that is not finite".into();
                }
                ViewCmd::Camera { id, at: Point3::from(at) }
            }
            // Edits and drops share the edit rate.
            Ok(ViewRequest::Edit { at, radius, raise }) => match rate.take() {
                true => {
                    let op = if raise { BrushOp::Add(view.raise_material) } else { BrushOp::Subtract };
                    let brush = Brush { shape: BrushShape::Sphere { center: Point3::from(at), radius }, op };
                    ViewCmd::Edit { id, brush }
                }
                false => ViewCmd::Refused { id, why: "rate limited".into() },
            },
            Ok(ViewRequest::Drop { at, shape }) => match rate.take() {
                true => ViewCmd::Drop { id, at: Point3::from(at), shape },
                false => ViewCmd::Refused { id, why: "rate limited".into() },
            },
        };
        if shared.cmds.send(cmd).await.is_err() {
            return "the server stopped".into();
        }
    }
}
