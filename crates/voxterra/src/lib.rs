//! # voxterra
//!
//! Smooth voxel terrain that games and simulations edit live and collide against. This facade
//! crate gathers voxterra's layers under one name; each layer is also its own crate, usable alone:
//!
//! | module | crate | what it is for |
//! | --- | --- | --- |
//! | [`core`] | voxterra-core | voxels, materials, regions, AABBs, rays, the small traits |
//! | [`store`] | voxterra-voxel-store | sparse row-packed 32³ chunks with mips; fast reads, dirty regions |
//! | [`codec`] | voxterra-codec | the RLE voxel format, LZ4, terrain files, undo snapshots |
//! | [`terrain_broadphase`] | voxterra-bit-broadphase | dilated 8³ solid/water masks, bit-parallel box queries, contacts |
//! | [`kdtree`] | voxterra-kdtree | the loose kD tree over triangles (8-byte nodes): AABB and ray queries |
//! | [`mesher`] | voxterra-mesher | dual surface extraction: smooth or sharp vertices, seamless chunks, render and physics meshes |
//! | [`narrowphase`] | voxterra-narrowphase | contacts between convex shapes and triangle sets, manifolds of at most 4 points |
//! | [`dynamic_aabb_tree`] | voxterra-dynamic-aabb-tree | the broadphase between moving bodies |
//! | [`worldgen`] | voxterra-worldgen | deterministic procedural worlds (the default content) |
//! | [`chunk_db`] | voxterra-chunk-db | a world's chunk records in a transactional database (redb) |
//!
//! [`Terrain`] is the value a game holds: the voxels, the material table, the voxel size (the
//! one factor between world units and voxel indices), the terrain broadphase's masks kept current by every edit, and an undo
//! history of RLE snapshots. Brushes (sphere, box, capsule; add, subtract, paint, smooth), fills
//! and voxel writes report the dirty region and the physics chunks whose masks they rebuilt.
//! [`DurableTerrain`] keeps one in a chunk database, each edit committed before it returns; a
//! paged terrain ([`Terrain::paged`], [`paging`]) holds only the chunks in use, so a world may be
//! larger than memory.
//!
//! ```
//! use voxterra::prelude::*;
//! use voxterra::worldgen::GenParams;
//!
//! let mut terrain = Terrain::generate(&GenParams::new(3, [64, 48, 64]), TerrainConfig::default())?;
//! let crater = Brush { shape: BrushShape::Sphere { center: Point3::new(32.0, 20.0, 32.0), radius: 4.0 }, op: BrushOp::Subtract };
//! let report = terrain.apply_brush(&crater)?;
//! assert!(report.dirty.is_some() && report.masks_rebuilt > 0);
//! let hill = Brush { shape: BrushShape::Sphere { center: Point3::new(10.0, 30.0, 10.0), radius: 3.0 }, op: BrushOp::Add(materials::ROCK) };
//! terrain.apply_brush(&hill)?;
//! terrain.undo()?; // the hill goes, bit for bit
//! assert_eq!((terrain.history().undo, terrain.history().redo), (1, 1));
//!
//! // A ray straight down into the crater, then a ball resting where it hits: contacts from the
//! // chunks around it, in world units.
//! let down = Ray::new(Point3::new(32.0, 60.0, 32.0), -Vector3::y());
//! let hit = terrain.cast_ray(&down, 100.0)?.expect("the crater's floor");
//! assert!(hit.normal.y > 0.5);
//! let ball = SharedShape::ball(1.0);
//! let pose = Pose::translation(32.0, hit.point.y + 0.99, 32.0);
//! let mut manifolds = Vec::new();
//! terrain.contacts(&*ball, &pose, 0.02, &mut manifolds)?;
//! assert!(manifolds.iter().any(|m| m.manifold.min_dist() < 0.0));
//! assert!(terrain.cache_stats().builds > 0);
//! # Ok::<(), voxterra::TerrainError>(())
//! ```
//!
//! ## Which entry point
//!
//! | you want | use |
//! | --- | --- |
//! | terrain you edit and collide against, with your own physics | [`Terrain`] |
//! | bodies over it without a physics engine (pairs, contact events, rays over both) | [`World`] (owns a `Terrain`) |
//! | the terrain as a rapier collider | the `voxterra-rapier` crate (`RapierTerrain`, `dispatcher()`) |
//! | far terrain to draw, around viewers | [`lod::LodView`] |
//! | a server streaming terrain and edits to clients | [`replication::ReplicationServer`], [`replication::ReplicaClient`] |
//!
//! ## [`Terrain`] by theme
//!
//! | theme | calls |
//! | --- | --- |
//! | make, load, save | [`Terrain::new`], [`Terrain::from_store`], [`Terrain::generate`], [`Terrain::load`], [`Terrain::save`] (each `_with_progress` too), [`Terrain::config`], [`Terrain::reconfigure`] |
//! | read | [`Terrain::voxel`], [`Terrain::store`], [`Terrain::materials`], [`Terrain::voxel_size`], [`Terrain::scale`], [`Terrain::extent`], [`Terrain::revision`] |
//! | edit | [`Terrain::apply_brush`], [`Terrain::fill`], [`Terrain::set_voxel`], [`Terrain::undo`], [`Terrain::redo`], [`Terrain::history`] |
//! | collision readiness | [`Terrain::prepare`] (within a [`PrepareBudget`]), [`Terrain::cache_stats`], [`Terrain::cached_chunk`], [`Terrain::cached_chunks`] |
//! | contacts | [`Terrain::contacts`], [`Terrain::contacts_kept`] (with a [`TerrainContactCache`], and the points), [`Terrain::intersects`] |
//! | rays, casts, points | [`Terrain::cast_ray`], [`Terrain::cast_rays`], [`Terrain::cast_shape`] (characters), [`Terrain::sweep_shape`] (continuous collision), [`Terrain::project_point`] |
//! | masks | [`Terrain::masks`], [`Terrain::solid_chunks`], [`Terrain::overlap`] |
//! | pieces cut loose | [`Terrain::find_detached`], [`Terrain::take_detached`], [`Terrain::is_holding`], [`Terrain::anchor_layer`] |
//! | render | [`Terrain::take_render_updates`], [`Terrain::render_meshes_of`], [`Terrain::render_chunks`], [`Terrain::lod_mesh`] |
//! | replicas | [`Terrain::edits_since`], [`Terrain::apply_delta`], [`Terrain::sequence`], [`Terrain::set_sequence`] |
//!
//! Units: everything physical is in world units (poses, boxes, rays, distances, the prediction,
//! contact points); voxel addresses ([`core::VoxelPos`], [`core::Region`]: `fill`, `set_voxel`,
//! `voxel`, an edit's `dirty` box) are voxel indices; [`TerrainConfig::voxel_size`] is the one
//! factor between them, and [`VoxelScale`] ([`Terrain::scale`]) converts. A ray's `t` is in units of its direction's length. Every query works
//! from `&self`: a chunk the cache lacks is built by the query that meets it, so physics engines
//! and parallel callers share one cache. Errors are per operation ([`ConfigError`],
//! [`LoadError`], [`EditError`], [`QueryError`], [`DeltaError`]; [`TerrainError`] is any).
//!
//! [`World`] holds bodies over a terrain: each [`World::step`] settles the moved bodies' boxes in
//! the dynamic AABB tree (body–body pairs), tracks each body's terrain contacts per physics chunk
//! (solid and water), builds the collision data those contacts need, and reports what started and
//! stopped as [`WorldEvent`]s; [`World::contacts`] gives the manifolds, [`World::cast_ray`] and
//! [`World::cast_shape`] cover bodies and terrain together.
//!
//! ## Whose types
//!
//! Shapes, and the poses and velocities that place them, are parry 0.31's — the types a rapier
//! 0.36 or parry user already holds (glam: [`parry3d::math::Pose`], [`parry3d::math::Vector`]),
//! re-exported here as [`parry3d`]. Everything voxterra owns is nalgebra 0.35 (the version
//! rapier uses inside, re-exported as `voxterra::core::nalgebra`): voxel positions, regions,
//! boxes, rays, brushes, and what queries return (contact points and manifolds, ray and cast
//! hits, projections). [`convert`] turns one into the other, bit for bit
//! (`Point3::from_parry(v)`, `hit.point.to_parry()`).
//!
//! ```
//! use voxterra::core::{VoxelPos, VoxelRead};
//! use voxterra::store::VoxelStore;
//! use voxterra::worldgen::{generate, GenParams};
//!
//! let mut store = VoxelStore::new();
//! let params = GenParams::new(3, [64, 64, 64]);
//! generate(&params, &mut store, |_, _| {}).unwrap();
//! assert!(!store.voxel(VoxelPos::new(5, 0, 5)).is_air());
//! println!("{:.2} bytes per non-empty voxel", store.stats().bytes_per_non_empty_voxel());
//! ```
//!
//! Saving and loading a store:
//!
//! ```no_run
//! # use voxterra::store::VoxelStore;
//! let store = VoxelStore::new();
//! let table = voxterra::core::MaterialTable::default();
//! voxterra::save("world.vxt", &store, &table, |_, _| {})?;
//! let (store, table) = voxterra::load("world.vxt", |_, _| {})?;
//! # Ok::<(), voxterra::codec::TerrainFileError>(())
//! ```

#![forbid(unsafe_code)]

mod anchor;
mod atomic_file;
mod brush;
mod chunk_record;
mod chunk_source;
mod chunk_tree;
mod collision_cache;
mod config;
mod cut;
mod delta;
mod delta_log;
pub mod detach;
mod durable;
mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzz;
mod history;
pub mod lod;
mod pager;
pub mod paging;
mod piece;
pub mod reach;
mod readiness;
mod render_updates;
pub mod replication;

/// What the collision cache holds, for debug drawing and tests ([`Terrain::cache_stats`],
/// [`Terrain::cached_chunk`]).
pub mod cache {
    pub use crate::collision_cache::{CacheStats, ChunkCollision, ChunkData};
}
mod terrain;
mod terrain_point;
mod terrain_query;
mod terrain_ray;
mod units;
mod validate;
mod workspace;
mod world;
mod world_query;
mod world_step;

pub use atomic_file::AtomicFile;
pub use brush::{Brush, BrushOp, BrushShape};
pub use chunk_record::{CHUNK_VOXELS, decode_chunk, encode_chunk};
pub use config::{
    DEFAULT_CACHE_BYTES, DEFAULT_DELTA_LOG_BYTES, DEFAULT_HISTORY_BYTES, DEFAULT_MAX_EDIT_VOXELS,
    DEFAULT_RESIDENT_BYTES, DetachConfig, TerrainConfig,
};
pub use durable::{
    DurableTerrain, META_DELTAS_FROM, META_GENERATOR, META_MATERIALS, META_SEQUENCE, META_VOXEL_SIZE,
    stored_generator, write_world,
};
pub use error::{
    ConfigError, DeltaError, DurableError, EditError, HistoryStep, InvalidTerrain, LoadError, PageError,
    QueryError, TerrainError,
};
pub use readiness::{PrepareBudget, Readiness};
pub use terrain::{EditReport, HistoryStats, Terrain};
pub use terrain_point::TerrainProjection;
pub use terrain_query::{TerrainContactCache, TerrainContactPoint, TerrainManifold};
pub use terrain_ray::TerrainRayHit;
pub use units::VoxelScale;
pub use world::{Body, BodyDesc, BodyHandle, World, WorldConfig, WorldError, WorldEvent};
pub use world_query::{BodyManifold, HitTarget, WorldContacts, WorldRayHit, WorldShapeHit};
pub use world_step::StepReport;

pub use voxterra_bit_broadphase as terrain_broadphase;
pub use voxterra_chunk_db as chunk_db;
pub use voxterra_codec as codec;
pub use voxterra_core as core;
pub use voxterra_dynamic_aabb_tree as dynamic_aabb_tree;
pub use voxterra_kdtree as kdtree;
pub use voxterra_mesher as mesher;
pub use voxterra_narrowphase as narrowphase;
pub use voxterra_narrowphase::{convert, parry3d};
pub use voxterra_voxel_store as store;
pub use voxterra_worldgen as worldgen;

use std::path::Path;
use voxterra_codec::{
    ReadLimits, SaveStats, TerrainFileError, TerrainFileReader, WriteOptions, write_terrain_file,
};
use voxterra_core::MaterialTable;
use voxterra_voxel_store::VoxelStore;

/// Saves every chunk of `store` to `path` atomically ([`AtomicFile`]; LZ4 over RLE): a failure at
/// any point leaves the previous file intact. `progress(done, total)` after each chunk.
pub fn save(
    path: impl AsRef<Path>,
    store: &VoxelStore,
    table: &MaterialTable,
    progress: impl FnMut(u64, u64),
) -> Result<SaveStats, TerrainFileError> {
    let keys = store.chunk_keys();
    let file = AtomicFile::create(path)?;
    let (file, stats) = write_terrain_file(file, store, &keys, table, WriteOptions::default(), progress)?;
    file.commit()?;
    Ok(stats)
}

/// Loads the terrain file at `path` into a new store, with its material table.
pub fn load(
    path: impl AsRef<Path>,
    progress: impl FnMut(u64, u64),
) -> Result<(VoxelStore, MaterialTable), TerrainFileError> {
    let mut reader = TerrainFileReader::open_path(path, ReadLimits::default())?;
    let mut store = VoxelStore::new();
    reader.read_all(&mut store, progress)?;
    Ok((store, reader.material_table().clone()))
}

/// What most programs use: `use voxterra::prelude::*;`.
pub mod prelude {
    pub use crate::convert::{FromParry, ToParry};
    pub use crate::core::nalgebra::{Point3, Vector3};
    pub use crate::core::{Aabb, MaterialTable, Ray, Region, Voxel, VoxelPos, materials};
    pub use crate::parry3d::math::{Pose, Vector};
    pub use crate::parry3d::shape::SharedShape;
    pub use crate::{
        BodyDesc, BodyHandle, Brush, BrushOp, BrushShape, EditReport, Terrain, TerrainConfig, TerrainError,
        TerrainManifold, World, WorldError, WorldEvent,
    };
}
