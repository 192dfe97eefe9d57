//! How far things reach on the voxel grid, in voxels: the margins every query, cache and edit
//! follow-up uses, named once, and which physics chunks an edit reaches.

use voxterra_core::{DenseVoxels, PhysicsChunkKey, Region, Voxel, VoxelPos, VoxelRead};
use voxterra_mesher::{Corner, Mesher};

/// How far the surface (and so a physics chunk's triangles) can lie past the voxels that make
/// it: a surface vertex sits in a cell between voxel centers, within one voxel of its voxels.
/// Queries grow their boxes by it before picking chunks; a terrain's bounds are its stored voxels
/// grown by it.
pub const SURFACE_SPILL: u32 = 1;

/// How far an edit changes collision data: a physics chunk's mesh reads one voxel of padding
/// around its box, and its edge flags the triangles one voxel further. The chunks whose box grown
/// by this holds a voxel an edit changed (or meets its dirty region, where the voxels before are
/// not at hand) are rebuilt.
pub const EDIT_REACH: u32 = 2;

/// How far from an edit a body's contacts may change: the collision data's reach plus the masks'
/// one-voxel dilation. Bodies this close to an edit are woken and have their contacts recomputed.
pub const CONTACT_REACH: u32 = EDIT_REACH + 1;

/// The physics chunks whose collision data an edit of `dirty` may change: those whose box grown
/// by [`EDIT_REACH`] holds a voxel that changed as `mesher` reads it ([`Mesher::corner`]) and that a
/// surface cell reads, before or after the edit (a voxel whose 26 neighbors all share its side of
/// the surface, before and after, is read by no cell that places a vertex). `old` holds the voxels
/// before, covering `dirty`; `src` the voxels after. A chunk within reach of the dirty box but of
/// no such voxel (beyond a sphere's bounding box, deep in the ground or in the air) keeps its
/// data. `None` when `old` does not cover `dirty` or `src` cannot read around it. In key order.
pub(crate) fn chunks_reaching(
    old: &DenseVoxels,
    src: &(impl VoxelRead + ?Sized),
    dirty: &Region,
    mesher: &Mesher,
) -> Option<Vec<PhysicsChunkKey>> {
    if !old.region().contains_region(dirty) {
        return None;
    }
    let reach = EDIT_REACH as i32;
    let range = PhysicsChunkKey::range(&dirty.expanded(EDIT_REACH))?;
    let (first, last) = (range.first, range.last);
    let dims = [last.x - first.x + 1, last.y - first.y + 1, last.z - first.z + 1].map(|d| d as usize);
    let mut hit = vec![false; dims[0] * dims[1] * dims[2]];
    // The corners after and before over the dirty box and one voxel around it (unchanged there).
    let around = dirty.expanded(1);
    if around.size() != dirty.size().map(|s| s + 2) {
        return None; // at the edge of the i32 space
    }
    let mut voxels = vec![Voxel::AIR; around.len().ok()?];
    src.read_box(&around, &mut voxels).ok()?;
    let after: Vec<Corner> = voxels.iter().map(|&v| mesher.corner(v)).collect();
    let mut before = after.clone();
    let (ox, dx) = ((dirty.min().x - old.region().min().x) as usize, dirty.size()[0] as usize);
    for y in dirty.min().y..dirty.max().y {
        for z in dirty.min().z..dirty.max().z {
            let at = around.index_of(VoxelPos::new(dirty.min().x, y, z));
            for (c, &v) in before[at..at + dx].iter_mut().zip(&old.row(y, z)[ox..ox + dx]) {
                *c = mesher.corner(v);
            }
        }
    }
    let near = neighborhoods(&before, &after, around.size().map(|s| s as usize));
    let read = |i: usize| before[i] != after[i] && mixed(near[i]);
    let [dx, dy, dz] = dirty.size();
    for y in 0..dy as i32 {
        for z in 0..dz as i32 {
            let start = VoxelPos::new(dirty.min().x, dirty.min().y + y, dirty.min().z + z);
            let row = around.index_of(start);
            // Each run of such voxels marks every chunk within reach of it (a chunk between two
            // runs far apart is not).
            let mut i = 0;
            while i < dx as usize {
                if !read(row + i) {
                    i += 1;
                    continue;
                }
                let lo = i;
                while i < dx as usize && read(row + i) {
                    i += 1;
                }
                let hi = i - 1;
                let at = |dx: usize, d: i32| {
                    VoxelPos::new(
                        start.x.saturating_add(dx as i32).saturating_add(d),
                        start.y.saturating_add(d),
                        start.z.saturating_add(d),
                    )
                };
                let (lo_key, hi_key) =
                    (PhysicsChunkKey::containing(at(lo, -reach)), PhysicsChunkKey::containing(at(hi, reach)));
                for y in lo_key.y.max(first.y)..=hi_key.y.min(last.y) {
                    for z in lo_key.z.max(first.z)..=hi_key.z.min(last.z) {
                        for x in lo_key.x.max(first.x)..=hi_key.x.min(last.x) {
                            let i = ((y - first.y) as usize * dims[2] + (z - first.z) as usize) * dims[0]
                                + (x - first.x) as usize;
                            hit[i] = true;
                        }
                    }
                }
            }
        }
    }
    Some(
        range
            .iter()
            .filter(|k| {
                let i = ((k.y - first.y) as usize * dims[2] + (k.z - first.z) as usize) * dims[0]
                    + (k.x - first.x) as usize;
                hit[i]
            })
            .collect(),
    )
}

/// Per voxel of a box of `size` (x fastest, then z, then y; at least 3 a side), a byte whose bits
/// 0 and 1 say some of its 27 neighbors (itself included) are inside the surface before and after,
/// bits 2 and 3 that some are outside; see [`mixed`]. Meaningless on the box's border.
///
/// PERF: three separable passes (x, z, y) of one OR, both states and both sides in one byte: a few
/// operations a voxel, where testing 27 neighbors twice for each changed voxel cost a fifth of an
/// edit.
fn neighborhoods(before: &[Corner], after: &[Corner], size: [usize; 3]) -> Vec<u8> {
    let [sx, sy, sz] = size;
    let mut a: Vec<u8> = before
        .iter()
        .zip(after)
        .map(|(b, a)| {
            let inside = b.is_inside() as u8 | (a.is_inside() as u8) << 1;
            inside | (!inside & 3) << 2
        })
        .collect();
    let mut b = a.clone();
    for (src, dst) in a.chunks_exact(sx).zip(b.chunks_exact_mut(sx)) {
        for x in 1..sx - 1 {
            dst[x] = src[x - 1] | src[x] | src[x + 1];
        }
    }
    let layer = sx * sz;
    for y in 0..sy {
        for z in 1..sz - 1 {
            let i = y * layer + z * sx;
            let (lo, mid, hi) = (&b[i - sx..i], &b[i..i + sx], &b[i + sx..i + 2 * sx]);
            for (((d, l), m), h) in a[i..i + sx].iter_mut().zip(lo).zip(mid).zip(hi) {
                *d = l | m | h;
            }
        }
    }
    for i in layer..(sy - 1) * layer {
        b[i] = a[i - layer] | a[i] | a[i + layer];
    }
    b
}

/// Whether a voxel's neighborhood byte ([`neighborhoods`]) has it on both sides of the surface,
/// before or after.
#[inline]
fn mixed(n: u8) -> bool {
    n & (n >> 2) & 3 != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use voxterra_core::{MaterialTable, materials};
    use voxterra_mesher::MeshWorkspace;

    /// A voxel from a small alphabet: air, water (not matter), rock and dirt at a few occupancies.
    fn voxel(code: u8) -> Voxel {
        let m = [materials::AIR, materials::WATER, materials::ROCK, materials::DIRT][(code & 3) as usize];
        Voxel::new(m, [0u8, 90, 127, 128, 200, 255][(code >> 2) as usize % 6])
    }

    /// A `size`-sided box at `origin` filled from `codes` (cycled), solid below `floor`.
    fn world(origin: VoxelPos, size: u32, floor: i32, codes: &[u8]) -> DenseVoxels {
        let r = Region::from_min_size(origin, [size; 3]).unwrap();
        let mut d = DenseVoxels::new(r, 1 << 20).unwrap();
        for (i, p) in r.iter().enumerate() {
            let code = codes[i % codes.len()];
            let v = if p.y - origin.y < floor { Voxel::full(materials::ROCK) } else { voxel(code) };
            d.set(p, if code.is_multiple_of(5) { Voxel::AIR } else { v });
        }
        d
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// The chunks an edit reaches are exactly those whose box grown by the edit reach holds a
        /// voxel that changed as the mesher reads it and whose neighborhood is mixed before or
        /// after (the brute force over every voxel, its 26 neighbors, and every chunk).
        #[test]
        fn chunks_reaching_equals_the_brute_force(
            origin in (-40i32..40, -40i32..40, -40i32..40),
            size in (1u32..14, 1u32..14, 1u32..14),
            before in prop::collection::vec(any::<u8>(), 1..64),
            changes in prop::collection::vec((0u32..14, 0u32..14, 0u32..14, any::<u8>()), 0..12),
        ) {
            let min = VoxelPos::new(origin.0, origin.1, origin.2);
            let dirty = Region::from_min_size(min, [size.0, size.1, size.2]).unwrap();
            let mesher = Mesher::new(&MaterialTable::default());
            let mut old = DenseVoxels::new(dirty, 1 << 16).unwrap();
            for (i, p) in dirty.iter().enumerate() {
                old.set(p, voxel(before[i % before.len()]));
            }
            let mut new = old.clone();
            for (x, y, z, code) in changes {
                let p = VoxelPos::new(min.x + (x % size.0) as i32, min.y + (y % size.1) as i32, min.z + (z % size.2) as i32);
                new.set(p, voxel(code));
            }
            let got = chunks_reaching(&old, &new, &dirty, &mesher).unwrap();
            // Outside `dirty` both read as air.
            let at = |d: &DenseVoxels, p: VoxelPos| {
                if dirty.contains(p) { mesher.corner(d.as_slice()[dirty.index_of(p)]) } else { mesher.corner(Voxel::AIR) }
            };
            let mixed = |d: &DenseVoxels, p: VoxelPos| {
                let c = at(d, p).is_inside();
                (-1..=1).any(|a| (-1..=1).any(|b| (-1..=1).any(|e| at(d, VoxelPos::new(p.x + a, p.y + b, p.z + e)).is_inside() != c)))
            };
            let read: Vec<VoxelPos> = dirty
                .iter()
                .filter(|&p| at(&old, p) != at(&new, p) && (mixed(&old, p) || mixed(&new, p)))
                .collect();
            let reach = EDIT_REACH;
            let want: Vec<PhysicsChunkKey> = PhysicsChunkKey::range(&dirty.expanded(reach))
                .unwrap()
                .iter()
                .filter(|k| read.iter().any(|&p| k.region().unwrap().expanded(reach).contains(p)))
                .collect();
            prop_assert_eq!(got, want);
        }

        /// Every chunk whose collision data (mesh and edge flags; its kD tree is made from them) differs after an edit is
        /// among the chunks the edit reaches: the chunks left out keep data equal to a fresh build.
        #[test]
        fn chunks_left_out_build_the_same(
            origin in (-30i32..30, -30i32..30, -30i32..30),
            floor in 0i32..20,
            codes in prop::collection::vec(any::<u8>(), 1..40),
            edit in (0u32..16, 0u32..16, 0u32..16, 1u32..9, 1u32..9, 1u32..9),
            fill in prop::collection::vec(any::<u8>(), 1..8),
        ) {
            let min = VoxelPos::new(origin.0, origin.1, origin.2);
            let old = world(min, 24, floor, &codes);
            let dirty = Region::from_min_size(
                VoxelPos::new(min.x + edit.0 as i32, min.y + edit.1 as i32, min.z + edit.2 as i32),
                [edit.3, edit.4, edit.5],
            ).unwrap();
            let mut new = old.clone();
            for (i, p) in dirty.iter().enumerate() {
                new.set(p, voxel(fill[i % fill.len()]));
            }
            let mesher = Mesher::new(&MaterialTable::default());
            let old_box = {
                let mut d = DenseVoxels::new(dirty, 1 << 16).unwrap();
                for p in dirty.iter() {
                    d.set(p, old.as_slice()[old.region().index_of(p)]);
                }
                d
            };
            let got = chunks_reaching(&old_box, &new, &dirty, &mesher).unwrap();
            let mut ws = MeshWorkspace::new();
            let data = |d: &DenseVoxels, k, ws: &mut MeshWorkspace| {
                crate::collision_cache::build(&mesher, d, k, ws).map(|c| c.mesh)
            };
            for k in PhysicsChunkKey::range(&dirty.expanded(EDIT_REACH + 1)).unwrap().iter() {
                if !got.contains(&k) {
                    prop_assert!(data(&old, k, &mut ws) == data(&new, k, &mut ws), "chunk {:?} changed", k);
                }
            }
        }
    }
}
