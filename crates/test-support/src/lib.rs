//! # voxterra-test-support
//!
//! What voxterra's tests and benches share, so each suite builds its scenes the same way: a
//! seeded generator ([`Rng`]), grid meshes ([`grid_mesh`]), height-field voxels
//! ([`height_field`]), random ground for differential tests ([`ground`]: ridges, creases, bowls,
//! overhangs, thin walls and necks by signed distance, far from the origin too), exact f64
//! references for the collision queries ([`reference`]: closest points, separating axes, polytope
//! distances, ray crossings) and the fuzz corpus replay ([`replay_corpus`]). It depends on
//! `voxterra-core` only, so every crate can take it as a dev-dependency. Not published.
//!
//! ```
//! use voxterra_test_support::{Rng, grid_mesh};
//! let mut rng = Rng::new(7);
//! let mesh = grid_mesh(4, 0.5, |x, z| (x + z) * 0.1);
//! assert_eq!(mesh.triangles.len(), 32);
//! assert!(rng.range(1.0, 2.0) >= 1.0);
//! ```

#![forbid(unsafe_code)]

pub mod ground;
pub mod reference;

use std::path::Path;
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Material, Region, TriangleMesh, Voxel, VoxelPos};

/// A small deterministic generator (SplitMix64): the same seed, the same numbers, everywhere.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// Uniform in `0..n` as a voxel coordinate (`n > 0`).
    pub fn coord(&mut self, n: u32) -> i32 {
        (self.next_u64() % u64::from(n.max(1))) as i32
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32)
    }
}

/// An `n` × `n` grid of square cells `cell` wide whose corner `(i, j)` stands at
/// `height(i, j)` (grid indices), two triangles a cell, counter-clockwise from above (their fronts
/// face +y).
pub fn grid_mesh(n: u32, cell: f32, height: impl Fn(f32, f32) -> f32) -> TriangleMesh {
    let mut mesh = TriangleMesh::default();
    for z in 0..=n {
        for x in 0..=n {
            mesh.positions.push(Point3::new(x as f32 * cell, height(x as f32, z as f32), z as f32 * cell));
        }
    }
    for z in 0..n {
        for x in 0..n {
            let i = z * (n + 1) + x;
            mesh.triangles.push([i, i + n + 1, i + 1]);
            mesh.triangles.push([i + 1, i + n + 1, i + n + 2]);
        }
    }
    mesh
}

/// The voxels of `region` (buffer order) for ground of `material` under `origin.y + height(x, z)`
/// (`x`, `z` and the height in voxels from the region's minimum corner, sampled at column
/// centers), the surface between voxel centers by fractional occupancy.
pub fn height_field(region: &Region, material: Material, height: impl Fn(f32, f32) -> f32) -> Vec<Voxel> {
    let min = region.min();
    region
        .iter()
        .map(|p: VoxelPos| {
            let local = p - min;
            let h = height(local.x as f32 + 0.5, local.z as f32 + 0.5);
            let occupancy = (h - local.y as f32).clamp(0.0, 1.0);
            if occupancy > 0.0 { Voxel::with_occupancy(material, occupancy) } else { Voxel::AIR }
        })
        .collect()
}

/// Runs `body` on every file of the committed fuzz corpus `fuzz/corpus/<target>/`, as the fuzz
/// target would; panics when the corpus is missing or empty.
pub fn replay_corpus(target: &str, body: impl Fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap_or_else(|e| panic!("{}: {e}", dir.display())).path();
        if path.is_file() {
            body(&std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())));
            n += 1;
        }
    }
    assert!(n > 0, "the corpus of {target} is empty");
}
