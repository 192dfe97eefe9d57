//! Integer voxel coordinates and half-open boxes of them.

use crate::CoreError;
use nalgebra::Point3;

/// A voxel coordinate. Voxel `(x, y, z)` covers `[x, x+1) × [y, y+1) × [z, z+1)`; Y is up.
pub type VoxelPos = Point3<i32>;

/// A half-open box of voxels `[min, max)`; `min == max` on any axis is an empty region.
///
/// Regions are the unit of every read and write. Dense buffers that stand for a region are laid out
/// X fastest, then Z, then Y ([`Region::index_of`]): rows run along X and Y slices are contiguous.
///
/// ```
/// use voxterra_core::{Region, VoxelPos};
/// let r = Region::new(VoxelPos::new(-2, 0, 0), VoxelPos::new(2, 3, 1)).unwrap();
/// assert_eq!(r.len().unwrap(), 12);
/// assert!(matches!(
///     Region::new(VoxelPos::new(1, 0, 0), VoxelPos::new(0, 0, 0)),
///     Err(voxterra_core::CoreError::InvertedRegion { .. })
/// ));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Region {
    min: VoxelPos,
    max: VoxelPos,
}

impl Region {
    /// The region `[min, max)`, or [`CoreError::InvertedRegion`] when `min > max` on some axis.
    pub fn new(min: VoxelPos, max: VoxelPos) -> Result<Self, CoreError> {
        if min.x > max.x || min.y > max.y || min.z > max.z {
            return Err(CoreError::InvertedRegion { min: min.into(), max: max.into() });
        }
        Ok(Region { min, max })
    }

    /// The region of `size` voxels starting at `min`, or [`CoreError::RegionOverflow`] when it would
    /// leave the i32 coordinate space.
    pub fn from_min_size(min: VoxelPos, size: [u32; 3]) -> Result<Self, CoreError> {
        let end = |m: i32, s: u32| {
            let end = m as i64 + s as i64;
            i32::try_from(end).map_err(|_| CoreError::RegionOverflow {
                what: "region end",
                value: end as i128,
                limit: i32::MAX as i128,
            })
        };
        Ok(Region { min, max: Point3::new(end(min.x, size[0])?, end(min.y, size[1])?, end(min.z, size[2])?) })
    }

    /// The one-voxel region at `p`. The voxel at `i32::MAX` on an axis has no half-open region.
    pub fn voxel(p: VoxelPos) -> Result<Self, CoreError> {
        Region::from_min_size(p, [1, 1, 1])
    }

    /// Inclusive minimum corner.
    #[inline]
    pub fn min(&self) -> VoxelPos {
        self.min
    }

    /// Exclusive maximum corner.
    #[inline]
    pub fn max(&self) -> VoxelPos {
        self.max
    }

    /// Voxels along X, Y, Z (each fits u32 because the corners are i32).
    #[inline]
    pub fn size(&self) -> [u32; 3] {
        let d = |a: i32, b: i32| (b as i64 - a as i64) as u32;
        [d(self.min.x, self.max.x), d(self.min.y, self.max.y), d(self.min.z, self.max.z)]
    }

    /// Exact voxel count (up to 2^96, hence u128).
    pub fn volume(&self) -> u128 {
        let [x, y, z] = self.size();
        x as u128 * y as u128 * z as u128
    }

    /// Voxel count as usize, or [`CoreError::RegionOverflow`]: the checked size of a dense buffer.
    pub fn len(&self) -> Result<usize, CoreError> {
        usize::try_from(self.volume()).map_err(|_| CoreError::RegionOverflow {
            what: "voxel count",
            value: self.volume().min(i128::MAX as u128) as i128,
            limit: usize::MAX as i128,
        })
    }

    /// True when the region holds no voxel.
    pub fn is_empty(&self) -> bool {
        self.min.x == self.max.x || self.min.y == self.max.y || self.min.z == self.max.z
    }

    /// True when `p` is inside.
    #[inline]
    pub fn contains(&self, p: VoxelPos) -> bool {
        (self.min.x..self.max.x).contains(&p.x)
            && (self.min.y..self.max.y).contains(&p.y)
            && (self.min.z..self.max.z).contains(&p.z)
    }

    /// True when every voxel of `other` is inside (an empty `other` is inside anything).
    pub fn contains_region(&self, other: &Region) -> bool {
        other.is_empty()
            || (self.min.x <= other.min.x
                && self.min.y <= other.min.y
                && self.min.z <= other.min.z
                && other.max.x <= self.max.x
                && other.max.y <= self.max.y
                && other.max.z <= self.max.z)
    }

    /// The voxels in both, or `None` when they share none.
    pub fn intersection(&self, other: &Region) -> Option<Region> {
        let min = self.min.sup(&other.min);
        let max = self.max.inf(&other.max);
        let r = Region { min, max };
        (min.x < max.x && min.y < max.y && min.z < max.z).then_some(r)
    }

    /// The smallest region holding both. An empty region adds nothing.
    pub fn union(&self, other: &Region) -> Region {
        match (self.is_empty(), other.is_empty()) {
            (true, _) => *other,
            (_, true) => *self,
            _ => Region { min: self.min.inf(&other.min), max: self.max.sup(&other.max) },
        }
    }

    /// Grown by `n` voxels on every side, saturating at the ends of the i32 space.
    pub fn expanded(&self, n: u32) -> Region {
        let n = n.min(i32::MAX as u32) as i32;
        let lo = |v: i32| v.saturating_sub(n);
        let hi = |v: i32| v.saturating_add(n);
        Region {
            min: Point3::new(lo(self.min.x), lo(self.min.y), lo(self.min.z)),
            max: Point3::new(hi(self.max.x), hi(self.max.y), hi(self.max.z)),
        }
    }

    /// Index of `p` (inside the region) in a dense buffer for this region: X fastest, then Z, then Y.
    #[inline]
    pub fn index_of(&self, p: VoxelPos) -> usize {
        let [sx, _, sz] = self.size();
        let (x, y, z) =
            ((p.x - self.min.x) as usize, (p.y - self.min.y) as usize, (p.z - self.min.z) as usize);
        x + sx as usize * (z + sz as usize * y)
    }

    /// Every voxel position in buffer order (X fastest, then Z, then Y).
    pub fn iter(&self) -> impl Iterator<Item = VoxelPos> + use<> {
        let r = *self;
        (r.min.y..r.max.y).flat_map(move |y| {
            (r.min.z..r.max.z).flat_map(move |z| (r.min.x..r.max.x).map(move |x| Point3::new(x, y, z)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn extremes_do_not_overflow() {
        let r =
            Region::new(Point3::new(i32::MIN, i32::MIN, i32::MIN), Point3::new(i32::MAX, i32::MAX, i32::MAX))
                .unwrap();
        assert_eq!(r.size(), [u32::MAX; 3]);
        assert_eq!(r.volume(), (u32::MAX as u128).pow(3));
        assert!(matches!(r.len(), Err(CoreError::RegionOverflow { what: "voxel count", .. })));
        assert!(matches!(Region::voxel(Point3::new(i32::MAX, 0, 0)), Err(CoreError::RegionOverflow { .. })));
        assert_eq!(r.expanded(5), r);
    }

    proptest! {
        #[test]
        fn iter_matches_index_of(x in -40i32..40, y in -40i32..40, z in -40i32..40, s in proptest::array::uniform3(0u32..6)) {
            let r = Region::from_min_size(Point3::new(x, y, z), s).unwrap();
            let all: Vec<_> = r.iter().collect();
            prop_assert_eq!(all.len(), r.len().unwrap());
            for (i, p) in all.iter().enumerate() {
                prop_assert!(r.contains(*p));
                prop_assert_eq!(r.index_of(*p), i);
            }
        }

        #[test]
        fn intersection_is_exact(a in proptest::array::uniform3(-20i32..20), sa in proptest::array::uniform3(0u32..15),
                                 b in proptest::array::uniform3(-20i32..20), sb in proptest::array::uniform3(0u32..15)) {
            let ra = Region::from_min_size(a.into(), sa).unwrap();
            let rb = Region::from_min_size(b.into(), sb).unwrap();
            let i = ra.intersection(&rb);
            let u = ra.union(&rb);
            for p in Region::new(Point3::new(-20, -20, -20), Point3::new(36, 36, 36)).unwrap().iter() {
                let both = ra.contains(p) && rb.contains(p);
                prop_assert_eq!(i.is_some_and(|i| i.contains(p)), both);
                if ra.contains(p) || rb.contains(p) { prop_assert!(u.contains(p)); }
            }
        }
    }
}

/// Accumulates the bounding region of changed voxels: the dirty region every write reports.
#[derive(Clone, Copy, Debug, Default)]
pub struct DirtyBounds {
    bounds: Option<(VoxelPos, VoxelPos)>,
}

impl DirtyBounds {
    /// Nothing dirty yet.
    pub const fn new() -> Self {
        DirtyBounds { bounds: None }
    }

    /// Marks the X run `[x0, x1)` of row `(y, z)` dirty (nothing for an empty run).
    #[inline]
    pub fn add_run(&mut self, x0: i32, x1: i32, y: i32, z: i32) {
        if x0 >= x1 {
            return;
        }
        let (lo, hi) = (Point3::new(x0, y, z), Point3::new(x1 - 1, y, z));
        self.bounds = Some(match self.bounds {
            None => (lo, hi),
            Some((a, b)) => (a.inf(&lo), b.sup(&hi)),
        });
    }

    /// Merges another accumulator.
    pub fn merge(&mut self, other: &DirtyBounds) {
        if let Some((lo, hi)) = other.bounds {
            self.add_run(lo.x, hi.x + 1, lo.y, lo.z);
            self.add_run(hi.x, hi.x + 1, hi.y, hi.z);
        }
    }

    /// The dirty region, `None` when nothing changed.
    pub fn region(&self) -> Option<Region> {
        // Every marked voxel came from a region with an exclusive max in i32, so +1 cannot overflow.
        self.bounds.map(|(lo, hi)| Region { min: lo, max: Point3::new(hi.x + 1, hi.y + 1, hi.z + 1) })
    }
}
