//! [`ReplicaClient`]: a terrain that mirrors the server's where it holds full data.

use super::message::{self, Kind};
use super::{RegionKey, ReplicationError, ResendRequest};
use crate::error::QueryError;
use crate::terrain::Terrain;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use voxterra_core::{Region, StoreChunkKey, Voxel, VoxelPos};

/// Messages a client keeps past a gap, waiting for the missing ones.
pub const AHEAD_MESSAGES: u64 = 1024;
/// Bytes of decoded voxels a client keeps past a gap.
pub const AHEAD_BYTES: usize = 16 << 20;

/// What a client did with a message.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum Applied {
    /// A 16³ region at full resolution, now ready.
    Region(RegionKey),
    /// A chunk's mip at a level.
    Mip(StoreChunkKey, u32),
    /// What edits changed in a held region, now ready again.
    Patch(RegionKey),
    /// A stale notice: these many held regions are no longer ready until their patches come.
    Stale(usize),
    /// The server could no longer say what changed: every region and mip was forgotten.
    Forgot,
    /// A message past a gap, kept until the missing ones arrive (see
    /// [`ReplicaClient::resend_request`]).
    Held(u64),
    /// A duplicate or older message: nothing done.
    Ignored(u64),
}

/// A message checked and decoded, ready to apply.
#[derive(Debug)]
struct Decoded {
    as_of: u64,
    kind: Kind,
    voxels: Option<(Region, Vec<Voxel>)>,
    stale: Vec<RegionKey>,
}

/// The client side: a terrain that mirrors the server's where it holds full data, and mips of
/// far chunks beside it.
#[derive(Debug)]
pub struct ReplicaClient {
    terrain: Terrain,
    next: u64,
    as_of: u64,
    /// Regions held and ready.
    full: BTreeSet<RegionKey>,
    /// Regions held whose patch is due.
    stale: BTreeSet<RegionKey>,
    mips: HashMap<StoreChunkKey, (u32, Vec<Voxel>), foldhash::fast::FixedState>,
    ahead: BTreeMap<u64, Decoded>,
    ahead_bytes: usize,
}

impl ReplicaClient {
    /// An empty client over `terrain` (an empty terrain with the server's material table and
    /// voxel size).
    pub fn new(terrain: Terrain) -> Self {
        ReplicaClient {
            terrain,
            next: 0,
            as_of: 0,
            full: BTreeSet::new(),
            stale: BTreeSet::new(),
            mips: HashMap::default(),
            ahead: BTreeMap::new(),
            ahead_bytes: 0,
        }
    }

    /// The message number the client applies next.
    pub fn expected(&self) -> u64 {
        self.next
    }

    /// The server terrain's sequence as of the last message applied: every region the client
    /// calls ready equals the server's voxels at that sequence.
    pub fn server_sequence(&self) -> u64 {
        self.as_of
    }

    /// What to ask the server to send again: the numbers missing below the messages held past a
    /// gap, and everything from after the last one held (a lost tail shows no gap).
    pub fn resend_request(&self) -> ResendRequest {
        let from = self.ahead.keys().next_back().map_or(self.next, |last| last + 1);
        let missing = (self.next..from).filter(|n| !self.ahead.contains_key(n)).collect();
        ResendRequest { missing, from }
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

    /// Whether the client holds every 16³ region `region` touches, ready (not stale).
    pub fn is_ready(&self, region: &Region) -> bool {
        RegionKey::range(region).is_some_and(|r| r.iter().all(|k| self.full.contains(&k)))
    }

    /// The regions the client calls ready.
    pub fn ready_regions(&self) -> impl Iterator<Item = RegionKey> + '_ {
        self.full.iter().copied()
    }

    /// Applies one message (see the module docs for what is refused), then any held messages it
    /// was the gap before.
    pub fn apply(&mut self, msg: &[u8]) -> Result<Applied, ReplicationError> {
        let parsed = message::parse(msg)?;
        let number = parsed.number;
        if number < self.next || self.ahead.contains_key(&number) {
            return Ok(Applied::Ignored(number));
        }
        if number - self.next > AHEAD_MESSAGES {
            return Err(ReplicationError::Gap { expected: self.next, got: number });
        }
        let known = self.terrain.materials().solid_mask() | self.terrain.materials().liquid_mask() | 1;
        let decoded = Decoded {
            as_of: parsed.as_of,
            kind: parsed.kind,
            voxels: message::voxels(&parsed, known)?,
            stale: message::stale_keys(if parsed.kind == Kind::Stale { parsed.payload } else { &[] })
                .collect(),
        };
        if number > self.next {
            let bytes = decoded.voxels.as_ref().map_or(0, |v| v.1.len() * 2) + decoded.stale.len() * 12;
            if self.ahead_bytes + bytes > AHEAD_BYTES {
                return Err(ReplicationError::Gap { expected: self.next, got: number });
            }
            self.ahead_bytes += bytes;
            self.ahead.insert(number, decoded);
            return Ok(Applied::Held(number));
        }
        let applied = self.apply_decoded(decoded)?;
        while let Some(held) = self.ahead.remove(&self.next) {
            self.ahead_bytes -= held.voxels.as_ref().map_or(0, |v| v.1.len() * 2) + held.stale.len() * 12;
            self.apply_decoded(held)?;
        }
        Ok(applied)
    }

    fn apply_decoded(&mut self, d: Decoded) -> Result<Applied, ReplicationError> {
        let applied = match (d.kind, d.voxels) {
            (Kind::Region(k), Some((r, v))) => {
                self.terrain.write_replicated(&r, &v)?;
                self.stale.remove(&k);
                self.full.insert(k);
                Applied::Region(k)
            }
            (Kind::Patch(k, _), Some((r, v))) => {
                self.terrain.write_replicated(&r, &v)?;
                if self.stale.remove(&k) {
                    self.full.insert(k);
                }
                Applied::Patch(k)
            }
            (Kind::Mip(k, level), Some((_, v))) => {
                self.mips.insert(k, (level, v));
                Applied::Mip(k, level)
            }
            (Kind::Stale, _) => {
                let mut n = 0;
                for k in d.stale {
                    if self.full.remove(&k) || self.stale.contains(&k) {
                        self.stale.insert(k);
                        n += 1;
                    }
                }
                Applied::Stale(n)
            }
            (Kind::Forget, _) => {
                self.full.clear();
                self.stale.clear();
                self.mips.clear();
                Applied::Forgot
            }
            _ => return Err(ReplicationError::Malformed("a box message without its voxels")),
        };
        self.next += 1;
        self.as_of = d.as_of;
        Ok(applied)
    }

    /// [`Terrain::contacts`] (the number of manifolds), refused where the shape's box (grown by
    /// the prediction and the contact reach) leaves the regions the client holds ready.
    pub fn contacts(
        &self,
        shape: &dyn voxterra_narrowphase::parry3d::shape::Shape,
        pose: &voxterra_narrowphase::parry3d::math::Pose,
        prediction: f32,
        out: &mut Vec<crate::TerrainManifold>,
    ) -> Result<usize, ReplicationError> {
        let aabb = shape.compute_aabb(pose);
        let scale = self.terrain.scale();
        let grow = scale.length_to_voxels(prediction.max(0.0)) + crate::reach::CONTACT_REACH as f32;
        let lo = aabb.mins.to_array().map(|c| (scale.length_to_voxels(c) - grow).floor() as i32);
        let hi = aabb.maxs.to_array().map(|c| (scale.length_to_voxels(c) + grow).ceil() as i32 + 1);
        self.check(lo, hi)?;
        Ok(self.terrain.contacts(shape, pose, prediction, out)?)
    }

    /// [`Terrain::cast_ray`] up to `max_t`, refused where the segment's box leaves the regions the
    /// client holds ready.
    pub fn cast_ray(
        &self,
        ray: &voxterra_core::Ray,
        max_t: f32,
    ) -> Result<Option<crate::TerrainRayHit>, ReplicationError> {
        let scale = self.terrain.scale();
        if !max_t.is_finite() {
            return Err(QueryError::InvalidParameter { what: "max_t", value: max_t }.into());
        }
        let end = ray.origin + ray.dir * max_t;
        let lo = ray.origin.coords.inf(&end.coords).map(|c| scale.length_to_voxels(c).floor() as i32 - 1);
        let hi = ray.origin.coords.sup(&end.coords).map(|c| scale.length_to_voxels(c).ceil() as i32 + 2);
        self.check(lo.into(), hi.into())?;
        Ok(self.terrain.cast_ray(ray, max_t)?)
    }

    fn check(&self, lo: [i32; 3], hi: [i32; 3]) -> Result<(), ReplicationError> {
        let r = Region::new(VoxelPos::from(lo), VoxelPos::from(hi))?;
        if self.is_ready(&r) { Ok(()) } else { Err(ReplicationError::NotReady(r)) }
    }
}
