//! Collision readiness: which physics chunks a query needs (from the masks), building their
//! collision data into the cache ahead of the queries, and reading it during one
//! ([`ChunkReader`]).

use crate::collision_cache::{CacheStats, ChunkCollision, ChunkData};
use crate::reach::SURFACE_SPILL;
use crate::terrain::Terrain;
use std::collections::BTreeSet;
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
        self.masks.query(&aabb.loosened(SURFACE_SPILL as f32 * self.voxel_size), |k, t| {
            if t.solid {
                keys.push(k);
            }
        });
        keys.sort_unstable();
        keys
    }

    /// Collision readiness: builds, in parallel, every cache entry a query inside `aabb` (world
    /// units) will need, so queries there build nothing (until an edit or the budget drops
    /// them). Returns how many were built.
    pub fn prepare(&self, aabb: &Aabb) -> usize {
        self.prepare_boxes(std::slice::from_ref(aabb))
    }

    /// [`Terrain::prepare`] for many boxes at once (a frame's bodies): the chunks they need, each
    /// once, built in one parallel batch. What `World` and `voxterra-rapier` call before a step.
    /// Returns how many were built.
    pub fn prepare_boxes(&self, boxes: &[Aabb]) -> usize {
        self.prepare_chunks(boxes.iter().flat_map(|b| self.solid_chunks(b)).collect())
    }

    /// Builds the chunks the cache lacks among `keys`, in parallel: the one place collision data is
    /// built ahead of the queries (`World` passes its bodies' solid contacts). Returns how many.
    pub(crate) fn prepare_chunks(&self, mut keys: Vec<PhysicsChunkKey>) -> usize {
        keys.sort_unstable();
        keys.dedup();
        self.cache.prepare(&self.mesher, &self.store, &keys)
    }

    /// Collision readiness within a budget, for a game's frame loop: builds the missing cache
    /// entries around `boxes` (world units), nearest first (by distance from the chunk's center to
    /// the nearest box), at most `max_chunks` of them and stopping once `max_time` has passed
    /// (checked between parallel batches). Returns how many chunks were built and whether every
    /// box is ready.
    pub fn prepare_around(
        &self,
        boxes: &[Aabb],
        max_chunks: usize,
        max_time: std::time::Duration,
    ) -> (usize, bool) {
        let start = Instant::now();
        let mut missing: Vec<(f32, PhysicsChunkKey)> = Vec::new();
        let mut seen = BTreeSet::new();
        for b in boxes {
            for k in self.solid_chunks(b) {
                if !self.cache.contains(k) && seen.insert(k) {
                    let r = k.region().map(|r| r.min().map(|v| (v as f32 + 4.0) * self.voxel_size));
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
        missing.truncate(max_chunks);
        let keys: Vec<PhysicsChunkKey> = missing.into_iter().map(|(_, k)| k).collect();
        let mut built = 0;
        let batch = (rayon::current_num_threads() * 8).max(8);
        for part in keys.chunks(batch) {
            if start.elapsed() >= max_time {
                break;
            }
            built += self.prepare_chunks(part.to_vec());
        }
        (built, boxes.iter().all(|b| self.is_ready(b)))
    }

    /// True when every chunk a query inside `aabb` needs is built.
    pub fn is_ready(&self, aabb: &Aabb) -> bool {
        self.solid_chunks(aabb).iter().all(|&k| self.cache.contains(k))
    }
}
