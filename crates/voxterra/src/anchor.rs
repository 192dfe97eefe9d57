//! What holds terrain up: which voxels count as solid for that ([`holds`]), and the world's
//! lowest solid layer ([`LowestSolid`]), the default anchor of the detached-piece search.

use std::sync::atomic::{AtomicI64, Ordering};
use voxterra_core::{MaterialTable, Region, Voxel};
use voxterra_voxel_store::{CHUNK_SIZE, VoxelStore};

/// The six face neighbors' offsets: pieces are face-connected.
pub(crate) const FACES: [[i32; 3]; 6] = [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]];

/// Whether a voxel of `table` holds terrain up (a solid material at an occupancy byte of 128 or more: the mesher's inside).
pub(crate) fn holds(table: &MaterialTable, v: Voxel) -> bool {
    table.is_solid(v) && v.occupancy_byte() >= 128
}

/// The lowest layer holding a solid voxel, found by a scan of the lowest chunks and kept until an
/// edit reaches down to it. Atomic so that `&Terrain` queries may fill it from any thread.
#[derive(Debug)]
pub(crate) struct LowestSolid(AtomicI64);

impl LowestSolid {
    const UNKNOWN: i64 = i64::MAX;
    const NONE: i64 = i64::MIN;

    pub(crate) fn unknown() -> Self {
        LowestSolid(AtomicI64::new(Self::UNKNOWN))
    }

    /// After a write to `dirty`: solid added below the layer lowers it, solid removed from it may
    /// raise it; writes wholly above it change nothing.
    pub(crate) fn written(&self, dirty: &Region) {
        let known = self.0.load(Ordering::Relaxed);
        if known == Self::NONE || known == Self::UNKNOWN || i64::from(dirty.min().y) <= known {
            self.0.store(Self::UNKNOWN, Ordering::Relaxed);
        }
    }

    pub(crate) fn get(&self, store: &VoxelStore, table: &MaterialTable) -> Option<i32> {
        let known = self.0.load(Ordering::Relaxed);
        if known != Self::UNKNOWN {
            return (known != Self::NONE).then_some(known as i32);
        }
        let found = scan_lowest_solid(store, table);
        self.0.store(found.map_or(Self::NONE, i64::from), Ordering::Relaxed);
        found
    }
}

/// Chunks in key order (lowest layer first), each read only below the best layer found so far;
/// packed rows answer without reading their voxels.
fn scan_lowest_solid(store: &VoxelStore, table: &MaterialTable) -> Option<i32> {
    let mut best: Option<i64> = None;
    for key in store.chunk_keys() {
        let base = i64::from(key.y) * CHUNK_SIZE as i64;
        let rows = best.map_or(CHUNK_SIZE as i64, |b| b - base).clamp(0, CHUNK_SIZE as i64) as usize;
        if rows == 0 {
            break;
        }
        let Some(chunk) = store.chunk(key) else { continue };
        'rows: for y in 0..rows {
            for z in 0..CHUNK_SIZE {
                let holds = match chunk.packed_row(y, z) {
                    Some(m) => holds(table, Voxel::full(m)),
                    None => chunk.row(y, z).iter().any(|&v| holds(table, v)),
                };
                if holds {
                    best = Some(base + y as i64);
                    break 'rows;
                }
            }
        }
    }
    best.map(|b| b as i32)
}
