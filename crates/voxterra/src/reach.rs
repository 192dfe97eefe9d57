//! How far things reach on the voxel grid, in voxels: the margins every query, cache and edit
//! follow-up uses, named once, and which physics chunks an edit reaches.

use voxterra_core::{PhysicsChunkKey, Region, VoxelRead};

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

/// The physics chunks whose collision data reads a voxel of `dirty` that differs between `old` (the
/// voxels before, covering `dirty`) and `src`: those whose box grown by
/// [`EDIT_REACH`] holds one. A chunk within reach of the dirty box but of no changed
/// voxel (beyond a sphere's bounding box, say) keeps its data. `None` when `old` does not cover
/// `dirty`. In key order.
pub(crate) fn chunks_reaching(
    old: &voxterra_core::DenseVoxels,
    src: &(impl VoxelRead + ?Sized),
    dirty: &Region,
) -> Option<Vec<PhysicsChunkKey>> {
    if !old.region().contains_region(dirty) {
        return None;
    }
    let reach = EDIT_REACH as i32;
    let range = PhysicsChunkKey::range(&dirty.expanded(EDIT_REACH))?;
    let (first, last) = (range.first, range.last);
    let dims = [last.x - first.x + 1, last.y - first.y + 1, last.z - first.z + 1].map(|d| d as usize);
    let mut hit = vec![false; dims[0] * dims[1] * dims[2]];
    let key = |p: voxterra_core::VoxelPos| PhysicsChunkKey::containing(p);
    src.visit_rows(dirty, &mut |start, row| {
        let before = &old.row(start.y, start.z)[(start.x - old.region().min().x) as usize..][..row.len()];
        // Each run of changed voxels marks every chunk within reach of it (a chunk between two
        // runs far apart is not).
        let mut i = 0;
        while i < row.len() {
            if row[i] == before[i] {
                i += 1;
                continue;
            }
            let lo = i;
            while i < row.len() && row[i] != before[i] {
                i += 1;
            }
            let hi = i - 1;
            let at = |dx: usize, d: i32| {
                voxterra_core::VoxelPos::new(
                    start.x.saturating_add(dx as i32).saturating_add(d),
                    start.y.saturating_add(d),
                    start.z.saturating_add(d),
                )
            };
            let (lo_key, hi_key) = (key(at(lo, -reach)), key(at(hi, reach)));
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
    });
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use voxterra_core::{DenseVoxels, Voxel, VoxelPos, materials};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// The chunks an edit reaches are exactly those whose box grown by the edit reach holds a
        /// voxel that changed (the brute force over every voxel and chunk).
        #[test]
        fn chunks_reaching_equals_the_brute_force(
            origin in (-40i32..40, -40i32..40, -40i32..40),
            size in (1u32..20, 1u32..20, 1u32..20),
            changes in prop::collection::vec((0u32..20, 0u32..20, 0u32..20), 0..12),
        ) {
            let min = VoxelPos::new(origin.0, origin.1, origin.2);
            let dirty = Region::from_min_size(min, [size.0, size.1, size.2]).unwrap();
            let old = DenseVoxels::new(dirty, 1 << 16).unwrap();
            let mut new = DenseVoxels::new(dirty, 1 << 16).unwrap();
            let mut changed = Vec::new();
            for (x, y, z) in changes {
                let p = VoxelPos::new(min.x + (x % size.0) as i32, min.y + (y % size.1) as i32, min.z + (z % size.2) as i32);
                let i = dirty.index_of(p);
                new.as_mut_slice()[i] = Voxel::full(materials::ROCK);
                changed.push(p);
            }
            let got = chunks_reaching(&old, &new, &dirty).unwrap();
            let reach = EDIT_REACH;
            let want: Vec<PhysicsChunkKey> = PhysicsChunkKey::range(&dirty.expanded(reach))
                .unwrap()
                .iter()
                .filter(|k| changed.iter().any(|&p| k.region().unwrap().expanded(reach).contains(p)))
                .collect();
            prop_assert_eq!(got, want);
        }
    }
}
