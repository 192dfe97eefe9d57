//! Terrain files: a header with the material table, one record per chunk, a directory and a trailer.
//! The byte layout is specified in `docs/format.md`; every byte of a valid file is covered by a
//! CRC-32 or an exact structural check, so a damaged file is an error, never a different world.

use crate::TerrainFileError;
use crate::block::{BlockScratch, Compression, decode_block, encode_block};
use crate::rle::RleEncoder;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use voxterra_core::{MaterialTable, StoreChunkKey, Voxel, VoxelRead, VoxelWrite};

/// First bytes of every terrain file.
pub const MAGIC: [u8; 8] = *b"VOXTERRA";
/// Last bytes of every terrain file.
pub const END_MAGIC: [u8; 8] = *b"VXTEND01";
/// The format version this build writes (and the only one it reads).
pub const VERSION: u16 = 1;
/// Fixed part of the header before the material table.
const HEADER_FIXED: u64 = 16;
/// Record header: key (12), block length (4), block CRC (4).
const RECORD_HEADER: u64 = 20;
/// Directory entry: key (12), record offset (8), record length (4).
const DIR_ENTRY: u64 = 24;
/// Trailer: directory offset (8), chunk count (4), directory CRC (4), reserved (4), trailer CRC (4), end magic (8).
const TRAILER: u64 = 32;
/// Largest material table accepted (JSON bytes).
const MAX_TABLE: u64 = 1 << 20;

/// Options for writing.
#[derive(Clone, Copy, Debug)]
pub struct WriteOptions {
    /// Compressor for every chunk.
    pub compression: Compression,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions { compression: Compression::Lz4 }
    }
}

/// Limits for reading untrusted files.
#[derive(Clone, Copy, Debug)]
pub struct ReadLimits {
    /// Most chunks a file may list.
    pub max_chunks: u64,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits { max_chunks: 1 << 22 }
    }
}

/// One directory entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkEntry {
    /// The storage chunk.
    pub key: StoreChunkKey,
    /// Offset of the chunk's record in the file.
    pub offset: u64,
    /// Length of the record (header + block).
    pub len: u32,
}

fn crc(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// The chunk shift byte of the header: files hold the store's 32³ chunks.
const CHUNK_SHIFT: u8 = StoreChunkKey::SHIFT as u8;

/// Streams a terrain file: header first, then chunks one by one, then [`finish`](Self::finish)
/// writes the directory and trailer. Memory holds one chunk's encoding and a 24-byte directory
/// entry per chunk, whatever the world's size.
#[derive(Debug)]
pub struct TerrainFileWriter<W: Write> {
    out: W,
    pos: u64,
    options: WriteOptions,
    entries: Vec<ChunkEntry>,
    written: std::collections::HashSet<[i32; 3]>,
    rle: Vec<u8>,
    block: Vec<u8>,
}

impl<W: Write> TerrainFileWriter<W> {
    /// Writes the header (magic, version, chunk size, material table).
    pub fn new(mut out: W, table: &MaterialTable, options: WriteOptions) -> Result<Self, TerrainFileError> {
        let json = serde_json::to_vec(table)
            .map_err(|source| TerrainFileError::MaterialTable { offset: HEADER_FIXED, source })?;
        let mut header = Vec::with_capacity(json.len() + 20);
        header.extend_from_slice(&MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.push(CHUNK_SHIFT);
        header.push(0);
        header.extend_from_slice(&(json.len() as u32).to_le_bytes());
        header.extend_from_slice(&json);
        let c = crc(&header);
        header.extend_from_slice(&c.to_le_bytes());
        out.write_all(&header)?;
        Ok(TerrainFileWriter {
            out,
            pos: header.len() as u64,
            options,
            entries: Vec::new(),
            written: Default::default(),
            rle: Vec::new(),
            block: Vec::new(),
        })
    }

    /// Encodes chunk `key` from `source` (straight from its rows) and writes its record. All-air
    /// chunks are skipped (reading gives Air anyway); returns whether a record was written.
    pub fn write_chunk(
        &mut self,
        key: StoreChunkKey,
        source: &impl VoxelRead,
    ) -> Result<bool, TerrainFileError> {
        let region = key
            .region()
            .map_err(|source| TerrainFileError::ChunkOutOfRange { key: [key.x, key.y, key.z], source })?;
        self.rle.clear();
        let mut all_air = true;
        let mut enc = RleEncoder::new(&mut self.rle);
        source.visit_rows(&region, &mut |_, row| {
            all_air &= row.iter().all(|v| v.is_air());
            enc.push_slice(row);
        });
        enc.finish();
        if all_air {
            return Ok(false);
        }
        if !self.written.insert([key.x, key.y, key.z]) {
            return Err(TerrainFileError::ChunkWrittenTwice([key.x, key.y, key.z]));
        }
        self.block.clear();
        encode_block(&self.rle, self.options.compression, &mut self.block);
        let mut head = [0u8; RECORD_HEADER as usize];
        head[0..4].copy_from_slice(&key.x.to_le_bytes());
        head[4..8].copy_from_slice(&key.y.to_le_bytes());
        head[8..12].copy_from_slice(&key.z.to_le_bytes());
        head[12..16].copy_from_slice(&(self.block.len() as u32).to_le_bytes());
        head[16..20].copy_from_slice(&crc(&self.block).to_le_bytes());
        self.out.write_all(&head)?;
        self.out.write_all(&self.block)?;
        let len = RECORD_HEADER as u32 + self.block.len() as u32;
        self.entries.push(ChunkEntry { key, offset: self.pos, len });
        self.pos += len as u64;
        Ok(true)
    }

    /// Writes the directory and trailer; returns the writer and the file's length.
    pub fn finish(mut self) -> Result<(W, u64), TerrainFileError> {
        let mut dir = Vec::with_capacity(self.entries.len() * DIR_ENTRY as usize);
        for e in &self.entries {
            for v in [e.key.x, e.key.y, e.key.z] {
                dir.extend_from_slice(&v.to_le_bytes());
            }
            dir.extend_from_slice(&e.offset.to_le_bytes());
            dir.extend_from_slice(&e.len.to_le_bytes());
        }
        let mut trailer = Vec::with_capacity(TRAILER as usize);
        trailer.extend_from_slice(&self.pos.to_le_bytes());
        trailer.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        trailer.extend_from_slice(&crc(&dir).to_le_bytes());
        trailer.extend_from_slice(&0u32.to_le_bytes());
        let c = crc(&trailer);
        trailer.extend_from_slice(&c.to_le_bytes());
        trailer.extend_from_slice(&END_MAGIC);
        self.out.write_all(&dir)?;
        self.out.write_all(&trailer)?;
        self.out.flush()?;
        let len = self.pos + dir.len() as u64 + TRAILER;
        Ok((self.out, len))
    }

    /// Chunks written so far.
    pub fn chunks_written(&self) -> usize {
        self.entries.len()
    }
}

/// What a save wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaveStats {
    /// Chunk records.
    pub chunks: usize,
    /// File length in bytes.
    pub bytes: u64,
}

/// Writes chunks `keys` of `source` as a whole terrain file into `out`; returns `out` (to commit,
/// for an atomic file) and what was written. `progress(done, total)` is called after each chunk.
pub fn write_terrain_file<W: Write>(
    out: W,
    source: &impl VoxelRead,
    keys: &[StoreChunkKey],
    table: &MaterialTable,
    options: WriteOptions,
    mut progress: impl FnMut(u64, u64),
) -> Result<(W, SaveStats), TerrainFileError> {
    let mut w = TerrainFileWriter::new(out, table, options)?;
    for (i, key) in keys.iter().enumerate() {
        w.write_chunk(*key, source)?;
        progress(i as u64 + 1, keys.len() as u64);
    }
    let chunks = w.chunks_written();
    let (out, bytes) = w.finish()?;
    Ok((out, SaveStats { chunks, bytes }))
}

/// Reads a terrain file: header, trailer and directory at open, then chunks on demand, each checked
/// against its CRC before it is decoded.
#[derive(Debug)]
pub struct TerrainFileReader<R: Read + Seek> {
    input: R,
    table: MaterialTable,
    known: u64,
    entries: Vec<ChunkEntry>,
    file_len: u64,
    scratch: BlockScratch,
    buf: Vec<u8>,
}

fn read_exact_at<R: Read + Seek>(r: &mut R, offset: u64, buf: &mut [u8]) -> Result<(), TerrainFileError> {
    r.seek(SeekFrom::Start(offset))?;
    r.read_exact(buf)?;
    Ok(())
}

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn le_i32(b: &[u8]) -> i32 {
    i32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

impl TerrainFileReader<std::io::BufReader<std::fs::File>> {
    /// Opens the terrain file at `path`.
    pub fn open_path(path: impl AsRef<Path>, limits: ReadLimits) -> Result<Self, TerrainFileError> {
        TerrainFileReader::open(std::io::BufReader::new(std::fs::File::open(path)?), limits)
    }
}

impl<R: Read + Seek> TerrainFileReader<R> {
    /// Reads and checks the header, trailer and directory. Allocation is bounded by the file's
    /// length and `limits`, never by a length field alone.
    pub fn open(mut input: R, limits: ReadLimits) -> Result<Self, TerrainFileError> {
        let file_len = input.seek(SeekFrom::End(0))?;
        let corrupt = |what, offset| TerrainFileError::Corrupt { what, offset };
        if file_len < HEADER_FIXED + 4 + TRAILER {
            return Err(corrupt("file length (too short for header and trailer)", 0));
        }
        let mut fixed = [0u8; HEADER_FIXED as usize];
        read_exact_at(&mut input, 0, &mut fixed)?;
        if fixed[0..8] != MAGIC {
            return Err(TerrainFileError::BadMagic { offset: 0 });
        }
        let version = u16::from_le_bytes([fixed[8], fixed[9]]);
        if version != VERSION {
            return Err(TerrainFileError::UnsupportedVersion(version));
        }
        let table_len = le_u32(&fixed[12..16]) as u64;
        let header_end = HEADER_FIXED + table_len + 4;
        if table_len > MAX_TABLE || header_end + TRAILER > file_len {
            return Err(corrupt("material table length", 12));
        }
        let mut header = vec![0u8; header_end as usize];
        read_exact_at(&mut input, 0, &mut header)?;
        let body = header_end as usize - 4;
        if crc(&header[..body]) != le_u32(&header[body..]) {
            return Err(TerrainFileError::Checksum { what: "header", offset: 0 });
        }
        if fixed[10] != CHUNK_SHIFT {
            return Err(TerrainFileError::UnsupportedChunkShift(fixed[10]));
        }
        if fixed[11] != 0 {
            return Err(corrupt("reserved header byte", 11));
        }
        let table: MaterialTable = serde_json::from_slice(&header[HEADER_FIXED as usize..body])
            .map_err(|source| TerrainFileError::MaterialTable { offset: HEADER_FIXED, source })?;
        let known = if table.len() >= 64 { u64::MAX } else { (1u64 << table.len()) - 1 };

        let mut trailer = [0u8; TRAILER as usize];
        read_exact_at(&mut input, file_len - TRAILER, &mut trailer)?;
        if trailer[24..32] != END_MAGIC {
            return Err(TerrainFileError::BadMagic { offset: file_len - 8 });
        }
        if crc(&trailer[..20]) != le_u32(&trailer[20..24]) {
            return Err(TerrainFileError::Checksum { what: "trailer", offset: file_len - TRAILER });
        }
        let dir_offset = le_u64(&trailer[0..8]);
        let count = le_u32(&trailer[8..12]) as u64;
        if le_u32(&trailer[16..20]) != 0 {
            return Err(corrupt("reserved trailer field", file_len - TRAILER + 16));
        }
        if count > limits.max_chunks {
            return Err(TerrainFileError::TooManyChunks { count, limit: limits.max_chunks });
        }
        // The directory must sit exactly between the records and the trailer.
        if dir_offset < header_end || dir_offset.checked_add(count * DIR_ENTRY) != Some(file_len - TRAILER) {
            return Err(corrupt("directory offset or chunk count", file_len - TRAILER));
        }
        let mut dir = vec![0u8; (count * DIR_ENTRY) as usize];
        read_exact_at(&mut input, dir_offset, &mut dir)?;
        if crc(&dir) != le_u32(&trailer[12..16]) {
            return Err(TerrainFileError::Checksum { what: "directory", offset: dir_offset });
        }
        // Records tile [header_end, dir_offset) exactly, in order: no gaps, no overlaps.
        let mut entries = Vec::with_capacity(count as usize);
        let mut next = header_end;
        for (i, e) in dir.chunks_exact(DIR_ENTRY as usize).enumerate() {
            let entry = ChunkEntry {
                key: StoreChunkKey::new(le_i32(&e[0..4]), le_i32(&e[4..8]), le_i32(&e[8..12])),
                offset: le_u64(&e[12..20]),
                len: le_u32(&e[20..24]),
            };
            let at = dir_offset + i as u64 * DIR_ENTRY;
            if entry.offset != next || (entry.len as u64) < RECORD_HEADER + crate::block::BLOCK_HEADER as u64
            {
                return Err(corrupt("directory entry (record offset or length)", at));
            }
            entry.key.region().map_err(|_| corrupt("directory entry (chunk key)", at))?;
            next += entry.len as u64;
            entries.push(entry);
        }
        if next != dir_offset {
            return Err(corrupt("records (they do not end where the directory starts)", next));
        }
        entries.sort_unstable_by_key(|e| (e.key.x, e.key.y, e.key.z));
        if let Some(w) = entries.windows(2).find(|w| w[0].key == w[1].key) {
            return Err(corrupt("directory (a chunk is listed twice)", w[1].offset));
        }
        Ok(TerrainFileReader {
            input,
            table,
            known,
            entries,
            file_len,
            scratch: BlockScratch::default(),
            buf: Vec::new(),
        })
    }

    /// The material table the file carries.
    pub fn material_table(&self) -> &MaterialTable {
        &self.table
    }

    /// Voxels per chunk.
    pub fn chunk_voxels(&self) -> usize {
        1 << (3 * StoreChunkKey::SHIFT as usize)
    }

    /// The directory, sorted by key.
    pub fn entries(&self) -> &[ChunkEntry] {
        &self.entries
    }

    /// The file's length in bytes.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// Reads and decodes chunk `key` into `out` (`chunk_voxels()` long, buffer order). Returns
    /// `false` (and leaves `out` alone) if the file has no such chunk: it is all Air.
    pub fn read_chunk(&mut self, key: StoreChunkKey, out: &mut [Voxel]) -> Result<bool, TerrainFileError> {
        let Ok(i) =
            self.entries.binary_search_by_key(&(key.x, key.y, key.z), |e| (e.key.x, e.key.y, e.key.z))
        else {
            return Ok(false);
        };
        let e = self.entries[i];
        self.read_entry(&e, out)?;
        Ok(true)
    }

    fn read_entry(&mut self, e: &ChunkEntry, out: &mut [Voxel]) -> Result<(), TerrainFileError> {
        if out.len() != self.chunk_voxels() {
            return Err(TerrainFileError::BufferSize { got: out.len(), expected: self.chunk_voxels() });
        }
        self.buf.resize(e.len as usize, 0);
        read_exact_at(&mut self.input, e.offset, &mut self.buf)?;
        let head = &self.buf[..RECORD_HEADER as usize];
        let key = [le_i32(&head[0..4]), le_i32(&head[4..8]), le_i32(&head[8..12])];
        if key != [e.key.x, e.key.y, e.key.z] || le_u32(&head[12..16]) as u64 + RECORD_HEADER != e.len as u64
        {
            return Err(TerrainFileError::Corrupt {
                what: "record header (disagrees with the directory)",
                offset: e.offset,
            });
        }
        let block = &self.buf[RECORD_HEADER as usize..];
        if crc(block) != le_u32(&head[16..20]) {
            return Err(TerrainFileError::Checksum { what: "chunk record", offset: e.offset });
        }
        decode_block(block, out, self.known, &mut self.scratch).map_err(|source| TerrainFileError::Chunk {
            key,
            offset: e.offset,
            source,
        })
    }

    /// Reads every chunk into `dest` (in directory order); `progress(done, total)` after each.
    pub fn read_all<W: VoxelWrite>(
        &mut self,
        dest: &mut W,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<usize, TerrainFileError> {
        let mut voxels = vec![Voxel::AIR; self.chunk_voxels()];
        let entries = self.entries.clone();
        for (i, e) in entries.iter().enumerate() {
            self.read_entry(e, &mut voxels)?;
            let key = [e.key.x, e.key.y, e.key.z];
            let region =
                e.key.region().map_err(|source| TerrainFileError::ChunkOutOfRange { key, source })?;
            dest.write_box(&region, &voxels)
                .map_err(|err| TerrainFileError::Destination { key, source: err.to_string().into() })?;
            progress(i as u64 + 1, entries.len() as u64);
        }
        Ok(entries.len())
    }
}
