//! Undo snapshots: the box a tool is about to change, encoded, so it can be written back later.

use crate::SnapshotError;
use crate::block::{BlockScratch, Compression, decode_block, encode_block};
use crate::rle::RleEncoder;
use voxterra_core::{Region, Voxel, VoxelRead, VoxelWrite};

/// An encoded box of voxels and the region it came from.
///
/// ```
/// use voxterra_codec::{Compression, Snapshot};
/// use voxterra_core::{materials, DenseVoxels, Region, Voxel, VoxelPos, VoxelRead, VoxelWrite};
///
/// let world = Region::from_min_size(VoxelPos::new(0, 0, 0), [16, 16, 16])?;
/// let mut voxels = DenseVoxels::new(world, 1 << 20)?;
/// voxels.fill(&world, Voxel::full(materials::ROCK))?;
/// let brush = Region::from_min_size(VoxelPos::new(4, 4, 4), [4, 4, 4])?;
/// let undo = Snapshot::capture(&voxels, &brush, Compression::None)?;
/// voxels.fill(&brush, Voxel::AIR)?;                       // the edit
/// undo.restore(&mut voxels, 1 << 20).unwrap();           // and its undo
/// assert_eq!(voxels.voxel(VoxelPos::new(5, 5, 5)), Voxel::full(materials::ROCK));
/// assert!(undo.encoded_len() < 16);                       // 64 rock voxels: one run
/// # Ok::<(), voxterra_core::CoreError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Snapshot {
    region: Region,
    block: Vec<u8>,
}

impl Snapshot {
    /// Encodes `region` of `source`, straight from its rows (no dense copy).
    pub fn capture(
        source: &impl VoxelRead,
        region: &Region,
        compression: Compression,
    ) -> Result<Self, voxterra_core::CoreError> {
        region.len()?; // a region too large for memory is refused here, not when restoring
        let mut rle = Vec::new();
        let mut enc = RleEncoder::new(&mut rle);
        source.visit_rows(region, &mut |_, row| enc.push_slice(row));
        enc.finish();
        let mut block = Vec::with_capacity(rle.len() / 2 + 16);
        encode_block(&rle, compression, &mut block);
        Ok(Snapshot { region: *region, block })
    }

    /// Writes the snapshot back into `dest`; returns the dirty region of that write. `max_voxels`
    /// bounds the buffer it decodes into.
    pub fn restore<W: VoxelWrite>(
        &self,
        dest: &mut W,
        max_voxels: usize,
    ) -> Result<Option<Region>, SnapshotError<W::Error>> {
        let voxels = self.decode(max_voxels).map_err(|e| match e {
            SnapshotError::TooLarge { voxels, limit } => SnapshotError::TooLarge { voxels, limit },
            SnapshotError::Region(e) => SnapshotError::Region(e),
            SnapshotError::Block(b) => SnapshotError::Block(b),
            SnapshotError::Write(never) => match never {},
        })?;
        dest.write_box(&self.region, &voxels).map_err(SnapshotError::Write)
    }

    /// The voxels of the snapshot, in buffer order.
    pub fn decode(&self, max_voxels: usize) -> Result<Vec<Voxel>, SnapshotError<std::convert::Infallible>> {
        let n = self.region.len()?;
        if n > max_voxels {
            return Err(SnapshotError::TooLarge { voxels: n as u128, limit: max_voxels });
        }
        let mut voxels = vec![Voxel::AIR; n];
        decode_block(&self.block, &mut voxels, u64::MAX, &mut BlockScratch::default())?;
        Ok(voxels)
    }

    /// The region captured.
    pub fn region(&self) -> &Region {
        &self.region
    }

    /// Bytes the encoded voxels take.
    pub fn encoded_len(&self) -> usize {
        self.block.len()
    }
}
