//! # voxterra-worldgen
//!
//! Deterministic procedural voxel worlds: voxterra's embedded default content and the world every
//! benchmark runs on. Noise heights over four blended biomes (dunes, plains, hills, ridged mountains
//! with snow), canyons that cut the low biomes and flood into rivers, caves carved by 3D noise, a
//! water level (frozen in cold regions), materials by biome, depth and slope, and fractional
//! occupancy at every surface so the meshed surface is smooth.
//!
//! - [`GenParams`]: seed, size, origin, and a guard against sizes that exhaust memory.
//! - [`generate`]: writes the world into anything that implements [`voxterra_core::VoxelWrite`],
//!   generating tiles in parallel (rayon). Same parameters, identical voxels, whatever the thread count.
//! - [`TerrainModel`]: the model itself, for callers that want single columns or voxels.
//!
//! ```
//! use voxterra_core::{DenseVoxels, VoxelRead};
//! use voxterra_worldgen::{generate, GenParams};
//!
//! let params = GenParams::new(7, [48, 48, 48]);
//! let mut dense = DenseVoxels::new(params.region()?, 1 << 20).unwrap();
//! let stats = generate(&params, &mut dense, |_, _| {}).unwrap();
//! assert!(stats.non_empty_voxels > 0);
//! assert!(!dense.voxel(voxterra_core::VoxelPos::new(10, 0, 10)).is_air()); // solid at the bottom
//! # Ok::<(), voxterra_worldgen::GenError>(())
//! ```

#![forbid(unsafe_code)]

mod generate;
mod params;
mod terrain_model;

pub use generate::{GenStats, generate, generate_region};
pub use params::{GenError, GenParams};
pub use terrain_model::{Biome, Column, TerrainModel};
