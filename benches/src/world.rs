//! The benchmark world: the default procedural world, in the store and as a dense array.

use voxterra_core::{DenseVoxels, VoxelRead};
use voxterra_voxel_store::VoxelStore;
use voxterra_worldgen::{GenParams, generate};

/// The default world in both representations.
pub struct BenchWorld {
    /// Its parameters.
    pub params: GenParams,
    /// The row-packed store.
    pub store: VoxelStore,
    /// The same voxels in a dense array over the world's region.
    pub dense: DenseVoxels,
}

/// Generates the benchmark world: [`GenParams::default`], or a quarter of it (256 × 128 × 256)
/// when `quick`.
pub fn bench_world(quick: bool) -> BenchWorld {
    let params = if quick { GenParams::new(1, [256, 128, 256]) } else { GenParams::default() };
    let region = params.region().expect("the benchmark world's size is valid");
    let mut store = VoxelStore::new();
    generate(&params, &mut store, |_, _| {}).expect("the store accepts the world");
    let mut dense = DenseVoxels::new(region, usize::MAX).expect("dense array of the world");
    store.read_box(&region, dense.as_mut_slice()).expect("buffer sized from the region");
    BenchWorld { params, store, dense }
}

/// The seeded generator the suites draw query positions from.
pub use voxterra_test_support::Rng;
