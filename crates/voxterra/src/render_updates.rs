//! Which storage chunks' render meshes edits have changed since a renderer last asked.

use std::collections::BTreeSet;
use voxterra_core::{Region, StoreChunkKey};

/// The storage chunks whose render mesh reads voxels that changed, in key order.
#[derive(Debug, Default, Clone)]
pub(crate) struct RenderUpdates {
    dirty: BTreeSet<StoreChunkKey>,
}

impl RenderUpdates {
    /// Marks the chunks whose render mesh reads `changed`: a mesh reads one voxel past its chunk.
    pub(crate) fn mark(&mut self, changed: &Region) {
        if let Some(range) = StoreChunkKey::range(&changed.expanded(1)) {
            self.dirty.extend(range.iter());
        }
    }

    /// The marked chunks, in key order; none are marked after.
    pub(crate) fn take(&mut self) -> Vec<StoreChunkKey> {
        std::mem::take(&mut self.dirty).into_iter().collect()
    }
}
