//! Replication: a server streams its [`Terrain`] to clients that mirror it. Transport-agnostic:
//! messages are byte vectors, the game owns the sockets.
//!
//! The server ([`ReplicationServer`]) keeps, per client, which 16³ regions it holds at full
//! resolution, which 32³ chunks at which mip level, and which edit it has seen. Each
//! [`ReplicationServer::tick`], within a byte budget and nearest first around the client's viewers,
//! it emits full-resolution 16³ regions near, mip levels far (level 1 to 3: 16³, 8³ or 4³ voxels a
//! chunk), and 4³ updates for what edits (detached pieces included: their removal is part of the
//! edit) changed in regions the client holds. Voxels travel as the codec's bit-packed packets
//! ([`voxterra_codec::packet`]).
//!
//! The client ([`ReplicaClient`]) applies messages to its own [`Terrain`]. Full-resolution
//! regions go into it; mips are kept beside it for drawing far terrain and never reach it, so its
//! physics only ever sees full data, and [`ReplicaClient::contacts`] and
//! [`ReplicaClient::cast_ray`] refuse ([`ReplicationError::NotReady`]) where the client does not
//! hold every region the query reads. Messages carry a sequence number per client: a duplicate or
//! older message is ignored, a later one than expected is refused as a gap (ask the server to
//! [`resend`](ReplicationServer::resend) from [`ReplicaClient::expected`]), and a malformed one is
//! refused with a typed error; a refused message changes nothing.
//!
//! A message, all integers little-endian:
//!
//! | bytes | field |
//! | --- | --- |
//! | 4 | magic `VXR1` |
//! | 8 | sequence number |
//! | 1 | kind: 0 a 16³ region, 1 a mip of a 32³ chunk, 2 a 4³ update |
//! | 12 | the region's, chunk's or block's key: x, y, z as i32 (in 16s, 32s or 4s of voxels) |
//! | 1 | mip level (1–3; 0 for the others) |
//! | n | the voxels: one codec packet of the box |
//! | 4 | CRC-32 of everything before |

use crate::terrain::{Terrain, TerrainError};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use voxterra_codec::{PacketError, decode_packet, encode_packet};
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{ChunkKey, MaterialTable, Region, StoreChunkKey, Voxel, VoxelPos, VoxelRead};

/// A 16³ region: the unit of full-resolution sends.
pub type RegionKey = ChunkKey<4>;
/// A 4³ block: the unit of edit updates.
pub type BlockKey = ChunkKey<2>;

const MAGIC: &[u8; 4] = b"VXR1";
const HEADER: usize = 4 + 8 + 1 + 12 + 1;

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
    /// Messages before this one are missing: ask the server to resend from `expected`.
    #[error("message {got} leaves a gap: the client expects message {expected}")]
    Gap {
        /// The client's next message.
        expected: u64,
        /// This message's number.
        got: u64,
    },
    /// A query over regions the client does not hold at full resolution.
    #[error("the query reads {0:?}, which the client does not hold at full resolution")]
    NotReady(Region),
    /// The client's terrain refused the write or the query.
    #[error(transparent)]
    Terrain(#[from] TerrainError),
    /// The server no longer has messages from this number on (its resend buffer is smaller).
    #[error("message {0} is no longer in the resend buffer")]
    Gone(u64),
    /// No client with this id.
    #[error("no client {0}")]
    UnknownClient(usize),
}

/// What a message carries.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Region(RegionKey),
    Mip(StoreChunkKey, u32),
    Block(BlockKey),
}

impl Kind {
    /// The box of voxels (in the level's voxels for a mip) and its size.
    fn region(&self) -> Region {
        let (min, side) = match *self {
            Kind::Region(k) => (Point3::new(k.x, k.y, k.z) * 16, 16),
            Kind::Block(k) => (Point3::new(k.x, k.y, k.z) * 4, 4),
            Kind::Mip(k, level) => {
                let side = 32 >> level;
                (Point3::new(k.x, k.y, k.z) * side, side)
            }
        };
        Region::from_min_size(min, [side as u32; 3]).expect("keys come from the i32 range")
    }
}

fn encode_message(seq: u64, kind: Kind, voxels: &[Voxel]) -> Vec<u8> {
    let (code, key, level) = match kind {
        Kind::Region(k) => (0u8, [k.x, k.y, k.z], 0u8),
        Kind::Mip(k, l) => (1, [k.x, k.y, k.z], l as u8),
        Kind::Block(k) => (2, [k.x, k.y, k.z], 0),
    };
    let side = kind.region().size()[0] as usize;
    let mut out = Vec::with_capacity(HEADER + 64);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&seq.to_le_bytes());
    out.push(code);
    for c in key {
        out.extend_from_slice(&c.to_le_bytes());
    }
    out.push(level);
    encode_packet(voxels, [side; 3], &mut out);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The sequence number, kind and packet of a message, checked but not decoded.
fn parse(msg: &[u8]) -> Result<(u64, Kind, &[u8]), ReplicationError> {
    if msg.len() < HEADER + 4 || &msg[..4] != MAGIC {
        return Err(ReplicationError::Malformed("too short or not a voxterra replication message"));
    }
    let (body, crc) = msg.split_at(msg.len() - 4);
    if crc32fast::hash(body).to_le_bytes() != crc {
        return Err(ReplicationError::Malformed("checksum mismatch"));
    }
    let seq = u64::from_le_bytes(body[4..12].try_into().expect("eight bytes"));
    let int = |at: usize| i32::from_le_bytes(body[at..at + 4].try_into().expect("four bytes"));
    let (x, y, z) = (int(13), int(17), int(21));
    let level = body[25] as u32;
    let kind = match (body[12], level) {
        (0, 0) => Kind::Region(RegionKey::new(x, y, z)),
        (1, 1..=3) => Kind::Mip(StoreChunkKey::new(x, y, z), level),
        (2, 0) => Kind::Block(BlockKey::new(x, y, z)),
        _ => return Err(ReplicationError::Malformed("unknown kind or level")),
    };
    // Keys whose box leaves the i32 voxel space are refused before anything is sized from them.
    let side = match kind {
        Kind::Region(_) => 16i64,
        Kind::Block(_) => 4,
        Kind::Mip(_, l) => 32 >> l,
    };
    if [x, y, z].iter().any(|&c| {
        let lo = c as i64 * side;
        lo < i32::MIN as i64 || lo + side > i32::MAX as i64
    }) {
        return Err(ReplicationError::Malformed("key out of range"));
    }
    Ok((seq, kind, &body[HEADER..]))
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
pub struct ClientId(usize);

#[derive(Debug, Default)]
struct ClientState {
    viewers: Vec<Point3<f32>>,
    /// Regions the client holds at full resolution.
    full: BTreeSet<RegionKey>,
    /// Chunks it holds as mips, and at which level.
    mips: BTreeMap<StoreChunkKey, u32>,
    /// Blocks edits changed in regions it holds, not yet sent.
    dirty: BTreeSet<BlockKey>,
    /// The server terrain's sequence it has been brought up to.
    seen: u64,
    next: u64,
    sent: VecDeque<(u64, Vec<u8>)>,
}

/// The server side: per client, what it holds and what to send next.
#[derive(Debug, Default)]
pub struct ReplicationServer {
    config: ReplicationConfig,
    clients: Vec<ClientState>,
}

impl ReplicationServer {
    /// A server with no clients.
    pub fn new(config: ReplicationConfig) -> Self {
        ReplicationServer { config, clients: Vec::new() }
    }

    /// Adds a client that holds nothing yet; it is brought up to `terrain`'s current sequence by
    /// full sends, so edits before now never reach it as updates.
    pub fn add_client(&mut self, terrain: &Terrain) -> ClientId {
        self.clients.push(ClientState { seen: terrain.sequence(), ..Default::default() });
        ClientId(self.clients.len() - 1)
    }

    fn client(&mut self, id: ClientId) -> Result<&mut ClientState, ReplicationError> {
        self.clients.get_mut(id.0).ok_or(ReplicationError::UnknownClient(id.0))
    }

    /// Where the client's viewers are (world units, the terrain's frame).
    pub fn set_viewers(&mut self, id: ClientId, viewers: &[Point3<f32>]) -> Result<(), ReplicationError> {
        self.client(id)?.viewers = viewers.to_vec();
        Ok(())
    }

    /// The regions the server believes the client holds at full resolution.
    pub fn full_regions(&self, id: ClientId) -> Result<Vec<RegionKey>, ReplicationError> {
        let c = self.clients.get(id.0).ok_or(ReplicationError::UnknownClient(id.0))?;
        Ok(c.full.iter().copied().collect())
    }

    /// The messages for `id` this tick, at most `budget` bytes (at least one message when any is
    /// due), nearest its viewers first.
    pub fn tick(
        &mut self,
        terrain: &Terrain,
        id: ClientId,
        budget: usize,
    ) -> Result<Vec<Vec<u8>>, ReplicationError> {
        let config = self.config;
        let c = self.client(id)?;
        catch_up(c, terrain);
        let vs = terrain.voxel_size();
        let distance = |r: &Region| {
            let (lo, hi) = (r.min().cast::<f32>() * vs, r.max().cast::<f32>() * vs);
            c.viewers
                .iter()
                .map(|v| {
                    let d =
                        v.coords.zip_zip_map(&lo.coords, &hi.coords, |p, l, h| (l - p).max(p - h).max(0.0));
                    d.norm()
                })
                .fold(f32::INFINITY, f32::min)
        };
        // What is due, with its distance: updates, missing full regions, missing or coarser mips.
        let mut due: Vec<(f32, u8, Kind)> = Vec::new();
        for &b in &c.dirty {
            due.push((distance(&Kind::Block(b).region()), 0, Kind::Block(b)));
        }
        if let Some(extent) = terrain.extent() {
            // Full regions: within the radius of a viewer, over the stored extent and one region of
            // air above it.
            let grown = Region::new(extent.min(), extent.max() + Vector3::new(0, 16, 0)).unwrap_or(extent);
            let reach = (config.full_radius / vs).ceil() as i32;
            for v in &c.viewers {
                let p = (v.coords / vs).map(|x| x.floor() as i32);
                let around =
                    Region::new(Point3::from(p.add_scalar(-reach)), Point3::from(p.add_scalar(reach + 1)));
                let Some(near) = around.ok().and_then(|a| a.intersection(&grown)) else { continue };
                let Some(range) = RegionKey::range(&near) else { continue };
                for k in range.iter() {
                    let d = distance(&Kind::Region(k).region());
                    if d <= config.full_radius && !c.full.contains(&k) {
                        due.push((d, 1, Kind::Region(k)));
                    }
                }
            }
            for k in terrain.store().chunk_keys() {
                let r = k.region().expect("stored chunk");
                let d = distance(&r);
                let Some(level) = (1..=3u32).find(|&l| d <= config.mip_radii[l as usize - 1]) else {
                    continue;
                };
                if d <= config.full_radius || c.mips.get(&k).is_some_and(|&held| held <= level) {
                    continue;
                }
                due.push((d, 2, Kind::Mip(k, level)));
            }
        }
        due.sort_by(|a, b| {
            a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(key_order(&a.2).cmp(&key_order(&b.2)))
        });
        due.dedup_by(|a, b| a.2 == b.2);
        let mut out = Vec::new();
        let mut bytes = 0usize;
        for (_, _, kind) in due {
            let voxels = read_kind(terrain, kind)?;
            let msg = encode_message(c.next, kind, &voxels);
            if !out.is_empty() && bytes + msg.len() > budget {
                break;
            }
            bytes += msg.len();
            match kind {
                Kind::Region(k) => {
                    c.full.insert(k);
                }
                Kind::Mip(k, l) => {
                    c.mips.insert(k, l);
                }
                Kind::Block(b) => {
                    c.dirty.remove(&b);
                }
            }
            c.sent.push_back((c.next, msg.clone()));
            while c.sent.len() > config.resend_messages {
                c.sent.pop_front();
            }
            c.next += 1;
            out.push(msg);
        }
        Ok(out)
    }

    /// The messages sent to `id` from number `from` on, again (for a client that reported a gap).
    pub fn resend(&self, id: ClientId, from: u64) -> Result<Vec<Vec<u8>>, ReplicationError> {
        let c = self.clients.get(id.0).ok_or(ReplicationError::UnknownClient(id.0))?;
        if c.next > from && c.sent.front().is_none_or(|(first, _)| *first > from) {
            return Err(ReplicationError::Gone(from));
        }
        Ok(c.sent.iter().filter(|(s, _)| *s >= from).map(|(_, m)| m.clone()).collect())
    }
}

fn key_order(k: &Kind) -> (u8, i32, i32, i32, u32) {
    match *k {
        Kind::Block(b) => (0, b.y, b.z, b.x, 0),
        Kind::Region(r) => (1, r.y, r.z, r.x, 0),
        Kind::Mip(m, l) => (2, m.y, m.z, m.x, l),
    }
}

/// The box of a message from `terrain` (mips from the store's level views).
fn read_kind(terrain: &Terrain, kind: Kind) -> Result<Vec<Voxel>, ReplicationError> {
    let r = kind.region();
    let mut v = vec![Voxel::AIR; r.len().map_err(TerrainError::from)?];
    match kind {
        Kind::Mip(_, level) => {
            let view = terrain.store().level(level).map_err(TerrainError::from)?;
            view.read_box(&r, &mut v).map_err(TerrainError::from)?;
        }
        _ => terrain.store().read_box(&r, &mut v).map_err(TerrainError::from)?,
    }
    Ok(v)
}

/// Brings a client's state up to the terrain's sequence: the 4³ blocks edits changed in regions it
/// holds become due, mips of changed chunks are due again; a client further behind than the delta
/// log reaches gets everything it holds again.
fn catch_up(c: &mut ClientState, terrain: &Terrain) {
    let now = terrain.sequence();
    if c.seen >= now {
        return;
    }
    let edits: Vec<Region> = terrain.log.since(c.seen).map(|e| e.region).collect();
    let complete = terrain.log.since(c.seen).next().is_some_and(|e| e.seq == c.seen);
    if !complete {
        c.full.clear();
        c.mips.clear();
        c.dirty.clear();
    }
    for r in &edits {
        if let Some(range) = RegionKey::range(r) {
            for k in range.iter() {
                if !c.full.contains(&k) {
                    continue;
                }
                let part = Kind::Region(k).region().intersection(r).expect("the key overlaps the edit");
                if let Some(blocks) = BlockKey::range(&part) {
                    c.dirty.extend(blocks.iter());
                }
            }
        }
        if let Some(range) = StoreChunkKey::range(r) {
            for k in range.iter() {
                c.mips.remove(&k);
            }
        }
    }
    c.seen = now;
}

/// What a client did with a message.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Applied {
    /// A 16³ region at full resolution.
    Region(RegionKey),
    /// A chunk's mip at a level.
    Mip(StoreChunkKey, u32),
    /// A 4³ update.
    Block(BlockKey),
    /// A duplicate or older message: nothing done.
    Ignored(u64),
}

/// The client side: a terrain that mirrors the server's where it holds full data, and mips of
/// far chunks beside it.
#[derive(Debug)]
pub struct ReplicaClient {
    terrain: Terrain,
    next: u64,
    full: BTreeSet<RegionKey>,
    mips: HashMap<StoreChunkKey, (u32, Vec<Voxel>), foldhash::fast::FixedState>,
}

impl ReplicaClient {
    /// An empty client over `terrain` (an empty terrain with the server's material table and
    /// voxel size).
    pub fn new(terrain: Terrain) -> Self {
        ReplicaClient { terrain, next: 0, full: BTreeSet::new(), mips: HashMap::default() }
    }

    /// The message number the client applies next.
    pub fn expected(&self) -> u64 {
        self.next
    }

    /// The mirrored terrain: full-resolution data only.
    pub fn terrain(&self) -> &Terrain {
        &self.terrain
    }

    /// A chunk's mip, if the client holds one: its level and voxels (a box of `32 >> level` on a
    /// side, buffer order).
    pub fn mip(&self, key: StoreChunkKey) -> Option<(u32, &[Voxel])> {
        self.mips.get(&key).map(|(l, v)| (*l, v.as_slice()))
    }

    /// Whether the client holds every 16³ region `region` touches at full resolution.
    pub fn is_ready(&self, region: &Region) -> bool {
        RegionKey::range(region).is_some_and(|r| r.iter().all(|k| self.full.contains(&k)))
    }

    /// Applies one message (see the module docs for what is refused).
    pub fn apply(&mut self, msg: &[u8]) -> Result<Applied, ReplicationError> {
        let (seq, kind, packet) = parse(msg)?;
        if seq < self.next {
            return Ok(Applied::Ignored(seq));
        }
        if seq > self.next {
            return Err(ReplicationError::Gap { expected: self.next, got: seq });
        }
        let r = kind.region();
        let side = r.size()[0] as usize;
        let known = self.terrain.materials().solid_mask() | self.terrain.materials().liquid_mask() | 1;
        let mut voxels = vec![Voxel::AIR; r.len().map_err(TerrainError::from)?];
        decode_packet(packet, [side; 3], known, &mut voxels)?;
        let applied = match kind {
            Kind::Region(k) => {
                self.terrain.write_replicated(&r, &voxels)?;
                self.full.insert(k);
                Applied::Region(k)
            }
            Kind::Block(b) => {
                self.terrain.write_replicated(&r, &voxels)?;
                Applied::Block(b)
            }
            Kind::Mip(k, level) => {
                self.mips.insert(k, (level, voxels));
                Applied::Mip(k, level)
            }
        };
        self.next += 1;
        Ok(applied)
    }

    /// [`Terrain::contacts`] (the number of manifolds), refused where the shape's box (grown by the prediction and the
    /// contact reach) leaves the regions the client holds at full resolution.
    pub fn contacts(
        &self,
        shape: &dyn voxterra_narrowphase::parry3d::shape::Shape,
        pose: &voxterra_narrowphase::parry3d::math::Pose,
        prediction: f32,
        out: &mut Vec<crate::TerrainManifold>,
    ) -> Result<usize, ReplicationError> {
        let aabb = shape.compute_aabb(pose);
        let vs = self.terrain.voxel_size();
        let grow = prediction.max(0.0) / vs + crate::reach::CONTACT_REACH as f32;
        let lo = aabb.mins.to_array().map(|c| (c / vs - grow).floor() as i32);
        let hi = aabb.maxs.to_array().map(|c| (c / vs + grow).ceil() as i32 + 1);
        self.check(lo, hi)?;
        Ok(self.terrain.contacts(shape, pose, prediction, out)?)
    }

    /// [`Terrain::cast_ray`] up to `max_t`, refused where the segment's box leaves the regions the
    /// client holds at full resolution.
    pub fn cast_ray(
        &self,
        ray: &voxterra_core::Ray,
        max_t: f32,
    ) -> Result<Option<crate::TerrainRayHit>, ReplicationError> {
        let vs = self.terrain.voxel_size();
        if !max_t.is_finite() {
            return Err(TerrainError::InvalidParameter { what: "max_t", value: max_t }.into());
        }
        let end = ray.origin + ray.dir * max_t;
        let lo = ray.origin.coords.inf(&end.coords).map(|c| (c / vs).floor() as i32 - 1);
        let hi = ray.origin.coords.sup(&end.coords).map(|c| (c / vs).ceil() as i32 + 2);
        self.check(lo.into(), hi.into())?;
        Ok(self.terrain.cast_ray(ray, max_t)?)
    }

    fn check(&self, lo: [i32; 3], hi: [i32; 3]) -> Result<(), ReplicationError> {
        let r = Region::new(VoxelPos::from(lo), VoxelPos::from(hi)).map_err(TerrainError::from)?;
        if self.is_ready(&r) { Ok(()) } else { Err(ReplicationError::NotReady(r)) }
    }
}

/// A table-only empty terrain for a client of a server over `table` and `voxel_size`.
pub fn client_terrain(table: MaterialTable, voxel_size: f32) -> Result<Terrain, TerrainError> {
    Terrain::new(table, crate::TerrainConfig::with_voxel_size(voxel_size))
}
