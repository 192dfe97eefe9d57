//! Paging: a terrain that holds part of its world ([`Terrain::paged`]). Storage chunks come in
//! from a [`ChunkSource`] on first use — synchronously for edits, [`Terrain::page_in`] and
//! `World` steps, from a background thread for [`Terrain::page`] (readiness ahead of bodies and
//! viewers) — and the least recently used clean ones leave once the resident voxels pass
//! [`TerrainConfig::resident_bytes`](crate::TerrainConfig::resident_bytes). Masks are built for
//! resident chunks only and the collision cache keeps its own budget, so memory follows what is
//! visited, not the world's size.
//!
//! A chunk an edit wrote stays until it is written back ([`DurableTerrain`](crate::DurableTerrain)
//! commits it), so nothing is lost. Queries answer from resident chunks: a box is ready
//! ([`Terrain::prepare`]) only once its chunks are resident, and the detached-piece search counts
//! a piece reaching a chunk that is not resident as anchored.

pub use crate::chunk_source::{ChunkSource, DbSource, GeneratorSource};
use crate::config::TerrainConfig;
use crate::error::{ConfigError, PageError};
use crate::pager::{Loaded, Loader, MAX_IN_FLIGHT, Pager, Set, chunk_weight, columns_of, ewma, load_columns};
use crate::terrain::Terrain;
use std::sync::Arc;
use std::sync::mpsc::TryRecvError;
use std::time::{Duration, Instant};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Aabb, MaterialTable, PhysicsChunkKey, Region, StoreChunkKey, VoxelPos};
use voxterra_voxel_store::{StoredChunk, VoxelStore};

/// Voxels around a box that are paged in with it: the collision mesh of a chunk reads its
/// neighbours' voxels this far, and an edit's masks and detached-piece seeds reach one further.
pub const PAGE_MARGIN: i32 = 4;
/// The most chunks one call pages in (a box over a whole large world is refused, not loaded).
pub const MAX_PAGE_CHUNKS: usize = 1 << 18;

/// What a paging call did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PageReport {
    /// Chunks that came in.
    pub loaded: usize,
    /// Clean chunks that left (least recently used first).
    pub evicted: usize,
    /// Every chunk the boxes need is resident.
    pub ready: bool,
    /// Regions whose voxels in memory changed (chunks that came in or left, when not all Air):
    /// for [`LodView::mark_edited`](crate::lod::LodView::mark_edited) and render updates.
    pub changed: Vec<Region>,
    /// Wall time of the call.
    pub elapsed: Duration,
}

/// A paged terrain's residency ([`Terrain::page_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageStats {
    /// Storage chunks resident (those all Air included).
    pub resident: usize,
    /// Heap bytes of the resident chunks' voxels.
    pub bytes: usize,
    /// Resident chunks edits wrote that are not written back yet (never evicted).
    pub dirty: usize,
    /// Chunks the background loader is fetching.
    pub in_flight: usize,
    /// Chunks loaded since the terrain was made.
    pub loaded_total: u64,
    /// Chunks evicted since the terrain was made.
    pub evicted_total: u64,
}

impl Terrain {
    /// A terrain over a world that `source` holds, with nothing resident yet: chunks come in on
    /// first use and leave under [`TerrainConfig::resident_bytes`] (see the [module](crate::paging)
    /// docs). A world of any size opens at once and costs what is visited.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use voxterra::prelude::*;
    /// use voxterra::paging::GeneratorSource;
    /// use voxterra::worldgen::GenParams;
    /// use voxterra::{PrepareBudget, TerrainConfig};
    ///
    /// let world = GeneratorSource(GenParams::new(3, [4096, 128, 4096]));
    /// let mut t = Terrain::paged(Arc::new(world), MaterialTable::default(), TerrainConfig::default())?;
    /// let around = Aabb::new(Point3::new(2000.0, 0.0, 2000.0), Point3::new(2040.0, 128.0, 2040.0));
    /// let report = t.page_in(&[around])?;
    /// assert!(report.ready && report.loaded > 0);
    /// assert!(t.prepare(&[around], PrepareBudget::UNLIMITED).ready);
    /// # Ok::<(), voxterra::TerrainError>(())
    /// ```
    pub fn paged(
        source: Arc<dyn ChunkSource>,
        table: MaterialTable,
        config: TerrainConfig,
    ) -> Result<Terrain, ConfigError> {
        let mut t = Terrain::from_store(VoxelStore::new(), table, config)?;
        t.pager = Some(Pager::new(source));
        Ok(t)
    }

    /// Whether the terrain pages its chunks ([`Terrain::paged`]).
    pub fn is_paged(&self) -> bool {
        self.pager.is_some()
    }

    /// The residency of a paged terrain; `None` for one held whole.
    pub fn page_stats(&self) -> Option<PageStats> {
        self.pager.as_ref().map(|p| PageStats {
            resident: p.resident.len(),
            bytes: p.bytes,
            dirty: p.dirty.len(),
            in_flight: p.in_flight.len(),
            loaded_total: p.loaded_total,
            evicted_total: p.evicted_total,
        })
    }

    /// A region holding the world: the [`extent`](Terrain::extent) of a terrain held whole; for a
    /// paged one, also what its source says the world spans ([`ChunkSource::bounds`]), visited or
    /// not. What a collider's box or a camera covers.
    pub fn world_bounds(&self) -> Option<Region> {
        let source = self.pager.as_ref().and_then(|p| p.source.bounds());
        match (source, self.extent()) {
            (Some(a), Some(b)) => Some(a.union(&b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether the voxel at `p` is in memory (always, for a terrain held whole).
    pub fn is_resident(&self, p: VoxelPos) -> bool {
        self.pager.as_ref().is_none_or(|pg| pg.is_resident(StoreChunkKey::containing(p)))
    }

    /// Whether every chunk of `region` (voxels) is in memory (always, for a terrain held whole).
    pub fn is_region_resident(&self, region: &Region) -> bool {
        let Some(pager) = &self.pager else { return true };
        StoreChunkKey::range(region).is_none_or(|r| r.iter().all(|k| pager.is_resident(k)))
    }

    /// Whether every chunk a query inside `aabb` (world units) reads is resident (always, for a
    /// terrain held whole).
    pub fn is_paged_in(&self, aabb: &Aabb) -> bool {
        let Some(pager) = &self.pager else { return true };
        self.keys_for_box(aabb).is_ok_and(|keys| keys.iter().all(|k| pager.is_resident(*k)))
    }

    /// The storage chunks a world box needs resident: its voxels grown by [`PAGE_MARGIN`].
    fn keys_for_box(&self, aabb: &Aabb) -> Result<Vec<StoreChunkKey>, PageError> {
        let scale = self.scale();
        let (lo, hi) = (scale.point_to_voxels(&aabb.mins), scale.point_to_voxels(&aabb.maxs));
        let to_i =
            |v: f32, m: i64| (v.floor() as i64 + m).clamp(i32::MIN as i64 + 1, i32::MAX as i64 - 1) as i32;
        if !(lo.coords.iter().chain(hi.coords.iter()).all(|v| v.is_finite())) {
            return Ok(Vec::new());
        }
        let m = PAGE_MARGIN as i64;
        let region = Region::new(
            Point3::new(to_i(lo.x, -m), to_i(lo.y, -m), to_i(lo.z, -m)),
            Point3::new(to_i(hi.x, m + 1), to_i(hi.y, m + 1), to_i(hi.z, m + 1)),
        );
        let Ok(region) = region else { return Ok(Vec::new()) };
        self.keys_for_region(&region)
    }

    fn keys_for_region(&self, region: &Region) -> Result<Vec<StoreChunkKey>, PageError> {
        let Some(range) = StoreChunkKey::range(region) else { return Ok(Vec::new()) };
        if range.count() > MAX_PAGE_CHUNKS as u128 {
            return Err(PageError::TooMany { chunks: range.count(), limit: MAX_PAGE_CHUNKS });
        }
        Ok(range.iter().collect())
    }

    /// The chunks `boxes` (world units) need, deduplicated, stamped as used now.
    fn needed(&mut self, boxes: &[Aabb]) -> Result<Vec<StoreChunkKey>, PageError> {
        let mut keys = Vec::new();
        for b in boxes {
            keys.extend(self.keys_for_box(b)?);
            if keys.len() > MAX_PAGE_CHUNKS {
                return Err(PageError::TooMany { chunks: keys.len() as u128, limit: MAX_PAGE_CHUNKS });
            }
        }
        keys.sort_unstable();
        keys.dedup();
        let pager = self.pager.as_mut().expect("a paged terrain");
        pager.clock += 1;
        for k in &keys {
            pager.touch(*k, false);
        }
        Ok(keys)
    }

    /// Pages in every chunk `boxes` (world units) need, now (in parallel), then evicts the least
    /// recently used clean chunks outside them while the resident voxels pass the budget. What a
    /// `World` step does around its bodies, and what a game calls before querying somewhere new;
    /// [`Terrain::page`] does it ahead, off the frame thread. A terrain held whole has nothing to
    /// page: `ready` at once.
    pub fn page_in(&mut self, boxes: &[Aabb]) -> Result<PageReport, PageError> {
        let start = Instant::now();
        if self.pager.is_none() {
            return Ok(PageReport { ready: true, elapsed: start.elapsed(), ..PageReport::default() });
        }
        let keys = self.needed(boxes)?;
        let mut report = PageReport { ready: true, ..PageReport::default() };
        self.load_now(&keys, &mut report)?;
        self.evict(&keys, Duration::MAX, &mut report);
        if report.loaded + report.evicted > 0 {
            // A loading call: the masks' dense window made current for the queries that follow.
            self.masks.optimize();
        }
        report.elapsed = start.elapsed();
        Ok(report)
    }

    /// Pages in the chunks of `region` (voxels) grown by [`PAGE_MARGIN`], now: what an edit
    /// reaches. Evicts nothing (the edit may read any of them).
    pub(crate) fn ensure_resident(&mut self, region: &Region) -> Result<(), PageError> {
        if self.pager.is_none() {
            return Ok(());
        }
        let keys = self.keys_for_region(&region.expanded(PAGE_MARGIN as u32))?;
        let mut report = PageReport::default();
        self.load_now(&keys, &mut report)
    }

    fn load_now(&mut self, keys: &[StoreChunkKey], report: &mut PageReport) -> Result<(), PageError> {
        let pager = self.pager.as_mut().expect("a paged terrain");
        let missing: Vec<StoreChunkKey> = keys.iter().copied().filter(|k| !pager.is_resident(*k)).collect();
        if missing.is_empty() {
            return Ok(());
        }
        for k in &missing {
            // Whatever the loader brings for these later is stale.
            pager.in_flight.remove(k);
        }
        let source = Arc::clone(&pager.source);
        let loaded = load_columns(source.as_ref(), &missing)?;
        self.insert_chunks(loaded, report)
    }

    /// Pages ahead: asks the background loader for the chunks `boxes` need (nearest a box's
    /// center first), takes in what it has brought within `max_time`, and evicts the least
    /// recently used clean chunks outside the boxes while over budget (within the time left). The
    /// frame thread never waits for a load: `ready` says whether every chunk the boxes need is in.
    /// Eviction being bound by the time too, the resident voxels may pass the budget by a few
    /// calls' arrivals before it catches up.
    pub fn page(&mut self, boxes: &[Aabb], max_time: Duration) -> Result<PageReport, PageError> {
        let start = Instant::now();
        if self.pager.is_none() {
            return Ok(PageReport { ready: true, elapsed: start.elapsed(), ..PageReport::default() });
        }
        let keys = self.needed(boxes)?;
        let mut report = PageReport::default();
        // Take in what arrived, oldest first, as many as the time allows at the measured cost
        // of a chunk (at least one), in one batch.
        let mut take: Vec<Loaded> = Vec::new();
        let mut weight = 0.0;
        // Over budget, eviction keeps half the time: memory comes down while chunks come in.
        let over = self.pager.as_ref().is_some_and(|p| p.bytes > self.config().resident_bytes);
        let evict_share = if over { max_time / 2 } else { Duration::ZERO };
        let insert_time = max_time - evict_share;
        loop {
            let pager = self.pager.as_mut().expect("a paged terrain");
            if pager.arrived.is_empty() {
                let next = pager.loader.as_mut().map(|l| match l.arrivals.get_mut() {
                    Ok(rx) => rx.try_recv(),
                    Err(_) => Err(TryRecvError::Disconnected),
                });
                match next {
                    Some(Ok(a)) => pager.arrived.push_back(a),
                    Some(Err(TryRecvError::Disconnected)) => return Err(PageError::LoaderStopped),
                    Some(Err(TryRecvError::Empty)) | None => break,
                }
            }
            let planned = start.elapsed() + pager.insert_cost.mul_f64(weight + 1.0);
            if !take.is_empty() && planned >= insert_time || insert_time.is_zero() {
                break;
            }
            let Some((id, col)) = pager.arrived.front_mut() else { break };
            let id = *id;
            let col = match col {
                Ok(col) => col,
                Err(_) => {
                    pager.requests_out -= 1;
                    let (_, e) = pager.arrived.pop_front().expect("the front");
                    return Err(e.expect_err("an error"));
                }
            };
            // One chunk at a time (the last of the column first).
            let Some((key, chunk)) = col.pop() else {
                pager.requests_out -= 1;
                pager.arrived.pop_front();
                continue;
            };
            if pager.in_flight.get(&key) == Some(&id) {
                pager.in_flight.remove(&key);
                if !pager.is_resident(key) {
                    weight += chunk_weight(&chunk);
                    take.push((key, chunk));
                }
            }
        }
        if !take.is_empty() {
            let t = Instant::now();
            self.insert_chunks(take, &mut report)?;
            let pager = self.pager.as_mut().expect("a paged terrain");
            pager.insert_cost = ewma(pager.insert_cost, t.elapsed().div_f64(weight));
        }
        // Ask for what is missing, nearest first, up to the in-flight bound.
        let pager = self.pager.as_mut().expect("a paged terrain");
        let missing: Vec<StoreChunkKey> = keys
            .iter()
            .copied()
            .filter(|k| !pager.is_resident(*k) && !pager.in_flight.contains_key(k))
            .collect();
        report.ready = keys.iter().all(|k| pager.is_resident(*k));
        if !missing.is_empty() {
            let centers: Vec<Point3<f32>> =
                boxes.iter().map(|b| self.scale().point_to_voxels(&b.center()) / 32.0).collect();
            let mut columns = columns_of(&missing);
            let dist = |c: &[StoreChunkKey]| {
                let p = Point3::new(c[0].x as f32 + 0.5, 0.0, c[0].z as f32 + 0.5);
                centers
                    .iter()
                    .map(|q| (q.x - p.x).powi(2) + (q.z - p.z).powi(2))
                    .fold(f32::INFINITY, f32::min)
            };
            columns.sort_by(|a, b| dist(a).total_cmp(&dist(b)).then(a[0].cmp(&b[0])));
            let pager = self.pager.as_mut().expect("a paged terrain");
            let source = Arc::clone(&pager.source);
            let loader = pager.loader.get_or_insert_with(|| Loader::start(source));
            for col in columns.into_iter().take(MAX_IN_FLIGHT.saturating_sub(pager.requests_out)) {
                let id = pager.next_request;
                pager.next_request += 1;
                pager.requests_out += 1;
                for k in &col {
                    pager.in_flight.insert(*k, id);
                }
                loader.requests.send((id, col)).map_err(|_| PageError::LoaderStopped)?;
            }
        }
        let left = max_time.saturating_sub(start.elapsed()).max(evict_share);
        self.evict(&keys, left, &mut report);
        report.elapsed = start.elapsed();
        Ok(report)
    }

    /// Makes `chunks` resident (moved into the store), then brings masks, cache and render
    /// updates up to date in one batch, as a replica's write (no history, no delta log: nothing
    /// changed in the world).
    fn insert_chunks(&mut self, chunks: Vec<Loaded>, report: &mut PageReport) -> Result<(), PageError> {
        let (mut changed, mut air) = (Vec::new(), Vec::new());
        for (key, chunk) in chunks {
            let bytes = chunk.as_ref().map_or(0, StoredChunk::heap_bytes);
            match chunk {
                Some(c) => changed.push(self.store.put_chunk(key, c)?),
                None => air.push(key),
            }
            let pager = self.pager.as_mut().expect("a paged terrain");
            pager.add(key, bytes);
            pager.loaded_total += 1;
            report.loaded += 1;
        }
        self.paged_changed(&changed, &air);
        report.changed.extend(changed);
        Ok(())
    }

    /// After chunks came in or left: `changed` are the regions of those that hold voxels, `air`
    /// the keys of those all Air. Masks of the physics chunks beside a changed region are rebuilt
    /// once each where their storage chunk is resident and dropped elsewhere (nothing is known
    /// there); an all-Air chunk that came in builds the physics chunks on its faces when a
    /// neighbour holds voxels (their dilation reaches in), one that left drops its own. Cache
    /// entries reading a changed region are dropped and render updates marked.
    fn paged_changed(&mut self, changed: &[Region], air: &[StoreChunkKey]) {
        let pager = self.pager.as_ref().expect("a paged terrain");
        let mut keys: std::collections::BTreeSet<PhysicsChunkKey> = changed
            .iter()
            .filter_map(|d| PhysicsChunkKey::range(&d.expanded(1)))
            .flat_map(|r| r.iter())
            .collect();
        for &k in air {
            let region = k.region().expect("a key's region");
            if !pager.is_resident(k) {
                keys.extend(PhysicsChunkKey::range(&region).expect("a region").iter());
                continue;
            }
            // Only the voxel-thick slab beside each neighbour holding voxels (a face, an edge or
            // a corner of this chunk) takes their dilation.
            for n in StoreChunkKey::range(&region.expanded(1)).expect("a region").iter() {
                if n == k || self.store.chunk(n).is_none() {
                    continue;
                }
                let touched = n.region().ok().and_then(|r| region.intersection(&r.expanded(1)));
                if let Some(range) = touched.and_then(|t| PhysicsChunkKey::range(&t)) {
                    keys.extend(range.iter());
                }
            }
        }
        let (rebuild, drop): (Vec<PhysicsChunkKey>, Vec<PhysicsChunkKey>) = keys
            .into_iter()
            .partition(|k| k.region().is_ok_and(|r| pager.is_resident(StoreChunkKey::containing(r.min()))));
        self.masks.remove_chunks(drop.iter().copied());
        let rebuild_keys = rebuild.clone();
        // A frame's few hundred on this thread; a loading screen's many in parallel, and the
        // masks' dense window made current then (a moving window is refreshed only there).
        if rebuild.len() > 4096 {
            self.masks.rebuild_chunks(&self.store, rebuild);
        } else {
            self.masks.rebuild_chunks_here(&self.store, rebuild);
        }
        // Each chunk's ray-tree box is refreshed once, however many changed regions reach it.
        let mut refresh: std::collections::BTreeSet<PhysicsChunkKey> =
            rebuild_keys.into_iter().chain(drop).collect();
        for d in changed {
            self.cache.drop_reaching(d);
            if let Some(range) = PhysicsChunkKey::range(&d.expanded(crate::reach::EDIT_REACH)) {
                refresh.extend(range.iter());
            }
        }
        let (masks, store) = (&self.masks, &self.store);
        self.cache.refresh_tree(refresh, |k| crate::chunk_tree::may_hold_surface(masks, store, k));
        for d in changed {
            self.mark_changed(d);
        }
    }

    /// Evicts clean chunks outside `keep`, least recently used first, while over budget and
    /// within `max_time` (down to a sixteenth under the budget, so that eviction runs now and
    /// then, not every call).
    fn evict(&mut self, keep: &[StoreChunkKey], max_time: Duration, report: &mut PageReport) {
        let start = Instant::now();
        let budget = self.config().resident_bytes;
        let pager = self.pager.as_ref().expect("a paged terrain");
        if pager.bytes <= budget || max_time.is_zero() {
            return;
        }
        let keep: Set<StoreChunkKey> = keep.iter().copied().collect();
        let mut over = pager.bytes - budget + budget / 16;
        let mut victims = Vec::new();
        for &(_, key) in &pager.order {
            let planned = start.elapsed() + pager.evict_cost.mul_f64(victims.len() as f64 + 1.0);
            if over == 0 || !victims.is_empty() && planned >= max_time {
                break;
            }
            if pager.dirty.contains(&key) || keep.contains(&key) {
                continue;
            }
            victims.push(key);
            over = over.saturating_sub(pager.resident.get(&key).map_or(0, |e| e.bytes));
        }
        if victims.is_empty() {
            return;
        }
        let t = Instant::now();
        let pager = self.pager.as_mut().expect("a paged terrain");
        for key in &victims {
            pager.remove(*key);
            pager.evicted_total += 1;
            report.evicted += 1;
        }
        let (mut changed, mut air) = (Vec::new(), Vec::new());
        for k in &victims {
            match self.store.take_chunk(*k) {
                Some(_) => changed.push(k.region().expect("a key's region")),
                None => air.push(*k),
            }
        }
        self.paged_changed(&changed, &air);
        report.changed.extend(changed);
        let pager = self.pager.as_mut().expect("a paged terrain");
        pager.evict_cost = ewma(pager.evict_cost, t.elapsed() / victims.len() as u32);
    }

    /// After an edit wrote `dirty`: its chunks stay until written back, and their bytes change.
    pub(crate) fn paged_written(&mut self, dirty: &Region) {
        let Some(pager) = self.pager.as_mut() else { return };
        let Some(range) = StoreChunkKey::range(dirty) else { return };
        for key in range.iter() {
            let bytes = self.store.chunk(key).map_or(0, |c| c.heap_bytes());
            pager.dirty.insert(key);
            pager.add(key, bytes);
        }
    }

    /// Every chunk edits wrote is written back (a durable terrain committed them): they may leave.
    pub(crate) fn paged_written_back(&mut self) {
        if let Some(pager) = self.pager.as_mut() {
            pager.dirty.clear();
        }
    }

    /// The chunks edits wrote that are not written back, in key order (a paged terrain's; empty
    /// for one held whole).
    pub(crate) fn paged_dirty(&self) -> Vec<StoreChunkKey> {
        let mut keys: Vec<StoreChunkKey> =
            self.pager.as_ref().map(|p| p.dirty.iter().copied().collect()).unwrap_or_default();
        keys.sort_unstable();
        keys
    }
}
