//! The sparse voxel grid: a hash map of row-packed 32³ chunks.

use crate::chunk::{CHUNK_SHIFT, CHUNK_SIZE, Chunk, ChunkRef};
use crate::packed_box::{PACKED_ROWS, Rect, Scratch};
use crate::{InvalidStore, StoreError, StoreStats};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{
    CoreError, DirtyBounds, Material, Region, StoreChunkKey as Key, Voxel, VoxelPos, VoxelRead, VoxelWrite,
};

type ChunkMap = hashbrown::HashMap<Key, Chunk, foldhash::fast::FixedState>;

/// Limits that keep a write from exhausting memory.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct StoreLimits {
    /// Most chunks the store may hold. A write that could exceed it fails before changing anything.
    /// Default 2^22 (4 Mi chunks: at least 9 GiB even when every chunk is uniform).
    pub max_chunks: usize,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits { max_chunks: 1 << 22 }
    }
}

/// A sparse, unbounded voxel grid of row-packed 32³ chunks with mips.
///
/// Reads take `&self` and the store is `Send + Sync`, so any number of threads read at once. Every
/// write returns its dirty region (the bounding box of voxels that changed; `None` if none did) and
/// keeps the mips current. Chunks that become all Air are dropped. Positions are any `i32`
/// coordinates; writes take half-open [`Region`]s, so the voxel at `i32::MAX` on an axis can be
/// read (as Air) but not written.
#[derive(Debug, Default)]
pub struct VoxelStore {
    pub(crate) chunks: ChunkMap,
    limits: StoreLimits,
    scratch: Scratch,
}

impl Clone for VoxelStore {
    fn clone(&self) -> Self {
        VoxelStore { chunks: self.chunks.clone(), limits: self.limits, scratch: Scratch::default() }
    }
}

impl VoxelStore {
    /// An empty store with default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store with the given limits.
    pub fn with_limits(limits: StoreLimits) -> Self {
        VoxelStore { limits, ..Self::default() }
    }

    /// The limits in force.
    pub fn limits(&self) -> StoreLimits {
        self.limits
    }

    /// The voxel at `p` (Air where nothing is stored).
    #[inline]
    pub fn get(&self, p: VoxelPos) -> Voxel {
        match self.chunks.get(&Key::containing(p)) {
            Some(c) => c.level0.voxel(local(p.x), local(p.y), local(p.z)),
            None => Voxel::AIR,
        }
    }

    /// Sets one voxel; returns the dirty region. Fails only at `i32::MAX` (no half-open region) or
    /// when a new chunk would pass the chunk limit.
    pub fn set(&mut self, p: VoxelPos, voxel: Voxel) -> Result<Option<Region>, StoreError> {
        self.fill(&Region::voxel(p)?, voxel)
    }

    /// Number of chunks held.
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// A view of chunk `key`, if it is held.
    pub fn chunk(&self, key: Key) -> Option<ChunkRef<'_>> {
        self.chunks.get(&key).map(|chunk| ChunkRef { key, chunk })
    }

    /// The keys of every chunk held, sorted by (y, z, x) so the order is the same on every run.
    pub fn chunk_keys(&self) -> Vec<Key> {
        let mut keys: Vec<Key> = self.chunks.keys().copied().collect();
        keys.sort_unstable();
        keys
    }

    /// The bounding region of every stored chunk, `None` for an empty store.
    pub fn bounds(&self) -> Option<Region> {
        self.chunks.keys().map(|&k| chunk_region(k)).reduce(|a, b| a.union(&b))
    }

    /// Every X-row segment of `region`, borrowed from the store: `(start, voxels)`, where
    /// `voxels[i]` is the voxel at `start + (i, 0, 0)`. Segments never cross a chunk; chunks are
    /// visited in (y, z, x) key order and rows in (y, z) order inside each. Missing chunks read as Air.
    pub fn rows(&self, region: &Region) -> Rows<'_> {
        Rows::new(self, *region)
    }

    /// Writes `voxels` (laid out X fastest, then Z, then Y) into `region`.
    pub fn write_box(&mut self, region: &Region, voxels: &[Voxel]) -> Result<Option<Region>, StoreError> {
        let expected = region.len()?;
        if voxels.len() != expected {
            return Err(CoreError::BufferSize { expected, got: voxels.len() }.into());
        }
        self.modify(region, false, |start, seg| {
            let at = region.index_of(start);
            seg.copy_from_slice(&voxels[at..at + seg.len()]);
        })
    }

    /// Sets every voxel of `region` to `voxel`. Filling with Air visits only the chunks held, so
    /// clearing even an enormous region is cheap.
    pub fn fill(&mut self, region: &Region, voxel: Voxel) -> Result<Option<Region>, StoreError> {
        self.modify(region, voxel.is_air(), |_, seg| seg.fill(voxel))
    }

    /// Applies `brush(position, old) -> new` to every voxel of `region`, in chunk order (see
    /// [`VoxelStore::rows`]). The brush sees Air where nothing is stored.
    pub fn brush(
        &mut self,
        region: &Region,
        mut brush: impl FnMut(VoxelPos, Voxel) -> Voxel,
    ) -> Result<Option<Region>, StoreError> {
        self.modify(region, false, |start, seg| {
            for (i, v) in seg.iter_mut().enumerate() {
                *v = brush(Point3::new(start.x + i as i32, start.y, start.z), *v);
            }
        })
    }

    /// The shared write path: `edit(start, segment)` rewrites each X-row segment of `region` (one
    /// chunk's part of a row). `only_held`: the edit can only produce Air, so chunks not held are skipped.
    fn modify(
        &mut self,
        region: &Region,
        only_held: bool,
        mut edit: impl FnMut(VoxelPos, &mut [Voxel]),
    ) -> Result<Option<Region>, StoreError> {
        let Some(range) = Key::range(region) else { return Ok(None) };
        let region_chunks = range.count();
        let keys: Vec<Key> = if only_held || region_chunks > self.chunks.len() as u128 {
            // Walk the map, not the region: the region may hold far more chunk slots than the store.
            let mut held: Vec<Key> = self.chunks.keys().copied().filter(|&k| range.contains(k)).collect();
            held.sort_unstable();
            if !only_held {
                self.check_capacity(region_chunks - held.len() as u128)?;
                held = range.iter().collect();
            }
            held
        } else {
            let keys: Vec<Key> = range.iter().collect();
            let new = keys.iter().filter(|&k| !self.chunks.contains_key(k)).count();
            self.check_capacity(new as u128)?;
            keys
        };

        let mut dirty = DirtyBounds::new();
        for key in keys {
            let base = Point3::new(key.x << CHUNK_SHIFT, key.y << CHUNK_SHIFT, key.z << CHUNK_SHIFT);
            let part = region
                .intersection(&chunk_region(key))
                .expect("chunk keys come from the region's chunk range");
            let rect = Rect {
                lo: [0, 1, 2].map(|i| (part.min()[i] - base[i]) as usize),
                hi: [0, 1, 2].map(|i| (part.max()[i] - base[i]) as usize),
            };
            let held = self.chunks.contains_key(&Key::from(key));
            let chunk = self.chunks.entry(Key::from(key)).or_insert_with(|| Chunk::uniform(Material::AIR));
            let changed = chunk.modify(rect, &mut self.scratch, |y, z, seg| {
                let start = Point3::new(base.x + rect.lo[0] as i32, base.y + y as i32, base.z + z as i32);
                edit(start, seg);
            });
            if let Some(c) = changed {
                for y in c.lo[1]..c.hi[1] {
                    for z in c.lo[2]..c.hi[2] {
                        dirty.add_run(
                            base.x + c.lo[0] as i32,
                            base.x + c.hi[0] as i32,
                            base.y + y as i32,
                            base.z + z as i32,
                        );
                    }
                }
            }
            if (changed.is_some() || !held) && chunk.is_air() {
                self.chunks.remove(&Key::from(key));
            }
        }
        Ok(dirty.region())
    }

    fn check_capacity(&self, new_chunks: u128) -> Result<(), StoreError> {
        let needed = self.chunks.len() as u128 + new_chunks;
        if needed > self.limits.max_chunks as u128 {
            return Err(StoreError::TooManyChunks {
                needed,
                limit: self.limits.max_chunks,
                held: self.chunks.len(),
            });
        }
        Ok(())
    }

    /// Memory statistics: every heap byte the store owns, and bytes per non-empty voxel.
    pub fn stats(&self) -> StoreStats {
        let mut s = StoreStats { chunks: self.chunks.len(), ..StoreStats::default() };
        for c in self.chunks.values() {
            let (v, m) = c.heap_bytes();
            s.voxel_bytes += v;
            s.mip_bytes += m;
            s.allocated_rows += c.level0.allocated_rows();
            s.non_empty_voxels += c.level0.non_empty_voxels();
        }
        s.packed_rows = s.chunks * CHUNK_SIZE * CHUNK_SIZE - s.allocated_rows;
        // hashbrown: one (key, value) slot and one control byte per bucket, plus a group of control bytes.
        let buckets = if self.chunks.capacity() == 0 {
            0
        } else {
            (self.chunks.capacity() * 8 / 7).next_power_of_two()
        };
        let slot = std::mem::size_of::<(Key, Chunk)>();
        s.map_bytes = if buckets == 0 { 0 } else { buckets * (slot + 1) + 16 };
        s.total_bytes = s.voxel_bytes + s.mip_bytes + s.map_bytes;
        s
    }

    /// Checks every invariant: packed boxes well formed, mips equal to a fresh downsample, no
    /// all-air chunk held. For tests; the error names the chunk and the invariant.
    pub fn validate(&self) -> Result<(), InvalidStore> {
        use crate::mips::merge8;
        for (&key, c) in &self.chunks {
            for (level, r) in [c.level0.validate(), c.mip1.validate(), c.mip2.validate(), c.mip3.validate()]
                .into_iter()
                .enumerate()
            {
                r.map_err(|fault| InvalidStore::Rows { chunk: key, level: level as u32, fault })?;
            }
            if c.is_air() {
                return Err(InvalidStore::AirChunkHeld { chunk: key });
            }
            let view = ChunkRef { key, chunk: c };
            for level in 1..4u32 {
                let n = CHUNK_SIZE >> level;
                for y in 0..n {
                    for z in 0..n {
                        for x in 0..n {
                            let below = |dx, dy, dz| {
                                view.mip_voxel(level - 1, 2 * x + dx, 2 * y + dy, 2 * z + dz)
                                    .unwrap_or_default()
                            };
                            let want = merge8([
                                below(0, 0, 0),
                                below(1, 0, 0),
                                below(0, 0, 1),
                                below(1, 0, 1),
                                below(0, 1, 0),
                                below(1, 1, 0),
                                below(0, 1, 1),
                                below(1, 1, 1),
                            ]);
                            let got = view.mip_voxel(level, x, y, z);
                            if got != Some(want) {
                                return Err(InvalidStore::StaleMip { chunk: key, level, at: [x, y, z] });
                            }
                            // The guarantee itself, against level 0: Air exactly when all under it is.
                            let s = 1usize << level;
                            let all_air = (0..s * s * s).all(|i| {
                                let (dx, dy, dz) = (i % s, i / (s * s), (i / s) % s);
                                view.mip_voxel(0, x * s + dx, y * s + dy, z * s + dz)
                                    .is_some_and(|v| v.is_air())
                            });
                            if got.is_some_and(|v| v.is_air()) != all_air {
                                return Err(InvalidStore::AirGuarantee { chunk: key, level, at: [x, y, z] });
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

#[inline]
fn local(v: i32) -> usize {
    (v & (CHUNK_SIZE as i32 - 1)) as usize
}

/// The voxels of chunk `key` that half-open regions can address: the top chunk of the i32 space
/// ends at `i32::MAX` (exclusive), one voxel short.
pub(crate) fn chunk_region(key: Key) -> Region {
    let lo = key.to_point().map(|k| k << CHUNK_SHIFT);
    let hi = key.to_point().map(|k| ((k as i64 + 1) << CHUNK_SHIFT).min(i32::MAX as i64) as i32);
    Region::new(lo, hi).expect("a chunk's min is below its max")
}

/// Iterator over the X-row segments of a region; see [`VoxelStore::rows`].
#[derive(Debug)]
pub struct Rows<'a> {
    store: &'a VoxelStore,
    region: Region,
    first: Key,
    last: Key,
    /// The chunk being walked (`None` when done) and its row source (`None`: not held, reads Air).
    key: Option<Key>,
    chunk: Option<&'a Chunk>,
    /// This chunk's part of the region: local X range, local Y and Z cursors and ends.
    xa: usize,
    xb: usize,
    ly: usize,
    ly_end: usize,
    lz: usize,
    lz_start: usize,
    lz_end: usize,
    /// World coordinates of the chunk's first voxel.
    base: Point3<i32>,
}

impl<'a> Rows<'a> {
    fn new(store: &'a VoxelStore, region: Region) -> Self {
        let (first, last, key) = match Key::range(&region) {
            Some(r) => (r.first, r.last, Some(r.first)),
            None => (Key::default(), Key::default(), None),
        };
        let mut rows = Rows {
            store,
            region,
            first,
            last,
            key,
            chunk: None,
            xa: 0,
            xb: 0,
            ly: 0,
            ly_end: 0,
            lz: 0,
            lz_start: 0,
            lz_end: 0,
            base: Point3::origin(),
        };
        rows.enter_chunk();
        rows
    }

    fn enter_chunk(&mut self) {
        if let Some(key) = self.key {
            let part = self
                .region
                .intersection(&chunk_region(key))
                .expect("keys come from the region's chunk range");
            self.base = key.to_point().map(|k| k << CHUNK_SHIFT);
            let lo = |i: usize| (part.min()[i] - self.base[i]) as usize;
            let hi = |i: usize| (part.max()[i] as i64 - self.base[i] as i64) as usize;
            (self.xa, self.xb) = (lo(0), hi(0));
            (self.ly, self.ly_end) = (lo(1), hi(1));
            (self.lz_start, self.lz_end) = (lo(2), hi(2));
            self.lz = self.lz_start;
            self.chunk = self.store.chunks.get(&key);
        }
    }

    fn next_chunk(&mut self) {
        let Some(k) = self.key else { return };
        self.key = if k.x < self.last.x {
            Some(Key::new(k.x + 1, k.y, k.z))
        } else if k.z < self.last.z {
            Some(Key::new(self.first.x, k.y, k.z + 1))
        } else if k.y < self.last.y {
            Some(Key::new(self.first.x, k.y + 1, self.first.z))
        } else {
            None
        };
        self.enter_chunk();
    }
}

impl<'a> Iterator for Rows<'a> {
    type Item = (VoxelPos, &'a [Voxel]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.key?;
            if self.ly < self.ly_end {
                let (y, z) = (self.ly, self.lz);
                self.lz += 1;
                if self.lz == self.lz_end {
                    self.lz = self.lz_start;
                    self.ly += 1;
                }
                let row: &'a [Voxel] = match self.chunk {
                    Some(c) => c.level0.row(y, z),
                    None => &PACKED_ROWS[0],
                };
                let start =
                    Point3::new(self.base.x + self.xa as i32, self.base.y + y as i32, self.base.z + z as i32);
                return Some((start, &row[self.xa..self.xb]));
            }
            self.next_chunk();
        }
    }

    /// PERF: internal iteration (`sum`, `for_each`, [`VoxelRead::visit_rows`]) runs plain nested
    /// loops per chunk instead of stepping the cursor state row by row.
    fn fold<B, F: FnMut(B, Self::Item) -> B>(mut self, init: B, mut f: F) -> B {
        let mut acc = init;
        while self.key.is_some() {
            let (xa, xb, base) = (self.xa, self.xb, self.base);
            for y in self.ly..self.ly_end {
                let z0 = if y == self.ly { self.lz } else { self.lz_start };
                let start = |z: usize| Point3::new(base.x + xa as i32, base.y + y as i32, base.z + z as i32);
                match self.chunk {
                    // Whole rows: the slice's length is the constant 32, so consumers' loops over it
                    // compile without remainder handling.
                    Some(c) if xa == 0 && xb == CHUNK_SIZE => {
                        for z in z0..self.lz_end {
                            acc = f(acc, (start(z), c.level0.row(y, z).as_slice()));
                        }
                    }
                    Some(c) => {
                        for z in z0..self.lz_end {
                            acc = f(acc, (start(z), &c.level0.row(y, z)[xa..xb]));
                        }
                    }
                    None => {
                        for z in z0..self.lz_end {
                            acc = f(acc, (start(z), &PACKED_ROWS[0][xa..xb]));
                        }
                    }
                }
            }
            self.next_chunk();
        }
        acc
    }
}

impl VoxelRead for VoxelStore {
    #[inline]
    fn voxel(&self, p: VoxelPos) -> Voxel {
        self.get(p)
    }

    /// In buffer order (y, z, x) as the trait requires: per layer of chunks, the chunks are looked up
    /// once, then every row of the layer walks them along X.
    fn visit_rows(&self, region: &Region, visit: &mut dyn FnMut(VoxelPos, &[Voxel])) {
        let Some((first, last)) = Key::range(region).map(|r| (r.first, r.last)) else { return };
        if first == last {
            // One chunk: `rows` is already in buffer order.
            return self.rows(region).for_each(|(p, row)| visit(p, row));
        }
        let nx = (last.x as i64 - first.x as i64 + 1) as usize;
        let mut layer: Vec<Option<&Chunk>> = Vec::new();
        let (rmin, rmax) = (region.min(), region.max());
        for cy in first.y..=last.y {
            layer.clear();
            for cz in first.z..=last.z {
                for cx in first.x..=last.x {
                    layer.push(self.chunks.get(&Key::new(cx, cy, cz)));
                }
            }
            let y_lo = rmin.y.max(cy << CHUNK_SHIFT);
            let y_hi = (rmax.y as i64).min(((cy as i64) + 1) << CHUNK_SHIFT) as i32;
            for y in y_lo..y_hi {
                for z in rmin.z..rmax.z {
                    let row_chunks = &layer[((z >> CHUNK_SHIFT) - first.z) as usize * nx..][..nx];
                    let mut x = rmin.x;
                    for chunk in row_chunks {
                        let chunk_end = ((x as i64 >> CHUNK_SHIFT) + 1) << CHUNK_SHIFT;
                        let end = (rmax.x as i64).min(chunk_end) as i32;
                        let row: &[Voxel] = match chunk {
                            Some(c) => c.level0.row(local(y), local(z)),
                            None => &PACKED_ROWS[0],
                        };
                        let (a, b) = (local(x), local(end - 1) + 1);
                        visit(Point3::new(x, y, z), &row[a..b]);
                        x = end;
                    }
                }
            }
        }
    }

    /// From the row headers: a missing chunk is Air, a present one answers for the rows the region
    /// crosses. Never reads a voxel.
    fn uniform(&self, region: &Region) -> Option<Voxel> {
        let (first, last) = Key::range(region).map(|r| (r.first, r.last))?;
        let (rmin, rmax) = (region.min(), region.max());
        let mut found: Option<Material> = None;
        for cy in first.y..=last.y {
            for cz in first.z..=last.z {
                for cx in first.x..=last.x {
                    let material = match self.chunks.get(&Key::new(cx, cy, cz)) {
                        None => Material::AIR,
                        Some(chunk) => {
                            let c = chunk_region(Key::new(cx, cy, cz));
                            let span = |axis: usize| {
                                let lo = rmin[axis].max(c.min()[axis]);
                                let hi = rmax[axis].min(c.max()[axis]);
                                local(lo)..local(hi - 1) + 1
                            };
                            chunk.level0.uniform_in(span(1), span(2))?
                        }
                    };
                    if *found.get_or_insert(material) != material {
                        return None;
                    }
                }
            }
        }
        found.map(Voxel::full)
    }

    /// Specialised: each chunk's rows are copied straight to their place in `out`, offsets stepped
    /// rather than recomputed per row.
    fn read_box(&self, region: &Region, out: &mut [Voxel]) -> Result<(), CoreError> {
        let expected = region.len()?;
        if out.len() != expected {
            return Err(CoreError::BufferSize { expected, got: out.len() });
        }
        let Some((first, last)) = Key::range(region).map(|r| (r.first, r.last)) else { return Ok(()) };
        let [sx, _, sz] = region.size().map(|v| v as usize);
        for cy in first.y..=last.y {
            for cz in first.z..=last.z {
                for cx in first.x..=last.x {
                    let key = Key::new(cx, cy, cz);
                    let part =
                        region.intersection(&chunk_region(key)).expect("key in the region's chunk range");
                    let base = key.to_point().map(|k| k << CHUNK_SHIFT);
                    let (x0, x1) =
                        ((part.min().x - base.x) as usize, (part.max().x as i64 - base.x as i64) as usize);
                    let (z0, z1) =
                        ((part.min().z - base.z) as usize, (part.max().z as i64 - base.z as i64) as usize);
                    let (y0, y1) =
                        ((part.min().y - base.y) as usize, (part.max().y as i64 - base.y as i64) as usize);
                    let w = x1 - x0;
                    let chunk = self.chunks.get(&key);
                    let mut row_at = region.index_of(part.min());
                    for y in y0..y1 {
                        let mut at = row_at;
                        for z in z0..z1 {
                            let row: &[Voxel] = match chunk {
                                Some(c) => c.level0.row(y, z),
                                None => &PACKED_ROWS[0],
                            };
                            out[at..at + w].copy_from_slice(&row[x0..x1]);
                            at += sx;
                        }
                        row_at += sx * sz;
                    }
                }
            }
        }
        Ok(())
    }
}

impl VoxelWrite for VoxelStore {
    type Error = StoreError;

    fn write_box(&mut self, region: &Region, voxels: &[Voxel]) -> Result<Option<Region>, StoreError> {
        VoxelStore::write_box(self, region, voxels)
    }

    fn fill(&mut self, region: &Region, voxel: Voxel) -> Result<Option<Region>, StoreError> {
        VoxelStore::fill(self, region, voxel)
    }
}

// The store is read from many threads at once.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<VoxelStore>();
};
