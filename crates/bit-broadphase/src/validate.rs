//! [`BitBroadphase::validate`]: the map's own bookkeeping, and every held chunk's masks against a
//! rebuild from the voxels.

use crate::mask_map::{BitBroadphase, Entry, encode};
use crate::masks::{self, ChunkState};
use voxterra_core::{PhysicsChunkKey, Region, VoxelRead};

/// A broken invariant of a [`BitBroadphase`], naming the chunk or slab slot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidMasks {
    /// A chunk's entry points past the mask slab.
    #[error("chunk {0:?} points past the mask slab")]
    SlabIndex([i32; 3]),
    /// Two chunks share one slab slot, or a free slot is in use.
    #[error("slab slot {0} is used twice")]
    SharedSlot(u32),
    /// A slab slot is neither used nor free.
    #[error("slab slot {0} is neither used nor free")]
    LostSlot(u32),
    /// The dense window disagrees with the map.
    #[error("the lookup window disagrees with the map at chunk {0:?}")]
    Window([i32; 3]),
    /// A chunk's masks differ from a rebuild from the voxels (or a chunk with solid or water is
    /// missing, or one without is held).
    #[error("chunk {0:?} differs from a rebuild from the voxels")]
    Stale([i32; 3]),
}

impl BitBroadphase {
    /// Checks every invariant: each slab slot used by one chunk or free, never both; the dense
    /// window (when current) equal to the map; and every physics chunk in `region` (voxel units)
    /// equal to a rebuild from `source` (held exactly when it has solid or water). For tests;
    /// rebuilds every chunk of the region.
    pub fn validate(&self, source: &impl VoxelRead, region: &Region) -> Result<(), InvalidMasks> {
        self.validate_where(source, region, |_| true)
    }

    /// [`validate`](Self::validate) where only the chunks `known` says are known hold masks (a
    /// terrain holding part of its world: elsewhere no chunk may hold any).
    pub fn validate_where(
        &self,
        source: &impl VoxelRead,
        region: &Region,
        known: impl Fn(PhysicsChunkKey) -> bool,
    ) -> Result<(), InvalidMasks> {
        let mut used = vec![false; self.slab.len()];
        for (key, e) in &self.chunks {
            if let Entry::Masks(i) = *e {
                let slot = used.get_mut(i as usize).ok_or(InvalidMasks::SlabIndex(key.to_array()))?;
                if std::mem::replace(slot, true) {
                    return Err(InvalidMasks::SharedSlot(i));
                }
            }
        }
        for &i in &self.free {
            let slot = used.get_mut(i as usize).ok_or(InvalidMasks::LostSlot(i))?;
            if std::mem::replace(slot, true) {
                return Err(InvalidMasks::SharedSlot(i));
            }
        }
        if let Some(i) = used.iter().position(|u| !u) {
            return Err(InvalidMasks::LostSlot(i as u32));
        }
        if let (Some(w), false) = (&self.window, self.window_stale) {
            let mut filled = 0;
            for (key, e) in &self.chunks {
                let i = w.index(key.to_array().map(i64::from)).ok_or(InvalidMasks::Window(key.to_array()))?;
                if w.slots[i] != encode(*e) {
                    return Err(InvalidMasks::Window(key.to_array()));
                }
                filled += 1;
            }
            if w.slots.iter().filter(|&&v| v != 0).count() != filled {
                return Err(InvalidMasks::Window([0; 3]));
            }
        }
        for key in PhysicsChunkKey::range(region).iter().flat_map(|r| r.iter()) {
            let held: Option<ChunkState> = self.chunks.get(&key).map(|e| self.state(*e));
            let fresh = if known(key) { masks::build(source, key, self.solid, self.liquid) } else { None };
            if fresh != held {
                return Err(InvalidMasks::Stale(key.to_array()));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use voxterra_core::{DenseVoxels, MaterialTable, VoxelPos, VoxelWrite, materials};

    /// Masks built from one world are valid against it and stale against another.
    #[test]
    fn masks_are_checked_against_the_voxels() {
        let world = Region::from_min_size(VoxelPos::new(0, 0, 0), [24, 16, 24]).unwrap();
        let mut a = DenseVoxels::new(world, 1 << 20).unwrap();
        a.fill(
            &Region::from_min_size(VoxelPos::new(0, 0, 0), [24, 4, 24]).unwrap(),
            voxterra_core::Voxel::full(materials::ROCK),
        )
        .unwrap();
        let mut b = a.clone();
        b.fill(
            &Region::from_min_size(VoxelPos::new(8, 4, 8), [4, 4, 4]).unwrap(),
            voxterra_core::Voxel::full(materials::ROCK),
        )
        .unwrap();
        let mut bp = BitBroadphase::new(&MaterialTable::default(), 1.0).unwrap();
        bp.rebuild_region(&a, &world);
        assert_eq!(bp.validate(&a, &world), Ok(()));
        assert!(matches!(bp.validate(&b, &world), Err(InvalidMasks::Stale(_))));
        bp.rebuild_region(&b, &world);
        assert_eq!(bp.validate(&b, &world), Ok(()));
    }
}
