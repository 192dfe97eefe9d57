//! Collision readiness: which physics chunks a query needs (from the masks), building their
//! collision data into the cache ahead of the queries, and reading it during one
//! ([`ChunkReader`]).

use crate::collision_cache::{CacheStats, ChunkCollision, ChunkData};
use crate::reach::SURFACE_SPILL;
use crate::terrain::Terrain;
use std::collections::BTreeSet;
use std::time::Duration;
use std::time::Instant;
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Aabb, PhysicsChunkKey};
use voxterra_mesher::MeshWorkspace;

/// One query's access to the collision cache (see [`Terrain::reader`]).
pub(crate) struct ChunkReader<'a> {
    terrain: &'a Terrain,
    cache: crate::collision_cache::CacheReader<'a>,
}

impl ChunkReader<'_> {
    /// What the cache holds for `key`, without building it: `None` when not held, `Some(None)`
    /// for a chunk without a surface, else its triangles' bounds (voxel units).
    pub(crate) fn bounds(&mut self, key: PhysicsChunkKey) -> Option<Option<Aabb>> {
        self.cache.bounds(key)
    }

    /// Casts `ray` (voxel units) through the chunks' ray tree, nearest box first: `f(key, data,
    /// limit)` for each chunk whose box the ray enters within the limit returns the new limit;
    /// chunks the cache lacks are built on the way (a build restarts the cast at the limit
    /// reached, so a chunk may be visited twice; each restart has one more chunk at hand, so
    /// even a cache too small to keep them ends).
    pub(crate) fn cast(
        &mut self,
        ray: &voxterra_core::Ray,
        max_t: f32,
        ws: &mut MeshWorkspace,
        mut f: impl FnMut(PhysicsChunkKey, &ChunkCollision, f32) -> f32,
    ) {
        let mut limit = max_t;
        let mut built = Vec::new();
        while let Some(missing) = self.cache.cast(ray, limit, &built, |k, c, l| {
            limit = f(k, c, l);
            limit
        }) {
            let data = self.cache.build(&self.terrain.mesher, &self.terrain.store, missing, ws);
            built.push((missing, data));
        }
    }

    /// [`ChunkReader::cast`] for a packet of up to `chunk_tree::PACKET` rays: `f(key, data, mask,
    /// limits)` for each chunk some ray of `mask` enters within its limit, which `f` lowers.
    /// Chunks the cache lacks are built after a pass and the packet cast again from the limits
    /// reached (each pass has more chunks at hand, so it ends).
    pub(crate) fn cast_packet(
        &mut self,
        rays: &[voxterra_core::Ray],
        limits: &mut [f32],
        ws: &mut MeshWorkspace,
        mut f: impl FnMut(PhysicsChunkKey, &ChunkCollision, u64, &mut [f32]),
    ) {
        let mut built = Vec::new();
        loop {
            let missing = self.cache.cast_packet(rays, limits, &built, &mut f);
            if missing.is_empty() {
                return;
            }
            for key in missing {
                if !built.iter().any(|(k, _)| *k == key) {
                    let data = self.cache.build(&self.terrain.mesher, &self.terrain.store, key, ws);
                    built.push((key, data));
                }
            }
        }
    }

    /// Calls `f` with `key`'s collision data, built into the cache if missing; `None` for a chunk
    /// without a surface.
    pub(crate) fn with<R>(
        &mut self,
        key: PhysicsChunkKey,
        ws: &mut MeshWorkspace,
        f: impl FnOnce(&ChunkCollision) -> R,
    ) -> Option<R> {
        self.cache.with(&self.terrain.mesher, &self.terrain.store, key, ws, f)
    }
}

impl Terrain {
    /// A reader of the collision cache for one query: its lookups build what the cache lacks.
    pub(crate) fn reader(&self) -> ChunkReader<'_> {
        ChunkReader { terrain: self, cache: self.cache.reader() }
    }

    /// The collision cache's statistics.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// The collision data the cache holds for `key`, without building it: `None` when not held,
    /// `Some(None)` for a chunk with no surface (for debug drawing and tests).
    pub fn cached_chunk(&self, key: PhysicsChunkKey) -> Option<ChunkData> {
        self.cache.peek(key)
    }

    /// The chunks the collision cache holds, in key order.
    pub fn cached_chunks(&self) -> Vec<PhysicsChunkKey> {
        self.cache.keys()
    }

    /// The physics chunks a query inside `aabb` (world units) needs: those whose masks show
    /// solid within reach of the box, in key order. A chunk's triangles reach
    /// [`SURFACE_SPILL`](crate::reach::SURFACE_SPILL) past its box, so the box is grown by that
    /// first: a body resting just above a chunk's floor touches triangles of the chunk below.
    pub fn solid_chunks(&self, aabb: &Aabb) -> Vec<PhysicsChunkKey> {
        let mut keys = Vec::new();
        self.masks.query(&aabb.loosened(self.scale().length_to_world(SURFACE_SPILL as f32)), |k, t| {
            if t.solid {
                keys.push(k);
            }
        });
        keys.sort_unstable();
        keys
    }

    /// Collision readiness, the one call: builds, in parallel, the cache entries queries inside
    /// `boxes` (world units) will need and the cache lacks, so queries there build nothing (until
    /// an edit or the cache's budget drops them). Within a [`PrepareBudget`] (a game's frame loop), the
    /// chunks nearest a box go first and building stops at the budget's count or time (checked
    /// between parallel batches); [`PrepareBudget::UNLIMITED`] builds all of them in one batch (what
    /// `World` and `voxterra-rapier` do before a step), [`PrepareBudget::NONE`] only asks whether the
    /// boxes are ready.
    ///
    /// ```
    /// use voxterra::prelude::*;
    /// use voxterra::{PrepareBudget, TerrainConfig};
    /// use voxterra::worldgen::GenParams;
    ///
    /// let terrain = Terrain::generate(&GenParams::new(3, [64, 48, 64]), TerrainConfig::default())?;
    /// let around = Aabb::new(Point3::new(20.0, 0.0, 20.0), Point3::new(40.0, 48.0, 40.0));
    /// assert!(!terrain.prepare(&[around], PrepareBudget::NONE).ready);
    /// let r = terrain.prepare(&[around], PrepareBudget::UNLIMITED);
    /// assert!(r.ready && r.built > 0);
    /// # Ok::<(), voxterra::TerrainError>(())
    /// ```
    pub fn prepare(&self, boxes: &[Aabb], budget: PrepareBudget) -> Readiness {
        if budget == PrepareBudget::UNLIMITED {
            // The boxes' chunks, gathered once: built, then checked held (the budget may evict).
            let mut keys: Vec<PhysicsChunkKey> = boxes.iter().flat_map(|b| self.solid_chunks(b)).collect();
            keys.sort_unstable();
            keys.dedup();
            let built = self.cache.prepare(&self.mesher, &self.store, &keys);
            let ready =
                boxes.iter().all(|b| self.is_paged_in(b)) && keys.iter().all(|&k| self.cache.contains(k));
            return Readiness { built, ready };
        }
        let built = self.prepare_nearest(boxes, budget);
        Readiness { built, ready: boxes.iter().all(|b| self.is_ready(b)) }
    }

    /// Builds the chunks the cache lacks among `keys`, in parallel: the one place collision data is
    /// built ahead of the queries (`World` passes its bodies' solid contacts). Returns how many.
    pub(crate) fn prepare_chunks(&self, mut keys: Vec<PhysicsChunkKey>) -> usize {
        keys.sort_unstable();
        keys.dedup();
        self.cache.prepare(&self.mesher, &self.store, &keys)
    }

    /// The missing chunks around `boxes`, nearest a box first (by the distance from the chunk's
    /// center), built within `budget`. Returns how many were built.
    fn prepare_nearest(&self, boxes: &[Aabb], budget: PrepareBudget) -> usize {
        let start = Instant::now();
        let mut missing: Vec<(f32, PhysicsChunkKey)> = Vec::new();
        let mut seen = BTreeSet::new();
        for b in boxes {
            for k in self.solid_chunks(b) {
                if !self.cache.contains(k) && seen.insert(k) {
                    let r = k.region().map(|r| self.scale().point_to_world(&r.min().map(|v| v as f32 + 4.0)));
                    let Ok(c) = r else { continue };
                    let d = boxes
                        .iter()
                        .map(|b| {
                            let q = Point3::new(
                                c.x.clamp(b.mins.x, b.maxs.x),
                                c.y.clamp(b.mins.y, b.maxs.y),
                                c.z.clamp(b.mins.z, b.maxs.z),
                            );
                            (q - c).norm_squared()
                        })
                        .fold(f32::INFINITY, f32::min);
                    missing.push((d, k));
                }
            }
        }
        missing.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        missing.truncate(budget.max_chunks);
        let keys: Vec<PhysicsChunkKey> = missing.into_iter().map(|(_, k)| k).collect();
        let mut built = 0;
        let batch = (rayon::current_num_threads() * 8).max(8);
        for part in keys.chunks(batch) {
            if start.elapsed() >= budget.max_time {
                break;
            }
            built += self.prepare_chunks(part.to_vec());
        }
        built
    }

    /// True when every chunk a query inside `aabb` needs is built.
    fn is_ready(&self, aabb: &Aabb) -> bool {
        self.is_paged_in(aabb) && self.solid_chunks(aabb).iter().all(|&k| self.cache.contains(k))
    }
}

/// How much [`Terrain::prepare`] may build in one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrepareBudget {
    /// At most this many chunks.
    pub max_chunks: usize,
    /// Stop starting batches once this much time has passed.
    pub max_time: Duration,
}

impl PrepareBudget {
    /// Everything missing, in one parallel batch.
    pub const UNLIMITED: PrepareBudget = PrepareBudget { max_chunks: usize::MAX, max_time: Duration::MAX };
    /// Nothing: only whether the boxes are ready.
    pub const NONE: PrepareBudget = PrepareBudget { max_chunks: 0, max_time: Duration::ZERO };

    /// At most `max_chunks` chunks within `max_time`.
    pub fn new(max_chunks: usize, max_time: Duration) -> Self {
        PrepareBudget { max_chunks, max_time }
    }
}

impl Default for PrepareBudget {
    fn default() -> Self {
        PrepareBudget::UNLIMITED
    }
}

/// What [`Terrain::prepare`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Readiness {
    /// Chunks built by this call.
    pub built: usize,
    /// Every box's chunks are built: queries inside the boxes build nothing.
    pub ready: bool,
}
