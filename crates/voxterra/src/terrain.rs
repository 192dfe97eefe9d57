//! [`Terrain`]: the value a game holds — voxels, materials, the voxel size, the terrain
//! broadphase's masks kept current on every edit, and the edit history.

use crate::brush::{self, Brush, BrushOp};
use crate::collision_cache::{CacheStats, CollisionCache};
use crate::delta::LoggedEdit;
use crate::history::History;
use rayon::prelude::*;
use std::collections::{BTreeSet, VecDeque};
use std::path::Path;
use std::time::{Duration, Instant};
use voxterra_bit_broadphase::{BitBroadphase, BroadphaseError};
use voxterra_codec::{Compression, Snapshot, SnapshotError, WorldFileError};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Aabb, PhysicsChunkKey, StoreChunkKey};
use voxterra_core::{CoreError, Material, MaterialKind, MaterialTable, Region, Voxel, VoxelPos, VoxelRead};
use voxterra_mesher::{MeshError, RenderMesh};
use voxterra_mesher::{MeshWorkspace, Mesher};
use voxterra_narrowphase::convert::FromParry;
use voxterra_narrowphase::parry3d::math::{Pose, Vector};
use voxterra_narrowphase::parry3d::query::sweep_toi::Sweep;
use voxterra_narrowphase::parry3d::shape::Shape;
use voxterra_narrowphase::{
    CastOptions, ContactWorkspace, Manifold, NarrowphaseError, ShapeCastHit, SweepHit, TriangleSet,
};
use voxterra_voxel_store::{StoreError, VoxelStore};
use voxterra_worldgen::{WorldParams, WorldgenError};

/// Why a terrain operation was refused. A refused edit changes nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TerrainError {
    /// The voxel size is not finite and positive.
    #[error("invalid voxel size {0}: it must be finite and positive")]
    InvalidVoxelSize(f32),
    /// A brush with a NaN or infinite parameter, a radius that is not positive, or an inverted box.
    #[error("invalid brush {0:?}")]
    InvalidBrush(Box<Brush>),
    /// An edit over more voxels than [`Terrain::max_edit_voxels`] allows.
    #[error("the edit covers {voxels} voxels, over the limit of {limit}")]
    EditTooLarge {
        /// Voxels the edit covers.
        voxels: u128,
        /// The limit in force.
        limit: usize,
    },
    /// A material the table does not define, or Air where matter is required.
    #[error("material {0} is not a solid or liquid of the material table")]
    BadMaterial(u8),
    /// Nothing to undo or redo.
    #[error("nothing to {0}")]
    NoHistory(&'static str),
    /// The store refused the write (limits).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A region or voxel core refuses.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// The broadphase refused its configuration.
    #[error(transparent)]
    Broadphase(#[from] BroadphaseError),
    /// A world file could not be read or written.
    #[error(transparent)]
    WorldFile(#[from] WorldFileError),
    /// World generation failed.
    #[error(transparent)]
    Generate(#[from] WorldgenError<StoreError>),
    /// The narrowphase refused a query (a non-finite pose, a degenerate or non-convex shape).
    #[error(transparent)]
    Narrowphase(#[from] NarrowphaseError),
    /// Delta bytes were refused.
    #[error(transparent)]
    Delta(#[from] crate::delta::DeltaError),
    /// A history snapshot did not decode.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError<std::convert::Infallible>),
}

/// What an edit did.
#[derive(Clone, Copy, PartialEq, Debug, Default)]
pub struct EditReport {
    /// The voxels that changed (their bounding box); `None` when nothing did.
    pub dirty: Option<Region>,
    /// Physics chunks whose masks were rebuilt (those whose 10³ neighborhood overlaps `dirty`).
    pub masks_rebuilt: usize,
    /// Collision cache entries dropped (chunks whose physics mesh reads into `dirty`).
    pub cache_dropped: usize,
    /// Wall time of the edit, masks included.
    pub elapsed: Duration,
}

/// The terrain: voxels, materials, the voxel size (the only place world units exist: the layers
/// below work in voxels), the bit broadphase's masks, and the edit history.
///
/// Every edit (brush, fill, set, undo, redo) writes the store, rebuilds the masks of exactly the
/// physics chunks whose neighborhood changed (in parallel, with the serial result), records an RLE
/// snapshot of what it replaced, and reports what it did.
#[derive(Debug)]
pub struct Terrain {
    store: VoxelStore,
    table: MaterialTable,
    voxel_size: f32,
    masks: BitBroadphase,
    history: History,
    max_edit_voxels: usize,
    mesher: Mesher,
    cache: CollisionCache,
    mesh_ws: MeshWorkspace,
    query_ws: QueryWorkspace,
    /// A region holding every stored voxel: the store's bounds, grown by each edit's dirty
    /// region (never shrunk; rays clip to it, and recomputing it walks every chunk).
    extent: Option<Region>,
    /// Storage chunks whose render mesh edits changed since the last hand-out.
    render_dirty: BTreeSet<(i32, i32, i32)>,
    /// The next edit's sequence number, and the delta log (oldest first) within its budget.
    seq: u64,
    log: VecDeque<LoggedEdit>,
    log_bytes: usize,
    log_budget: usize,
}

/// One contact manifold against the terrain, in world units, and the physics chunk it is from.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct TerrainManifold {
    /// The physics chunk whose triangles the points are on.
    pub chunk: PhysicsChunkKey,
    /// At most four points sharing a normal (world units).
    pub manifold: Manifold,
}

/// Scratch for the `&self` queries ([`Terrain::contacts_shared`]): keep one per thread and reuse
/// it, so queries allocate nothing once its buffers have grown.
#[derive(Default)]
pub struct QueryWorkspace {
    contact: ContactWorkspace,
    mesh: MeshWorkspace,
}

impl QueryWorkspace {
    /// An empty workspace.
    pub fn new() -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for QueryWorkspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryWorkspace").finish_non_exhaustive()
    }
}

/// Default history budget: 64 MiB of snapshots.
pub const DEFAULT_HISTORY_BYTES: usize = 64 << 20;
/// Default largest edit: 2^24 voxels (a 256³ box).
pub const DEFAULT_MAX_EDIT_VOXELS: usize = 1 << 24;
/// Default delta log budget: 16 MiB.
pub const DEFAULT_DELTA_LOG_BYTES: usize = 16 << 20;
/// Default collision cache budget: 256 MiB.
pub const DEFAULT_CACHE_BYTES: usize = 256 << 20;

impl Terrain {
    /// An empty terrain.
    pub fn new(table: MaterialTable, voxel_size: f32) -> Result<Self, TerrainError> {
        Self::from_store(VoxelStore::new(), table, voxel_size)
    }

    /// A terrain over an existing store; its masks are built here.
    pub fn from_store(
        store: VoxelStore,
        table: MaterialTable,
        voxel_size: f32,
    ) -> Result<Self, TerrainError> {
        if !(voxel_size.is_finite() && voxel_size > 0.0) {
            return Err(TerrainError::InvalidVoxelSize(voxel_size));
        }
        let mut masks = BitBroadphase::new(&table, voxel_size)?;
        let mesher = Mesher::new(&table);
        let extent = store.bounds();
        if let Some(bounds) = extent {
            masks.rebuild_region(&store, &bounds);
        }
        Ok(Terrain {
            store,
            table,
            voxel_size,
            masks,
            history: History::new(DEFAULT_HISTORY_BYTES),
            max_edit_voxels: DEFAULT_MAX_EDIT_VOXELS,
            mesher,
            cache: CollisionCache::new(DEFAULT_CACHE_BYTES),
            mesh_ws: MeshWorkspace::new(),
            query_ws: QueryWorkspace::new(),
            extent,
            render_dirty: BTreeSet::new(),
            seq: 0,
            log: VecDeque::new(),
            log_bytes: 0,
            log_budget: DEFAULT_DELTA_LOG_BYTES,
        })
    }

    /// Generates the world of `params` (default materials); `progress(done, total)` as tiles finish.
    pub fn generate(
        params: &WorldParams,
        voxel_size: f32,
        progress: impl FnMut(u64, u64),
    ) -> Result<Self, TerrainError> {
        let mut store = VoxelStore::new();
        voxterra_worldgen::generate(params, &mut store, progress)?;
        Self::from_store(store, MaterialTable::default(), voxel_size)
    }

    /// Loads a world file (see [`crate::load`]).
    pub fn load(
        path: impl AsRef<Path>,
        voxel_size: f32,
        progress: impl FnMut(usize, usize),
    ) -> Result<Self, TerrainError> {
        let (store, table) = crate::load(path, progress)?;
        Self::from_store(store, table, voxel_size)
    }

    /// Saves the voxels atomically (see [`crate::save`]); the history is not saved.
    pub fn save(
        &self,
        path: impl AsRef<Path>,
        progress: impl FnMut(usize, usize),
    ) -> Result<(), TerrainError> {
        crate::save(path, &self.store, &self.table, progress)?;
        Ok(())
    }

    /// The voxels.
    pub fn store(&self) -> &VoxelStore {
        &self.store
    }

    /// The material table.
    pub fn materials(&self) -> &MaterialTable {
        &self.table
    }

    /// World units per voxel.
    pub fn voxel_size(&self) -> f32 {
        self.voxel_size
    }

    /// The terrain broadphase: solid and water masks per physics chunk, always current.
    pub fn masks(&self) -> &BitBroadphase {
        &self.masks
    }

    /// The largest edit, in voxels; larger edits are refused.
    pub fn max_edit_voxels(&self) -> usize {
        self.max_edit_voxels
    }

    /// Sets the largest edit allowed, in voxels.
    pub fn set_max_edit_voxels(&mut self, voxels: usize) {
        self.max_edit_voxels = voxels;
    }

    /// Sets the history's byte budget; the oldest snapshots go first.
    pub fn set_history_budget(&mut self, bytes: usize) {
        let mut h = History::new(bytes);
        std::mem::swap(&mut h, &mut self.history);
        // Keep the newest edits that fit.
        let mut kept = Vec::new();
        while let Some(s) = h.pop_undo() {
            kept.push(s);
        }
        for s in kept.into_iter().rev() {
            self.history.push_undo(s);
        }
    }

    /// Edits that can be undone, and redone.
    pub fn history_len(&self) -> (usize, usize) {
        (self.history.undo_len(), self.history.redo_len())
    }

    /// Bytes the history holds.
    pub fn history_bytes(&self) -> usize {
        self.history.bytes()
    }

    fn check_region(&self, region: &Region) -> Result<(), TerrainError> {
        if region.volume() > self.max_edit_voxels as u128 {
            return Err(TerrainError::EditTooLarge { voxels: region.volume(), limit: self.max_edit_voxels });
        }
        Ok(())
    }

    /// Air is allowed (clearing); matter must be a solid or liquid of the table.
    fn check_matter(&self, voxel: Voxel) -> Result<(), TerrainError> {
        if voxel.is_air() { Ok(()) } else { self.check_material(voxel.material()) }
    }

    /// A solid or liquid of the table (brushes add and paint matter, never Air).
    fn check_material(&self, m: Material) -> Result<(), TerrainError> {
        match self.table.get(m) {
            Ok(info) if info.kind != MaterialKind::Air => Ok(()),
            _ => Err(TerrainError::BadMaterial(m.id())),
        }
    }

    /// Writes with `write`, recording the region's previous state and rebuilding the masks.
    fn edit(
        &mut self,
        region: Region,
        write: impl FnOnce(&mut VoxelStore) -> Result<Option<Region>, StoreError>,
    ) -> Result<EditReport, TerrainError> {
        let start = Instant::now();
        self.check_region(&region)?;
        let before = Snapshot::capture(&self.store, &region, Compression::None)?;
        let dirty = write(&mut self.store)?;
        let mut report = EditReport { dirty, ..Default::default() };
        if let Some(d) = dirty {
            self.history.record(before);
            report.masks_rebuilt = self.masks.rebuild_region(&self.store, &d);
            report.cache_dropped = self.cache.invalidate(&d);
            self.mark_changed(&d);
            self.log_edit(&d)?;
        }
        report.elapsed = start.elapsed();
        Ok(report)
    }

    /// Applies `brush` (shape in world units).
    pub fn apply_brush(&mut self, brush: &Brush) -> Result<EditReport, TerrainError> {
        let invalid = || TerrainError::InvalidBrush(Box::new(*brush));
        let shape = brush.shape.in_voxels(self.voxel_size).ok_or_else(invalid)?;
        let region = shape.region().ok_or_else(invalid)?;
        match brush.op {
            BrushOp::Add(m) | BrushOp::Paint(m) => self.check_material(m)?,
            BrushOp::Subtract | BrushOp::Smooth => {}
        }
        if let BrushOp::Smooth = brush.op {
            // Smoothing reads the neighborhood as it was, then writes the region at once.
            self.check_region(&region.expanded(1))?;
            let around = region.expanded(1);
            let mut src = vec![Voxel::AIR; around.len()?];
            self.store.read_box(&around, &mut src)?;
            let at = |p: VoxelPos| src[around.index_of(p)];
            let mut out = Vec::with_capacity(region.len()?);
            for p in region.iter() {
                let mut n = [Voxel::AIR; 27];
                let mut k = 0;
                for dy in -1..=1 {
                    for dz in -1..=1 {
                        for dx in -1..=1 {
                            n[k] = at(VoxelPos::new(p.x + dx, p.y + dy, p.z + dz));
                            k += 1;
                        }
                    }
                }
                out.push(brush::smooth(at(p), &n, shape.coverage(p)));
            }
            return self.edit(region, |store| store.write_box(&region, &out));
        }
        let op = brush.op;
        self.edit(region, |store| store.brush(&region, |p, v| brush::apply(op, v, shape.coverage(p))))
    }

    /// Fills a voxel region with one voxel.
    pub fn fill(&mut self, region: &Region, voxel: Voxel) -> Result<EditReport, TerrainError> {
        self.check_matter(voxel)?;
        let r = *region;
        self.edit(r, |store| store.fill(&r, voxel))
    }

    /// Sets one voxel.
    pub fn set_voxel(&mut self, p: VoxelPos, voxel: Voxel) -> Result<EditReport, TerrainError> {
        self.fill(&Region::voxel(p)?, voxel)
    }

    /// Undoes the latest edit still in the history, bit for bit, through the same dirty path.
    pub fn undo(&mut self) -> Result<EditReport, TerrainError> {
        let s = self.history.pop_undo().ok_or(TerrainError::NoHistory("undo"))?;
        let now = Snapshot::capture(&self.store, s.region(), Compression::None)?;
        let report = self.restore(&s)?;
        self.history.push_redo(now);
        Ok(report)
    }

    /// Redoes the latest undone edit.
    pub fn redo(&mut self) -> Result<EditReport, TerrainError> {
        let s = self.history.pop_redo().ok_or(TerrainError::NoHistory("redo"))?;
        let now = Snapshot::capture(&self.store, s.region(), Compression::None)?;
        let report = self.restore(&s)?;
        self.history.push_undo(now);
        Ok(report)
    }

    fn restore(&mut self, s: &Snapshot) -> Result<EditReport, TerrainError> {
        let start = Instant::now();
        let voxels = s.decode(self.max_edit_voxels)?;
        let dirty = self.store.write_box(s.region(), &voxels)?;
        let masks_rebuilt = dirty.map_or(0, |d| self.masks.rebuild_region(&self.store, &d));
        let cache_dropped = dirty.map_or(0, |d| self.cache.invalidate(&d));
        if let Some(d) = dirty {
            self.mark_changed(&d);
            self.log_edit(&d)?;
        }
        Ok(EditReport { dirty, masks_rebuilt, cache_dropped, elapsed: start.elapsed() })
    }

    /// A region holding every stored voxel (`None` for an empty terrain); it may be larger than
    /// the store's bounds after carving.
    pub fn extent(&self) -> Option<Region> {
        self.extent
    }

    /// The voxel at `p`.
    pub fn voxel(&self, p: VoxelPos) -> Voxel {
        self.store.voxel(p)
    }

    /// One chunk's collision data, built outside the cache.
    pub(crate) fn build_uncached(&self, key: PhysicsChunkKey) -> Option<crate::ChunkCollision> {
        crate::collision_cache::build(&self.mesher, &self.store, key, &mut MeshWorkspace::new())
    }

    /// Calls `f` with `key`'s collision data: the cache's, or built for this call when the cache
    /// does not hold it (the `&self` queries). `None` for a chunk without a surface.
    pub(crate) fn with_chunk<R>(
        &self,
        key: PhysicsChunkKey,
        ws: &mut MeshWorkspace,
        f: impl FnOnce(&crate::ChunkCollision) -> R,
    ) -> Option<R> {
        match self.cache.peek(key) {
            Some(held) => held.map(f),
            None => crate::collision_cache::build(&self.mesher, &self.store, key, ws).as_ref().map(f),
        }
    }

    /// Builds the missing cache entries of `keys`, in parallel (the serial result).
    pub(crate) fn build_chunks(&mut self, keys: &[PhysicsChunkKey]) {
        self.cache.prepare(&self.mesher, &self.store, keys);
    }

    /// The collision cache's statistics.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// Sets the collision cache's byte budget; least recently used chunks go first.
    pub fn set_cache_budget(&mut self, bytes: usize) {
        self.cache.set_budget(bytes);
    }

    /// The collision data the cache holds for `key`, without building it: `None` when not held,
    /// `Some(None)` for a chunk with no surface (for debug drawing and tests).
    pub fn cached_chunk(&self, key: PhysicsChunkKey) -> Option<Option<&crate::ChunkCollision>> {
        self.cache.peek(key)
    }

    /// The chunks the collision cache holds, in key order.
    pub fn cached_chunks(&self) -> Vec<PhysicsChunkKey> {
        self.cache.keys()
    }

    /// The physics chunks a query inside `aabb` (world units) needs: those whose masks show
    /// solid within reach of the box, in key order (y, z, x). A chunk's triangles reach up to one
    /// voxel past its box, so the box is grown by one voxel first: a body resting just above a
    /// chunk's floor touches triangles of the chunk below.
    pub fn solid_chunks(&self, aabb: &Aabb) -> Vec<PhysicsChunkKey> {
        let mut keys = Vec::new();
        self.masks.query(&aabb.loosened(self.voxel_size), |k, t| {
            if t.solid {
                keys.push(k);
            }
        });
        keys.sort_by_key(|k| (k.y, k.z, k.x));
        keys
    }

    /// Collision readiness: builds, in parallel, every cache entry a query inside `aabb` (world
    /// units) will need, so queries there build nothing (until an edit or the budget drops
    /// them). Returns how many were built.
    pub fn prepare(&mut self, aabb: &Aabb) -> usize {
        let keys = self.solid_chunks(aabb);
        self.cache.prepare(&self.mesher, &self.store, &keys)
    }

    /// [`Terrain::prepare`] for many boxes at once (a frame's bodies): the chunks they need,
    /// each once, built in one parallel batch. Returns how many were built.
    pub fn prepare_boxes(&mut self, boxes: &[Aabb]) -> usize {
        let mut keys: Vec<PhysicsChunkKey> = boxes.iter().flat_map(|b| self.solid_chunks(b)).collect();
        keys.sort_by_key(|k| (k.y, k.z, k.x));
        keys.dedup();
        self.cache.prepare(&self.mesher, &self.store, &keys)
    }

    /// Collision readiness within a budget, for a game's frame loop: builds the missing cache
    /// entries around `boxes` (world units), nearest first (by distance from the chunk's center to
    /// the nearest box), at most `max_chunks` of them and stopping once `max_time` has passed
    /// (checked between parallel batches). Returns how many chunks were built and whether every
    /// box is ready.
    pub fn prepare_around(
        &mut self,
        boxes: &[Aabb],
        max_chunks: usize,
        max_time: std::time::Duration,
    ) -> (usize, bool) {
        let start = Instant::now();
        let mut missing: Vec<(f32, PhysicsChunkKey)> = Vec::new();
        let mut seen = BTreeSet::new();
        for b in boxes {
            for k in self.solid_chunks(b) {
                if !self.cache.contains(k) && seen.insert((k.y, k.z, k.x)) {
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
        missing.sort_by(|a, b| a.0.total_cmp(&b.0).then((a.1.y, a.1.z, a.1.x).cmp(&(b.1.y, b.1.z, b.1.x))));
        missing.truncate(max_chunks);
        let keys: Vec<PhysicsChunkKey> = missing.into_iter().map(|(_, k)| k).collect();
        let mut built = 0;
        let batch = (rayon::current_num_threads() * 8).max(8);
        for part in keys.chunks(batch) {
            if start.elapsed() >= max_time {
                break;
            }
            built += self.cache.prepare(&self.mesher, &self.store, part);
        }
        (built, boxes.iter().all(|b| self.is_ready(b)))
    }

    /// True when every chunk a query inside `aabb` needs is built.
    pub fn is_ready(&self, aabb: &Aabb) -> bool {
        self.solid_chunks(aabb).iter().all(|&k| self.cache.contains(k))
    }

    /// The contacts of `shape` at `pose` (world units) with the terrain within `prediction`:
    /// the masks pick the physics chunks (only those showing solid near the shape's box), the
    /// cache gives each chunk's mesh, edge flags and kD tree (built now if missing), and the
    /// narrowphase makes manifolds of at most four points per chunk and normal, ghost-free
    /// across chunk seams. Appended to `out` in chunk order; returns how many were appended.
    pub fn contacts(
        &mut self,
        shape: &dyn Shape,
        pose: &Pose,
        prediction: f32,
        out: &mut Vec<TerrainManifold>,
    ) -> Result<usize, TerrainError> {
        check_pose(pose)?;
        check_prediction(prediction)?;
        let b = Aabb::from_parry(&shape.compute_aabb(pose));
        let keys = self.solid_chunks(&b.loosened(prediction));
        for &key in &keys {
            self.cache.get(&self.mesher, &self.store, key, &mut self.mesh_ws);
        }
        let mut ws = std::mem::take(&mut self.query_ws);
        let r = self.contacts_in(shape, pose, prediction, &keys, &mut ws, out);
        self.query_ws = ws;
        r
    }

    /// [`Terrain::contacts`] through a shared reference, for parallel callers and engines that
    /// query from `&self` (one [`QueryWorkspace`] per thread). The cache is read, never changed: a
    /// chunk it does not hold is built for this call only and dropped, so [`Terrain::prepare`] the
    /// region first. The result equals [`Terrain::contacts`]'s.
    pub fn contacts_shared(
        &self,
        shape: &dyn Shape,
        pose: &Pose,
        prediction: f32,
        ws: &mut QueryWorkspace,
        out: &mut Vec<TerrainManifold>,
    ) -> Result<usize, TerrainError> {
        check_pose(pose)?;
        check_prediction(prediction)?;
        let b = Aabb::from_parry(&shape.compute_aabb(pose));
        let keys = self.solid_chunks(&b.loosened(prediction));
        self.contacts_in(shape, pose, prediction, &keys, ws, out)
    }

    /// The contacts of `shape` with the triangles of `keys` (world units, pose and prediction
    /// already checked), reading the cache and building what it does not hold into `ws`.
    pub(crate) fn contacts_in(
        &self,
        shape: &dyn Shape,
        pose: &Pose,
        prediction: f32,
        keys: &[PhysicsChunkKey],
        ws: &mut QueryWorkspace,
        out: &mut Vec<TerrainManifold>,
    ) -> Result<usize, TerrainError> {
        if keys.is_empty() {
            return Ok(0);
        }
        // The layers below work in voxel units.
        let k = 1.0 / self.voxel_size;
        let scaled = scaled_to_voxels(shape, k)?;
        let local_shape: &dyn Shape = scaled.as_deref().unwrap_or(shape);
        let local_pose = Pose::from_parts(pose.translation * k, pose.rotation);
        let before = out.len();
        let QueryWorkspace { contact, mesh, .. } = &mut *ws;
        contact.begin();
        for (i, &key) in keys.iter().enumerate() {
            self.with_chunk(key, mesh, |c| {
                let view = c.tree.with(&c.mesh);
                let set = TriangleSet::new(&c.mesh, &view).with_edge_flags(c.mesh.edge_flags()).one_sided();
                contact.collect(local_shape, &local_pose, set, prediction * k, i as u32)
            })
            .transpose()?;
        }
        // Internal contacts are dropped across chunks: a seam is a crease like any other.
        contact.finish(|i, m| {
            out.push(TerrainManifold { chunk: keys[i as usize], manifold: m.scaled(self.voxel_size) });
        });
        // A shape in the solid that meets no triangle deep enough (wholly under the surface, or in
        // all-solid chunks) is pushed toward the nearest surface all the same.
        if !out[before..].iter().any(|m| m.manifold.min_dist() < 0.0)
            && let Some(m) = self.interior_contact(shape, pose)?
        {
            out.push(m);
        }
        Ok(out.len() - before)
    }

    /// True when `shape` at `pose` (world units) touches or penetrates the terrain.
    pub fn intersects(&mut self, shape: &dyn Shape, pose: &Pose) -> Result<bool, TerrainError> {
        let mut out = Vec::new();
        self.contacts(shape, pose, 0.0, &mut out)?;
        Ok(out.iter().any(|m| m.manifold.min_dist() <= 0.0))
    }

    /// The first time `shape`, starting at `pose` and moving by `velocity` per unit time (world
    /// units), touches the terrain with time of impact in `[0, max_toi]`; inactive edges report
    /// their face's normal. Returns the hit (world units) and its chunk.
    pub fn cast_shape(
        &mut self,
        shape: &dyn Shape,
        pose: &Pose,
        velocity: Vector,
        max_toi: f32,
    ) -> Result<Option<(PhysicsChunkKey, ShapeCastHit)>, TerrainError> {
        let keys = self.cast_keys(shape, pose, velocity, max_toi, 0.0)?;
        for &key in &keys {
            self.cache.get(&self.mesher, &self.store, key, &mut self.mesh_ws);
        }
        let mut ws = std::mem::take(&mut self.query_ws);
        let r = self.cast_shape_in(shape, pose, velocity, max_toi, CastOptions::default(), &keys, &mut ws);
        self.query_ws = ws;
        r
    }

    /// [`Terrain::cast_shape`] through a shared reference and with [`CastOptions`] (a target
    /// distance in world units, and whether a shape already penetrating stops at once): the cache
    /// is read, never changed, as for [`Terrain::contacts_shared`].
    pub fn cast_shape_shared(
        &self,
        shape: &dyn Shape,
        pose: &Pose,
        velocity: Vector,
        max_toi: f32,
        options: CastOptions,
        ws: &mut QueryWorkspace,
    ) -> Result<Option<(PhysicsChunkKey, ShapeCastHit)>, TerrainError> {
        let keys = self.cast_keys(shape, pose, velocity, max_toi, options.target_distance)?;
        self.cast_shape_in(shape, pose, velocity, max_toi, options, &keys, ws)
    }

    /// Continuous collision over a step, rotation included, as rapier sweeps a body against a
    /// triangle mesh ([`voxterra_narrowphase::sweep_shape`]): the earliest fraction in
    /// `(0, max_fraction)` of `sweep` (world units, the shape's frame moving from its start to its
    /// end pose) at which `shape` comes within `linear_slop` of the surface. A shape already
    /// resting on the surface is stopped only where its core would pass through it. Reads the
    /// cache as [`Terrain::contacts_shared`] does. Returns the hit (world units) and its chunk.
    pub fn sweep_shape_shared(
        &self,
        shape: &dyn Shape,
        sweep: &Sweep,
        max_fraction: f32,
        linear_slop: f32,
        ws: &mut QueryWorkspace,
    ) -> Result<Option<(PhysicsChunkKey, SweepHit)>, TerrainError> {
        check_pose(&sweep.transform_at(0.0))?;
        check_pose(&sweep.final_transform())?;
        check_prediction(linear_slop)?;
        let end = sweep.transform_at(max_fraction.clamp(0.0, 1.0));
        let swept = Aabb::from_parry(&shape.compute_aabb(&sweep.transform_at(0.0)))
            .merged(&Aabb::from_parry(&shape.compute_aabb(&end)));
        // The rotation between the ends may carry a point past both ends' boxes, by less than its
        // distance from the center of mass times the quaternions' chord.
        let sphere = shape.compute_local_bounding_sphere();
        let reach = (sphere.center - sweep.local_center).length() + sphere.radius;
        let chord = (2.0 - 2.0 * sweep.q1.dot(sweep.q2).abs()).max(0.0).sqrt();
        let keys = self.solid_chunks(&swept.loosened(linear_slop + reach * chord));
        let k = 1.0 / self.voxel_size;
        let scaled = scaled_to_voxels(shape, k)?;
        let local_shape: &dyn Shape = scaled.as_deref().unwrap_or(shape);
        let local =
            Sweep { local_center: sweep.local_center * k, c1: sweep.c1 * k, c2: sweep.c2 * k, ..*sweep };
        let mut best: Option<(PhysicsChunkKey, SweepHit)> = None;
        for &key in &keys {
            let limit = best.map_or(max_fraction, |b| b.1.fraction);
            let hit = self.with_chunk(key, &mut ws.mesh, |c| {
                let view = c.tree.with(&c.mesh);
                let set = TriangleSet::new(&c.mesh, &view).one_sided();
                voxterra_narrowphase::sweep_shape(local_shape, &local, limit, linear_slop * k, set)
            });
            if let Some(h) = hit.transpose()?.flatten()
                && best.is_none_or(|b| h.fraction < b.1.fraction)
            {
                best = Some((key, h));
            }
        }
        Ok(best
            .map(|(key, h)| (key, SweepHit { point: Point3::from(h.point.coords * self.voxel_size), ..h })))
    }

    /// Checks a cast and returns the chunks its swept box (grown by `margin`) needs.
    fn cast_keys(
        &self,
        shape: &dyn Shape,
        pose: &Pose,
        velocity: Vector,
        max_toi: f32,
        margin: f32,
    ) -> Result<Vec<PhysicsChunkKey>, TerrainError> {
        if !(velocity.is_finite() && max_toi.is_finite() && max_toi >= 0.0) {
            return Err(
                NarrowphaseError::InvalidParameter { what: "velocity or max_toi", value: max_toi }.into()
            );
        }
        check_pose(pose)?;
        check_prediction(margin)?;
        let start = Aabb::from_parry(&shape.compute_aabb(pose));
        let end = Aabb::from_parry(&shape.compute_aabb(&pose.append_translation(velocity * max_toi)));
        let swept = start.merged(&end);
        Ok(self.solid_chunks(&swept.loosened(margin)))
    }

    #[allow(clippy::too_many_arguments)] // the cast's own parameters, plus where to look
    fn cast_shape_in(
        &self,
        shape: &dyn Shape,
        pose: &Pose,
        velocity: Vector,
        max_toi: f32,
        options: CastOptions,
        keys: &[PhysicsChunkKey],
        ws: &mut QueryWorkspace,
    ) -> Result<Option<(PhysicsChunkKey, ShapeCastHit)>, TerrainError> {
        let k = 1.0 / self.voxel_size;
        let scaled = scaled_to_voxels(shape, k)?;
        let local_shape: &dyn Shape = scaled.as_deref().unwrap_or(shape);
        let local_pose = Pose::from_parts(pose.translation * k, pose.rotation);
        let local_vel = velocity * k;
        let local_options = CastOptions { target_distance: options.target_distance * k, ..options };
        let mut best: Option<(PhysicsChunkKey, ShapeCastHit)> = None;
        for &key in keys {
            let limit = best.map_or(max_toi, |b| b.1.toi);
            let hit = self.with_chunk(key, &mut ws.mesh, |c| {
                let view = c.tree.with(&c.mesh);
                let set = TriangleSet::new(&c.mesh, &view).with_edge_flags(c.mesh.edge_flags());
                voxterra_narrowphase::cast_shape(
                    local_shape,
                    &local_pose,
                    local_vel,
                    limit,
                    set,
                    local_options,
                )
            });
            if let Some(h) = hit.transpose()?.flatten()
                && best.is_none_or(|b| h.toi < b.1.toi)
            {
                best = Some((key, h));
            }
        }
        let vs = self.voxel_size;
        Ok(best.map(|(key, h)| {
            let w = ShapeCastHit {
                on_shape: Point3::from(h.on_shape.coords * vs),
                on_triangle: Point3::from(h.on_triangle.coords * vs),
                ..h
            };
            (key, w)
        }))
    }

    /// Whether the box (world units) may touch solid and water, from the masks alone (no
    /// meshes): for buoyancy and triggers. Conservative by the masks' one-voxel dilation.
    pub fn overlap(&self, aabb: &Aabb) -> (bool, bool) {
        let (mut solid, mut water) = (false, false);
        self.masks.query(aabb, |_, t| {
            solid |= t.solid;
            water |= t.water;
        });
        (solid, water)
    }

    /// Records a write to `dirty`: grows the extent and marks the storage chunks whose render
    /// mesh reads its voxels (their padded read reaches it).
    fn mark_changed(&mut self, dirty: &Region) {
        self.extent = Some(self.extent.map_or(*dirty, |e| e.union(dirty)));
        if let Some(range) = StoreChunkKey::range(&dirty.expanded(1)) {
            self.render_dirty.extend(range.iter().map(|k| (k.y, k.z, k.x)));
        }
    }

    /// The render meshes of every storage chunk edits have changed since the last call, meshed in
    /// parallel by `mesher` (its surface and shape mode), in key order (y, z, x), for upload. An
    /// empty mesh means the chunk's surface is gone.
    pub fn take_render_updates(
        &mut self,
        mesher: &Mesher,
    ) -> Result<Vec<(StoreChunkKey, RenderMesh)>, MeshError> {
        let keys: Vec<StoreChunkKey> = std::mem::take(&mut self.render_dirty)
            .into_iter()
            .map(|(y, z, x)| StoreChunkKey::new(x, y, z))
            .collect();
        self.render_meshes_of(mesher, &keys)
    }

    /// The render meshes of the storage chunks `keys`, meshed in parallel, in the order given.
    pub fn render_meshes_of(
        &self,
        mesher: &Mesher,
        keys: &[StoreChunkKey],
    ) -> Result<Vec<(StoreChunkKey, RenderMesh)>, MeshError> {
        keys.par_iter()
            .map_init(MeshWorkspace::new, |ws, &k| {
                let region = k.region().map_err(MeshError::Read)?;
                let mut mesh = RenderMesh::default();
                mesher.mesh(&self.store, &region, ws, &mut mesh)?;
                Ok((k, mesh))
            })
            .collect()
    }

    /// The storage chunks a whole-world render needs: every stored chunk and the chunks one step
    /// below each on every axis (a surface facing down out of a stored chunk belongs to the
    /// chunk under it), in key order.
    pub fn render_chunks(&self) -> Vec<StoreChunkKey> {
        let mut keys = BTreeSet::new();
        for k in self.store.chunk_keys() {
            for (dx, dy, dz) in [
                (0, 0, 0),
                (-1, 0, 0),
                (0, -1, 0),
                (0, 0, -1),
                (-1, -1, 0),
                (-1, 0, -1),
                (0, -1, -1),
                (-1, -1, -1),
            ] {
                keys.insert((k.y.saturating_add(dy), k.z.saturating_add(dz), k.x.saturating_add(dx)));
            }
        }
        keys.into_iter().map(|(y, z, x)| StoreChunkKey::new(x, y, z)).collect()
    }

    /// Logs edit number `seq`'s dirty region as it now is, for [`Terrain::edits_since`].
    fn log_edit(&mut self, dirty: &Region) -> Result<(), TerrainError> {
        let e = LoggedEdit::capture(self.seq, &self.store, dirty)?;
        self.seq += 1;
        self.log_bytes += e.bytes();
        self.log.push_back(e);
        while self.log_bytes > self.log_budget {
            let Some(old) = self.log.pop_front() else { break };
            self.log_bytes -= old.bytes();
        }
        Ok(())
    }

    pub(crate) fn delta_log(&self) -> impl Iterator<Item = &LoggedEdit> {
        self.log.iter()
    }

    /// The sequence number the next edit that changes voxels will get (edits, undo and redo
    /// alike); a client that applied every delta up to here is in step.
    pub fn sequence(&self) -> u64 {
        self.seq
    }

    /// Makes this terrain a replica of a source after `seq` edits — loaded from the source's world
    /// file saved at [`Terrain::sequence`] `seq`, say — so the source's deltas from `seq` on apply.
    /// Empties the delta log (its numbers belonged to the old sequence).
    pub fn set_sequence(&mut self, seq: u64) {
        self.seq = seq;
        self.log.clear();
        self.log_bytes = 0;
    }

    /// Logs `region` under the next sequence number though no voxel changed: a replica's copy of a
    /// source edit that found the voxels already in place.
    pub(crate) fn log_unchanged(&mut self, region: &Region) -> Result<(), TerrainError> {
        self.log_edit(region)
    }

    /// Sets the delta log's byte budget; the oldest deltas go first.
    pub fn set_delta_log_budget(&mut self, bytes: usize) {
        self.log_budget = bytes;
        while self.log_bytes > self.log_budget {
            let Some(old) = self.log.pop_front() else { break };
            self.log_bytes -= old.bytes();
        }
    }

    /// Writes `voxels` into `region` through the edit path (history, masks, cache, render
    /// updates, log).
    pub(crate) fn write_logged(
        &mut self,
        region: Region,
        voxels: &[Voxel],
    ) -> Result<EditReport, TerrainError> {
        for v in voxels {
            self.check_matter(*v)?;
        }
        self.edit(region, |store| store.write_box(&region, voxels))
    }
}

/// A NaN or infinite pose is an error.
fn check_pose(pose: &Pose) -> Result<(), TerrainError> {
    if pose.is_finite() { Ok(()) } else { Err(NarrowphaseError::NonFinitePose.into()) }
}

/// A prediction distance must be finite and non-negative.
fn check_prediction(prediction: f32) -> Result<(), TerrainError> {
    if prediction.is_finite() && prediction >= 0.0 {
        Ok(())
    } else {
        Err(NarrowphaseError::InvalidParameter { what: "prediction distance", value: prediction }.into())
    }
}

/// `shape` scaled by `k` (world to voxel units), or `None` when `k` is 1 and it is used as is.
fn scaled_to_voxels(shape: &dyn Shape, k: f32) -> Result<Option<Box<dyn Shape>>, TerrainError> {
    if k == 1.0 {
        return Ok(None);
    }
    let s = shape
        .scale_dyn(Vector::splat(k), 16)
        .ok_or(NarrowphaseError::UnsupportedShape("a shape parry cannot scale"))?;
    Ok(Some(s))
}
