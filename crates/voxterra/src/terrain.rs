//! [`Terrain`]: the value a game holds — voxels, materials, the voxel size, the terrain
//! broadphase's masks kept current on every edit, and the edit history.

use crate::anchor::LowestSolid;
use crate::brush::{self, Brush, BrushOp};
use crate::chunk_tree::may_hold_surface;
use crate::collision_cache::CollisionCache;
use crate::config::TerrainConfig;
use crate::delta_log::DeltaLog;
use crate::error::{ConfigError, EditError, HistoryStep, LoadError};
use crate::history::History;
use crate::piece::DetachedPiece;
use crate::reach::chunks_reaching;
use crate::render_updates::RenderUpdates;
use crate::units::VoxelScale;
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};
use voxterra_bit_broadphase::BitBroadphase;
use voxterra_codec::{Compression, Snapshot, TerrainFileError};
use voxterra_core::{Aabb, DenseVoxels, PhysicsChunkKey, StoreChunkKey};
use voxterra_core::{Material, MaterialKind, MaterialTable, Region, Voxel, VoxelPos, VoxelRead};
use voxterra_mesher::{MeshError, RenderMesh};
use voxterra_mesher::{MeshWorkspace, Mesher};
use voxterra_voxel_store::{StoreError, VoxelStore};
use voxterra_worldgen::GenParams;

/// What a terrain's undo history holds ([`Terrain::history`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct HistoryStats {
    /// Edits that can be undone.
    pub undo: usize,
    /// Edits that can be redone.
    pub redo: usize,
    /// Bytes the snapshots hold.
    pub bytes: usize,
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
    /// Pieces the edit cut loose and took out of the terrain, waiting in
    /// [`Terrain::take_detached`] (with [`TerrainConfig::detach`](crate::TerrainConfig::detach)).
    pub detached: usize,
    /// Pieces the edit cut loose that were too small to hand out: removed as debris.
    pub debris: usize,
    /// Wall time of the edit, masks included.
    pub elapsed: Duration,
    /// Where contacts may have changed (world units): `dirty` grown by
    /// [`CONTACT_REACH`](crate::reach::CONTACT_REACH) voxels. Wake the bodies in it and have
    /// their contacts recomputed; `None` when nothing changed.
    pub reach: Option<Aabb>,
}

/// The terrain: voxels, materials, the voxel size (the only place world units exist: the layers
/// below work in voxels), the bit broadphase's masks, and the edit history.
///
/// Every edit (brush, fill, set, undo, redo) writes the store, rebuilds the masks of exactly the
/// physics chunks whose neighborhood changed (in parallel, with the serial result), records an RLE
/// snapshot of what it replaced, and reports what it did.
#[derive(Debug)]
pub struct Terrain {
    pub(crate) store: VoxelStore,
    table: MaterialTable,
    config: TerrainConfig,
    pub(crate) masks: BitBroadphase,
    history: History,
    pub(crate) mesher: Mesher,
    pub(crate) cache: CollisionCache,
    /// A region holding every stored voxel: the store's bounds, grown by each edit's dirty
    /// region (never shrunk; rays clip to it, and recomputing it walks every chunk).
    extent: Option<Region>,
    render: RenderUpdates,
    pub(crate) log: DeltaLog,
    /// See [`Terrain::revision`].
    revision: u64,
    /// Pieces edits cut loose, until [`Terrain::take_detached`].
    detached: Vec<DetachedPiece>,
    /// The anchor layer of [`crate::detach::Anchor::LowestSolid`].
    pub(crate) lowest_solid: LowestSolid,
    /// The residency of a paged terrain ([`Terrain::paged`]); `None` when held whole.
    pub(crate) pager: Option<crate::pager::Pager>,
}

/// Edits of boxes up to this many voxels read the box densely before writing (a brush of radius
/// 40 or so): 2 MiB at most.
const DENSE_EDIT_VOXELS: usize = 1 << 20;

/// Revisions are unique across every terrain of the process: a terrain swapped for another behind
/// a shared handle never shows a revision the first one had.
fn next_revision() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Terrain {
    /// An empty terrain.
    pub fn new(table: MaterialTable, config: TerrainConfig) -> Result<Self, ConfigError> {
        Self::from_store(VoxelStore::new(), table, config)
    }

    /// A terrain over an existing store; its masks are built here.
    pub fn from_store(
        store: VoxelStore,
        table: MaterialTable,
        config: TerrainConfig,
    ) -> Result<Self, ConfigError> {
        let voxel_size = config.voxel_size;
        if !(voxel_size.is_finite() && voxel_size > 0.0) {
            return Err(ConfigError::InvalidVoxelSize(voxel_size));
        }
        let mut masks = BitBroadphase::new(&table, voxel_size)?;
        let mesher = Mesher::new(&table);
        let extent = store.bounds();
        if let Some(bounds) = extent {
            masks.rebuild_region(&store, &bounds);
        }
        let mut cache = CollisionCache::new(config.cache_bytes);
        cache.refresh_tree(masks.chunks().into_iter().map(|(k, _)| k), |k| {
            may_hold_surface(&masks, &store, k)
        });
        Ok(Terrain {
            store,
            table,
            config,
            masks,
            history: History::new(config.history_bytes),
            mesher,
            cache,
            extent,
            render: RenderUpdates::default(),
            log: DeltaLog::new(config.delta_log_bytes),
            revision: next_revision(),
            detached: Vec::new(),
            lowest_solid: LowestSolid::unknown(),
            pager: None,
        })
    }

    /// Generates the world of `params` (default materials).
    pub fn generate(params: &GenParams, config: TerrainConfig) -> Result<Self, LoadError> {
        Self::generate_with_progress(params, config, |_, _| {})
    }

    /// [`Terrain::generate`], calling `progress(done, total)` as tiles finish.
    pub fn generate_with_progress(
        params: &GenParams,
        config: TerrainConfig,
        progress: impl FnMut(u64, u64),
    ) -> Result<Self, LoadError> {
        let mut store = VoxelStore::new();
        voxterra_worldgen::generate(params, &mut store, progress)?;
        Ok(Self::from_store(store, MaterialTable::default(), config)?)
    }

    /// Loads a terrain file (see [`crate::load`]).
    pub fn load(path: impl AsRef<Path>, config: TerrainConfig) -> Result<Self, LoadError> {
        Self::load_with_progress(path, config, |_, _| {})
    }

    /// [`Terrain::load`], calling `progress(done, total)` as chunks are read.
    pub fn load_with_progress(
        path: impl AsRef<Path>,
        config: TerrainConfig,
        progress: impl FnMut(u64, u64),
    ) -> Result<Self, LoadError> {
        let (store, table) = crate::load(path, progress)?;
        Ok(Self::from_store(store, table, config)?)
    }

    /// Saves the voxels atomically (see [`crate::save`]); the history is not saved.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), TerrainFileError> {
        self.save_with_progress(path, |_, _| {})
    }

    /// [`Terrain::save`], calling `progress(done, total)` as chunks are written.
    pub fn save_with_progress(
        &self,
        path: impl AsRef<Path>,
        progress: impl FnMut(u64, u64),
    ) -> Result<(), TerrainFileError> {
        crate::save(path, &self.store, &self.table, progress)?;
        Ok(())
    }

    /// The voxel size and budgets in force.
    pub fn config(&self) -> TerrainConfig {
        self.config
    }

    /// Changes the budgets (the voxel size is the terrain's for good: a different one is
    /// [`ConfigError::VoxelSizeFixed`]). Shrinking a budget drops the oldest of what it holds:
    /// cache entries least recently used, undo snapshots oldest first (redo snapshots only once
    /// no undo snapshot is left), deltas oldest first.
    pub fn reconfigure(&mut self, config: TerrainConfig) -> Result<(), ConfigError> {
        if config.voxel_size != self.config.voxel_size {
            return Err(ConfigError::VoxelSizeFixed {
                current: self.config.voxel_size,
                asked: config.voxel_size,
            });
        }
        self.cache.set_budget(config.cache_bytes);
        self.history.set_budget(config.history_bytes);
        self.log.set_budget(config.delta_log_bytes);
        self.config = config;
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
        self.config.voxel_size
    }

    /// The conversions between world units and voxels.
    pub fn scale(&self) -> VoxelScale {
        VoxelScale::new(self.config.voxel_size)
    }

    /// The terrain broadphase: solid and water masks per physics chunk, always current.
    pub fn masks(&self) -> &BitBroadphase {
        &self.masks
    }

    /// What the undo history holds.
    pub fn history(&self) -> HistoryStats {
        HistoryStats {
            undo: self.history.undo_len(),
            redo: self.history.redo_len(),
            bytes: self.history.bytes(),
        }
    }

    fn check_region(&self, region: &Region) -> Result<(), EditError> {
        let limit = self.config.max_edit_voxels;
        if region.volume() > limit as u128 {
            return Err(EditError::EditTooLarge { voxels: region.volume(), limit });
        }
        Ok(())
    }

    /// Air is allowed (clearing); matter must be a solid or liquid of the table.
    fn check_matter(&self, voxel: Voxel) -> Result<(), EditError> {
        if voxel.is_air() { Ok(()) } else { self.check_material(voxel.material()) }
    }

    /// A solid or liquid of the table (brushes add and paint matter, never Air).
    fn check_material(&self, m: Material) -> Result<(), EditError> {
        match self.table.get(m) {
            Ok(info) if info.kind != MaterialKind::Air => Ok(()),
            _ => Err(EditError::BadMaterial(m.id())),
        }
    }

    /// Writes with `write`, recording the region's previous state and rebuilding the masks; with
    /// `detect` (and [`TerrainConfig::detach`]), takes out what the write cut loose in the same
    /// step.
    fn edit(
        &mut self,
        region: Region,
        detect: bool,
        write: impl FnOnce(&mut VoxelStore) -> Result<Option<Region>, StoreError>,
    ) -> Result<EditReport, EditError> {
        let start = Instant::now();
        self.check_region(&region)?;
        self.ensure_resident(&region)?;
        // With detection on, the box is read once, densely: the undo snapshot is made from it and
        // detection finds the voxels the write emptied in it (PERF: decoding the snapshot again
        // was a fifth of detection). Without detection, a brush-sized box is read so too: the
        // chunks within reach of a voxel that changed are told from those only near the box.
        let detach = self.config.detach.filter(|_| detect);
        let small = region.len().is_ok_and(|n| n <= DENSE_EDIT_VOXELS);
        let old = if detach.is_some() || small {
            let mut voxels = vec![Voxel::AIR; region.len()?];
            self.store.read_box(&region, &mut voxels)?;
            Some(DenseVoxels::from_vec(region, voxels)?)
        } else {
            None
        };
        let mut before = match &old {
            Some(old) => Snapshot::capture(old, &region, Compression::None)?,
            None => Snapshot::capture(&self.store, &region, Compression::None)?,
        };
        let dirty = write(&mut self.store)?;
        let mut report = EditReport { dirty, ..Default::default() };
        if let Some(mut d) = dirty {
            self.lowest_solid.written(&d);
            let mut cut_any = false;
            if let (Some(cfg), Some(old)) = (detach, &old)
                && let Some(cut) = self.cut_loose(old, d, cfg)?
            {
                (before, d) = (cut.undo, cut.dirty);
                report.dirty = Some(d);
                report.detached = cut.pieces.len();
                report.debris = cut.debris;
                self.detached.extend(cut.pieces);
                cut_any = true;
            }
            self.history.record(before);
            let reached = old
                .as_ref()
                .filter(|_| !cut_any)
                .and_then(|o| chunks_reaching(o, &self.store, &d, &self.mesher));
            (report.masks_rebuilt, report.cache_dropped) = self.refresh_chunks(&d, reached.as_deref());
            self.mark_changed(&d);
            self.paged_written(&d);
            self.log.record(&self.store, &d)?;
        }
        report.elapsed = start.elapsed();
        report.reach = self.reach_of(report.dirty);
        Ok(report)
    }

    /// Applies `brush` (shape in world units).
    pub fn apply_brush(&mut self, brush: &Brush) -> Result<EditReport, EditError> {
        let invalid = || EditError::InvalidBrush(Box::new(*brush));
        let shape = brush.shape.in_voxels(self.config.voxel_size).ok_or_else(invalid)?;
        let region = shape.region().ok_or_else(invalid)?;
        match brush.op {
            BrushOp::Add(m) | BrushOp::Paint(m) => self.check_material(m)?,
            BrushOp::Subtract | BrushOp::Smooth => {}
        }
        if let BrushOp::Smooth = brush.op {
            // Smoothing reads the neighborhood as it was, then writes the region at once.
            self.check_region(&region.expanded(1))?;
            let around = region.expanded(1);
            self.ensure_resident(&around)?;
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
            return self.edit(region, true, |store| store.write_box(&region, &out));
        }
        let op = brush.op;
        self.edit(region, true, |store| store.brush(&region, |p, v| brush::apply(op, v, shape.coverage(p))))
    }

    /// Fills a voxel region with one voxel.
    pub fn fill(&mut self, region: &Region, voxel: Voxel) -> Result<EditReport, EditError> {
        self.check_matter(voxel)?;
        let r = *region;
        self.edit(r, true, |store| store.fill(&r, voxel))
    }

    /// Sets one voxel.
    pub fn set_voxel(&mut self, p: VoxelPos, voxel: Voxel) -> Result<EditReport, EditError> {
        self.fill(&Region::voxel(p)?, voxel)
    }

    /// Undoes the latest edit still in the history, bit for bit, through the same dirty path.
    pub fn undo(&mut self) -> Result<EditReport, EditError> {
        let region =
            self.history.next_region(HistoryStep::Undo).ok_or(EditError::NoHistory(HistoryStep::Undo))?;
        // In memory before the state it replaces is captured.
        self.ensure_resident(&region)?;
        let s = self.history.pop_undo().ok_or(EditError::NoHistory(HistoryStep::Undo))?;
        let now = Snapshot::capture(&self.store, s.region(), Compression::None)?;
        let report = self.restore(&s)?;
        self.history.push_redo(now);
        Ok(report)
    }

    /// Redoes the latest undone edit.
    pub fn redo(&mut self) -> Result<EditReport, EditError> {
        let region =
            self.history.next_region(HistoryStep::Redo).ok_or(EditError::NoHistory(HistoryStep::Redo))?;
        self.ensure_resident(&region)?;
        let s = self.history.pop_redo().ok_or(EditError::NoHistory(HistoryStep::Redo))?;
        let now = Snapshot::capture(&self.store, s.region(), Compression::None)?;
        let report = self.restore(&s)?;
        self.history.push_undo(now);
        Ok(report)
    }

    /// After `dirty` was written: rebuilds the masks beside it, drops the cache entries reading it
    /// (with `reached`, the chunks within reach of a voxel that changed, only those) and brings
    /// their ray-tree boxes up to date; returns how many masks were rebuilt and entries dropped.
    fn refresh_chunks(&mut self, dirty: &Region, reached: Option<&[PhysicsChunkKey]>) -> (usize, usize) {
        let masks_rebuilt = self.masks.rebuild_region(&self.store, dirty);
        let (masks, store) = (&self.masks, &self.store);
        let may_hold = |k| may_hold_surface(masks, store, k);
        let dropped = match reached {
            Some(keys) => self.cache.invalidate_keys(keys, may_hold),
            None => self.cache.invalidate(dirty, may_hold),
        };
        (masks_rebuilt, dropped)
    }

    /// [`EditReport::reach`] of an edit that changed `dirty`.
    fn reach_of(&self, dirty: Option<Region>) -> Option<Aabb> {
        dirty.map(|d| self.scale().region_to_world(&d, crate::reach::CONTACT_REACH as f32))
    }

    fn restore(&mut self, s: &Snapshot) -> Result<EditReport, EditError> {
        let start = Instant::now();
        self.ensure_resident(s.region())?;
        let voxels = s.decode(self.config.max_edit_voxels)?;
        let dirty = self.store.write_box(s.region(), &voxels)?;
        let (masks_rebuilt, cache_dropped) = dirty.map_or((0, 0), |d| self.refresh_chunks(&d, None));
        if let Some(d) = dirty {
            self.mark_changed(&d);
            self.paged_written(&d);
            self.log.record(&self.store, &d)?;
        }
        let reach = self.reach_of(dirty);
        Ok(EditReport {
            dirty,
            masks_rebuilt,
            cache_dropped,
            elapsed: start.elapsed(),
            reach,
            ..Default::default()
        })
    }

    /// A region holding every stored voxel (`None` for an empty terrain); it may be larger than
    /// the store's bounds after carving.
    pub fn extent(&self) -> Option<Region> {
        self.extent
    }

    /// The pieces edits have cut loose since the last call, oldest edit first, each edit's in the
    /// order of their lowest voxel: already out of the terrain (undo puts them back), for the game
    /// to turn into falling bodies. Empty unless [`TerrainConfig::detach`] is set.
    pub fn take_detached(&mut self) -> Vec<DetachedPiece> {
        std::mem::take(&mut self.detached)
    }

    /// The voxel at `p`.
    pub fn voxel(&self, p: VoxelPos) -> Voxel {
        self.store.voxel(p)
    }

    /// Records a write to `dirty`: grows the extent, moves the revision on and marks the storage chunks whose render
    /// mesh reads its voxels (their padded read reaches it).
    pub(crate) fn mark_changed(&mut self, dirty: &Region) {
        self.lowest_solid.written(dirty);
        self.extent = Some(self.extent.map_or(*dirty, |e| e.union(dirty)));
        self.render.mark(dirty);
        self.revision = next_revision();
    }

    /// The render meshes of every storage chunk edits have changed since the last call, meshed in
    /// parallel by `mesher` (its surface and shape mode), in key order (y, z, x), for upload. An
    /// empty mesh means the chunk's surface is gone.
    pub fn take_render_updates(
        &mut self,
        mesher: &Mesher,
    ) -> Result<Vec<(StoreChunkKey, RenderMesh)>, MeshError> {
        let keys = self.render.take();
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
                keys.insert(StoreChunkKey::new(
                    k.x.saturating_add(dx),
                    k.y.saturating_add(dy),
                    k.z.saturating_add(dz),
                ));
            }
        }
        keys.into_iter().collect()
    }

    /// A number that changes whenever the terrain's geometry may have changed (an edit, undo or
    /// redo that changed voxels), unique among every terrain of the process: what a query made
    /// earlier on this terrain revision still answers. Physics integrations key contacts they
    /// keep between steps on it.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The sequence number the next edit that changes voxels will get (edits, undo and redo
    /// alike); a client that applied every delta up to here is in step.
    pub fn sequence(&self) -> u64 {
        self.log.sequence()
    }

    /// Makes this terrain a replica of a source after `seq` edits — loaded from the source's world
    /// file saved at [`Terrain::sequence`] `seq`, say — so the source's deltas from `seq` on apply.
    /// Empties the delta log (its numbers belonged to the old sequence).
    pub fn set_sequence(&mut self, seq: u64) {
        self.log.restart(seq);
    }

    /// Logs `region` under the next sequence number though no voxel changed: a replica's copy of a
    /// source edit that found the voxels already in place.
    pub(crate) fn log_unchanged(&mut self, region: &Region) -> Result<(), EditError> {
        self.log.record(&self.store, region)
    }

    /// Writes a replica's voxels (checked against the table by the caller's decoder): the store,
    /// masks, cache and render updates, but no history and no delta log (the replica's edits are
    /// the server's).
    pub(crate) fn write_replicated(
        &mut self,
        region: &Region,
        voxels: &[Voxel],
    ) -> Result<EditReport, EditError> {
        let start = Instant::now();
        let dirty = self.store.write_box(region, voxels)?;
        let mut report = EditReport { dirty, ..Default::default() };
        if let Some(d) = dirty {
            (report.masks_rebuilt, report.cache_dropped) = self.refresh_chunks(&d, None);
            self.mark_changed(&d);
        }
        report.elapsed = start.elapsed();
        report.reach = self.reach_of(report.dirty);
        Ok(report)
    }

    /// Writes `voxels` into `region` through the edit path (history, masks, cache, render
    /// updates, log).
    pub(crate) fn write_logged(&mut self, region: Region, voxels: &[Voxel]) -> Result<EditReport, EditError> {
        for v in voxels {
            self.check_matter(*v)?;
        }
        self.edit(region, false, |store| store.write_box(&region, voxels))
    }
}
