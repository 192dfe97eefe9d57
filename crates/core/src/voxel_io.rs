//! Reading and writing voxels: the two traits every producer and consumer of voxels meets at, and
//! [`DenseVoxels`], a plain dense box that implements both (the reference in tests, the peer in
//! benches, and a scratch buffer everywhere).

use crate::{CoreError, DirtyBounds, Region, Voxel, VoxelPos};
use nalgebra::Point3;

/// Reads voxels. Implementors: the voxel store, [`DenseVoxels`].
///
/// Positions outside what an implementor holds read as Air.
pub trait VoxelRead {
    /// The voxel at `p`.
    fn voxel(&self, p: VoxelPos) -> Voxel;

    /// Calls `visit(start, row)` for X-row segments that together cover `region` exactly once:
    /// `row[i]` is the voxel at `start + (i, 0, 0)`. Segments come in buffer order — by y, then z,
    /// then x — so a consumer can stream the region (the codec encodes straight from them). The
    /// slices are borrowed, never copied: this is the fast path.
    fn visit_rows(&self, region: &Region, visit: &mut dyn FnMut(VoxelPos, &[Voxel]));

    /// `Some(v)` when the reader can tell cheaply that every voxel of `region` is `v`; `None` when the
    /// region is mixed *or* the reader cannot tell without reading it. `None` is always a correct
    /// answer (the default); consumers use `Some` only as a fast path (the mesher skips a uniform
    /// chunk without reading it). The store answers from its packed rows in time proportional to
    /// the region's rows, not its voxels.
    fn uniform(&self, region: &Region) -> Option<Voxel> {
        let _ = region;
        None
    }

    /// The voxels of `region` as one slice laid out as [`Region::index_of`] says, when the reader
    /// already holds them so; `None` otherwise (the default). Consumers use it to skip a copy and
    /// fall back to [`VoxelRead::read_box`]. [`DenseVoxels`] answers for its own region.
    fn as_dense(&self, region: &Region) -> Option<&[Voxel]> {
        let _ = region;
        None
    }

    /// Copies the X row starting at `start` into `out` (`out.len()` voxels).
    fn read_row(&self, start: VoxelPos, out: &mut [Voxel]) -> Result<(), CoreError> {
        let len = u32::try_from(out.len()).map_err(|_| CoreError::RegionOverflow {
            what: "row length",
            value: out.len() as i128,
            limit: u32::MAX as i128,
        })?;
        let region = Region::from_min_size(start, [len, 1, 1])?;
        self.visit_rows(&region, &mut |p, row| {
            let at = (p.x - start.x) as usize;
            out[at..at + row.len()].copy_from_slice(row);
        });
        Ok(())
    }

    /// Copies `region` into `out`, laid out as [`Region::index_of`] says. `out.len()` must equal the
    /// region's voxel count ([`CoreError::BufferSize`] otherwise).
    fn read_box(&self, region: &Region, out: &mut [Voxel]) -> Result<(), CoreError> {
        let expected = region.len()?;
        if out.len() != expected {
            return Err(CoreError::BufferSize { expected, got: out.len() });
        }
        self.visit_rows(region, &mut |p, row| {
            let at = region.index_of(p);
            out[at..at + row.len()].copy_from_slice(row);
        });
        Ok(())
    }
}

/// Writes voxels. Every write returns its dirty region: the bounding box of the voxels whose value
/// changed, `None` when nothing changed, so consumers rebuild only what an edit touched.
pub trait VoxelWrite {
    /// The implementor's error; it can always carry a core error.
    type Error: std::error::Error + From<CoreError>;

    /// Writes `voxels` (laid out as [`Region::index_of`] says) into `region`.
    fn write_box(&mut self, region: &Region, voxels: &[Voxel]) -> Result<Option<Region>, Self::Error>;

    /// Sets every voxel of `region` to `voxel`.
    fn fill(&mut self, region: &Region, voxel: Voxel) -> Result<Option<Region>, Self::Error>;
}

/// A dense box of voxels: one `Voxel` per position of its region, X fastest, then Z, then Y.
///
/// Simple and obviously right, so it is the reference the store is tested against and the peer it is
/// benchmarked against. Reads outside the region give Air; writes outside it are an error.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct DenseVoxels {
    region: Region,
    voxels: Vec<Voxel>,
}

impl DenseVoxels {
    /// An all-air box over `region`. Refuses regions larger than `max_voxels` (the caller's memory
    /// limit) with [`CoreError::TooManyVoxels`] (or [`CoreError::RegionOverflow`]) before allocating.
    pub fn new(region: Region, max_voxels: usize) -> Result<Self, CoreError> {
        let len = region.len()?;
        if len > max_voxels {
            return Err(CoreError::TooManyVoxels { voxels: len, limit: max_voxels });
        }
        Ok(DenseVoxels { region, voxels: vec![Voxel::AIR; len] })
    }

    /// A box over `region` holding `voxels` (length checked).
    pub fn from_vec(region: Region, voxels: Vec<Voxel>) -> Result<Self, CoreError> {
        let expected = region.len()?;
        if voxels.len() != expected {
            return Err(CoreError::BufferSize { expected, got: voxels.len() });
        }
        Ok(DenseVoxels { region, voxels })
    }

    /// The region covered.
    pub fn region(&self) -> &Region {
        &self.region
    }

    /// All voxels in buffer order.
    pub fn as_slice(&self) -> &[Voxel] {
        &self.voxels
    }

    /// All voxels in buffer order, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [Voxel] {
        &mut self.voxels
    }

    /// The X row of `size.x` voxels at `(y, z)` (absolute coordinates inside the region).
    #[inline]
    pub fn row(&self, y: i32, z: i32) -> &[Voxel] {
        let sx = self.region.size()[0] as usize;
        let at = self.region.index_of(Point3::new(self.region.min().x, y, z));
        &self.voxels[at..at + sx]
    }

    /// Sets one voxel inside the region; returns whether it was inside.
    pub fn set(&mut self, p: VoxelPos, v: Voxel) -> bool {
        if !self.region.contains(p) {
            return false;
        }
        let i = self.region.index_of(p);
        self.voxels[i] = v;
        true
    }

    /// Bytes of voxel data held.
    pub fn heap_bytes(&self) -> usize {
        self.voxels.capacity() * std::mem::size_of::<Voxel>()
    }

    fn check_inside(&self, region: &Region) -> Result<(), CoreError> {
        if self.region.contains_region(region) {
            Ok(())
        } else {
            Err(CoreError::OutsideRegion { region: *region, bounds: self.region })
        }
    }

    fn modify(&mut self, region: &Region, mut f: impl FnMut(usize) -> Voxel) -> Option<Region> {
        let mut dirty = DirtyBounds::new();
        for (src, p) in region.iter().enumerate() {
            let i = self.region.index_of(p);
            let new = f(src);
            if self.voxels[i] != new {
                self.voxels[i] = new;
                dirty.add_run(p.x, p.x + 1, p.y, p.z);
            }
        }
        dirty.region()
    }
}

/// Visits `[from, to)` of row `(y, z)` as Air, in segments of a static air row.
fn air_runs(from: i32, to: i32, y: i32, z: i32, visit: &mut dyn FnMut(VoxelPos, &[Voxel])) {
    static AIR_ROW: [Voxel; 64] = [Voxel::AIR; 64];
    let mut x = from;
    while x < to {
        let n = ((to - x) as usize).min(AIR_ROW.len());
        visit(Point3::new(x, y, z), &AIR_ROW[..n]);
        x += n as i32;
    }
}

impl VoxelRead for DenseVoxels {
    #[inline]
    fn voxel(&self, p: VoxelPos) -> Voxel {
        if self.region.contains(p) { self.voxels[self.region.index_of(p)] } else { Voxel::AIR }
    }

    fn as_dense(&self, region: &Region) -> Option<&[Voxel]> {
        (*region == self.region).then_some(&self.voxels[..])
    }

    fn visit_rows(&self, region: &Region, visit: &mut dyn FnMut(VoxelPos, &[Voxel])) {
        let inside = self.region.intersection(region);
        for y in region.min().y..region.max().y {
            for z in region.min().z..region.max().z {
                let row_inside = inside
                    .filter(|i| (i.min().y..i.max().y).contains(&y) && (i.min().z..i.max().z).contains(&z));
                // Air before, the part inside, Air after: outside reads as Air.
                let (a, b) = row_inside.map_or((region.max().x, region.max().x), |i| (i.min().x, i.max().x));
                air_runs(region.min().x, a, y, z, visit);
                if a < b {
                    let at = self.region.index_of(Point3::new(a, y, z));
                    visit(Point3::new(a, y, z), &self.voxels[at..at + (b - a) as usize]);
                }
                air_runs(b.max(a), region.max().x, y, z, visit);
            }
        }
    }
}

impl VoxelWrite for DenseVoxels {
    type Error = CoreError;

    fn write_box(&mut self, region: &Region, voxels: &[Voxel]) -> Result<Option<Region>, CoreError> {
        let expected = region.len()?;
        if voxels.len() != expected {
            return Err(CoreError::BufferSize { expected, got: voxels.len() });
        }
        self.check_inside(region)?;
        Ok(self.modify(region, |i| voxels[i]))
    }

    fn fill(&mut self, region: &Region, voxel: Voxel) -> Result<Option<Region>, CoreError> {
        self.check_inside(region)?;
        Ok(self.modify(region, |_| voxel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Material;

    #[test]
    fn reads_outside_are_air_and_rows_cover_once() {
        let r = Region::from_min_size(Point3::new(-3, 0, 0), [5, 2, 2]).unwrap();
        let mut d = DenseVoxels::new(r, 1 << 20).unwrap();
        let rock = Voxel::full(Material::new(3).unwrap());
        assert_eq!(
            d.fill(&Region::from_min_size(Point3::new(-1, 1, 1), [2, 1, 1]).unwrap(), rock).unwrap(),
            Some(Region::from_min_size(Point3::new(-1, 1, 1), [2, 1, 1]).unwrap())
        );
        assert_eq!(d.fill(&r, Voxel::AIR).unwrap().map(|d| d.len().unwrap()), Some(2));
        d.set(Point3::new(0, 1, 1), rock);
        let q = Region::from_min_size(Point3::new(-100, -1, -1), [200, 4, 4]).unwrap();
        let mut out = vec![Voxel::AIR; q.len().unwrap()];
        d.read_box(&q, &mut out).unwrap();
        for p in q.iter() {
            assert_eq!(out[q.index_of(p)], d.voxel(p));
        }
        assert_eq!(out.iter().filter(|v| !v.is_air()).count(), 1);
        assert!(matches!(d.fill(&q, rock), Err(CoreError::OutsideRegion { .. })));
        assert!(matches!(d.read_box(&q, &mut out[1..]), Err(CoreError::BufferSize { .. })));
        assert!(matches!(DenseVoxels::new(q, 10), Err(CoreError::TooManyVoxels { .. })));
    }

    #[test]
    fn dense_boxes_lend_exactly_their_own_region() {
        let r = Region::from_min_size(Point3::new(-3, 0, 0), [5, 2, 2]).unwrap();
        let mut d = DenseVoxels::new(r, 1 << 20).unwrap();
        d.set(Point3::new(-2, 1, 0), Voxel::full(Material::new(3).unwrap()));
        let mut copy = vec![Voxel::AIR; r.len().unwrap()];
        d.read_box(&r, &mut copy).unwrap();
        assert_eq!(d.as_dense(&r), Some(&copy[..]));
        let smaller = Region::from_min_size(Point3::new(-3, 0, 0), [5, 2, 1]).unwrap();
        assert_eq!(d.as_dense(&smaller), None);
    }
}
