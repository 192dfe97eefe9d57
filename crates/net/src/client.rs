//! The client: connects, presents the token, mirrors the server's world into a
//! [`ReplicaClient`], sends its viewers and edit requests, and checks what it holds against the
//! server's hashes.

use crate::error::NetError;
use crate::frames::{read_frame, write_all};
use crate::protocol::{
    ClientFrame, EditRefused, PROTOCOL_VERSION, SERVER_FRAME_MAX, ServerFrame, terrain_region_hash,
};
use crate::tls::{Stream, TlsClient};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::WriteHalf;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use voxterra::Brush;
use voxterra::core::MaterialTable;
use voxterra::core::nalgebra::Point3;
use voxterra::replication::{ReplicaClient, ReplicationError, client_terrain};

/// A connected client.
pub struct Client {
    addr: SocketAddr,
    tls: Option<TlsClient>,
    token: Vec<u8>,
    writer: WriteHalf<Box<dyn Stream>>,
    frames: mpsc::Receiver<Result<ServerFrame, NetError>>,
    replica: ReplicaClient,
    session: u64,
    next_edit: u32,
    bytes_in: Arc<AtomicU64>,
    replies: Vec<(u32, Result<u64, EditRefused>)>,
}

/// What [`Client::check`] found: regions compared with the server's, and those that differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RegionCheck {
    /// Ready regions compared.
    pub compared: usize,
    /// Of those, the ones whose voxels differ from the server's.
    pub differ: usize,
}

impl Client {
    /// Connects to `addr` over plaintext TCP, presents `token` and waits for the welcome (within
    /// `deadline`). Loopback only ([`NetError::NotLoopback`]): the token would cross the network
    /// in the clear; elsewhere use [`connect_tls`](Self::connect_tls).
    pub async fn connect(addr: SocketAddr, token: &[u8], deadline: Duration) -> Result<Client, NetError> {
        Ok(Self::open(addr, None, token.to_vec(), None, deadline).await?.0)
    }

    /// [`connect`](Self::connect) over TLS, trusting what `tls` trusts; any address.
    pub async fn connect_tls(
        addr: SocketAddr,
        tls: &TlsClient,
        token: &[u8],
        deadline: Duration,
    ) -> Result<Client, NetError> {
        Ok(Self::open(addr, Some(tls.clone()), token.to_vec(), None, deadline).await?.0)
    }

    /// Connects again after the connection was lost, resuming the session: the client keeps what
    /// it holds and asks for what it missed. When the server no longer keeps the session (its
    /// window passed), it starts afresh. Returns the client and whether it resumed.
    pub async fn reconnect(self, deadline: Duration) -> Result<(Client, bool), NetError> {
        let Client { addr, tls, token, session, replica, writer, .. } = self;
        drop(writer);
        Self::open(addr, tls, token, Some((session, replica)), deadline).await
    }

    async fn open(
        addr: SocketAddr,
        tls: Option<TlsClient>,
        token: Vec<u8>,
        resume: Option<(u64, ReplicaClient)>,
        deadline: Duration,
    ) -> Result<(Client, bool), NetError> {
        if tls.is_none() && !addr.ip().is_loopback() {
            return Err(NetError::NotLoopback(addr));
        }
        let tcp = tokio::time::timeout(deadline, TcpStream::connect(addr))
            .await
            .map_err(|_| NetError::Timeout("connecting"))??;
        let _ = tcp.set_nodelay(true);
        let stream: Box<dyn Stream> = match &tls {
            None => Box::new(tcp),
            Some(tls) => tokio::time::timeout(deadline, tls.connect(tcp))
                .await
                .map_err(|_| NetError::Timeout("the TLS handshake"))??,
        };
        let (mut r, mut writer) = tokio::io::split(stream);
        let mut hello = Vec::new();
        let session = resume.as_ref().map_or(0, |(s, _)| *s);
        ClientFrame::Hello { version: PROTOCOL_VERSION, token: token.clone(), resume: session }
            .encode(&mut hello);
        write_all(&mut writer, &hello).await?;
        let first = tokio::time::timeout(deadline, read_frame(&mut r, SERVER_FRAME_MAX))
            .await
            .map_err(|_| NetError::Timeout("the welcome"))??
            .ok_or(NetError::Closed)?;
        let (session, resumed, voxel_size, table) = match ServerFrame::decode(&first)? {
            ServerFrame::Welcome { session, resumed, voxel_size, table, .. } => {
                (session, resumed, voxel_size, table)
            }
            ServerFrame::Refused { why, version } => return Err(NetError::Refused { why, version }),
            _ => return Err(NetError::Unexpected("the first frame is not a welcome")),
        };
        let (replica, resumed) = match resume {
            Some((_, replica)) if resumed => (replica, true),
            _ => {
                let table: MaterialTable = serde_json::from_slice(&table)?;
                (ReplicaClient::new(client_terrain(table, voxel_size)?), false)
            }
        };
        let bytes_in = Arc::new(AtomicU64::new(first.len() as u64 + 4));
        let (tx, frames) = mpsc::channel(1024);
        let counter = bytes_in.clone();
        // The reader: decoded frames into a queue, so waiting on them can time out safely.
        tokio::spawn(async move {
            loop {
                let f = match read_frame(&mut r, SERVER_FRAME_MAX).await {
                    Ok(Some(body)) => {
                        counter.fetch_add(body.len() as u64 + 4, Ordering::Relaxed);
                        ServerFrame::decode(&body).map_err(NetError::from)
                    }
                    Ok(None) => Err(NetError::Closed),
                    Err(e) => Err(e),
                };
                let end = f.is_err();
                if tx.send(f).await.is_err() || end {
                    break;
                }
            }
        });
        let mut client = Client {
            addr,
            tls,
            token,
            writer,
            frames,
            replica,
            session,
            next_edit: 0,
            bytes_in,
            replies: Vec::new(),
        };
        if resumed {
            // What was on its way when the connection dropped, and anything since.
            let request = client.replica.resend_request();
            client.send(&ClientFrame::Resend(request)).await?;
        }
        Ok((client, resumed))
    }

    /// Closes the connection (the server keeps the session for a while: [`Client::reconnect`]).
    pub async fn close(&mut self) {
        use tokio::io::AsyncWriteExt;
        let _ = self.writer.shutdown().await;
    }

    /// The session the server gave this client.
    pub fn session(&self) -> u64 {
        self.session
    }

    /// The mirror of the server's world.
    pub fn replica(&self) -> &ReplicaClient {
        &self.replica
    }

    /// Bytes received so far.
    pub fn bytes_in(&self) -> u64 {
        self.bytes_in.load(Ordering::Relaxed)
    }

    async fn send(&mut self, f: &ClientFrame) -> Result<(), NetError> {
        let mut out = Vec::new();
        f.encode(&mut out);
        write_all(&mut self.writer, &out).await
    }

    /// Tells the server where this client's viewers are (world units).
    pub async fn set_viewers(&mut self, viewers: &[Point3<f32>]) -> Result<(), NetError> {
        self.send(&ClientFrame::Viewers(viewers.to_vec())).await
    }

    /// Asks the server for an edit; its answer comes through [`Client::pump`]. Returns the
    /// request's id.
    pub async fn edit(&mut self, brush: &Brush) -> Result<u32, NetError> {
        let id = self.next_edit;
        self.next_edit += 1;
        self.send(&ClientFrame::Edit { id, brush: *brush }).await?;
        Ok(id)
    }

    /// Applies what arrives for `wait` (asking again for what a gap lost); returns the edit
    /// replies that came.
    pub async fn pump(&mut self, wait: Duration) -> Result<Vec<(u32, Result<u64, EditRefused>)>, NetError> {
        let until = tokio::time::Instant::now() + wait;
        while let Ok(f) = tokio::time::timeout_at(until, self.frames.recv()).await {
            let f = f.ok_or(NetError::Closed)??;
            self.handle(f).await?;
        }
        Ok(std::mem::take(&mut self.replies))
    }

    async fn handle(
        &mut self,
        f: ServerFrame,
    ) -> Result<Option<(u64, Vec<(voxterra::replication::RegionKey, u64)>)>, NetError> {
        match f {
            ServerFrame::Replication(m) => match self.replica.apply(&m) {
                Ok(_) => {}
                Err(ReplicationError::Gap { .. }) => {
                    let request = self.replica.resend_request();
                    self.send(&ClientFrame::Resend(request)).await?;
                }
                Err(e) => return Err(e.into()),
            },
            ServerFrame::EditReply { id, result } => self.replies.push((id, result)),
            ServerFrame::Hashes { as_of, hashes } => return Ok(Some((as_of, hashes))),
            ServerFrame::Refused { why, version } => return Err(NetError::Refused { why, version }),
            ServerFrame::Welcome { .. } => return Err(NetError::Unexpected("a second welcome")),
        }
        Ok(None)
    }

    /// Asks the server for the hash of every region this client holds ready and compares them
    /// with its own voxels (within `deadline`), once it has applied the server's messages up to
    /// the sequence the hashes were taken at: a region an edit before then changed is stale by
    /// then, not ready, and not compared.
    pub async fn check(&mut self, deadline: Duration) -> Result<RegionCheck, NetError> {
        let keys: Vec<_> = self.replica.ready_regions().collect();
        let mut check = RegionCheck::default();
        for part in keys.chunks(crate::protocol::MAX_HASHED_REGIONS) {
            self.send(&ClientFrame::HashRequest(part.to_vec())).await?;
            let until = tokio::time::Instant::now() + deadline;
            let mut answer = None;
            loop {
                if let Some((as_of, _)) = &answer
                    && self.replica.server_sequence() >= *as_of
                {
                    break;
                }
                let f = tokio::time::timeout_at(until, self.frames.recv())
                    .await
                    .map_err(|_| NetError::Timeout("the region hashes"))?
                    .ok_or(NetError::Closed)??;
                if let Some(h) = self.handle(f).await? {
                    answer = Some(h);
                }
            }
            let Some((_, hashes)) = answer else { continue };
            for (k, h) in hashes {
                let r = k.region().map_err(|_| NetError::Unexpected("a region outside the voxel space"))?;
                if !self.replica.is_ready(&r) {
                    continue;
                }
                check.compared += 1;
                if terrain_region_hash(self.replica.terrain(), &k) != h {
                    check.differ += 1;
                }
            }
        }
        Ok(check)
    }
}
