//! # voxterra-bit-broadphase
//!
//! The terrain broadphase from the Roblox terrain-physics article: for every 8³ physics chunk, a
//! *solid* and a *water* bit mask, each voxel's bit set when the voxel or any of its 26 neighbors
//! holds solid (or water), because the mesher's geometry may spill one voxel out of its voxel. A
//! moving body's box is tested against the masks bit-parallel — a whole 8×8 Y slice per AND — so
//! bodies hanging in caves or flying over terrain get no narrowphase work at all.
//!
//! - [`BitBroadphase`]: the sparse map of chunks ([`ChunkState`]: all-solid and all-water chunks are
//!   tags, empty ones are absent); [`rebuild_chunk`](BitBroadphase::rebuild_chunk),
//!   [`rebuild_region`](BitBroadphase::rebuild_region) (parallel, same result as serial),
//!   [`query`](BitBroadphase::query) (per touching chunk: solid, water or both; no allocation).
//! - [`BodyContacts`] and [`BitBroadphase::update_contacts`]: contacts added and removed as a body
//!   moves, at most one solid and one water contact per body–chunk pair.
//! - [`reference`]: the brute-force version the tests and benches compare against.
//!
//! Masks are built from the 10³ box around each chunk, read through [`voxterra_core::VoxelRead`],
//! and dilated with bit operations (shift-or along X, OR of neighboring rows along Z and Y). The
//! material table decides what is solid and what is water.
//!
//! ```
//! use voxterra_bit_broadphase::{BitBroadphase, Touch};
//! use voxterra_core::{materials, Aabb, DenseVoxels, MaterialTable, Region, Voxel, VoxelPos, VoxelWrite};
//! use voxterra_core::nalgebra::Point3;
//!
//! // A floor of rock at y = 0..4 and a pond of water on top of part of it.
//! let world = Region::from_min_size(VoxelPos::new(0, 0, 0), [32, 16, 32])?;
//! let mut voxels = DenseVoxels::new(world, 1 << 20)?;
//! voxels.fill(&Region::from_min_size(VoxelPos::new(0, 0, 0), [32, 4, 32])?, Voxel::full(materials::ROCK))?;
//! voxels.fill(&Region::from_min_size(VoxelPos::new(0, 4, 0), [8, 2, 8])?, Voxel::full(materials::WATER))?;
//!
//! let mut bp = BitBroadphase::new(&MaterialTable::default(), 1.0).unwrap();
//! bp.rebuild_region(&voxels, &world);
//!
//! // A body standing on the rock touches solid; one high above touches nothing.
//! let feet = Aabb::new(Point3::new(20.0, 4.0, 20.0), Point3::new(21.0, 6.0, 21.0));
//! let mut hits = vec![];
//! bp.query(&feet, |chunk, touch| hits.push((chunk, touch)));
//! assert!(hits.iter().any(|(_, t)| t.solid));
//! let sky = Aabb::new(Point3::new(20.0, 12.0, 20.0), Point3::new(21.0, 14.0, 21.0));
//! bp.query(&sky, |_, _| panic!("nothing up there"));
//! # Ok::<(), voxterra_core::CoreError>(())
//! ```

#![forbid(unsafe_code)]

mod contacts;
mod mask_map;
mod masks;
pub mod reference;
mod validate;

pub use contacts::{BodyContacts, Contact, ContactEvent, ContactKind};
pub use mask_map::{BitBroadphase, BroadphaseError, BroadphaseStats, Touch};
pub use masks::{ChunkState, Masks, PHYS_SHIFT, PHYS_SIZE, neighborhood};
pub use validate::InvalidMasks;
