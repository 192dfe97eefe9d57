//! A 32³ storage chunk: the row-packed voxels and their 16³, 8³ and 4³ mips, kept current on every
//! write.

use crate::mips::downsample;
use crate::packed_box::{PackedBox, Rect, Scratch};
use voxterra_core::{Material, Voxel};

/// log2 of the chunk size ([`voxterra_core::StoreChunkKey::SHIFT`]).
pub const CHUNK_SHIFT: u32 = voxterra_core::STORE_CHUNK_SHIFT;
/// Voxels along each side of a storage chunk.
pub const CHUNK_SIZE: usize = 1 << CHUNK_SHIFT;

#[derive(Clone, Debug)]
pub(crate) struct Chunk {
    pub(crate) level0: PackedBox<32>,
    pub(crate) mip1: PackedBox<16>,
    pub(crate) mip2: PackedBox<8>,
    pub(crate) mip3: PackedBox<4>,
}

impl Chunk {
    pub(crate) fn uniform(material: Material) -> Self {
        Chunk {
            level0: PackedBox::uniform(material),
            mip1: PackedBox::uniform(material),
            mip2: PackedBox::uniform(material),
            mip3: PackedBox::uniform(material),
        }
    }

    /// Applies an edit to level 0 (see [`PackedBox::modify`]) and brings the mips up to date.
    pub(crate) fn modify(
        &mut self,
        rect: Rect,
        scratch: &mut Scratch,
        edit: impl FnMut(usize, usize, &mut [Voxel]),
    ) -> Option<Rect> {
        let changed = self.level0.modify(rect, scratch, edit)?;
        if let Some(c1) = downsample(&self.level0, &mut self.mip1, changed, scratch)
            && let Some(c2) = downsample(&self.mip1, &mut self.mip2, c1, scratch)
        {
            downsample(&self.mip2, &mut self.mip3, c2, scratch);
        }
        Some(changed)
    }

    /// True when the chunk holds only Air: by the mip guarantee the 4³ mip tells.
    pub(crate) fn is_air(&self) -> bool {
        self.mip3.uniform_material() == Some(Material::AIR)
    }

    pub(crate) fn heap_bytes(&self) -> (usize, usize) {
        (self.level0.heap_bytes(), self.mip1.heap_bytes() + self.mip2.heap_bytes() + self.mip3.heap_bytes())
    }
}

/// A read-only view of one stored chunk: its rows, whether they are packed, and its mips.
#[derive(Clone, Copy, Debug)]
pub struct ChunkRef<'a> {
    pub(crate) key: voxterra_core::StoreChunkKey,
    pub(crate) chunk: &'a Chunk,
}

impl<'a> ChunkRef<'a> {
    /// The chunk key.
    pub fn key(&self) -> voxterra_core::StoreChunkKey {
        self.key
    }

    /// Row `(y, z)` of the chunk (local coordinates `0..32`), 32 voxels along X. Constant time.
    #[inline]
    pub fn row(&self, y: usize, z: usize) -> &'a [Voxel; CHUNK_SIZE] {
        self.chunk.level0.row(y, z)
    }

    /// The material of row `(y, z)` if the row is packed (uniform at default occupancy).
    #[inline]
    pub fn packed_row(&self, y: usize, z: usize) -> Option<Material> {
        self.chunk.level0.packed_material(y, z)
    }

    /// The material if the whole chunk is one material at default occupancy.
    pub fn uniform_material(&self) -> Option<Material> {
        self.chunk.level0.uniform_material()
    }

    /// The voxel at mip `level` (0 = 32³, 1 = 16³, 2 = 8³, 3 = 4³), local coordinates at that level.
    /// `None` for a level above 3 or coordinates outside it.
    pub fn mip_voxel(&self, level: u32, x: usize, y: usize, z: usize) -> Option<Voxel> {
        let n = CHUNK_SIZE >> level.min(4);
        if level > 3 || x >= n || y >= n || z >= n {
            return None;
        }
        Some(match level {
            0 => self.chunk.level0.voxel(x, y, z),
            1 => self.chunk.mip1.voxel(x, y, z),
            2 => self.chunk.mip2.voxel(x, y, z),
            _ => self.chunk.mip3.voxel(x, y, z),
        })
    }

    /// Rows of level 0 that are allocated (not packed).
    pub fn allocated_rows(&self) -> usize {
        self.chunk.level0.allocated_rows()
    }

    /// Heap bytes the chunk holds, level 0 and mips (what [`StoreStats`](crate::StoreStats)
    /// counts for it, the hash table aside).
    pub fn heap_bytes(&self) -> usize {
        let (v, m) = self.chunk.heap_bytes();
        v + m
    }
}
