//! Replication: a server streams its [`Terrain`] to clients that mirror it.
//! Transport-agnostic: messages are byte vectors, the game owns the sockets.
//!
//! The server ([`ReplicationServer`]) keeps, per client, which 16³ regions it holds at full
//! resolution, which 32³ chunks at which mip level, and which edit it has seen. Each
//! [`ReplicationServer::tick`], within a byte budget and nearest first around the client's viewers,
//! it emits full-resolution 16³ regions near, mip levels far (level 1 to 3: 16³, 8³ or 4³ voxels a
//! chunk), and for what edits (detached pieces included: their removal is part of the edit)
//! changed in regions the client holds, first a *stale notice* naming those regions, then a
//! *patch* per region (the box the edits touched). Voxels travel as the codec's bit-packed packets
//! ([`voxterra_codec::packet`]).
//!
//! The client ([`ReplicaClient`]) applies messages to its own terrain. A region is *ready* from its
//! full send until a stale notice names it, and again once its patch arrives; every message is
//! stamped with the server's edit sequence, and after each one every ready region equals the
//! server's voxels at that sequence ([`ReplicaClient::server_sequence`]). A client further behind
//! than the server's delta log reaches is told to forget everything it holds and is sent afresh.
//! Mips are kept beside the terrain for drawing far terrain and never reach it, so its physics only
//! ever sees full data: [`ReplicaClient::contacts`] and [`ReplicaClient::cast_ray`] refuse
//! ([`ReplicationError::NotReady`]) where the client does not hold every region the query reads
//! ready.
//!
//! Messages are numbered per client: a duplicate or older one is ignored; one past a gap is held
//! (up to [`AHEAD_MESSAGES`] and [`AHEAD_BYTES`]) and applied when the gap fills; the client asks
//! for exactly what it lacks ([`ReplicaClient::resend_request`], [`ReplicationServer::resend`]). A
//! malformed message is refused with a typed error and changes nothing.
//!
//! ```
//! use voxterra::prelude::*;
//! use voxterra::replication::{client_terrain, MIN_TICK_BUDGET, ReplicaClient, ReplicationConfig, ReplicationServer};
//! use voxterra::worldgen::GenParams;
//!
//! let mut world = Terrain::generate(&GenParams::new(2, [96, 48, 96]), TerrainConfig::default())?;
//! let config = ReplicationConfig { full_radius: 24.0, mip_radii: [48.0, 96.0, 160.0], resend_messages: 1024 };
//! let mut server = ReplicationServer::new(config);
//! let id = server.add_client(&world);
//! let mut client = ReplicaClient::new(client_terrain(world.materials().clone(), world.voxel_size())?);
//! server.set_viewers(id, &[Point3::new(48.0, 30.0, 48.0)])?;
//! // Each tick the server sends what is due within the budget; the bytes would cross a socket.
//! for _ in 0..64 {
//!     for msg in server.tick(&world, id, MIN_TICK_BUDGET)? {
//!         client.apply(&msg)?;
//!     }
//! }
//! let near = Region::from_min_size(VoxelPos::new(40, 24, 40), [16, 16, 16])?;
//! assert!(client.is_ready(&near)); // full detail around the viewer, equal to the server's
//! // An edit reaches the client as a stale notice, then a patch.
//! let dig = BrushShape::Sphere { center: Point3::new(48.0, 30.0, 48.0), radius: 3.0 };
//! world.apply_brush(&Brush { shape: dig, op: BrushOp::Subtract })?;
//! for msg in server.tick(&world, id, MIN_TICK_BUDGET)? {
//!     client.apply(&msg)?;
//! }
//! assert_eq!(client.server_sequence(), world.sequence());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A message, all integers little-endian (`docs/format.md` has the rules):
//!
//! | bytes | field |
//! | --- | --- |
//! | 4 | magic `VXR2` |
//! | 8 | message number, per client |
//! | 8 | the server terrain's sequence the message is as of |
//! | 1 | kind: 0 a 16³ region, 1 a mip of a 32³ chunk, 2 a patch, 3 a stale notice |
//! | 12 | key x, y, z as i32: the region's (kinds 0, 2; voxels / 16) or chunk's (kind 1; / 32); 0 for kind 3 |
//! | 1 | mip level 1–3 for kind 1; for kind 3, 0 a list of regions, 1 forget everything; else 0 |
//! | n | kinds 0, 1: one codec packet of the box; 2: the box in the region (min x, y, z in 0–15, size in 1–16, a byte each) and its packet; 3: region keys, 12 bytes each |
//! | 4 | CRC-32 of everything before |

mod client;
mod message;
mod server;

pub use client::{AHEAD_BYTES, AHEAD_MESSAGES, Applied, ReplicaClient};
pub use server::{InvalidReplication, MIN_TICK_BUDGET, ReplicationServer};

use crate::error::{ConfigError, EditError, QueryError};
use crate::terrain::Terrain;
use voxterra_codec::PacketError;
use voxterra_core::nalgebra::Point3;
use voxterra_core::{ChunkKey, MaterialTable, Region};

/// A 16³ region: the unit of full-resolution sends and of readiness.
pub type RegionKey = ChunkKey<4>;

/// A box inside a 16³ region, in voxels from the region's corner.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct BlockBox {
    pub(crate) min: Point3<u8>,
    pub(crate) size: [u8; 3],
}

/// What a client asks the server to send again ([`ReplicaClient::resend_request`]).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct ResendRequest {
    /// Numbers missing below messages the client holds past a gap.
    pub missing: Vec<u64>,
    /// Every message from this number on.
    pub from: u64,
}

/// Why a message was refused. A refused message changes nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplicationError {
    /// Not a message: too short, a bad magic, kind or level, a checksum that does not match.
    #[error("malformed message: {0}")]
    Malformed(&'static str),
    /// Its voxels do not decode (or name materials the client's table lacks).
    #[error(transparent)]
    Packet(#[from] PacketError),
    /// A message further past the missing ones than the client keeps ([`AHEAD_MESSAGES`],
    /// [`AHEAD_BYTES`]): ask the server for [`ReplicaClient::resend_request`].
    #[error("message {got} is too far past the gap: the client expects message {expected}")]
    Gap {
        /// The client's next message.
        expected: u64,
        /// This message's number.
        got: u64,
    },
    /// A query over regions the client does not hold ready at full resolution.
    #[error("the query reads {0:?}, which the client does not hold ready at full resolution")]
    NotReady(Region),
    /// The client's terrain refused the write.
    #[error(transparent)]
    Edit(#[from] EditError),
    /// The client's terrain refused the query.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// A region past the core's coordinate range.
    #[error(transparent)]
    Core(#[from] voxterra_core::CoreError),
    /// The server's store refused a read (a level past its mips).
    #[error(transparent)]
    Store(#[from] voxterra_voxel_store::StoreError),
    /// The server no longer has messages from this number on (its resend buffer is smaller).
    #[error("message {0} is no longer in the resend buffer")]
    Gone(u64),
    /// No client with this id.
    #[error("no client {0}")]
    UnknownClient(usize),
    /// A tick budget under the largest message: nothing could be sent within it.
    #[error("a tick budget of {budget} bytes is under the largest message ({min} bytes)")]
    BudgetTooSmall {
        /// The budget asked for.
        budget: usize,
        /// [`MIN_TICK_BUDGET`].
        min: usize,
    },
}

/// How far around its viewers a client gets each resolution, in world units.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct ReplicationConfig {
    /// Full-resolution 16³ regions within this distance of a viewer.
    pub full_radius: f32,
    /// Mips of 32³ chunks within these distances: level 1 (16³ a chunk), 2 (8³), 3 (4³).
    pub mip_radii: [f32; 3],
    /// Messages kept per client for [`ReplicationServer::resend`].
    pub resend_messages: usize,
}

impl Default for ReplicationConfig {
    /// Full detail within 64 units, mips to 128, 256 and 512; 4096 messages to resend.
    fn default() -> Self {
        ReplicationConfig { full_radius: 64.0, mip_radii: [128.0, 256.0, 512.0], resend_messages: 4096 }
    }
}

/// A client of a [`ReplicationServer`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct ClientId(pub(crate) usize);

/// A table-only empty terrain for a client of a server over `table` and `voxel_size`.
pub fn client_terrain(table: MaterialTable, voxel_size: f32) -> Result<Terrain, ConfigError> {
    Terrain::new(table, crate::TerrainConfig::with_voxel_size(voxel_size))
}
