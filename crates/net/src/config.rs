//! How a server runs ([`ServerConfig`], with its browser viewers' [`ViewConfig`]) and what it
//! reports ([`ServerEvent`]): shared by the game port's connections and the viewers'.

use crate::protocol::{EditRefused, RefusedWhy};
use crate::tls::TlsServer;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use voxterra::core::Material;
use voxterra::lod::LodConfig;
use voxterra::replication::ReplicationConfig;

/// How a [`serve`](crate::serve)d world is run.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The secret every client presents first (compared in constant time).
    pub token: Vec<u8>,
    /// Ticks a second.
    pub tick_hz: f32,
    /// Bytes a client is sent per tick at most (a stale notice may exceed it).
    pub budget: usize,
    /// How far around its viewers a client gets each resolution.
    pub replication: ReplicationConfig,
    /// Most clients at once; one more is refused.
    pub max_clients: usize,
    /// Time a new connection has to complete its hello.
    pub handshake_timeout: Duration,
    /// Time a client may stay silent (it sends its viewers every tick or so).
    pub idle_timeout: Duration,
    /// Edit requests a client may make a second (a burst of as many).
    pub edit_rate: f32,
    /// Largest brush (a sphere's or capsule's radius, half a box's largest side), world units.
    pub max_brush: f32,
    /// Ticks a client may stay unable to take its messages before it is dropped.
    pub max_lag_ticks: u32,
    /// How long a disconnected client's session is kept for it to resume.
    pub resume_window: Duration,
    /// TLS: required to listen anywhere but loopback.
    pub tls: Option<TlsServer>,
    /// Browser viewers: an HTTP listener beside the game port ([`crate::view`]).
    pub view: Option<ViewConfig>,
}

impl Default for ServerConfig {
    /// 20 Hz, 64 KiB a client a tick, 256 clients, a 5 s handshake, 30 s idle, 10 edits a second
    /// of at most 16 units, dropped after 5 s of lag, sessions kept 30 s for a reconnect.
    fn default() -> Self {
        ServerConfig {
            token: Vec::new(),
            tick_hz: 20.0,
            budget: 64 * 1024,
            replication: ReplicationConfig::default(),
            max_clients: 256,
            handshake_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(30),
            edit_rate: 10.0,
            max_brush: 16.0,
            max_lag_ticks: 100,
            resume_window: Duration::from_secs(30),
            tls: None,
            view: None,
        }
    }
}

/// What happened on the server, for its log.
#[derive(Clone, Debug, PartialEq)]
pub enum ServerEvent {
    /// A client completed the handshake.
    Joined {
        /// Its session.
        session: u64,
        /// It resumed that session.
        resumed: bool,
        /// Its address.
        addr: SocketAddr,
    },
    /// A connection was refused at the handshake.
    Refused {
        /// Its address.
        addr: SocketAddr,
        /// Why.
        why: RefusedWhy,
    },
    /// A client left or was dropped.
    Left {
        /// Its session.
        session: u64,
        /// Why, in words.
        why: String,
    },
    /// An edit request was answered.
    Edit {
        /// The client's session.
        session: u64,
        /// The sequence it made, or why it was refused.
        result: Result<u64, EditRefused>,
    },
}

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
