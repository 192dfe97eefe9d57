//! The server: one task owns the authoritative [`Terrain`] and its [`ReplicationServer`] and
//! ticks them; one task per connection reads its client's frames (after the handshake: version,
//! then token), and one writes what the owner queues for it. A connection that misbehaves, stalls
//! or lags costs only itself: every read has a deadline and a size cap, a client's queue is
//! bounded, and a client too far behind is dropped.

use crate::config::{ServerConfig, ServerEvent};
use crate::error::NetError;
use crate::frames::{read_frame, write_all};
use crate::hosted::{Hosted, edit};
use crate::protocol::{
    CLIENT_FRAME_MAX, ClientFrame, EditRefused, PROTOCOL_VERSION, RefusedWhy, ServerFrame,
    terrain_region_hash,
};
use crate::rate::Rate;
use crate::tls::Stream;
use crate::view::owner::{ViewCmd, Views, next_view_cmd};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;
use tokio::io::AsyncRead;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use voxterra::core::nalgebra::Point3;
use voxterra::replication::{ClientId, RegionKey, ReplicationServer, ResendRequest};
use voxterra::{Brush, Terrain};

/// A running server: its address, its events, and the way to stop it.
pub struct ServerHandle {
    addr: SocketAddr,
    http: Option<(SocketAddr, JoinHandle<()>)>,
    stop: Option<oneshot::Sender<()>>,
    owner: JoinHandle<Terrain>,
    accept: JoinHandle<()>,
    /// The server's events, in order (dropped when nobody reads them fast enough).
    pub events: mpsc::Receiver<ServerEvent>,
    ticks: Arc<std::sync::Mutex<Vec<Duration>>>,
}

impl ServerHandle {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The browser viewers' HTTP address, when [`ServerConfig::view`] is set.
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http.as_ref().map(|h| h.0)
    }

    /// How long each tick took so far (for figures).
    pub fn tick_times(&self) -> Vec<Duration> {
        self.ticks.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Stops accepting, disconnects every client and hands the terrain back (to save it).
    pub async fn shutdown(mut self) -> Terrain {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.accept.abort();
        if let Some((_, http)) = self.http.take() {
            http.abort();
        }
        self.owner.await.expect("the server's owner task does not panic")
    }
}

/// Starts serving `terrain` on `listen` (port 0 picks one). Plaintext TCP on loopback only: any
/// other address needs [`ServerConfig::tls`] ([`NetError::NotLoopback`]).
pub async fn serve(
    terrain: impl Into<Hosted>,
    listen: SocketAddr,
    config: ServerConfig,
) -> Result<ServerHandle, NetError> {
    if !listen.ip().is_loopback() && config.tls.is_none() {
        return Err(NetError::NotLoopback(listen));
    }
    let listener = TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    let (cmds, cmd_rx) = mpsc::channel(4096);
    let (events_tx, events) = mpsc::channel(4096);
    let (stop, stop_rx) = oneshot::channel();
    let ticks = Arc::new(std::sync::Mutex::new(Vec::new()));
    let shared = Arc::new(Shared {
        config: config.clone(),
        cmds,
        events: events_tx.clone(),
        live: AtomicUsize::new(0),
        next_conn: std::sync::atomic::AtomicU64::new(1),
    });
    let terrain: Hosted = terrain.into();
    let (http, views) = match &config.view {
        Some(v) => {
            let (view_tx, view_rx) = mpsc::channel(4096);
            let http = crate::view::start(&config, v, view_tx, events_tx.clone()).await?;
            (Some(http), Some((Views::new(v.clone(), terrain.terrain(), config.max_brush), view_rx)))
        }
        None => (None, None),
    };
    let owner = tokio::spawn(own(terrain, config, cmd_rx, views, stop_rx, events_tx, ticks.clone()));
    let accept = tokio::spawn(async move {
        loop {
            let Ok((stream, peer)) = listener.accept().await else { continue };
            let shared = shared.clone();
            tokio::spawn(async move {
                let _ = connection(stream, peer, shared).await;
            });
        }
    });
    Ok(ServerHandle { addr, http, stop: Some(stop), owner, accept, events, ticks })
}

/// What the connections share.
struct Shared {
    config: ServerConfig,
    cmds: mpsc::Sender<Cmd>,
    events: mpsc::Sender<ServerEvent>,
    live: AtomicUsize,
    /// The next connection's number.
    next_conn: std::sync::atomic::AtomicU64,
}

/// What a connection asks of the owner.
enum Cmd {
    Join {
        conn: u64,
        resume: u64,
        reply: oneshot::Sender<(u64, bool, f32, Vec<u8>)>,
        frames: mpsc::Sender<Vec<u8>>,
        addr: SocketAddr,
    },
    Viewers {
        session: u64,
        points: Vec<Point3<f32>>,
    },
    Edit {
        session: u64,
        id: u32,
        brush: Brush,
    },
    Refuse {
        session: u64,
        id: u32,
        why: EditRefused,
    },
    Resend {
        session: u64,
        request: ResendRequest,
    },
    Hash {
        session: u64,
        keys: Vec<RegionKey>,
    },
    Leave {
        session: u64,
        conn: u64,
        why: String,
    },
}

/// One client as the owner keeps it.
struct Slot {
    id: ClientId,
    frames: mpsc::Sender<Vec<u8>>,
    lag: u32,
    /// Disconnected since then: kept for a resume until the window passes, not ticked.
    parked: Option<Instant>,
    /// The connection serving it (a resume replaces it; the old one's leaving then parks nothing).
    conn: u64,
}

/// Frames queued a client at most: past this it is behind.
const QUEUE: usize = 512;
/// Room a client's queue must have for it to be ticked.
const TICK_ROOM: usize = 64;

fn encoded(f: &ServerFrame) -> Vec<u8> {
    let mut out = Vec::new();
    f.encode(&mut out);
    out
}

/// The owner: the terrain, the replication server, the clients; commands between ticks.
async fn own(
    mut host: Hosted,
    config: ServerConfig,
    mut cmds: mpsc::Receiver<Cmd>,
    views: Option<(Views, mpsc::Receiver<ViewCmd>)>,
    mut stop: oneshot::Receiver<()>,
    events: mpsc::Sender<ServerEvent>,
    ticks: Arc<std::sync::Mutex<Vec<Duration>>>,
) -> Terrain {
    let (mut views, mut view_cmds) = match views {
        Some((v, rx)) => (Some(v), Some(rx)),
        None => (None, None),
    };
    let mut last_tick = Duration::ZERO;
    // Edits must lie inside the stored voxels' box as the server started.
    let world = host.terrain().extent().map(|e| host.terrain().scale().region_to_world(&e, 0.0));
    let mut srv = ReplicationServer::new(config.replication);
    let mut slots: BTreeMap<u64, Slot> = BTreeMap::new();
    let table = serde_json::to_vec(host.terrain().materials()).expect("a material table serializes");
    let period = Duration::from_secs_f32(1.0 / config.tick_hz.clamp(0.1, 1000.0));
    let mut tick = tokio::time::interval(period);
    // Edits applied (deferred on a durable world) whose replies wait for the tick's commit.
    let mut unconfirmed: Vec<(u64, u32, Result<u64, EditRefused>)> = Vec::new();
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let send = |slots: &BTreeMap<u64, Slot>, session: u64, f: &ServerFrame| {
        if let Some(s) = slots.get(&session) {
            let _ = s.frames.try_send(encoded(f));
        }
    };
    loop {
        tokio::select! {
            _ = &mut stop => break,
            cmd = cmds.recv() => {
                let Some(cmd) = cmd else { break };
                match cmd {
                    Cmd::Join { conn, resume, reply, frames, addr } => {
                        // A known session resumes with what it held (taking it over from a
                        // connection that has not noticed it died yet); any other gets a new one.
                        let resumed = match slots.get_mut(&resume) {
                            Some(s) => {
                                (s.frames, s.lag, s.parked, s.conn) = (frames.clone(), 0, None, conn);
                                true
                            }
                            None => false,
                        };
                        let session = if resumed { resume } else { new_session(&slots) };
                        if !resumed {
                            let id = srv.add_client(host.terrain());
                            slots.insert(session, Slot { id, frames, lag: 0, parked: None, conn });
                        }
                        let _ = reply.send((session, resumed, host.terrain().voxel_size(), table.clone()));
                        let _ = events.try_send(ServerEvent::Joined { session, resumed, addr });
                    }
                    Cmd::Viewers { session, points } => {
                        if let Some(s) = slots.get(&session) {
                            let _ = srv.set_viewers(s.id, &points);
                        }
                    }
                    Cmd::Edit { session, id, brush } => {
                        let result = edit(&mut host, world.as_ref(), config.max_brush, &brush);
                        if let (Some(views), Ok((_, Some(dirty)))) = (views.as_mut(), &result) {
                            views.edited(dirty, &brush);
                        }
                        let result = result.map(|(sequence, _)| sequence);
                        if result.is_ok() && host.is_durable() {
                            // Confirmed once the tick's one commit has it on disk.
                            unconfirmed.push((session, id, result));
                        } else {
                            send(&slots, session, &ServerFrame::EditReply { id, result });
                            let _ = events.try_send(ServerEvent::Edit { session, result });
                        }
                    }
                    Cmd::Refuse { session, id, why } => {
                        send(&slots, session, &ServerFrame::EditReply { id, result: Err(why) });
                        let _ = events.try_send(ServerEvent::Edit { session, result: Err(why) });
                    }
                    Cmd::Resend { session, request } => {
                        if let Some(s) = slots.get(&session) {
                            match srv.resend(s.id, &request) {
                                Ok(msgs) => msgs.into_iter().for_each(|m| send(&slots, session, &ServerFrame::Replication(m))),
                                Err(_) => drop_client(&mut slots, &mut srv, &events, session, "its resend reaches past the buffer"),
                            }
                        }
                    }
                    Cmd::Hash { session, keys } => {
                        let terrain = host.terrain();
                        let hashes = keys.iter().map(|k| (*k, terrain_region_hash(terrain, k))).collect();
                        send(&slots, session, &ServerFrame::Hashes { as_of: terrain.sequence(), hashes });
                    }
                    Cmd::Leave { session, conn, why } => {
                        // Kept for a resume; a connection that replaced it already is not ended.
                        if let Some(s) = slots.get_mut(&session).filter(|s| s.conn == conn && s.parked.is_none()) {
                            s.parked = Some(Instant::now());
                            let _ = events.try_send(ServerEvent::Left { session, why });
                        }
                    }
                }
            }
            cmd = next_view_cmd(&mut view_cmds) => match (cmd, views.as_mut()) {
                (Some(cmd), Some(v)) => v.handle(cmd, &mut host, world.as_ref(), config.max_brush),
                _ => view_cmds = None,
            },
            _ = tick.tick() => {
                let start = Instant::now();
                // Group commit: the tick's edits reach the disk in one fsync before anyone is told
                // of them, by a reply or a replication message.
                if !unconfirmed.is_empty() {
                    let committed = host.flush();
                    for (session, id, result) in unconfirmed.drain(..) {
                        let result = if committed { result } else { Err(EditRefused::Terrain) };
                        send(&slots, session, &ServerFrame::EditReply { id, result });
                        let _ = events.try_send(ServerEvent::Edit { session, result });
                    }
                }
                let mut behind = Vec::new();
                let expired: Vec<u64> = slots
                    .iter()
                    .filter(|(_, s)| s.parked.is_some_and(|t| t.elapsed() > config.resume_window))
                    .map(|(k, _)| *k)
                    .collect();
                for session in expired {
                    if let Some(s) = slots.remove(&session) {
                        let _ = srv.remove_client(s.id);
                    }
                }
                let mut due = Vec::new();
                for (&session, s) in slots.iter_mut() {
                    if s.parked.is_some() {
                        continue;
                    }
                    if s.frames.capacity() < TICK_ROOM {
                        s.lag += 1;
                        if s.lag > config.max_lag_ticks {
                            behind.push(session);
                        }
                        continue;
                    }
                    s.lag = 0;
                    due.push((session, s.id));
                }
                let ids: Vec<_> = due.iter().map(|d| d.1).collect();
                for ((session, _), msgs) in due.iter().zip(srv.tick_clients(host.terrain(), &ids, config.budget)) {
                    let (Some(s), Ok(msgs)) = (slots.get(session), msgs) else { continue };
                    for m in msgs {
                        // A message the queue cannot take is lost: the client sees the gap and
                        // asks for it again.
                        let _ = s.frames.try_send(encoded(&ServerFrame::Replication(m)));
                    }
                }
                for session in behind {
                    drop_client(&mut slots, &mut srv, &events, session, "too far behind");
                }
                if let Some(v) = views.as_mut() {
                    v.tick(host.terrain(), last_tick);
                }
                last_tick = start.elapsed();
                if let Ok(mut t) = ticks.lock() {
                    t.push(last_tick);
                }
            }
        }
    }
    host.into_terrain()
}

fn drop_client(
    slots: &mut BTreeMap<u64, Slot>,
    srv: &mut ReplicationServer,
    events: &mpsc::Sender<ServerEvent>,
    session: u64,
    why: &str,
) {
    if let Some(s) = slots.remove(&session) {
        let _ = srv.remove_client(s.id);
        let _ = events.try_send(ServerEvent::Left { session, why: why.into() });
    }
}

/// A session id no live client has: random, never 0.
fn new_session(slots: &BTreeMap<u64, Slot>) -> u64 {
    loop {
        let mut b = [0u8; 8];
        getrandom::fill(&mut b).expect("the operating system's random source");
        let s = u64::from_le_bytes(b);
        if s != 0 && !slots.contains_key(&s) {
            return s;
        }
    }
}

/// One connection: the handshake, then its frames until it leaves, errs or idles out.
async fn connection(tcp: TcpStream, addr: SocketAddr, shared: Arc<Shared>) -> Result<(), NetError> {
    let _ = tcp.set_nodelay(true);
    let cfg = &shared.config;
    let refuse = |why| {
        let _ = shared.events.try_send(ServerEvent::Refused { addr, why });
        encoded(&ServerFrame::Refused { why, version: PROTOCOL_VERSION })
    };
    let full = shared.live.fetch_add(1, Ordering::SeqCst) >= cfg.max_clients;
    let result = async {
        // The TLS handshake shares the hello's deadline: a connection that stalls it costs only
        // itself.
        let stream: Box<dyn Stream> = match &cfg.tls {
            None => Box::new(tcp),
            Some(tls) => match tokio::time::timeout(cfg.handshake_timeout, tls.accept(tcp)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    let _ = refuse(RefusedWhy::Handshake);
                    return Err(e);
                }
                Err(_) => {
                    let _ = refuse(RefusedWhy::Handshake);
                    return Err(NetError::Timeout("the TLS handshake"));
                }
            },
        };
        let (mut r, mut w) = tokio::io::split(stream);
        if full {
            let f = refuse(RefusedWhy::Full);
            return write_all(&mut w, &f).await;
        }
        let hello = tokio::time::timeout(cfg.handshake_timeout, read_frame(&mut r, CLIENT_FRAME_MAX)).await;
        let body = match hello {
            Ok(Ok(Some(body))) => body,
            Ok(Err(NetError::Protocol(_))) | Ok(Ok(None)) | Err(_) => {
                let f = refuse(RefusedWhy::Handshake);
                let _ = write_all(&mut w, &f).await;
                return Err(NetError::Unexpected("no hello"));
            }
            Ok(Err(e)) => return Err(e),
        };
        let (version, token, resume) = match ClientFrame::decode(&body) {
            Ok(ClientFrame::Hello { version, token, resume }) => (version, token, resume),
            _ => {
                let f = refuse(RefusedWhy::Handshake);
                let _ = write_all(&mut w, &f).await;
                return Err(NetError::Unexpected("the first frame is not a hello"));
            }
        };
        if version != PROTOCOL_VERSION {
            let f = refuse(RefusedWhy::Version);
            let _ = write_all(&mut w, &f).await;
            return Err(NetError::Unexpected("another protocol version"));
        }
        // Constant time over the secret's length: a wrong token of any length reveals nothing.
        let ok = token.len() == cfg.token.len() && bool::from(token.as_slice().ct_eq(&cfg.token));
        if !ok || cfg.token.is_empty() {
            log::warn!("refused {addr}: wrong token");
            let f = refuse(RefusedWhy::Token);
            let _ = write_all(&mut w, &f).await;
            return Err(NetError::Unexpected("a wrong token"));
        }
        let (frames, mut rx) = mpsc::channel::<Vec<u8>>(QUEUE);
        let (reply, welcome) = oneshot::channel();
        let conn = shared.next_conn.fetch_add(1, Ordering::Relaxed);
        let join = Cmd::Join { conn, resume, reply, frames: frames.clone(), addr };
        shared.cmds.send(join).await.map_err(|_| NetError::Closed)?;
        let (session, resumed, voxel_size, table) = welcome.await.map_err(|_| NetError::Closed)?;
        let f =
            encoded(&ServerFrame::Welcome { version: PROTOCOL_VERSION, session, resumed, voxel_size, table });
        write_all(&mut w, &f).await?;
        // The writer: whatever the owner queues, in order; it ends when the owner drops the queue.
        let writer = tokio::spawn(async move {
            while let Some(f) = rx.recv().await {
                if write_all(&mut w, &f).await.is_err() {
                    break;
                }
            }
        });
        drop(frames);
        let why = read_loop(&mut r, session, &shared).await;
        let _ = shared.cmds.send(Cmd::Leave { session, conn, why }).await;
        writer.abort();
        Ok(())
    }
    .await;
    shared.live.fetch_sub(1, Ordering::SeqCst);
    result
}

/// A client's frames after the handshake, each within the idle timeout; edits within the rate.
/// Returns why it ended.
async fn read_loop<R: AsyncRead + Unpin>(r: &mut R, session: u64, shared: &Shared) -> String {
    let cfg = &shared.config;
    let mut rate = Rate::new(cfg.edit_rate);
    loop {
        let body = match tokio::time::timeout(cfg.idle_timeout, read_frame(r, CLIENT_FRAME_MAX)).await {
            Err(_) => return "idle".into(),
            Ok(Ok(None)) => return "closed".into(),
            Ok(Err(e)) => return e.to_string(),
            Ok(Ok(Some(body))) => body,
        };
        let cmd = match ClientFrame::decode(&body) {
            Err(e) => return e.to_string(),
            Ok(ClientFrame::Hello { .. }) => return "a second hello".into(),
            Ok(ClientFrame::Viewers(points)) => {
                if points.iter().any(|p| !p.iter().all(|c| c.is_finite())) {
                    return "a viewer that is not finite".into();
                }
                Cmd::Viewers { session, points }
            }
            Ok(ClientFrame::Edit { id, brush }) => match rate.take() {
                true => Cmd::Edit { session, id, brush },
                // Refused here, answered by the owner, which holds the client's queue.
                false => Cmd::Refuse { session, id, why: EditRefused::RateLimited },
            },
            Ok(ClientFrame::Resend(request)) => Cmd::Resend { session, request },
            Ok(ClientFrame::HashRequest(keys)) => Cmd::Hash { session, keys },
        };
        if shared.cmds.send(cmd).await.is_err() {
            return "the server stopped".into();
        }
    }
}
