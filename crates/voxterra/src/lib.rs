//! # voxterra
//!
//! Smooth voxel terrain that games and simulations edit live and collide against. This facade
//! crate gathers voxterra's layers under one name; each layer is also its own crate, usable alone:
//!
//! | module | crate | what it is for |
//! | --- | --- | --- |
//! | [`core`] | voxterra-core | voxels, materials, regions, AABBs, rays, the small traits |
//! | [`store`] | voxterra-voxel-store | sparse row-packed 32³ chunks with mips; fast reads, dirty regions |
//! | [`worldgen`] | voxterra-worldgen | deterministic procedural worlds (the default content) |
//!
//! Compression, meshing and collision crates join as they land; the facade's `Terrain` (store +
//! broadphase masks + lazy collision cache) and `World` (bodies) come after them.
//!
//! ```
//! use voxterra::core::{VoxelPos, VoxelRead};
//! use voxterra::store::VoxelStore;
//! use voxterra::worldgen::{generate, WorldParams};
//!
//! let mut store = VoxelStore::new();
//! let params = WorldParams::new(3, [64, 64, 64]);
//! generate(&params, &mut store, |_, _| {}).unwrap();
//! assert!(!store.voxel(VoxelPos::new(5, 0, 5)).is_air());
//! println!("{:.2} bytes per non-empty voxel", store.memory_stats().bytes_per_non_empty_voxel());
//! ```

#![forbid(unsafe_code)]

pub use voxterra_core as core;
pub use voxterra_voxel_store as store;
pub use voxterra_worldgen as worldgen;
