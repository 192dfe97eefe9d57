//! Error types, one per layer: RLE decoding, compressed blocks, terrain files, snapshots.

use std::io;
use thiserror::Error;

/// An RLE stream that is not one box of valid voxels. Offsets are bytes into the stream.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The stream ended inside a run (an occupancy or count byte is missing).
    #[error("truncated run at byte {offset}")]
    Truncated {
        /// Offset of the run's lead byte.
        offset: usize,
    },
    /// The stream ended before the box was full.
    #[error("data ends at byte {offset} after {decoded} of {expected} voxels")]
    TooShort {
        /// Where the data ended.
        offset: usize,
        /// Voxels decoded.
        decoded: usize,
        /// Voxels in the box.
        expected: usize,
    },
    /// A run longer than what is left of the box.
    #[error("run of {run} voxels at byte {offset} overflows the box ({remaining} voxels left)")]
    RunOverflow {
        /// Offset of the run's lead byte.
        offset: usize,
        /// Run length.
        run: usize,
        /// Voxels left in the box.
        remaining: usize,
    },
    /// Air with an occupancy byte: never valid.
    #[error("air run with occupancy byte {byte} at byte {offset}")]
    AirWithOccupancy {
        /// Offset of the run's lead byte.
        offset: usize,
        /// The occupancy byte.
        byte: u8,
    },
    /// A material the material table does not define.
    #[error("unknown material {material} at byte {offset}")]
    UnknownMaterial {
        /// Offset of the run's lead byte.
        offset: usize,
        /// The material id.
        material: u8,
    },
    /// Bytes after the box was full.
    #[error("{extra} trailing bytes after the box at byte {offset}")]
    TrailingBytes {
        /// Where the box ended.
        offset: usize,
        /// Bytes left over.
        extra: usize,
    },
}

/// A compressed block that cannot be decoded. Offsets are bytes into the block.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum BlockError {
    /// Shorter than the block header.
    #[error("block of {0} bytes is shorter than its 5-byte header")]
    TooShort(usize),
    /// A compressor id this version does not know.
    #[error("unknown compressor id {0} at byte 0")]
    UnknownCompressor(u8),
    /// The declared RLE length is larger than any encoding of the box (a decompression bomb).
    #[error("declared RLE length {declared} exceeds the bound {bound} for this box (byte 1)")]
    DeclaredTooLarge {
        /// Declared length.
        declared: usize,
        /// The bound.
        bound: usize,
    },
    /// The box is larger than the caller's limit.
    #[error("box of {voxels} voxels exceeds the limit of {limit}")]
    BoxTooLarge {
        /// Voxels in the box.
        voxels: u128,
        /// The limit.
        limit: usize,
    },
    /// LZ4 data that does not decompress (corrupt, or longer than declared).
    #[error("LZ4 payload at byte 5 does not decompress")]
    Lz4Corrupt,
    /// LZ4 data that decompresses to fewer bytes than declared.
    #[error("LZ4 payload at byte 5 decompressed to {got} bytes, {declared} declared")]
    Lz4Length {
        /// Declared RLE length.
        declared: usize,
        /// Bytes it decompressed to.
        got: usize,
    },
    /// An uncompressed payload whose length differs from the declared one.
    #[error("payload holds {got} bytes but {declared} were declared (byte 5)")]
    LengthMismatch {
        /// Declared RLE length.
        declared: usize,
        /// Payload length.
        got: usize,
    },
    /// The RLE stream inside the block is invalid; its offsets are into the decompressed stream.
    #[error("RLE stream: {0}")]
    Rle(#[from] DecodeError),
}

/// A terrain file that cannot be read or written. Offsets are bytes into the file.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TerrainFileError {
    /// The operating system refused.
    #[error("I/O: {0}")]
    Io(#[from] io::Error),
    /// Not a voxterra terrain file.
    #[error("not a voxterra terrain file (bad magic at byte {offset})")]
    BadMagic {
        /// Where the magic was expected.
        offset: u64,
    },
    /// A format version this build cannot read.
    #[error("unsupported terrain file version {0}")]
    UnsupportedVersion(u16),
    /// A chunk size other than the store's 32³ chunks (chunk shift 5).
    #[error("unsupported chunk shift {0}: terrain files hold 32³ chunks (shift 5)")]
    UnsupportedChunkShift(u8),
    /// A structural field out of range or inconsistent.
    #[error("corrupt {what} at byte {offset}")]
    Corrupt {
        /// Which field.
        what: &'static str,
        /// Where.
        offset: u64,
    },
    /// A checksum that does not match its bytes.
    #[error("checksum mismatch in {what} at byte {offset}")]
    Checksum {
        /// Which part.
        what: &'static str,
        /// Where the part starts.
        offset: u64,
    },
    /// The embedded material table is invalid.
    #[error("material table at byte {offset}: {source}")]
    MaterialTable {
        /// Where the table starts.
        offset: u64,
        /// What is wrong.
        #[source]
        source: serde_json::Error,
    },
    /// A chunk's block does not decode.
    #[error("chunk {key:?} at byte {offset}: {source}")]
    Chunk {
        /// The chunk key.
        key: [i32; 3],
        /// Where its record starts.
        offset: u64,
        /// What is wrong inside the block.
        #[source]
        source: BlockError,
    },
    /// More chunks than [`ReadLimits::max_chunks`](crate::ReadLimits::max_chunks) allows.
    #[error("{count} chunks exceed the limit of {limit}")]
    TooManyChunks {
        /// Chunks the file holds.
        count: u64,
        /// The limit in force.
        limit: u64,
    },
    /// A chunk key whose region leaves the i32 voxel space.
    #[error("chunk {key:?} lies outside the voxel space: {source}")]
    ChunkOutOfRange {
        /// The chunk key.
        key: [i32; 3],
        /// What the core refused.
        #[source]
        source: voxterra_core::CoreError,
    },
    /// The same chunk written twice to one file.
    #[error("chunk {0:?} written twice")]
    ChunkWrittenTwice([i32; 3]),
    /// A chunk buffer of the wrong length.
    #[error("a buffer of {got} voxels for chunks of {expected}")]
    BufferSize {
        /// The buffer's length.
        got: usize,
        /// Voxels a chunk holds.
        expected: usize,
    },
    /// The destination refused a chunk's voxels.
    #[error("the destination refused chunk {key:?}: {source}")]
    Destination {
        /// The chunk key.
        key: [i32; 3],
        /// The destination's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// An undo snapshot that cannot be restored.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SnapshotError<E: std::error::Error = voxterra_core::CoreError> {
    /// The region is larger than the caller's limit.
    #[error("snapshot region of {voxels} voxels, over the limit of {limit}")]
    TooLarge {
        /// Voxels in the region.
        voxels: u128,
        /// The limit.
        limit: usize,
    },
    /// The region is larger than memory can address.
    #[error(transparent)]
    Region(#[from] voxterra_core::CoreError),
    /// The encoded data does not decode.
    #[error(transparent)]
    Block(#[from] BlockError),
    /// The destination refused the write.
    #[error("restoring into the destination failed: {0}")]
    Write(#[source] E),
}
