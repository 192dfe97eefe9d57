//! The benchmark world: the default procedural world, in the store and as a dense array.

use voxterra_core::{DenseVoxels, VoxelRead};
use voxterra_voxel_store::VoxelStore;
use voxterra_worldgen::{WorldParams, generate};

/// The default world in both representations.
pub struct BenchWorld {
    /// Its parameters.
    pub params: WorldParams,
    /// The row-packed store.
    pub store: VoxelStore,
    /// The same voxels in a dense array over the world's region.
    pub dense: DenseVoxels,
}

/// Generates the benchmark world: [`WorldParams::default`], or a quarter of it (256 × 128 × 256)
/// when `quick`.
pub fn bench_world(quick: bool) -> BenchWorld {
    let params = if quick { WorldParams::new(1, [256, 128, 256]) } else { WorldParams::default() };
    let region = params.region().expect("the benchmark world's size is valid");
    let mut store = VoxelStore::new();
    generate(&params, &mut store, |_, _| {}).expect("the store accepts the world");
    let mut dense = DenseVoxels::new(region, usize::MAX).expect("dense array of the world");
    store.read_box(&region, dense.as_mut_slice()).expect("buffer sized from the region");
    BenchWorld { params, store, dense }
}

/// A small deterministic generator (splitmix64) for query positions.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u32) -> i32 {
        (self.next_u64() % n as u64) as i32
    }
}
