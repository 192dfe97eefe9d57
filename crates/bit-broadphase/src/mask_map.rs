//! The sparse map of physics chunks, its rebuilds and its queries.

use crate::masks::{self, ChunkState, MASK_X, MASK_Z, Masks, PHYS_SHIFT};
use rayon::prelude::*;
use voxterra_core::{Aabb, CoreError, MaterialTable, PhysicsChunkKey as Key, Region, VoxelRead};

/// What a body's box touches in one chunk.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Touch {
    /// The box overlaps a dilated solid voxel.
    pub solid: bool,
    /// The box overlaps a dilated water voxel.
    pub water: bool,
}

/// Errors of the bit broadphase.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BroadphaseError {
    /// The voxel size must be finite and positive.
    #[error("voxel size {0} is not finite and positive")]
    VoxelSize(f32),
    /// A region or key outside the voxel space.
    #[error(transparent)]
    Core(#[from] CoreError),
}

/// A chunk's entry: tagged uniform, or an index into the mask slab.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Entry {
    Solid,
    Water,
    Masks(u32),
}

/// A dense index over the bounding box of the held chunks: one u32 per chunk slot (0 empty, 1 all
/// solid, 2 all water, 3 + i masks in slab slot i). PERF: a character query is one or two chunk
/// lookups; through the window each is a bounds check and a load instead of a hash probe (41 → 25
/// → 13 ns in a hot loop). Kept only while dense (see [`BitBroadphase::refresh_window`]).
#[derive(Clone, Debug)]
pub(crate) struct Window {
    pub(crate) min: [i64; 3],
    pub(crate) size: [i64; 3],
    pub(crate) slots: Vec<u32>,
}

impl Window {
    #[inline]
    pub(crate) fn index(&self, key: [i64; 3]) -> Option<usize> {
        let d = [0, 1, 2].map(|i| key[i] - self.min[i]);
        if (0..3).all(|i| d[i] >= 0 && d[i] < self.size[i]) {
            Some((d[0] + self.size[0] * (d[2] + self.size[2] * d[1])) as usize)
        } else {
            None
        }
    }
}

pub(crate) fn encode(e: Entry) -> u32 {
    match e {
        Entry::Solid => 1,
        Entry::Water => 2,
        Entry::Masks(i) => 3 + i,
    }
}

fn decode(v: u32) -> Option<Entry> {
    match v {
        0 => None,
        1 => Some(Entry::Solid),
        2 => Some(Entry::Water),
        i => Some(Entry::Masks(i - 3)),
    }
}

/// Memory statistics.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[non_exhaustive]
pub struct BroadphaseStats {
    /// Chunks held (all kinds).
    pub chunks: usize,
    /// Chunks with masks.
    pub mask_chunks: usize,
    /// Chunks tagged all-solid.
    pub solid_chunks: usize,
    /// Chunks tagged all-water.
    pub water_chunks: usize,
    /// Bytes of masks (128 per mask chunk, freed slots included).
    pub mask_bytes: usize,
    /// Bytes of the hash table.
    pub map_bytes: usize,
    /// Bytes of the dense lookup window (0 when the chunks are too sparse for one).
    pub window_bytes: usize,
}

impl BroadphaseStats {
    /// All bytes.
    pub fn total_bytes(&self) -> usize {
        self.mask_bytes + self.map_bytes + self.window_bytes
    }
}

/// The terrain broadphase: dilated solid/water masks for every 8³ physics chunk that has any, and
/// bit-parallel box queries against them.
#[derive(Clone, Debug)]
pub struct BitBroadphase {
    pub(crate) chunks: hashbrown::HashMap<Key, Entry, foldhash::fast::FixedState>,
    pub(crate) slab: Vec<Masks>,
    pub(crate) free: Vec<u32>,
    pub(crate) window: Option<Window>,
    /// A chunk was added outside the window (or a first window is due): queries take the hash
    /// path until [`BitBroadphase::optimize`] or the next region rebuild refreshes it.
    pub(crate) window_stale: bool,
    /// After a "too sparse" verdict, do not try again before the map holds this many chunks.
    window_retry_at: usize,
    pub(crate) solid: u64,
    pub(crate) liquid: u64,
    inv_voxel_size: f32,
}

/// The voxels whose closed cube `[v, v+1]` meets the closed box `[a, b]` (voxel units) on each axis:
/// `ceil(a) - 1 ..= floor(b)`. (The brute-force reference checks the same rule its own way.)
#[inline]
fn voxel_range(aabb: &Aabb, inv_voxel_size: f32) -> Option<([i64; 3], [i64; 3])> {
    // PERF: floor/ceil by saturating casts; `f32::floor` is a libm call on baseline x86-64 and
    // six of them cost a seventh of a character query.
    #[inline]
    fn floor(v: f32) -> i64 {
        let t = v as i64;
        if (t as f32) > v { t.saturating_sub(1) } else { t }
    }
    #[inline]
    fn ceil(v: f32) -> i64 {
        let t = v as i64;
        if (t as f32) < v { t.saturating_add(1) } else { t }
    }
    let clamp = |v: i64| v.clamp(i32::MIN as i64, i32::MAX as i64);
    let mut lo = [0i64; 3];
    let mut hi = [0i64; 3];
    for i in 0..3 {
        let a = aabb.mins[i] * inv_voxel_size;
        let b = aabb.maxs[i] * inv_voxel_size;
        if a.is_nan() || b.is_nan() || a > b {
            return None;
        }
        lo[i] = clamp(ceil(a)) - 1;
        hi[i] = clamp(floor(b));
        if hi[i] < lo[i] {
            return None;
        }
    }
    Some((lo, hi))
}

/// Chunks rebuilt per parallel batch: bounds the memory of pending results.
const BATCH: usize = 4096;
/// Chunks from which a rebuild spreads over the thread pool.
const PARALLEL_FROM: usize = 256;

impl BitBroadphase {
    /// An empty broadphase; `table` decides what is solid and what is water; `voxel_size` is the
    /// world size of one voxel (finite, positive).
    pub fn new(table: &MaterialTable, voxel_size: f32) -> Result<Self, BroadphaseError> {
        if !(voxel_size.is_finite() && voxel_size > 0.0) {
            return Err(BroadphaseError::VoxelSize(voxel_size));
        }
        Ok(BitBroadphase {
            chunks: Default::default(),
            slab: Vec::new(),
            free: Vec::new(),
            window: None,
            window_stale: false,
            window_retry_at: 0,
            solid: table.solid_mask(),
            liquid: table.liquid_mask(),
            inv_voxel_size: 1.0 / voxel_size,
        })
    }

    /// Chunks held.
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// The state of chunk `key`, `None` if it holds neither solid nor water.
    pub fn chunk(&self, key: Key) -> Option<ChunkState> {
        // A fresh window holds every chunk: a key outside it has none.
        let e = match self.window.as_ref().filter(|_| !self.window_stale) {
            Some(w) => w.index(key.to_array().map(i64::from)).and_then(|i| decode(w.slots[i])),
            None => self.chunks.get(&key).copied(),
        };
        e.map(|e| self.state(e))
    }

    pub(crate) fn state(&self, e: Entry) -> ChunkState {
        match e {
            Entry::Solid => ChunkState::Solid,
            Entry::Water => ChunkState::Water,
            Entry::Masks(i) => ChunkState::Masks(self.slab[i as usize]),
        }
    }

    /// Every chunk and its state, sorted by key (y, z, x): for comparisons and tests.
    pub fn chunks(&self) -> Vec<(Key, ChunkState)> {
        let mut v: Vec<_> = self.chunks.iter().map(|(k, e)| (*k, self.state(*e))).collect();
        v.sort_unstable_by_key(|(k, _)| *k);
        v
    }

    fn set(&mut self, key: Key, state: Option<ChunkState>) {
        self.set_entry(key, state);
        let value = self.chunks.get(&key).map_or(0, |e| encode(*e));
        let k = [key.x, key.y, key.z].map(i64::from);
        match self.window.as_mut().map(|w| (w.index(k), w)) {
            Some((Some(i), w)) => w.slots[i] = value,
            Some((None, _)) if value != 0 => self.window_stale = true,
            None if value != 0 && self.chunks.len() >= self.window_retry_at => self.window_stale = true,
            _ => {}
        }
    }

    /// Brings the dense lookup window up to date now (region rebuilds do this themselves; after
    /// single-chunk rebuilds that grew the world, queries use the hash map until then).
    pub fn optimize(&mut self) {
        if self.window_stale {
            self.refresh_window();
        }
    }

    /// Rebuilds the dense window over the held chunks' bounding box, or drops it when that box has
    /// more than 4 slots per held chunk (plus 4096): memory stays bounded by the chunk count.
    fn refresh_window(&mut self) {
        self.window_stale = false;
        self.window = None;
        let mut keys = self.chunks.keys().map(|k| k.to_array().map(i64::from));
        let Some(first) = keys.next() else { return };
        let (lo, hi) = keys.fold((first, first), |(lo, hi), k| {
            ([0, 1, 2].map(|i| lo[i].min(k[i])), [0, 1, 2].map(|i| hi[i].max(k[i])))
        });
        let size = [0, 1, 2].map(|i| hi[i] - lo[i] + 1);
        let slots = size.iter().fold(1u64, |n, &s| n.saturating_mul(s as u64));
        if slots > 4 * self.chunks.len() as u64 + 4096 {
            self.window_retry_at = 2 * self.chunks.len();
            return;
        }
        let mut w = Window { min: lo, size, slots: vec![0; slots as usize] };
        for (k, e) in &self.chunks {
            let i = w.index(k.to_array().map(i64::from)).expect("the window is the keys' bounding box");
            w.slots[i] = encode(*e);
        }
        self.window = Some(w);
    }

    fn set_entry(&mut self, key: Key, state: Option<ChunkState>) {
        let k = key;
        let old = self.chunks.get(&k).copied();
        let entry = match state {
            None => {
                if let Some(Entry::Masks(i)) = self.chunks.remove(&k) {
                    self.free.push(i);
                }
                return;
            }
            Some(ChunkState::Solid) => Entry::Solid,
            Some(ChunkState::Water) => Entry::Water,
            Some(ChunkState::Masks(m)) => match old {
                Some(Entry::Masks(i)) => {
                    self.slab[i as usize] = m;
                    return;
                }
                _ => {
                    let i = match self.free.pop() {
                        Some(i) => {
                            self.slab[i as usize] = m;
                            i
                        }
                        None => {
                            self.slab.push(m);
                            (self.slab.len() - 1) as u32
                        }
                    };
                    Entry::Masks(i)
                }
            },
        };
        if let Some(Entry::Masks(i)) = self.chunks.insert(k, entry) {
            self.free.push(i);
        }
    }

    /// Rebuilds one chunk from its 10³ neighborhood in `source`.
    pub fn rebuild_chunk(&mut self, source: &impl VoxelRead, key: Key) {
        let state = masks::build(source, key, self.solid, self.liquid);
        self.set(key, state);
    }

    /// Rebuilds every chunk whose masks a change in `dirty` can affect (the chunks its one-voxel
    /// expansion touches), in parallel on the current rayon pool. The result is the same as
    /// rebuilding them one by one: states are computed in parallel and applied in key order.
    /// Returns the number of chunks rebuilt.
    pub fn rebuild_region(&mut self, source: &(impl VoxelRead + Sync), dirty: &Region) -> usize {
        let Some(range) = Key::range(&dirty.expanded(1)) else { return 0 };
        self.rebuild_chunks(source, range.iter())
    }

    /// Rebuilds chunks `keys` (each once: pass them deduplicated) from their neighborhoods in
    /// `source` (on the thread pool from a few hundred chunks; fewer, as an edit's, on this
    /// thread: the pool's hand-off cost more than they do), applied in the order given: what a caller that changed several
    /// regions at once passes instead of one [`rebuild_region`](Self::rebuild_region) each, so
    /// chunks beside two of them are built once. Returns the number of chunks rebuilt.
    pub fn rebuild_chunks(
        &mut self,
        source: &(impl VoxelRead + Sync),
        keys: impl IntoIterator<Item = Key>,
    ) -> usize {
        let (solid, liquid) = (self.solid, self.liquid);
        let mut batch = Vec::with_capacity(BATCH);
        let mut n = 0;
        let mut keys = keys.into_iter().peekable();
        while keys.peek().is_some() {
            batch.clear();
            batch.extend(keys.by_ref().take(BATCH));
            // PERF: an edit's few dozen chunks build faster here than the pool wakes for them.
            let states: Vec<Option<ChunkState>> = if batch.len() < PARALLEL_FROM {
                batch.iter().map(|&k| masks::build(source, k, solid, liquid)).collect()
            } else {
                batch.par_iter().map(|&k| masks::build(source, k, solid, liquid)).collect()
            };
            for (&k, s) in batch.iter().zip(states) {
                self.set(k, s);
            }
            n += batch.len();
        }
        self.optimize();
        n
    }

    /// [`rebuild_chunks`](Self::rebuild_chunks) on the calling thread alone, leaving the dense
    /// window as it is (stale once chunks outside it hold masks: queries use the hash map until
    /// [`optimize`](Self::optimize)). For a few hundred chunks beside a thread that holds a core
    /// (a loader) in a frame's time: the pool's workers and the window's O(chunks) refresh cost
    /// more than the builds.
    pub fn rebuild_chunks_here(
        &mut self,
        source: &impl VoxelRead,
        keys: impl IntoIterator<Item = Key>,
    ) -> usize {
        let (solid, liquid) = (self.solid, self.liquid);
        // The chunks of one storage chunk (32³: 4³ of these) read its voxels once.
        let mut keys: Vec<Key> = keys.into_iter().collect();
        keys.sort_unstable_by_key(|k| (k.y >> 2, k.z >> 2, k.x >> 2, *k));
        let n = keys.len();
        for group in keys.chunk_by(|a, b| (a.x >> 2, a.y >> 2, a.z >> 2) == (b.x >> 2, b.y >> 2, b.z >> 2)) {
            let states = if group.len() >= 4 {
                masks::build_group(source, group, solid, liquid)
            } else {
                group.iter().map(|&k| masks::build(source, k, solid, liquid)).collect()
            };
            for (&k, state) in group.iter().zip(states) {
                self.set(k, state);
            }
        }
        n
    }

    /// Drops the masks of chunks `keys` (they read as empty): what a terrain whose voxels there
    /// left memory calls, rather than building them from Air. Leaves the window as it is.
    pub fn remove_chunks(&mut self, keys: impl IntoIterator<Item = Key>) {
        for k in keys {
            self.set(k, None);
        }
    }

    /// The voxel range `[lo, hi]` (inclusive, i64) a world-space box touches. `None` for NaN or
    /// inverted boxes.
    #[inline]
    fn voxel_range(&self, aabb: &Aabb) -> Option<([i64; 3], [i64; 3])> {
        voxel_range(aabb, self.inv_voxel_size)
    }

    /// Calls `visit(chunk, touch)` for every chunk in which the box (world units) touches a dilated
    /// solid or water voxel.
    ///
    /// The closed box is tested against closed voxel cubes, so a box lying on a voxel boundary also
    /// covers the voxel on the far side: its voxel range grows by one wherever it merely touches.
    /// With the masks' one-voxel dilation this is exact for the contract "geometry stays within one
    /// voxel of its solid voxel": a box more than one voxel from every solid voxel never touches solid.
    /// NaN or inverted boxes touch nothing; coordinates beyond the i32 voxel space are clamped.
    /// Chunks come in (y, z, x) order, except, when the chunks are too sparse for the dense window,
    /// for boxes covering more chunk slots than the map holds, which walk the map instead (same
    /// result, map order). No allocation.
    #[inline]
    pub fn query(&self, aabb: &Aabb, mut visit: impl FnMut(Key, Touch)) {
        let Some((lo, hi)) = self.voxel_range(aabb) else { return };
        let cl = lo.map(|v| v >> PHYS_SHIFT);
        let ch = hi.map(|v| v >> PHYS_SHIFT);
        if let Some(w) = self.window.as_ref().filter(|_| !self.window_stale) {
            // Only the part of the range inside the window can hold chunks.
            let a = [0, 1, 2].map(|i| cl[i].max(w.min[i]));
            let b = [0, 1, 2].map(|i| ch[i].min(w.min[i] + w.size[i] - 1));
            for cy in a[1]..=b[1] {
                for cz in a[2]..=b[2] {
                    for cx in a[0]..=b[0] {
                        let i = w.index([cx, cy, cz]).expect("clipped to the window");
                        if let Some(e) = decode(w.slots[i]) {
                            let key = Key::new(cx as i32, cy as i32, cz as i32);
                            let t = self.touch(e, key, &lo, &hi);
                            if t.solid || t.water {
                                visit(key, t);
                            }
                        }
                    }
                }
            }
            return;
        }
        // At most 2^29 chunks per axis, so the product saturates rather than overflows.
        let slots = (0..3).fold(1u64, |n, i| n.saturating_mul((ch[i] - cl[i] + 1) as u64));
        if slots > self.chunks.len() as u64 {
            for (k, e) in &self.chunks {
                let key = *k;
                let at = key.to_array();
                if (0..3).all(|i| cl[i] <= at[i] as i64 && at[i] as i64 <= ch[i]) {
                    let t = self.touch(*e, key, &lo, &hi);
                    if t.solid || t.water {
                        visit(key, t);
                    }
                }
            }
            return;
        }
        for cy in cl[1]..=ch[1] {
            for cz in cl[2]..=ch[2] {
                for cx in cl[0]..=ch[0] {
                    let key = Key::new(cx as i32, cy as i32, cz as i32);
                    if let Some(e) = self.chunks.get(&key) {
                        let t = self.touch(*e, key, &lo, &hi);
                        if t.solid || t.water {
                            visit(key, t);
                        }
                    }
                }
            }
        }
    }

    /// What the voxel range touches inside one held chunk.
    #[inline]
    fn touch(&self, e: Entry, key: Key, lo: &[i64; 3], hi: &[i64; 3]) -> Touch {
        match e {
            Entry::Solid => Touch { solid: true, water: false },
            Entry::Water => Touch { solid: false, water: true },
            Entry::Masks(i) => {
                let base = key.to_array().map(|k| (k as i64) << PHYS_SHIFT);
                let l = |a: usize| (lo[a] - base[a]).clamp(0, 7) as usize;
                let h = |a: usize| (hi[a] - base[a]).clamp(0, 7) as usize;
                let footprint = MASK_X[l(0)][h(0)] & MASK_Z[l(2)][h(2)];
                let m = &self.slab[i as usize];
                let (mut s, mut w) = (0u64, 0u64);
                for y in l(1)..=h(1) {
                    s |= m.solid[y];
                    w |= m.water[y];
                }
                Touch { solid: s & footprint != 0, water: w & footprint != 0 }
            }
        }
    }

    /// Memory statistics.
    pub fn stats(&self) -> BroadphaseStats {
        let mut s = BroadphaseStats { chunks: self.chunks.len(), ..Default::default() };
        for e in self.chunks.values() {
            match e {
                Entry::Solid => s.solid_chunks += 1,
                Entry::Water => s.water_chunks += 1,
                Entry::Masks(_) => s.mask_chunks += 1,
            }
        }
        s.mask_bytes = self.slab.capacity() * std::mem::size_of::<Masks>() + self.free.capacity() * 4;
        let buckets = if self.chunks.capacity() == 0 {
            0
        } else {
            (self.chunks.capacity() * 8 / 7).next_power_of_two()
        };
        s.map_bytes = if buckets == 0 { 0 } else { buckets * (std::mem::size_of::<(Key, Entry)>() + 1) + 16 };
        s.window_bytes = self.window.as_ref().map_or(0, |w| w.slots.capacity() * 4);
        s
    }
}
