//! The collision cache (the physics article's lazy narrowphase data): per physics chunk, its
//! physics mesh with edge flags and its kD tree, built by the first query that needs the chunk —
//! from `&self`, so physics engines and parallel callers fill it as they query — kept under a
//! byte budget with least-recently-used eviction, dropped when an edit touches it.
//!
//! Building is deterministic, so who builds a chunk, and whether it was evicted and built again,
//! never changes an answer. Two threads missing the same chunk at once may both build it; the
//! first insert is kept.

use crate::chunk_tree::{ChunkTree, conservative_box, tight_box};
use crate::error::InvalidTerrain;
use crate::workspace::{map_shared, with_workspace};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Aabb, PhysicsChunkKey, Ray, Region, VoxelRead};
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
    /// The `Arc`'s allocation (its two counts and the struct, mesh and tree headers inside it)
    /// once, then the arrays they point to.
    fn bytes(&self) -> usize {
        let mesh_arrays = self.mesh.data_bytes() - std::mem::size_of::<Point3<f32>>(); // less the origin
        let tree_arrays = self.tree.stats().bytes - std::mem::size_of::<KdTree>();
        2 * std::mem::size_of::<usize>() + std::mem::size_of::<Self>() + mesh_arrays + tree_arrays
    }
}

/// A chunk's entry: its data (`None`: the chunk has no surface).
pub type ChunkData = Option<Arc<ChunkCollision>>;

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
    /// Chunks built (misses and preparation).
    pub builds: u64,
    /// Chunks evicted for the budget.
    pub evictions: u64,
    /// Chunks dropped by edits.
    pub dropped: u64,
    /// Time spent building.
    pub build_time: Duration,
    /// Chunks with a box in the ray tree (every chunk that may hold triangles, built or not).
    pub ray_boxes: usize,
    /// Heap bytes of the ray tree (outside the budget: it covers every chunk).
    pub ray_tree_bytes: usize,
}

/// An entry's bookkeeping beside its data: what it costs, when it was last used.
struct Entry {
    data: ChunkData,
    bytes: usize,
    used: AtomicU64,
}

#[derive(Default)]
struct Held {
    /// A fixed-seed fast hash: every ray and contact looks chunks up here.
    entries: hashbrown::HashMap<PhysicsChunkKey, Entry, foldhash::fast::FixedState>,
    bytes: usize,
    /// The boxes of the chunks rays may hit: tight for chunks built since their last change.
    tree: ChunkTree,
}

/// Per-chunk collision data under a byte budget, shared by every query.
pub(crate) struct CollisionCache {
    held: RwLock<Held>,
    /// The use clock, moved by each insert: an entry's `used` is the clock when it was last
    /// looked up (entries used between two inserts tie; the least recently used goes first).
    clock: AtomicU64,
    budget: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
    builds: AtomicU64,
    evictions: AtomicU64,
    dropped: AtomicU64,
    build_nanos: AtomicU64,
}

impl std::fmt::Debug for CollisionCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CollisionCache").field("stats", &self.stats()).finish_non_exhaustive()
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

/// One query's lookups: holds the cache's read lock between them (released before a build) and
/// counts its hits once, when dropped.
///
/// PERF: a ray tests about four chunks; taking the lock and counting a hit per chunk wrote shared
/// memory on every lookup, which threads casting at once contend for. A held lock makes an insert
/// from another thread wait for the query's end: queries are short.
pub(crate) struct CacheReader<'a> {
    cache: &'a CollisionCache,
    held: Option<std::sync::RwLockReadGuard<'a, Held>>,
    hits: u64,
}

impl CacheReader<'_> {
    /// What the cache holds for `key`, without building it: `None` when not held, `Some(None)`
    /// for a chunk without a surface, else its triangles' bounds (voxel units).
    pub(crate) fn bounds(&mut self, key: PhysicsChunkKey) -> Option<Option<Aabb>> {
        let cache = self.cache;
        let held = self.held.get_or_insert_with(|| cache.read());
        held.entries.get(&key).map(|e| e.data.as_deref().map(|c| *c.tree.bounds()))
    }

    /// Casts `ray` (voxel units) through the chunk tree: `f(key, data, limit)` for each built chunk
    /// whose box the ray enters within `[0, limit]`, nearest box first, returns the new limit.
    /// A chunk the cache lacks is taken from `built` (chunks this query built, which the budget
    /// may have evicted since); else the cast stops there and returns it, for the caller to build
    /// (with [`CacheReader::build`]) and cast again: the tree holds every chunk a ray may hit,
    /// built or not.
    pub(crate) fn cast(
        &mut self,
        ray: &Ray,
        max_t: f32,
        built: &[(PhysicsChunkKey, ChunkData)],
        mut f: impl FnMut(PhysicsChunkKey, &ChunkCollision, f32) -> f32,
    ) -> Option<PhysicsChunkKey> {
        let cache = self.cache;
        let held = self.held.get_or_insert_with(|| cache.read());
        let (mut missing, mut hits) = (None, 0);
        held.tree.cast(ray, max_t, &mut |key, limit| match held.entries.get(&key) {
            Some(e) => {
                hits += 1;
                let now = cache.clock.load(Ordering::Relaxed);
                if e.used.load(Ordering::Relaxed) != now {
                    e.used.store(now, Ordering::Relaxed);
                }
                e.data.as_deref().map_or(limit, |d| f(key, d, limit))
            }
            None => match built.iter().find(|(k, _)| *k == key) {
                Some((_, data)) => data.as_deref().map_or(limit, |d| f(key, d, limit)),
                None => {
                    missing = Some(key);
                    -1.0
                }
            },
        });
        self.hits += hits;
        missing
    }

    /// [`CacheReader::cast`] for a packet of rays (see `ChunkTree::cast_packet`):
    /// `f(key, data, mask, limits)` for each built chunk some ray of `mask` enters within its
    /// limit. Chunks neither held nor in `built` are skipped and returned (in the order met),
    /// for the caller to build and cast the packet again.
    pub(crate) fn cast_packet(
        &mut self,
        rays: &[Ray],
        limits: &mut [f32],
        built: &[(PhysicsChunkKey, ChunkData)],
        mut f: impl FnMut(PhysicsChunkKey, &ChunkCollision, u64, &mut [f32]),
    ) -> Vec<PhysicsChunkKey> {
        let cache = self.cache;
        let held = self.held.get_or_insert_with(|| cache.read());
        let (mut missing, mut hits) = (Vec::new(), 0);
        held.tree.cast_packet(rays, limits, &mut |key, mask, limits| match held.entries.get(&key) {
            Some(e) => {
                hits += 1;
                let now = cache.clock.load(Ordering::Relaxed);
                if e.used.load(Ordering::Relaxed) != now {
                    e.used.store(now, Ordering::Relaxed);
                }
                if let Some(d) = e.data.as_deref() {
                    f(key, d, mask, limits);
                }
            }
            None => match built.iter().find(|(k, _)| *k == key) {
                Some((_, data)) => {
                    if let Some(d) = data.as_deref() {
                        f(key, d, mask, limits);
                    }
                }
                None => missing.push(key),
            },
        });
        self.hits += hits;
        missing
    }

    /// Calls `f` with `key`'s data, built now (and kept) if the cache lacks it; `None` for a chunk
    /// without a surface.
    pub(crate) fn with<R>(
        &mut self,
        mesher: &Mesher,
        src: &(impl VoxelRead + ?Sized),
        key: PhysicsChunkKey,
        ws: &mut MeshWorkspace,
        f: impl FnOnce(&ChunkCollision) -> R,
    ) -> Option<R> {
        let cache = self.cache;
        let held = self.held.get_or_insert_with(|| cache.read());
        if let Some(e) = held.entries.get(&key) {
            // PERF: the clock moves on inserts only, and an entry's stamp is written only when
            // it changes: lookups from many threads read shared memory without writing it.
            let now = cache.clock.load(Ordering::Relaxed);
            if e.used.load(Ordering::Relaxed) != now {
                e.used.store(now, Ordering::Relaxed);
            }
            self.hits += 1;
            return e.data.as_deref().map(f);
        }
        self.build(mesher, src, key, ws).as_deref().map(f)
    }

    /// Builds `key`'s data and inserts it (another thread's insert is kept); returns the data.
    pub(crate) fn build(
        &mut self,
        mesher: &Mesher,
        src: &(impl VoxelRead + ?Sized),
        key: PhysicsChunkKey,
        ws: &mut MeshWorkspace,
    ) -> ChunkData {
        let cache = self.cache;
        // Building takes the write lock: this reader's read lock goes first.
        self.held = None;
        cache.misses.fetch_add(1, Ordering::Relaxed);
        let data = cache.timed_build(mesher, src, key, ws);
        cache.insert(&mut cache.write(), key, data)
    }
}

impl Drop for CacheReader<'_> {
    fn drop(&mut self) {
        if self.hits > 0 {
            self.cache.hits.fetch_add(self.hits, Ordering::Relaxed);
        }
    }
}

/// What an entry costs beyond its data (the map's slot and bookkeeping).
const ENTRY_BYTES: usize = 64;

impl CollisionCache {
    pub(crate) fn new(budget: usize) -> Self {
        CollisionCache {
            held: RwLock::default(),
            clock: AtomicU64::new(0),
            budget: AtomicUsize::new(budget),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            builds: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            build_nanos: AtomicU64::new(0),
        }
    }

    // A panic elsewhere while the lock was held leaves the map consistent (every write completes
    // before it can panic), so a poisoned lock is used as is.
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Held> {
        self.held.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Held> {
        self.held.write().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn stats(&self) -> CacheStats {
        let held = self.read();
        CacheStats {
            entries: held.entries.len(),
            bytes: held.bytes,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            builds: self.builds.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            build_time: Duration::from_nanos(self.build_nanos.load(Ordering::Relaxed)),
            ray_boxes: held.tree.len(),
            ray_tree_bytes: held.tree.bytes(),
        }
    }

    pub(crate) fn set_budget(&self, budget: usize) {
        self.budget.store(budget, Ordering::Relaxed);
        let mut held = self.write();
        self.trim(&mut held, None);
    }

    pub(crate) fn contains(&self, key: PhysicsChunkKey) -> bool {
        self.read().entries.contains_key(&key)
    }

    /// The data held for `key`, without building it or counting a use: `None` when not held.
    pub(crate) fn peek(&self, key: PhysicsChunkKey) -> Option<ChunkData> {
        self.read().entries.get(&key).map(|e| e.data.clone())
    }

    /// The chunks held, in key order (y, z, x).
    pub(crate) fn keys(&self) -> Vec<PhysicsChunkKey> {
        let mut k: Vec<_> = self.read().entries.keys().copied().collect();
        k.sort_unstable();
        k
    }

    /// A reader for one query's lookups (see [`CacheReader`]).
    pub(crate) fn reader(&self) -> CacheReader<'_> {
        CacheReader { cache: self, held: None, hits: 0 }
    }

    fn timed_build(
        &self,
        mesher: &Mesher,
        src: &(impl VoxelRead + ?Sized),
        key: PhysicsChunkKey,
        ws: &mut MeshWorkspace,
    ) -> ChunkData {
        let start = Instant::now();
        let data = build(mesher, src, key, ws).map(Arc::new);
        self.build_nanos.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.builds.fetch_add(1, Ordering::Relaxed);
        data
    }

    /// Inserts `key`'s data unless another thread did first (its data is then kept: both are
    /// the same); returns the held data.
    fn insert(&self, held: &mut Held, key: PhysicsChunkKey, data: ChunkData) -> ChunkData {
        let used = AtomicU64::new(self.clock.fetch_add(1, Ordering::Relaxed));
        if let Some(e) = held.entries.get(&key) {
            return e.data.clone();
        }
        let bytes = data.as_deref().map_or(0, ChunkCollision::bytes) + ENTRY_BYTES;
        held.bytes += bytes;
        held.tree.set_many([(key, data.as_deref().map(|d| tight_box(d.tree.bounds())))]);
        held.entries.insert(key, Entry { data: data.clone(), bytes, used });
        self.trim(held, Some(key));
        data
    }

    /// Checks the cache: its byte count the sum of its entries' and within the budget (or one
    /// entry alone over it), each entry's cost its data's, and each entry's data equal to a fresh
    /// build of its chunk from `src` (mesh bit for bit, tree valid over it).
    pub(crate) fn validate(
        &self,
        mesher: &Mesher,
        src: &(impl VoxelRead + ?Sized),
    ) -> Result<(), InvalidTerrain> {
        let held = self.held.read().unwrap_or_else(PoisonError::into_inner);
        let bad = |chunk: [i32; 3], what| InvalidTerrain::Cache { chunk, what };
        if held.entries.values().map(|e| e.bytes).sum::<usize>() != held.bytes {
            return Err(bad([0; 3], "the byte count differs from the entries'"));
        }
        let largest = held.entries.values().map(|e| e.bytes).max().unwrap_or(0);
        if held.bytes > self.budget.load(Ordering::Relaxed) && held.bytes != largest {
            return Err(bad([0; 3], "over the byte budget"));
        }
        let mut ws = MeshWorkspace::new();
        let mut keys: Vec<PhysicsChunkKey> = held.entries.keys().copied().collect();
        keys.sort_unstable();
        for key in keys {
            let e = &held.entries[&key];
            let cost = e.data.as_ref().map_or(0, |d| d.bytes()) + ENTRY_BYTES;
            if e.bytes != cost {
                return Err(bad(key.to_array(), "its cost differs from its data's"));
            }
            let fresh = build(mesher, src, key, &mut ws);
            match (&e.data, &fresh) {
                (None, None) => {}
                (Some(d), Some(f)) if d.mesh == f.mesh => {
                    d.tree.validate(&d.mesh).map_err(|_| bad(key.to_array(), "its kD tree is invalid"))?;
                }
                _ => return Err(bad(key.to_array(), "differs from a fresh build")),
            }
        }
        Ok(())
    }

    /// Evicts least recently used entries, never `keep`, until the cache is within its budget:
    /// down to seven eighths of it, so that a full cache scans its entries once per many inserts.
    fn trim(&self, held: &mut Held, keep: Option<PhysicsChunkKey>) {
        let budget = self.budget.load(Ordering::Relaxed);
        if held.bytes <= budget {
            return;
        }
        let target = budget - budget / 8;
        let mut by_age: Vec<(u64, PhysicsChunkKey)> = held
            .entries
            .iter()
            .filter(|(k, _)| Some(**k) != keep)
            .map(|(k, e)| (e.used.load(Ordering::Relaxed), *k))
            .collect();
        by_age.sort_unstable();
        for (_, k) in by_age {
            if held.bytes <= target {
                break;
            }
            if let Some(e) = held.entries.remove(&k) {
                held.bytes -= e.bytes;
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Builds every missing chunk of `keys` in parallel and inserts them in key order; returns
    /// how many were built.
    pub(crate) fn prepare(
        &self,
        mesher: &Mesher,
        src: &(impl VoxelRead + Sync + ?Sized),
        keys: &[PhysicsChunkKey],
    ) -> usize {
        let missing: Vec<PhysicsChunkKey> = {
            let held = self.read();
            keys.iter().copied().filter(|k| !held.entries.contains_key(k)).collect()
        };
        // The thread's workspace: a fresh one per batch would grow its buffers again.
        let built: Vec<(PhysicsChunkKey, ChunkData)> = map_shared(&missing, |&k| {
            (k, with_workspace(|ws| self.timed_build(mesher, src, k, &mut ws.mesh)))
        });
        let n = built.len();
        let mut held = self.write();
        for (k, data) in built {
            self.insert(&mut held, k, data);
        }
        n
    }

    /// Brings the ray tree's boxes of `keys` up to date after their masks or cache entries changed:
    /// a held entry's triangles' bounds (none for an empty chunk), else the conservative box where
    /// `may_hold` says the chunk may hold triangles, else none.
    pub(crate) fn refresh_tree(
        &mut self,
        keys: impl IntoIterator<Item = PhysicsChunkKey>,
        may_hold: impl Fn(PhysicsChunkKey) -> bool + Sync,
    ) {
        let held = self.held.get_mut().unwrap_or_else(PoisonError::into_inner);
        let keys: Vec<PhysicsChunkKey> = keys.into_iter().collect();
        let entries = &held.entries;
        let box_of = |k: &PhysicsChunkKey| {
            let b = match entries.get(k) {
                Some(e) => e.data.as_deref().map(|d| tight_box(d.tree.bounds())),
                None => may_hold(*k).then(|| conservative_box(*k)),
            };
            (*k, b)
        };
        // A world's load asks about every chunk (each all-solid one reads its voxels): in
        // parallel, in the same order.
        let boxes: Vec<_> = if keys.len() > 1024 {
            keys.par_iter().map(box_of).collect()
        } else {
            keys.iter().map(box_of).collect()
        };
        held.tree.set_many(boxes);
    }

    /// Checks the ray tree: each of `keys` (the masks' chunks) and each chunk it holds has the box
    /// its state calls for — a held entry's tight box (none when empty); for a chunk not held, the
    /// conservative box where `may_hold` says so (or where a fresh build has no triangles), or the
    /// tight box of a fresh build (it was built and evicted since its last change), or none when a
    /// fresh build has no triangles.
    pub(crate) fn validate_tree(
        &self,
        mesher: &Mesher,
        src: &(impl VoxelRead + ?Sized),
        keys: impl IntoIterator<Item = PhysicsChunkKey>,
        may_hold: impl Fn(PhysicsChunkKey) -> bool,
    ) -> Result<(), InvalidTerrain> {
        let held = self.read();
        let mut all: Vec<PhysicsChunkKey> = keys.into_iter().chain(held.tree.keys()).collect();
        all.sort_unstable();
        all.dedup();
        let mut ws = MeshWorkspace::new();
        for k in all {
            let have = held.tree.get(k);
            let ok = match held.entries.get(&k) {
                Some(e) => have == e.data.as_deref().map(|d| tight_box(d.tree.bounds())),
                // Building costs: only where the box is not the conservative one. A conservative
                // box where `may_hold` now says no is kept by chunks beside an edit whose store
                // rows were repacked (`uniform` answers from the packing): harmless without
                // triangles.
                None if have.is_some_and(|b| b == conservative_box(k)) => {
                    may_hold(k) || build(mesher, src, k, &mut ws).is_none()
                }
                None => have == build(mesher, src, k, &mut ws).map(|d| tight_box(d.tree.bounds())),
            };
            if !ok {
                return Err(InvalidTerrain::Cache {
                    chunk: k.to_array(),
                    what: "its ray-tree box is not its state's",
                });
            }
        }
        Ok(())
    }

    /// [`CollisionCache::invalidate`] for an edit whose changed voxels are known: drops the entries
    /// of `keys` (the chunks within reach of a voxel that changed, [`crate::reach::chunks_reaching`]) and
    /// refreshes their ray-tree boxes. Returns how many entries were dropped.
    pub(crate) fn invalidate_keys(
        &mut self,
        keys: &[PhysicsChunkKey],
        may_hold: impl Fn(PhysicsChunkKey) -> bool + Sync,
    ) -> usize {
        let held = self.held.get_mut().unwrap_or_else(PoisonError::into_inner);
        let mut dropped = 0;
        for k in keys {
            if let Some(e) = held.entries.remove(k) {
                held.bytes -= e.bytes;
                dropped += 1;
            }
        }
        self.dropped.fetch_add(dropped as u64, Ordering::Relaxed);
        self.refresh_tree(keys.iter().copied(), may_hold);
        dropped
    }

    /// Drops every entry whose data an edit of `dirty` may change: the chunks whose physics mesh
    /// (padded read, plus the grown region its edge flags read) reaches into it; then brings their
    /// ray-tree boxes up to date (see [`CollisionCache::refresh_tree`]; the masks are current).
    /// Returns how many entries were dropped.
    pub(crate) fn invalidate(
        &mut self,
        dirty: &Region,
        may_hold: impl Fn(PhysicsChunkKey) -> bool + Sync,
    ) -> usize {
        let Some(range) = PhysicsChunkKey::range(&dirty.expanded(crate::reach::EDIT_REACH)) else { return 0 };
        let dropped = self.drop_reaching(dirty);
        self.refresh_tree(range.iter(), may_hold);
        dropped
    }

    /// Drops the entries an edit of `dirty` may change (see [`CollisionCache::invalidate`]) without
    /// refreshing their ray-tree boxes: for a caller that refreshes many regions' chunks at once.
    /// Returns how many.
    pub(crate) fn drop_reaching(&mut self, dirty: &Region) -> usize {
        let Some(range) = PhysicsChunkKey::range(&dirty.expanded(crate::reach::EDIT_REACH)) else { return 0 };
        let held = self.held.get_mut().unwrap_or_else(PoisonError::into_inner);
        let keys: Vec<PhysicsChunkKey> = if range.count() as usize > held.entries.len() {
            held.entries.keys().copied().filter(|k| range.contains(*k)).collect()
        } else {
            range.iter().filter(|k| held.entries.contains_key(k)).collect()
        };
        for k in &keys {
            if let Some(e) = held.entries.remove(k) {
                held.bytes -= e.bytes;
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
        keys.len()
    }
}
