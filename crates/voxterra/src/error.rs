//! The facade's errors, one type per kind of operation: making or reconfiguring a terrain
//! ([`ConfigError`]), loading or generating one ([`LoadError`]), editing it ([`EditError`]),
//! querying it ([`QueryError`]) and applying a delta to it ([`DeltaError`]). [`TerrainError`] is
//! any of them, for callers that keep one error type. A refused operation changes nothing.

use crate::brush::Brush;
use voxterra_bit_broadphase::{BroadphaseError, InvalidMasks};
use voxterra_chunk_db::ChunkDbError;
use voxterra_codec::{SnapshotError, TerrainFileError};
use voxterra_core::CoreError;
use voxterra_mesher::MeshError;
use voxterra_narrowphase::NarrowphaseError;
use voxterra_voxel_store::{InvalidStore, StoreError};
use voxterra_worldgen::GenError;

/// Why a terrain could not be made or reconfigured.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The voxel size is not finite and positive.
    #[error("invalid voxel size {0}: it must be finite and positive")]
    InvalidVoxelSize(f32),
    /// A new configuration with another voxel size: a terrain keeps the one it was made with.
    #[error("the voxel size is {current} for good; asked for {asked}")]
    VoxelSizeFixed {
        /// The terrain's voxel size.
        current: f32,
        /// The one asked for.
        asked: f32,
    },
    /// The broadphase refused its configuration.
    #[error(transparent)]
    Broadphase(#[from] BroadphaseError),
}

/// Why a terrain could not be loaded from a file, generated, or made from a store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The configuration was refused.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The terrain file could not be read.
    #[error(transparent)]
    File(#[from] TerrainFileError),
    /// World generation failed.
    #[error(transparent)]
    Generate(#[from] GenError<StoreError>),
    /// The store refused the voxels (limits).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Which way through the history an undo or redo went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryStep {
    /// [`Terrain::undo`](crate::Terrain::undo).
    Undo,
    /// [`Terrain::redo`](crate::Terrain::redo).
    Redo,
}

/// Why an edit (a brush, a fill, a voxel set, an undo or a redo) was refused. A refused edit
/// changes nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    /// A brush with a NaN or infinite parameter, a radius that is not positive, or an inverted box.
    #[error("invalid brush {0:?}")]
    InvalidBrush(Box<Brush>),
    /// An edit over more voxels than [`TerrainConfig::max_edit_voxels`](crate::TerrainConfig::max_edit_voxels)
    /// allows.
    #[error("the edit covers {voxels} voxels, over the limit of {limit}")]
    EditTooLarge {
        /// Voxels the edit covers.
        voxels: u128,
        /// The limit in force.
        limit: usize,
    },
    /// A material the table does not define, or Air where matter is required.
    #[error("material {0} is not a solid or liquid of the material table")]
    BadMaterial(u8),
    /// Nothing to undo or redo.
    #[error("nothing to {0:?}")]
    NoHistory(HistoryStep),
    /// The store refused the write (limits).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A region or voxel the core refuses.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// A detached piece's mesh could not be made.
    #[error(transparent)]
    Mesh(#[from] MeshError),
    /// A history snapshot did not decode.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError<std::convert::Infallible>),
    /// The chunks the edit reaches could not be paged in (nothing changed).
    #[error(transparent)]
    Page(#[from] PageError),
}

/// Why a query (contacts, an intersection test, a ray, a shape cast, a sweep, a point
/// projection) was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// A query's pose (or a sweep's end pose) with a NaN or infinite translation or rotation.
    #[error("the query's pose is not finite")]
    InvalidPose,
    /// A ray with a NaN or infinite origin, or a zero, NaN or infinite direction.
    #[error("invalid ray from {origin:?} along {dir:?}")]
    InvalidRay {
        /// The ray's origin.
        origin: [f32; 3],
        /// Its direction.
        dir: [f32; 3],
    },
    /// A query parameter out of its range: a negative or NaN distance (`max_t`, a prediction, a
    /// target distance, a slop), a non-finite velocity or point.
    #[error("invalid {what}: {value}")]
    InvalidParameter {
        /// Which parameter.
        what: &'static str,
        /// Its value.
        value: f32,
    },
    /// A shape parry cannot scale to voxel units (the terrain's voxel size is not 1).
    #[error("the shape cannot be scaled to voxel units")]
    UnscalableShape,
    /// The narrowphase refused the shape or the query (a degenerate or unsupported shape).
    #[error(transparent)]
    Narrowphase(#[from] NarrowphaseError),
}

/// Why a delta was refused. A refused delta leaves the terrain unchanged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeltaError {
    /// The bytes are not a well-formed delta for this terrain (truncated, a bad magic or
    /// checksum, a bad region, over the edit limit, voxels that do not decode or name materials
    /// the table lacks).
    #[error(transparent)]
    Format(#[from] voxterra_codec::DeltaFormatError),
    /// The replica is already past this delta: it was applied before (repeated), or comes after a
    /// later one (reordered).
    #[error("delta {delta} is stale: the replica expects delta {expected}")]
    Stale {
        /// The delta's sequence number.
        delta: u64,
        /// The replica's sequence number: the delta it applies next.
        expected: u64,
    },
    /// Deltas before this one are missing: one was skipped, or this one came early.
    #[error("delta {delta} leaves a gap: the replica expects delta {expected}")]
    Gap {
        /// The delta's sequence number.
        delta: u64,
        /// The replica's sequence number: the delta it applies next.
        expected: u64,
    },
    /// The delta's write was refused (limits).
    #[error(transparent)]
    Edit(#[from] EditError),
}

/// Any of the facade's errors, for callers that keep one error type (each converts with `?`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TerrainError {
    /// Making or reconfiguring a terrain.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Loading or generating one.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Writing a terrain file.
    #[error(transparent)]
    Save(#[from] TerrainFileError),
    /// An edit.
    #[error(transparent)]
    Edit(#[from] EditError),
    /// A query.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// A delta.
    #[error(transparent)]
    Delta(#[from] DeltaError),
    /// A region or voxel the core refuses (one made to pass to the terrain).
    #[error(transparent)]
    Core(#[from] CoreError),
    /// Paging chunks in.
    #[error(transparent)]
    Page(#[from] PageError),
}

/// A broken invariant of a [`Terrain`](crate::Terrain), found by
/// [`Terrain::validate`](crate::Terrain::validate).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidTerrain {
    /// The voxel store's.
    #[error(transparent)]
    Store(#[from] InvalidStore),
    /// The masks': a chunk's differs from a rebuild from the voxels, or the map's bookkeeping.
    #[error(transparent)]
    Masks(#[from] InvalidMasks),
    /// A collision cache entry differs from a fresh build of its chunk, or the cache's byte count.
    #[error("collision cache: {what} (chunk {chunk:?})")]
    Cache {
        /// The chunk (`[0, 0, 0]` for the cache's own counts).
        chunk: [i32; 3],
        /// Which invariant.
        what: &'static str,
    },
    /// The delta log's numbering or byte count.
    #[error("delta log: {0}")]
    DeltaLog(&'static str),
}

/// Why a durable terrain operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DurableError {
    /// The database failed; what was not committed is not acknowledged.
    #[error(transparent)]
    Db(#[from] ChunkDbError),
    /// The edit was refused (nothing changed).
    #[error(transparent)]
    Edit(#[from] EditError),
    /// The delta was refused (nothing changed).
    #[error(transparent)]
    Delta(#[from] DeltaError),
    /// The stored world does not make a terrain.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Chunks could not be paged in.
    #[error(transparent)]
    Page(#[from] PageError),
    /// A metadata entry is missing or malformed.
    #[error("the database's {0:?} entry is missing or malformed")]
    Meta(&'static str),
    /// A chunk record whose checksum or contents are wrong.
    #[error("chunk {key:?}: damaged record ({why})")]
    DamagedChunk {
        /// The chunk.
        key: [i32; 3],
        /// What is wrong.
        why: String,
    },
    /// [`DurableTerrain::create`](crate::DurableTerrain::create) on a database that holds chunks already.
    #[error("the database holds a world already")]
    NotEmpty,
}

impl From<ConfigError> for DurableError {
    fn from(e: ConfigError) -> Self {
        DurableError::Load(e.into())
    }
}

/// Why chunks could not be paged in ([`Terrain::page_in`](crate::Terrain::page_in)): nothing
/// was half loaded, and the terrain answers from what it held.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PageError {
    /// The chunk database failed.
    #[error(transparent)]
    Db(#[from] ChunkDbError),
    /// A stored chunk's record is damaged.
    #[error("chunk {key:?}: damaged record ({why})")]
    DamagedChunk {
        /// The chunk.
        key: [i32; 3],
        /// What is wrong.
        why: String,
    },
    /// The world generator refused the request.
    #[error(transparent)]
    Generate(#[from] GenError),
    /// The boxes asked for more chunks than one call pages in.
    #[error("{chunks} chunks asked for at once, over the limit of {limit}")]
    TooMany {
        /// Chunks the boxes touch.
        chunks: u128,
        /// The most one call pages in.
        limit: usize,
    },
    /// The store refused a chunk (its limits).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The background loader is gone (it panicked).
    #[error("the background chunk loader stopped")]
    LoaderStopped,
}
