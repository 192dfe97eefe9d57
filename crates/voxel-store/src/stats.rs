//! Memory statistics.

/// Where a store's memory goes. Every heap byte the store owns is counted, the hash table included.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[non_exhaustive]
pub struct StoreStats {
    /// Chunks held (all-air chunks are never held).
    pub chunks: usize,
    /// Level-0 rows stored as cell data.
    pub allocated_rows: usize,
    /// Level-0 rows stored as a header only.
    pub packed_rows: usize,
    /// Level-0 row headers and cells.
    pub voxel_bytes: usize,
    /// The three mips' headers and cells.
    pub mip_bytes: usize,
    /// The hash table (keys, chunk structs, control bytes).
    pub map_bytes: usize,
    /// Everything above.
    pub total_bytes: usize,
    /// Voxels that are not Air.
    pub non_empty_voxels: u64,
}

impl StoreStats {
    /// Total bytes per non-air voxel (0 for an empty store): the article's figure of merit.
    pub fn bytes_per_non_empty_voxel(&self) -> f64 {
        if self.non_empty_voxels == 0 { 0.0 } else { self.total_bytes as f64 / self.non_empty_voxels as f64 }
    }
}
