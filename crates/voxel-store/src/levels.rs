//! Coarse views of the store for levels of detail: at level `k` one voxel stands for a cube of
//! `2^k` voxels on a side, merged by the mips' rule (mean occupancy, the material holding the most
//! of it; Air exactly when everything under it is Air).
//!
//! Levels 1–3 are the chunks' own mips, read as rows without a copy; levels 4 and 5 (2³ and one
//! voxel a chunk) are merged from the 4³ mip on the fly. Every level stays inside one chunk, so a
//! coarse voxel never reads a neighbor.

use crate::StoreError;
use crate::chunk::{CHUNK_SHIFT, Chunk};
use crate::mips::merge8;
use crate::packed_box::PACKED_ROWS;
use crate::store::VoxelStore;
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Region, StoreChunkKey as Key, Voxel, VoxelPos, VoxelRead};

/// The coarsest level a view offers: one voxel a 32³ chunk.
pub const MAX_LEVEL: u32 = CHUNK_SHIFT;

/// The store seen at level `k` ([`VoxelStore::level`]): voxel `(x, y, z)` of the view covers voxels
/// `2^k·x .. 2^k·(x+1)` of the store on each axis. A [`VoxelRead`], so the mesher meshes it like
/// the store itself (its positions then in units of `2^k` voxels).
#[derive(Clone, Copy, Debug)]
pub struct LevelView<'a> {
    store: &'a VoxelStore,
    level: u32,
}

impl VoxelStore {
    /// The store at level `level` (0 is the store itself, up to [`MAX_LEVEL`]).
    pub fn level(&self, level: u32) -> Result<LevelView<'_>, StoreError> {
        if level > MAX_LEVEL {
            return Err(StoreError::Level { level, max: MAX_LEVEL });
        }
        Ok(LevelView { store: self, level })
    }
}

impl LevelView<'_> {
    /// The view's level.
    pub fn level(&self) -> u32 {
        self.level
    }

    /// log2 of a chunk's side in this level's voxels.
    fn shift(&self) -> u32 {
        CHUNK_SHIFT - self.level
    }

    /// The chunk holding level voxel `p`, and `p`'s place in it.
    fn locate(&self, p: VoxelPos) -> (Key, [usize; 3]) {
        let s = self.shift();
        let mask = (1i32 << s) - 1;
        (Key::new(p.x >> s, p.y >> s, p.z >> s), [p.x, p.y, p.z].map(|v| (v & mask) as usize))
    }

    fn chunk(&self, key: Key) -> Option<&Chunk> {
        self.store.chunks.get(&key)
    }
}

/// Level `level` (4 or 5) of `chunk` at `at`: merged from the 4³ mip.
fn merged(chunk: &Chunk, level: u32, at: [usize; 3]) -> Voxel {
    // The 4³ mip block under the voxel: 2 (level 4) or 4 (level 5) on a side.
    let side = 1usize << (level - 3);
    let base = at.map(|v| v * side);
    let mut cube = [Voxel::AIR; 8];
    if side == 2 {
        for (i, c) in cube.iter_mut().enumerate() {
            *c = chunk.mip3.voxel(base[0] + (i & 1), base[1] + (i >> 1 & 1), base[2] + (i >> 2 & 1));
        }
    } else {
        // Level 5: each of the eight level-4 voxels first, as the mips merge a level at a time.
        for (i, c) in cube.iter_mut().enumerate() {
            *c = merged(chunk, 4, [i & 1, i >> 1 & 1, i >> 2 & 1]);
        }
    }
    merge8(cube)
}

impl VoxelRead for LevelView<'_> {
    fn voxel(&self, p: VoxelPos) -> Voxel {
        if self.level == 0 {
            return self.store.voxel(p);
        }
        let (key, at) = self.locate(p);
        let Some(c) = self.chunk(key) else { return Voxel::AIR };
        match self.level {
            1 => c.mip1.voxel(at[0], at[1], at[2]),
            2 => c.mip2.voxel(at[0], at[1], at[2]),
            3 => c.mip3.voxel(at[0], at[1], at[2]),
            l => merged(c, l, at),
        }
    }

    fn visit_rows(&self, region: &Region, visit: &mut dyn FnMut(VoxelPos, &[Voxel])) {
        if self.level == 0 {
            return self.store.visit_rows(region, visit);
        }
        let (lo, hi) = (region.min(), region.max());
        if region.is_empty() {
            return;
        }
        let s = self.shift();
        let side = 1i64 << s;
        let mut row = Vec::new();
        for y in lo.y..hi.y {
            for z in lo.z..hi.z {
                let mut x = lo.x;
                while x < hi.x {
                    let (key, at) = self.locate(Point3::new(x, y, z));
                    let end = ((((x as i64) >> s) + 1) * side).min(hi.x as i64) as i32;
                    let len = (end - x) as usize;
                    let c = self.chunk(key);
                    let slice: &[Voxel] = match (c, self.level) {
                        (None, _) => &PACKED_ROWS[0][..len],
                        (Some(c), 1) => &c.mip1.row(at[1], at[2])[at[0]..at[0] + len],
                        (Some(c), 2) => &c.mip2.row(at[1], at[2])[at[0]..at[0] + len],
                        (Some(c), 3) => &c.mip3.row(at[1], at[2])[at[0]..at[0] + len],
                        (Some(c), l) => {
                            row.clear();
                            row.extend((0..len).map(|i| merged(c, l, [at[0] + i, at[1], at[2]])));
                            &row
                        }
                    };
                    visit(Point3::new(x, y, z), slice);
                    x = end;
                }
            }
        }
    }

    /// From the chunks alone: all missing is Air; all one uniform material gives that material's
    /// voxel (a uniform chunk's mips are the same voxel). Never reads a voxel row.
    fn uniform(&self, region: &Region) -> Option<Voxel> {
        if self.level == 0 {
            return self.store.uniform(region);
        }
        if region.is_empty() {
            return None;
        }
        let s = self.shift();
        let (lo, hi) = (region.min(), region.max());
        let first = Key::new(lo.x >> s, lo.y >> s, lo.z >> s);
        let last = Key::new((hi.x - 1) >> s, (hi.y - 1) >> s, (hi.z - 1) >> s);
        let mut seen: Option<Voxel> = None;
        for cy in first.y..=last.y {
            for cz in first.z..=last.z {
                for cx in first.x..=last.x {
                    let v = match self.chunk(Key::new(cx, cy, cz)) {
                        None => Voxel::AIR,
                        Some(c) => {
                            c.level0.uniform_material()?;
                            c.mip3.voxel(0, 0, 0)
                        }
                    };
                    match seen {
                        None => seen = Some(v),
                        Some(w) if w == v => {}
                        Some(_) => return None,
                    }
                }
            }
        }
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use voxterra_core::{Material, materials};

    /// The reference: every level merged from the one below, 2³ at a time, over a dense box.
    fn reference(store: &VoxelStore, region: &Region, level: u32) -> Vec<Voxel> {
        let mut dense = vec![Voxel::AIR; region.len().unwrap()];
        store.read_box(region, &mut dense).unwrap();
        let mut size = region.size().map(|s| s as usize);
        for _ in 0..level {
            let half = size.map(|s| s / 2);
            let mut next = vec![Voxel::AIR; half[0] * half[1] * half[2]];
            for y in 0..half[1] {
                for z in 0..half[2] {
                    for x in 0..half[0] {
                        let cube = std::array::from_fn(|i| {
                            let (a, b, c) = (2 * x + (i & 1), 2 * y + (i >> 1 & 1), 2 * z + (i >> 2 & 1));
                            dense[a + size[0] * (c + size[2] * b)]
                        });
                        next[x + half[0] * (z + half[2] * y)] = merge8(cube);
                    }
                }
            }
            dense = next;
            size = half;
        }
        dense
    }

    fn some_store(seed: u64) -> VoxelStore {
        let mut store = VoxelStore::new();
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) as u32
        };
        let ground = Region::from_min_size(VoxelPos::new(-32, -32, -32), [96, 40, 96]).unwrap();
        store.fill(&ground, Voxel::full(materials::ROCK)).unwrap();
        for _ in 0..400 {
            let p = VoxelPos::new(
                (next() % 96) as i32 - 32,
                (next() % 64) as i32 - 32,
                (next() % 96) as i32 - 32,
            );
            let m = Material::from_low_bits((next() % 5) as u8);
            let v = if m == Material::AIR { Voxel::AIR } else { Voxel::new(m, (next() % 256) as u8) };
            store.set(p, v).unwrap();
        }
        store
    }

    #[test]
    fn every_level_is_the_merge_of_the_one_below() {
        for seed in 1..4 {
            let store = some_store(seed);
            // Three chunks on each axis, from a chunk corner.
            let full = Region::from_min_size(VoxelPos::new(-32, -32, -32), [96, 96, 96]).unwrap();
            for level in 0..=MAX_LEVEL {
                let want = reference(&store, &full, level);
                let n = 96u32 >> level;
                let at =
                    Region::from_min_size(VoxelPos::new(-32 >> level, -32 >> level, -32 >> level), [n, n, n])
                        .unwrap();
                let view = store.level(level).unwrap();
                let mut got = vec![Voxel::AIR; at.len().unwrap()];
                view.read_box(&at, &mut got).unwrap();
                assert_eq!(got, want, "level {level}, seed {seed}");
                for (i, p) in at.iter().enumerate().step_by(7) {
                    assert_eq!(view.voxel(p), want[i]);
                }
                // Uniform answers agree with the voxels.
                for key in [[-1, -1, -1], [0, 1, 0], [1, 0, 1], [0, 5, 0]] {
                    let side = 32u32 >> level;
                    let r = Region::from_min_size(
                        VoxelPos::new(key[0] * side as i32, key[1] * side as i32, key[2] * side as i32),
                        [side; 3],
                    )
                    .unwrap();
                    if let Some(v) = view.uniform(&r) {
                        let mut all = vec![Voxel::AIR; r.len().unwrap()];
                        view.read_box(&r, &mut all).unwrap();
                        assert!(all.iter().all(|&w| w == v), "level {level} chunk {key:?}");
                    }
                }
            }
        }
        assert!(matches!(VoxelStore::new().level(MAX_LEVEL + 1), Err(StoreError::Level { .. })));
    }

    #[test]
    fn a_coarse_voxel_is_air_exactly_when_everything_under_it_is() {
        let mut store = VoxelStore::new();
        store.set(VoxelPos::new(37, 5, 70), Voxel::new(materials::SAND, 0)).unwrap();
        for level in 1..=MAX_LEVEL {
            let view = store.level(level).unwrap();
            let at = VoxelPos::new(37 >> level, 5 >> level, 70 >> level);
            assert!(!view.voxel(at).is_air(), "level {level}");
            assert!(view.voxel(at + voxterra_core::nalgebra::Vector3::new(1, 0, 0)).is_air());
            let high = Region::from_min_size(VoxelPos::new(0, 40, 0), [4, 4, 4]).unwrap();
            assert_eq!(view.uniform(&high), Some(Voxel::AIR));
        }
    }
}
