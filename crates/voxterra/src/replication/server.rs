//! [`ReplicationServer`]: per client, what it holds and what to send next.

use super::message::{self, Kind};
use super::{BlockBox, ClientId, RegionKey, ReplicationConfig, ReplicationError, ResendRequest};
use crate::error::QueryError;
use crate::terrain::Terrain;
use crate::units::VoxelScale;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Region, StoreChunkKey, Voxel, VoxelRead};

/// Bytes of encoded packets a server keeps for other clients; past it they are dropped at once.
const PACKET_CACHE_BYTES: usize = 64 << 20;

/// Box packets by what they carry, as of the terrain's sequence: a box several clients are due (a
/// region near two of them, the mip of a chunk an edit changed, a region a client that joins
/// later wants) is read and encoded once. Edits drop the packets of what they touched.
#[derive(Debug, Default)]
struct PacketCache {
    seq: u64,
    bytes: usize,
    packets: HashMap<Kind, Vec<u8>, foldhash::fast::FixedState>,
}

impl PacketCache {
    fn clear(&mut self) {
        self.packets.clear();
        self.bytes = 0;
    }

    /// Drops what edits since the cache's sequence changed (everything when the delta log no
    /// longer reaches back that far).
    fn catch_up(&mut self, terrain: &Terrain) {
        let now = terrain.sequence();
        if self.seq == now {
            return;
        }
        let complete = terrain.log.since(self.seq).next().is_some_and(|e| e.seq == self.seq);
        if !complete {
            self.clear();
        } else {
            let (mut regions, mut chunks) = (BTreeSet::new(), BTreeSet::new());
            for r in terrain.log.since(self.seq).map(|e| e.region) {
                regions.extend(RegionKey::range(&r).into_iter().flat_map(|k| k.iter()));
                chunks.extend(StoreChunkKey::range(&r).into_iter().flat_map(|k| k.iter()));
            }
            let bytes = &mut self.bytes;
            self.packets.retain(|kind, p| {
                let keep = match kind {
                    Kind::Region(k) | Kind::Patch(k, _) => !regions.contains(k),
                    Kind::Mip(k, _) => !chunks.contains(k),
                    Kind::Stale | Kind::Forget => true,
                };
                if !keep {
                    *bytes -= p.len();
                }
                keep
            });
        }
        self.seq = now;
    }

    /// The packet of `kind`, read and encoded unless kept.
    fn packet(&mut self, terrain: &Terrain, kind: Kind) -> Result<&[u8], ReplicationError> {
        if self.bytes > PACKET_CACHE_BYTES {
            self.clear();
        }
        Ok(match self.packets.entry(kind) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let p = message::packet(kind, &read_kind(terrain, kind)?);
                self.bytes += p.len();
                e.insert(p)
            }
        })
    }
}

/// The smallest tick budget: a message of a 16³ box of all-different runs is at most ~11.6 KB, and
/// every message but a stale notice must fit a tick.
pub const MIN_TICK_BUDGET: usize = 16 * 1024;

#[derive(Debug, Default)]
struct ClientState {
    viewers: Vec<Point3<f32>>,
    /// Regions the client holds and calls ready, as of what was sent.
    full: BTreeSet<RegionKey>,
    /// Regions it holds that edits changed since: the box to patch (in voxels).
    stale: BTreeMap<RegionKey, Region>,
    /// Of those, the ones it has not been told are stale.
    notice: BTreeSet<RegionKey>,
    /// It must forget everything before anything else (the log no longer reached its edits).
    forget: bool,
    /// Chunks it holds as mips, and at which level.
    mips: BTreeMap<StoreChunkKey, u32>,
    /// The server terrain's sequence it has been brought up to.
    seen: u64,
    /// The sequence the last message it was sent is stamped with.
    stamped: u64,
    next: u64,
    sent: VecDeque<(u64, Vec<u8>)>,
    /// What may fall due while the viewers stay near where they were when it was made.
    plan: Option<Plan>,
}

/// The regions and mips that can fall due for a client while each of its viewers stays within
/// [`Plan::slack`] of where it was when the plan was made: a superset of what [`due`] would find
/// by walking every region in reach and every stored chunk, so a tick checks only these.
#[derive(Debug)]
struct Plan {
    viewers: Vec<Point3<f32>>,
    /// The terrain's extent then: a grown extent brings regions into reach.
    extent: Option<Region>,
    slack: f32,
    /// Regions in reach, neither held nor stale then (once held or stale, a region stays so
    /// until the client forgets everything, which makes a new plan).
    regions: Vec<RegionKey>,
    /// Chunks whose mip may fall due; edits add the chunks whose mips they took back.
    mips: BTreeSet<StoreChunkKey>,
}

impl Plan {
    /// Whether the viewers are still within the slack of where the plan saw them.
    fn holds(&self, viewers: &[Point3<f32>], extent: Option<Region>) -> bool {
        self.extent == extent
            && self.viewers.len() == viewers.len()
            && self.viewers.iter().zip(viewers).all(|(a, b)| (a - b).norm() <= self.slack)
    }
}

impl ClientState {
    /// Numbers, keeps for resends and hands out `msg`; its length.
    fn send(&mut self, msg: Vec<u8>, out: &mut Vec<Vec<u8>>, keep: usize) -> usize {
        let len = msg.len();
        self.sent.push_back((self.next, msg.clone()));
        while self.sent.len() > keep {
            self.sent.pop_front();
        }
        self.next += 1;
        out.push(msg);
        len
    }
}

/// The server side: per client, what it holds and what to send next.
#[derive(Debug, Default)]
pub struct ReplicationServer {
    config: ReplicationConfig,
    /// Per client id, its state (`None` once removed: ids are never reused).
    clients: Vec<Option<ClientState>>,
    packets: PacketCache,
}

/// A broken invariant of a [`ReplicationServer`], found by [`ReplicationServer::validate`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("replication client {client}: {what}")]
pub struct InvalidReplication {
    /// The client at fault.
    pub client: usize,
    /// Which invariant.
    pub what: &'static str,
}

impl ReplicationServer {
    /// Checks what it keeps per client: stale regions held, notices for stale regions only, each
    /// patch box inside its region, mips at levels 1–3, the messages kept for resends numbered
    /// consecutively up to the next and no more of them than configured. For tests.
    pub fn validate(&self) -> Result<(), InvalidReplication> {
        for (client, c) in self.clients.iter().enumerate().filter_map(|(i, c)| Some((i, c.as_ref()?))) {
            let bad = |what| Err(InvalidReplication { client, what });
            if c.stale.keys().any(|k| !c.full.contains(k)) {
                return bad("a stale region it does not hold");
            }
            if c.notice.iter().any(|k| !c.stale.contains_key(k)) {
                return bad("a notice for a region that is not stale");
            }
            if c.stale.iter().any(|(k, b)| k.region().map_or(true, |r| r.intersection(b) != Some(*b))) {
                return bad("a patch box outside its region");
            }
            if c.mips.values().any(|l| !(1..=3).contains(l)) {
                return bad("a mip level outside 1-3");
            }
            if c.sent.len() > self.config.resend_messages {
                return bad("more messages kept than configured");
            }
            let first = c.next - c.sent.len() as u64;
            if c.sent.iter().enumerate().any(|(i, (n, _))| *n != first + i as u64) {
                return bad("kept messages not numbered consecutively up to the next");
            }
        }
        Ok(())
    }

    /// A server with no clients.
    pub fn new(config: ReplicationConfig) -> Self {
        ReplicationServer { config, clients: Vec::new(), packets: PacketCache::default() }
    }

    /// Adds a client that holds nothing yet; it is brought up to `terrain`'s current sequence by
    /// full sends, so edits before now never reach it as patches.
    pub fn add_client(&mut self, terrain: &Terrain) -> ClientId {
        self.clients.push(Some(ClientState { seen: terrain.sequence(), ..Default::default() }));
        ClientId(self.clients.len() - 1)
    }

    fn client(&mut self, id: ClientId) -> Result<&mut ClientState, ReplicationError> {
        self.clients.get_mut(id.0).and_then(Option::as_mut).ok_or(ReplicationError::UnknownClient(id.0))
    }

    /// Forgets client `id` (it left): its id is not reused, and queries about it are
    /// [`ReplicationError::UnknownClient`].
    pub fn remove_client(&mut self, id: ClientId) -> Result<(), ReplicationError> {
        let slot = self
            .clients
            .get_mut(id.0)
            .filter(|c| c.is_some())
            .ok_or(ReplicationError::UnknownClient(id.0))?;
        *slot = None;
        Ok(())
    }

    /// Where the client's viewers are (world units, the terrain's frame); non-finite points are
    /// refused.
    pub fn set_viewers(&mut self, id: ClientId, viewers: &[Point3<f32>]) -> Result<(), ReplicationError> {
        if let Some(bad) = viewers.iter().find(|v| !v.coords.iter().all(|c| c.is_finite())) {
            let value = bad.coords.iter().copied().find(|c| !c.is_finite()).unwrap_or(f32::NAN);
            return Err(QueryError::InvalidParameter { what: "viewer", value }.into());
        }
        self.client(id)?.viewers = viewers.to_vec();
        Ok(())
    }

    /// The regions the server believes the client holds and calls ready.
    pub fn full_regions(&self, id: ClientId) -> Result<Vec<RegionKey>, ReplicationError> {
        let c =
            self.clients.get(id.0).and_then(Option::as_ref).ok_or(ReplicationError::UnknownClient(id.0))?;
        Ok(c.full.iter().copied().collect())
    }

    /// The messages for `id` this tick, at most `budget` bytes (at least [`MIN_TICK_BUDGET`]),
    /// nearest its viewers first. A stale notice (which regions edits changed since the last
    /// tick, 12 bytes a region) always goes first and whole, even past the budget: until the
    /// client has it, it would call those regions ready. When nothing is due but the terrain's
    /// sequence moved on, a notice of no regions tells the client it is current as of it.
    pub fn tick(
        &mut self,
        terrain: &Terrain,
        id: ClientId,
        budget: usize,
    ) -> Result<Vec<Vec<u8>>, ReplicationError> {
        if budget < MIN_TICK_BUDGET {
            return Err(ReplicationError::BudgetTooSmall { budget, min: MIN_TICK_BUDGET });
        }
        let config = self.config;
        let c = self
            .clients
            .get_mut(id.0)
            .and_then(Option::as_mut)
            .ok_or(ReplicationError::UnknownClient(id.0))?;
        self.packets.catch_up(terrain);
        tick_client(c, terrain, &config, budget, &mut self.packets)
    }

    /// [`tick`](Self::tick) for each of `ids` in turn.
    pub fn tick_clients(
        &mut self,
        terrain: &Terrain,
        ids: &[ClientId],
        budget: usize,
    ) -> Vec<Result<Vec<Vec<u8>>, ReplicationError>> {
        ids.iter().map(|&id| self.tick(terrain, id, budget)).collect()
    }

    /// The messages a client asks for again ([`ReplicaClient::resend_request`](super::ReplicaClient::resend_request)):
    /// the numbers it lists and every one from `from` on. [`ReplicationError::Gone`] when one is
    /// no longer kept ([`ReplicationConfig::resend_messages`]).
    pub fn resend(&self, id: ClientId, request: &ResendRequest) -> Result<Vec<Vec<u8>>, ReplicationError> {
        let c =
            self.clients.get(id.0).and_then(Option::as_ref).ok_or(ReplicationError::UnknownClient(id.0))?;
        let first = c.sent.front().map_or(c.next, |(n, _)| *n);
        let oldest = request.missing.iter().copied().chain([request.from]).min().unwrap_or(request.from);
        if oldest < first && oldest < c.next {
            return Err(ReplicationError::Gone(oldest));
        }
        let wanted: BTreeSet<u64> = request.missing.iter().copied().collect();
        Ok(c.sent
            .iter()
            .filter(|(n, _)| *n >= request.from || wanted.contains(n))
            .map(|(_, m)| m.clone())
            .collect())
    }
}

/// One client's messages this tick (see [`ReplicationServer::tick`]).
fn tick_client(
    c: &mut ClientState,
    terrain: &Terrain,
    config: &ReplicationConfig,
    budget: usize,
    packets: &mut PacketCache,
) -> Result<Vec<Vec<u8>>, ReplicationError> {
    catch_up(c, terrain);
    let as_of = terrain.sequence();
    let mut out = Vec::new();
    let mut bytes = 0usize;
    if std::mem::take(&mut c.forget) {
        let msg = message::encode(c.next, as_of, Kind::Forget, &[], &[]);
        bytes += c.send(msg, &mut out, config.resend_messages);
    }
    if !c.notice.is_empty() {
        let keys: Vec<RegionKey> = std::mem::take(&mut c.notice).into_iter().collect();
        let msg = message::encode(c.next, as_of, Kind::Stale, &[], &keys);
        bytes += c.send(msg, &mut out, config.resend_messages);
    }
    let due = due(c, terrain, config);
    for kind in due {
        let body = packets.packet(terrain, kind)?;
        if bytes + message::framed_len(kind, body.len()) > budget {
            break;
        }
        let msg = message::frame(c.next, as_of, kind, body);
        match kind {
            Kind::Region(k) => {
                c.full.insert(k);
            }
            Kind::Patch(k, _) => {
                c.stale.remove(&k);
                c.full.insert(k);
            }
            Kind::Mip(k, l) => {
                c.mips.insert(k, l);
            }
            Kind::Stale | Kind::Forget => {}
        }
        bytes += c.send(msg, &mut out, config.resend_messages);
    }
    // Nothing to send, but the terrain moved on (edits elsewhere): an empty stale notice tells
    // the client it is current as of the server's sequence.
    if out.is_empty() && c.stamped < as_of {
        let msg = message::encode(c.next, as_of, Kind::Stale, &[], &[]);
        c.send(msg, &mut out, config.resend_messages);
    }
    if !out.is_empty() {
        c.stamped = as_of;
    }
    Ok(out)
}

/// The distance (world units) from the nearest of `viewers` to region `r` (in voxels).
fn distance(viewers: &[Point3<f32>], scale: VoxelScale, r: &Region) -> f32 {
    let b = scale.region_to_world(r, 0.0);
    viewers
        .iter()
        .map(|v| {
            v.coords.zip_zip_map(&b.mins.coords, &b.maxs.coords, |p, l, h| (l - p).max(p - h).max(0.0)).norm()
        })
        .fold(f32::INFINITY, f32::min)
}

fn region_of(k: RegionKey) -> Region {
    Kind::Region(k).region().expect("a region's box")
}

/// The finest mip level wanted at `d` from the nearest viewer (`None` past the last radius); it
/// never falls as `d` grows.
fn mip_level(config: &ReplicationConfig, d: f32) -> Option<u32> {
    (1..=3u32).find(|&l| d <= config.mip_radii[l as usize - 1])
}

/// The patches of a client's stale regions, each with its distance from the nearest viewer and
/// its class (0: before full regions and mips at the same distance).
fn patches(c: &ClientState, scale: VoxelScale) -> Vec<(f32, u8, Kind)> {
    c.stale
        .iter()
        .map(|(&k, b)| {
            let o = Point3::new(k.x, k.y, k.z) * 16;
            let min = (b.min() - o).map(|c| c as u8);
            let size = b.size().map(|s| s as u8);
            let patch = Kind::Patch(k, BlockBox { min: Point3::from(min), size });
            (distance(&c.viewers, scale, &region_of(k)), 0, patch)
        })
        .collect()
}

/// What is due for a client, nearest a viewer first: patches of stale regions, missing full
/// regions, missing or coarser mips. Regions and mips come from the client's [`Plan`], made
/// again when a viewer leaves its slack.
fn due(c: &mut ClientState, terrain: &Terrain, config: &ReplicationConfig) -> Vec<Kind> {
    let scale = terrain.scale();
    let mut plan = match c.plan.take() {
        Some(p) if p.holds(&c.viewers, terrain.extent()) => p,
        _ => make_plan(c, terrain, config),
    };
    let viewers = &c.viewers;
    let mut due = patches(c, scale);
    plan.regions.retain(|k| !c.full.contains(k) && !c.stale.contains_key(k));
    for &k in &plan.regions {
        let d = distance(viewers, scale, &region_of(k));
        if d <= config.full_radius {
            due.push((d, 1, Kind::Region(k)));
        }
    }
    // A chunk no longer stored comes back through the edit that stores it again.
    plan.mips.retain(|k| c.mips.get(k) != Some(&1) && terrain.store().chunk(*k).is_some());
    for &k in &plan.mips {
        let d = distance(viewers, scale, &k.region().expect("stored chunk"));
        let Some(level) = mip_level(config, d) else { continue };
        if d <= config.full_radius || c.mips.get(&k).is_some_and(|&held| held <= level) {
            continue;
        }
        due.push((d, 2, Kind::Mip(k, level)));
    }
    c.plan = Some(plan);
    due.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(key_order(&a.2).cmp(&key_order(&b.2))));
    due.dedup_by(|a, b| a.2 == b.2);
    due.into_iter().map(|(_, _, k)| k).collect()
}

/// Every region and mip that can fall due while each viewer stays within the slack of where it is
/// now: full regions within the full radius plus the slack of a viewer, over the stored extent and
/// one region of air above it; every stored chunk whose mip a viewer that near could want finer
/// than the client holds.
fn make_plan(c: &ClientState, terrain: &Terrain, config: &ReplicationConfig) -> Plan {
    let scale = terrain.scale();
    let extent = terrain.extent();
    // A viewer crossing the slack costs a walk like this one; at 20 Hz and 4-12 units a second a
    // slack of an eighth of the radius makes one every 10-40 ticks.
    let slack = (config.full_radius / 8.0).max(1.0);
    let mut plan =
        Plan { viewers: c.viewers.clone(), extent, slack, regions: Vec::new(), mips: BTreeSet::new() };
    let Some(extent) = extent else { return plan };
    let grown = Region::new(extent.min(), extent.max() + Vector3::new(0, 16, 0)).unwrap_or(extent);
    let Some(keys) = RegionKey::range(&grown) else { return plan };
    let span = grown.size().iter().copied().max().unwrap_or(0) as f64;
    let radius = config.full_radius + slack;
    // Keys of the regions that touch the grown extent and a viewer's reach. In f64: viewers far
    // from the origin keep their voxel; the reach is clamped to the extent so any radius stays in
    // range.
    let vs = f64::from(scale.size());
    let reach = (f64::from(radius) / vs).ceil().min(span + 16.0);
    let mut regions = BTreeSet::new();
    for v in &c.viewers {
        let at = v.coords.cast::<f64>() / vs;
        let (first, last) = (keys.first.to_array(), keys.last.to_array());
        let key =
            |a: usize, x: f64| ((x / 16.0).floor()).clamp(f64::from(first[a]), f64::from(last[a])) as i32;
        let lo: [i32; 3] = std::array::from_fn(|a| key(a, at[a].floor() - reach));
        let hi: [i32; 3] = std::array::from_fn(|a| key(a, at[a].floor() + reach));
        let near = voxterra_core::ChunkRange {
            first: RegionKey::new(lo[0], lo[1], lo[2]),
            last: RegionKey::new(hi[0], hi[1], hi[2]),
        };
        for k in near.iter() {
            if !c.full.contains(&k)
                && !c.stale.contains_key(&k)
                && distance(&c.viewers, scale, &region_of(k)) <= radius
            {
                regions.insert(k);
            }
        }
    }
    plan.regions = regions.into_iter().collect();
    for k in terrain.store().chunk_keys() {
        let d = distance(&c.viewers, scale, &k.region().expect("stored chunk"));
        if d + slack <= config.full_radius {
            continue;
        }
        // The finest level a viewer within the slack could want outside the full radius.
        let Some(finest) = mip_level(config, (d - slack).max(config.full_radius)) else { continue };
        if c.mips.get(&k).is_none_or(|&held| held > finest) {
            plan.mips.insert(k);
        }
    }
    plan
}

fn key_order(k: &Kind) -> (u8, i32, i32, i32, u32) {
    match *k {
        Kind::Patch(r, _) => (0, r.y, r.z, r.x, 0),
        Kind::Region(r) => (1, r.y, r.z, r.x, 0),
        Kind::Mip(m, l) => (2, m.y, m.z, m.x, l),
        Kind::Stale | Kind::Forget => (3, 0, 0, 0, 0),
    }
}

/// The box of a message from `terrain` (mips from the store's level views).
fn read_kind(terrain: &Terrain, kind: Kind) -> Result<Vec<Voxel>, ReplicationError> {
    let Some(r) = kind.region() else { return Ok(Vec::new()) };
    let mut v = vec![Voxel::AIR; r.len()?];
    match kind {
        Kind::Mip(_, level) => {
            let view = terrain.store().level(level)?;
            view.read_box(&r, &mut v)?;
        }
        _ => terrain.store().read_box(&r, &mut v)?,
    }
    Ok(v)
}

/// Brings a client's state up to the terrain's sequence: regions it holds that edits changed
/// become stale (told in the next stale notice, patched after), mips of changed chunks are due
/// again; a client further behind than the delta log reaches forgets everything it holds.
fn catch_up(c: &mut ClientState, terrain: &Terrain) {
    let now = terrain.sequence();
    if c.seen >= now {
        return;
    }
    let complete = terrain.log.since(c.seen).next().is_some_and(|e| e.seq == c.seen);
    if !complete {
        c.full.clear();
        c.stale.clear();
        c.notice.clear();
        c.mips.clear();
        c.plan = None;
        c.forget = true;
        c.seen = now;
        return;
    }
    for r in terrain.log.since(c.seen).map(|e| e.region) {
        if let Some(range) = RegionKey::range(&r) {
            for k in range.iter() {
                let held = c.full.remove(&k);
                if !held && !c.stale.contains_key(&k) {
                    continue;
                }
                if held {
                    c.notice.insert(k);
                }
                let box_ = Kind::Region(k).region().expect("a region's box");
                let part = box_.intersection(&r).expect("the key overlaps the edit");
                c.stale.entry(k).and_modify(|b| *b = b.union(&part)).or_insert(part);
            }
        }
        if let Some(range) = StoreChunkKey::range(&r) {
            for k in range.iter() {
                c.mips.remove(&k);
                if let Some(plan) = &mut c.plan {
                    plan.mips.insert(k);
                }
            }
        }
    }
    c.seen = now;
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod plan_tests;
