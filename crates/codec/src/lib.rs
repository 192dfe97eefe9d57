//! # voxterra-codec
//!
//! voxterra's voxel encodings, from the Roblox smooth-terrain article's "disk format":
//!
//! - [`rle`]: the article's run-length format — a lead byte (material in 6 bits, "occupancy follows",
//!   "count follows"), the occupancy byte only where it is not the default, the count as `n − 1`.
//!   A 32³ chunk of one material is 256 bytes. Encode from dense slices or straight from a voxel
//!   source's rows ([`RleEncoder`]); decode with every malformed input a typed error.
//! - [`block`]: an RLE stream plus the compressor that packed it (none or LZ4), so new compressors
//!   can be added without breaking old data; lying lengths cannot make it over-allocate.
//! - [`world`]: terrain files — header with the material table, one checksummed record per chunk, a
//!   directory so one chunk can be read alone, a checksummed trailer; written as a stream into any
//!   `Write` ([`write_terrain_file`]; the facade saves it atomically). The layout is in `docs/format.md`.
//! - [`Snapshot`]: the box a tool is about to change, encoded, for undo.
//! - [`packet`]: the network variant — a box up to 32³ as bit-packed runs whose fields take only
//!   the bits the box needs, stateless so each packet decodes alone (replication's unit).
//!
//! Decoders are a security boundary: terrain files and packets come from untrusted sources. Every
//! malformed input is an error naming the chunk and byte offset, allocation is bounded by the
//! declared box and the caller's limits, and the [`fuzz`] targets exercise every decoder.
//!
//! ```
//! use voxterra_codec::{rle, Compression, TerrainFileReader, TerrainFileWriter, ReadLimits, WriteOptions};
//! use voxterra_core::{materials, DenseVoxels, MaterialTable, Region, StoreChunkKey, Voxel, VoxelPos, VoxelRead, VoxelWrite};
//!
//! // RLE: a uniform 32³ chunk is 256 bytes.
//! let mut bytes = Vec::new();
//! rle::encode(&vec![Voxel::full(materials::ROCK); 32 * 32 * 32], &mut bytes);
//! assert_eq!(bytes.len(), 256);
//!
//! // A terrain file in memory: write one chunk, read it back.
//! let region = Region::from_min_size(VoxelPos::new(0, 0, 0), [32, 32, 32])?;
//! let mut world = DenseVoxels::new(region, 1 << 16)?;
//! world.fill(&Region::from_min_size(VoxelPos::new(0, 0, 0), [32, 8, 32])?, Voxel::full(materials::SAND))?;
//! let table = MaterialTable::default();
//! let mut w = TerrainFileWriter::new(Vec::new(), &table, WriteOptions::default()).unwrap();
//! w.write_chunk(StoreChunkKey::new(0, 0, 0), &world).unwrap();
//! let (file, _len) = w.finish().unwrap();
//! let mut r = TerrainFileReader::open(std::io::Cursor::new(file), ReadLimits::default()).unwrap();
//! let mut chunk = vec![Voxel::AIR; r.chunk_voxels()];
//! assert!(r.read_chunk(StoreChunkKey::new(0, 0, 0), &mut chunk).unwrap());
//! assert_eq!(chunk, world.as_slice());
//! # Ok::<(), voxterra_core::CoreError>(())
//! ```

#![forbid(unsafe_code)]

pub mod block;
pub mod delta;
mod error;
pub mod file;
#[cfg(feature = "fuzzing")]
pub mod fuzz;
pub mod packet;
pub mod rle;
mod snapshot;

pub use block::{BlockScratch, Compression};
pub use delta::{Delta, DeltaFormatError};
pub use error::{BlockError, DecodeError, SnapshotError, TerrainFileError};
pub use file::{
    ChunkEntry, ReadLimits, SaveStats, TerrainFileReader, TerrainFileWriter, WriteOptions, write_terrain_file,
};
pub use packet::{PacketError, decode_packet, encode_packet};
pub use rle::RleEncoder;
pub use snapshot::Snapshot;
