//! Typed chunk keys: storage chunks (32³) and physics chunks (8³) are different types, so passing
//! one where the other belongs does not compile.

use crate::{CoreError, Region, VoxelPos};
use nalgebra::Point3;

/// The key of a cubic chunk of `2^SHIFT` voxels a side: its voxel coordinates shifted right by
/// `SHIFT` (arithmetic shift, so negative coordinates land in negative chunks).
///
/// Use the aliases: [`StoreChunkKey`] (the store's and the terrain file's 32³ chunks) and
/// [`PhysicsChunkKey`] (the bit broadphase's and the collision cache's 8³ chunks).
///
/// Keys order by `(y, z, x)`: layer by layer, then row by row, the order of the store's buffers,
/// of terrain files and of every list of chunks voxterra returns.
///
/// PERF: hashes as one packed u64 — one hasher round. nalgebra's `Hash` for `Point3` writes the
/// shape and each coordinate (five rounds), which cost the store 4× in random reads. Equality
/// still compares all 96 bits; the fold is only for hashing.
///
/// ```
/// use voxterra_core::{PhysicsChunkKey, StoreChunkKey, VoxelPos};
/// let p = VoxelPos::new(-1, 40, 65);
/// assert_eq!(StoreChunkKey::containing(p), StoreChunkKey::new(-1, 1, 2));
/// assert_eq!(PhysicsChunkKey::containing(p), PhysicsChunkKey::new(-1, 5, 8));
/// let r = PhysicsChunkKey::new(-1, 5, 8).region().unwrap();
/// assert!(r.contains(p) && r.size() == [8, 8, 8]);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ChunkKey<const SHIFT: u32> {
    /// Chunk coordinate along X.
    pub x: i32,
    /// Chunk coordinate along Y (up).
    pub y: i32,
    /// Chunk coordinate along Z.
    pub z: i32,
}

/// log2 of a storage chunk's side.
pub const STORE_CHUNK_SHIFT: u32 = 5;
/// log2 of a physics chunk's side.
pub const PHYSICS_CHUNK_SHIFT: u32 = 3;

/// A storage chunk (32³ voxels): the unit of the voxel store and of terrain files.
pub type StoreChunkKey = ChunkKey<STORE_CHUNK_SHIFT>;
/// A physics chunk (8³ voxels): the unit of the bit broadphase and the collision cache.
pub type PhysicsChunkKey = ChunkKey<PHYSICS_CHUNK_SHIFT>;

impl<const SHIFT: u32> Ord for ChunkKey<SHIFT> {
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.y, self.z, self.x).cmp(&(other.y, other.z, other.x))
    }
}

impl<const SHIFT: u32> PartialOrd for ChunkKey<SHIFT> {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<const SHIFT: u32> std::hash::Hash for ChunkKey<SHIFT> {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let [x, y, z] = [self.x, self.y, self.z].map(|v| v as u32 as u64);
        state.write_u64(x ^ y << 21 ^ z << 42);
    }
}

impl<const SHIFT: u32> ChunkKey<SHIFT> {
    /// log2 of the chunk side.
    pub const SHIFT: u32 = SHIFT;
    /// Voxels along each side.
    pub const SIZE: i32 = 1 << SHIFT;

    /// The key with these chunk coordinates.
    #[inline]
    pub const fn new(x: i32, y: i32, z: i32) -> Self {
        ChunkKey { x, y, z }
    }

    /// The chunk that holds voxel `p`.
    #[inline]
    pub fn containing(p: VoxelPos) -> Self {
        ChunkKey { x: p.x >> SHIFT, y: p.y >> SHIFT, z: p.z >> SHIFT }
    }

    /// The chunk's voxels, or [`CoreError::RegionOverflow`] when they leave the i32 voxel space
    /// (keys past `i32::MAX >> SHIFT`, and the last chunk on each axis, whose exclusive end is
    /// `2^31`).
    pub fn region(&self) -> Result<Region, CoreError> {
        let lo = |k: i32| {
            i32::try_from((k as i64) << SHIFT).map_err(|_| CoreError::RegionOverflow {
                what: "chunk key",
                value: k as i128,
                limit: if k < 0 { i32::MIN >> SHIFT } else { i32::MAX >> SHIFT } as i128,
            })
        };
        Region::from_min_size(Point3::new(lo(self.x)?, lo(self.y)?, lo(self.z)?), [1 << SHIFT; 3])
    }

    /// The chunks `region` touches, `None` for an empty region.
    pub fn range(region: &Region) -> Option<ChunkRange<SHIFT>> {
        if region.is_empty() {
            return None;
        }
        let (min, max) = (region.min(), region.max());
        let last = Point3::new(max.x - 1, max.y - 1, max.z - 1);
        Some(ChunkRange { first: Self::containing(min), last: Self::containing(last) })
    }

    /// The chunk coordinates as a point.
    #[inline]
    pub const fn to_point(self) -> Point3<i32> {
        Point3::new(self.x, self.y, self.z)
    }

    /// The chunk coordinates as an array `[x, y, z]`.
    #[inline]
    pub const fn to_array(self) -> [i32; 3] {
        [self.x, self.y, self.z]
    }
}

/// An inclusive box of chunk keys, `first..=last` on every axis (what a region touches).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ChunkRange<const SHIFT: u32> {
    /// The lowest key on every axis.
    pub first: ChunkKey<SHIFT>,
    /// The highest key on every axis (inclusive).
    pub last: ChunkKey<SHIFT>,
}

impl<const SHIFT: u32> ChunkRange<SHIFT> {
    /// Number of chunks in the range (up to 2^96, hence u128).
    pub fn count(&self) -> u128 {
        let n = |a: i32, b: i32| (b as i64 - a as i64 + 1) as u128;
        n(self.first.x, self.last.x) * n(self.first.y, self.last.y) * n(self.first.z, self.last.z)
    }

    /// True when `key` lies in the range.
    #[inline]
    pub fn contains(&self, key: ChunkKey<SHIFT>) -> bool {
        (self.first.x..=self.last.x).contains(&key.x)
            && (self.first.y..=self.last.y).contains(&key.y)
            && (self.first.z..=self.last.z).contains(&key.z)
    }

    /// Every key, Y outermost, then Z, then X (the buffer order of regions).
    pub fn iter(&self) -> impl Iterator<Item = ChunkKey<SHIFT>> + use<SHIFT> {
        let (f, l) = (self.first, self.last);
        (f.y..=l.y)
            .flat_map(move |y| (f.z..=l.z).flat_map(move |z| (f.x..=l.x).map(move |x| ChunkKey { x, y, z })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn extremes_are_errors_not_overflows() {
        assert!(matches!(StoreChunkKey::new(i32::MAX, 0, 0).region(), Err(CoreError::RegionOverflow { .. })));
        // The last chunk on an axis ends at 2^31, which no half-open i32 region reaches.
        assert!(matches!(
            StoreChunkKey::containing(VoxelPos::new(i32::MAX, 0, 0)).region(),
            Err(CoreError::RegionOverflow { .. })
        ));
        assert!(StoreChunkKey::containing(VoxelPos::new(i32::MIN, 0, 0)).region().is_ok());
        assert_eq!(PhysicsChunkKey::containing(VoxelPos::new(-1, -8, -9)), PhysicsChunkKey::new(-1, -1, -2));
        let all = Region::new(
            VoxelPos::new(i32::MIN, i32::MIN, i32::MIN),
            VoxelPos::new(i32::MAX, i32::MAX, i32::MAX),
        )
        .unwrap();
        assert_eq!(StoreChunkKey::range(&all).unwrap().count(), (1u128 << 27).pow(3));
    }

    proptest! {
        #[test]
        fn range_is_the_set_of_containing_keys(a in proptest::array::uniform3(-40i32..40), s in proptest::array::uniform3(0u32..20)) {
            let r = Region::from_min_size(a.into(), s).unwrap();
            let mut keys: Vec<_> = r.iter().map(PhysicsChunkKey::containing).collect();
            keys.sort_unstable();
            keys.dedup();
            let range = PhysicsChunkKey::range(&r);
            let listed: Vec<_> = range.map(|c| c.iter().collect()).unwrap_or_default();
            prop_assert_eq!(range.map_or(0, |c| c.count()), keys.len() as u128);
            prop_assert_eq!(&listed, &keys);
            for k in keys {
                prop_assert!(range.is_some_and(|c| c.contains(k)));
                prop_assert!(k.region().unwrap().intersection(&r).is_some());
            }
        }
    }
}
