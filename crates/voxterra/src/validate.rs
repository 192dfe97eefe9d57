//! [`Terrain::validate`]: every structure the terrain keeps, checked against the voxels.

use crate::error::InvalidTerrain;
use crate::terrain::Terrain;

impl Terrain {
    /// Checks every invariant the terrain keeps: the store's (packed rows, mips, no all-Air
    /// chunk), the masks' (each physics chunk around the stored voxels equal to a rebuild from
    /// them), the collision cache's (each entry equal to a fresh build, its byte count, each
    /// chunk's box in the ray tree) and the delta log's (numbering, bytes). For tests, after
    /// mutations: it rebuilds every chunk's masks and every cached chunk, so it costs as much as
    /// building the world's collision data.
    pub fn validate(&self) -> Result<(), InvalidTerrain> {
        self.store.validate()?;
        if let Some(extent) = self.extent() {
            // A paged terrain holds masks only over resident chunks.
            let known =
                |k: voxterra_core::PhysicsChunkKey| k.region().is_ok_and(|r| self.is_resident(r.min()));
            self.masks.validate_where(&self.store, &extent.expanded(1), known)?;
        }
        self.cache.validate(&self.mesher, &self.store)?;
        let may_hold = |k| crate::chunk_tree::may_hold_surface(&self.masks, &self.store, k);
        let keys = self.masks.chunks().into_iter().map(|(k, _)| k);
        self.cache.validate_tree(&self.mesher, &self.store, keys, may_hold)?;
        self.log.validate()
    }
}
