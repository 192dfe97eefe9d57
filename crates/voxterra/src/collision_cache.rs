//! The collision cache (the physics article's lazy narrowphase data): per physics chunk, its
//! physics mesh with edge flags and its kD tree, built on the first query that needs the chunk,
//! kept under a byte budget with least-recently-used eviction, dropped when an edit touches it.

use rayon::prelude::*;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use voxterra_core::{PhysicsChunkKey, Region, VoxelRead};
use voxterra_kdtree::KdTree;
use voxterra_mesher::{MeshWorkspace, Mesher, PhysicsMesh};

/// One chunk's collision data.
#[derive(Debug)]
pub struct ChunkCollision {
    /// The chunk's physics mesh (voxel units), with edge flags.
    pub mesh: PhysicsMesh,
    /// Its kD tree.
    pub tree: KdTree,
}

impl ChunkCollision {
    fn bytes(&self) -> usize {
        self.mesh.data_bytes() + self.tree.stats().bytes + std::mem::size_of::<Self>()
    }
}

/// What the cache holds and has done.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct CacheStats {
    /// Chunks held (empty chunks included: they cost an entry, not a mesh).
    pub entries: usize,
    /// Bytes held.
    pub bytes: usize,
    /// Lookups that found their chunk built.
    pub hits: u64,
    /// Lookups that had to build it.
    pub misses: u64,
    /// Chunks built (misses and `prepare`).
    pub builds: u64,
    /// Chunks evicted for the budget.
    pub evictions: u64,
    /// Chunks dropped by edits.
    pub dropped: u64,
    /// Time spent building.
    pub build_time: Duration,
}

struct Entry {
    data: Option<ChunkCollision>,
    bytes: usize,
    tick: u64,
}

/// Per-chunk collision data under a byte budget.
pub(crate) struct CollisionCache {
    /// A fixed-seed fast hash: every ray and contact looks chunks up here.
    entries: hashbrown::HashMap<PhysicsChunkKey, Entry, foldhash::fast::FixedState>,
    /// Least recently used first: tick → chunk.
    lru: BTreeMap<u64, PhysicsChunkKey>,
    tick: u64,
    budget: usize,
    stats: CacheStats,
}

impl std::fmt::Debug for CollisionCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CollisionCache").field("budget", &self.budget).field("stats", &self.stats).finish()
    }
}

/// Builds one chunk's data; `None` for a chunk with no surface.
pub(crate) fn build(
    mesher: &Mesher,
    src: &(impl VoxelRead + ?Sized),
    key: PhysicsChunkKey,
    ws: &mut MeshWorkspace,
) -> Option<ChunkCollision> {
    let region = key.region().ok()?;
    let mut mesh = PhysicsMesh::default();
    // A chunk's padded read stays inside the i32 space except at its very edge: such chunks hold
    // no collision data.
    mesher.mesh_physics(src, &region, ws, &mut mesh).ok()?;
    if mesh.triangles().is_empty() {
        return None;
    }
    mesh.shrink_to_fit();
    let tree = KdTree::build(&mesh).ok()?;
    Some(ChunkCollision { mesh, tree })
}

impl CollisionCache {
    pub(crate) fn new(budget: usize) -> Self {
        CollisionCache {
            entries: Default::default(),
            lru: BTreeMap::new(),
            tick: 0,
            budget,
            stats: CacheStats::default(),
        }
    }

    pub(crate) fn stats(&self) -> CacheStats {
        CacheStats { entries: self.entries.len(), ..self.stats }
    }

    pub(crate) fn set_budget(&mut self, budget: usize) {
        self.budget = budget;
        self.trim(None);
    }

    pub(crate) fn contains(&self, key: PhysicsChunkKey) -> bool {
        self.entries.contains_key(&key)
    }

    /// The data held for `key` without building or touching it: `None` when not held,
    /// `Some(None)` for a held chunk with no surface.
    pub(crate) fn peek(&self, key: PhysicsChunkKey) -> Option<Option<&ChunkCollision>> {
        self.entries.get(&key).map(|e| e.data.as_ref())
    }

    /// The chunks held, in key order (y, z, x).
    pub(crate) fn keys(&self) -> Vec<PhysicsChunkKey> {
        let mut k: Vec<_> = self.entries.keys().copied().collect();
        k.sort_by_key(|k| (k.y, k.z, k.x));
        k
    }

    fn touch(&mut self, key: PhysicsChunkKey) {
        self.tick += 1;
        if let Some(e) = self.entries.get_mut(&key) {
            self.lru.remove(&e.tick);
            e.tick = self.tick;
            self.lru.insert(self.tick, key);
        }
    }

    fn insert(&mut self, key: PhysicsChunkKey, data: Option<ChunkCollision>) {
        let bytes = data.as_ref().map_or(0, ChunkCollision::bytes) + 64;
        self.tick += 1;
        if let Some(old) = self.entries.insert(key, Entry { data, bytes, tick: self.tick }) {
            self.lru.remove(&old.tick);
            self.stats.bytes -= old.bytes;
        }
        self.lru.insert(self.tick, key);
        self.stats.bytes += bytes;
        self.stats.builds += 1;
        self.trim(Some(key));
    }

    /// Evicts least recently used entries until within budget, never `keep`.
    fn trim(&mut self, keep: Option<PhysicsChunkKey>) {
        while self.stats.bytes > self.budget {
            let victim = self.lru.values().copied().find(|k| Some(*k) != keep);
            let Some(k) = victim else { break };
            if let Some(e) = self.entries.remove(&k) {
                self.lru.remove(&e.tick);
                self.stats.bytes -= e.bytes;
                self.stats.evictions += 1;
            }
        }
    }

    /// The chunk's data, built now if missing (`None`: the chunk has no surface).
    pub(crate) fn get(
        &mut self,
        mesher: &Mesher,
        src: &(impl VoxelRead + ?Sized),
        key: PhysicsChunkKey,
        ws: &mut MeshWorkspace,
    ) -> Option<&ChunkCollision> {
        if self.entries.contains_key(&key) {
            self.stats.hits += 1;
            self.touch(key);
        } else {
            self.stats.misses += 1;
            let start = Instant::now();
            let data = build(mesher, src, key, ws);
            self.stats.build_time += start.elapsed();
            self.insert(key, data);
        }
        self.entries.get(&key).and_then(|e| e.data.as_ref())
    }

    /// Builds every missing chunk of `keys` in parallel and inserts them in key order (the result
    /// is the serial one); returns how many were built.
    pub(crate) fn prepare(
        &mut self,
        mesher: &Mesher,
        src: &(impl VoxelRead + Sync + ?Sized),
        keys: &[PhysicsChunkKey],
    ) -> usize {
        let missing: Vec<PhysicsChunkKey> =
            keys.iter().copied().filter(|k| !self.entries.contains_key(k)).collect();
        let start = Instant::now();
        let built: Vec<(PhysicsChunkKey, Option<ChunkCollision>)> = missing
            .par_iter()
            .map_init(MeshWorkspace::new, |ws, &k| (k, build(mesher, src, k, ws)))
            .collect();
        self.stats.build_time += start.elapsed();
        let n = built.len();
        for (k, data) in built {
            self.insert(k, data);
        }
        n
    }

    /// Drops every entry whose data an edit of `dirty` may change: the chunks whose physics mesh
    /// (padded read, plus the grown region its edge flags read) reaches into it. Returns how many.
    pub(crate) fn invalidate(&mut self, dirty: &Region) -> usize {
        let Some(range) = PhysicsChunkKey::range(&dirty.expanded(2)) else { return 0 };
        let keys: Vec<PhysicsChunkKey> = if range.count() as usize > self.entries.len() {
            let mut held: Vec<_> = self.entries.keys().copied().filter(|k| range.contains(*k)).collect();
            held.sort();
            held
        } else {
            range.iter().filter(|k| self.entries.contains_key(k)).collect()
        };
        for k in &keys {
            if let Some(e) = self.entries.remove(k) {
                self.lru.remove(&e.tick);
                self.stats.bytes -= e.bytes;
                self.stats.dropped += 1;
            }
        }
        keys.len()
    }
}
