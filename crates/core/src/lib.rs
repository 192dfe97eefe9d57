//! # voxterra-core
//!
//! The bottom of the voxterra stack: the types every other crate speaks, and the small traits they
//! compose through. Nothing here stores, meshes or collides; it only names things.
//!
//! - [`Voxel`]: a [`Material`] id (0..=63, 0 is Air) and an occupancy byte, two bytes. Occupancy
//!   byte `v` means `(v + 1) / 256` for non-air and 0 for Air; Air never carries occupancy.
//! - [`MaterialTable`]: what each material is (air, solid or liquid; smooth or sharp; friction,
//!   restitution, color), with a default palette ([`materials`]).
//! - [`VoxelPos`] and [`Region`]: integer coordinates (Y up) and half-open boxes of them. Dense
//!   buffers are laid out X fastest, then Z, then Y.
//! - [`StoreChunkKey`] (32³ storage chunks) and [`PhysicsChunkKey`] (8³ physics chunks): distinct
//!   key types, so one cannot be passed where the other belongs.
//! - [`Aabb`], [`Ray`], [`ray_triangle`]: f32 geometry on nalgebra 0.35, re-exported as
//!   [`nalgebra`]. Every type here is voxterra's own, so all of them are nalgebra; parry's and
//!   rapier's glam types appear only where a crate takes a parry shape, converted by
//!   `voxterra_narrowphase::convert`.
//! - The traits: [`VoxelRead`] / [`VoxelWrite`] (a box into a dense buffer, rows along X, writes
//!   that report their dirty region), [`TriangleSource`] (a mesh without copying, f32 or 16-bit
//!   quantized positions, packed 9-bit, u16 or u32 indices; [`EdgeFlags`] beside them),
//!   [`TriangleIndex`] (AABB and ray queries over triangles), [`Broadphase`]
//!   (moving proxies). Each has a simple reference implementation here — [`DenseVoxels`],
//!   [`BruteForceTriangles`], [`BruteForceBroadphase`] — that the fast ones are tested against.
//!
//! ```
//! use voxterra_core::{materials, DenseVoxels, Region, Voxel, VoxelPos, VoxelRead, VoxelWrite};
//!
//! let region = Region::from_min_size(VoxelPos::new(0, 0, 0), [4, 4, 4])?;
//! let mut dense = DenseVoxels::new(region, 1 << 20)?;
//! let ground = Region::from_min_size(VoxelPos::new(0, 0, 0), [4, 1, 4])?;
//! let dirty = dense.fill(&ground, Voxel::full(materials::GRASS))?;
//! assert_eq!(dirty, Some(ground));
//! assert_eq!(dense.voxel(VoxelPos::new(3, 0, 3)).material(), materials::GRASS);
//! # Ok::<(), voxterra_core::CoreError>(())
//! ```
//!
//! Features: `serde` derives Serialize/Deserialize (the material table validates on the way in).

#![forbid(unsafe_code)]

mod broadphase;
mod chunk_key;
mod error;
mod geometry;
mod material;
mod region;
mod triangles;
mod voxel;
mod voxel_io;

pub use broadphase::{Broadphase, BruteForceBroadphase, ProxyError, ProxyId, ProxyMove};
pub use chunk_key::{
    ChunkKey, ChunkRange, PHYSICS_CHUNK_SHIFT, PhysicsChunkKey, STORE_CHUNK_SHIFT, StoreChunkKey,
};
pub use error::CoreError;
pub use geometry::{Aabb, Culling, Ray, RayHit, ray_triangle};
pub use material::{MaterialInfo, MaterialKind, MaterialTable, SurfaceShape, materials};
pub use region::{DirtyBounds, Region, VoxelPos};
pub use triangles::{
    BruteForceTriangles, EdgeFlags, Positions, QuantizedPositions, TriangleIndex, TriangleIndices,
    TriangleMesh, TriangleSource, check_indices, pack9, unpack9,
};
pub use voxel::{Material, Voxel};
pub use voxel_io::{DenseVoxels, VoxelRead, VoxelWrite};

/// nalgebra, re-exported so users name the same version voxterra uses.
pub use nalgebra;
