//! Triangle sources (meshes seen without copying, f32 or 16-bit quantized positions) and triangle indices (spatial queries over them),
//! with [`BruteForceTriangles`], the reference every index is tested against.

use crate::{Aabb, Culling, Ray, RayHit, ray_triangle};
use nalgebra::Point3;

/// The index buffer of a mesh: compact physics meshes use packed 9-bit or u16 indices, render
/// meshes u32.
#[derive(Clone, Copy, Debug)]
pub enum TriangleIndices<'a> {
    /// Three 9-bit indices in the low 27 bits of a u32 (meshes of at most 512 vertices); the bits
    /// above are the mesh's own (a physics mesh keeps its edge flags there), never an index's.
    Packed9(&'a [u32]),
    /// 16-bit indices (meshes of at most 65536 vertices).
    U16(&'a [[u16; 3]]),
    /// 32-bit indices.
    U32(&'a [[u32; 3]]),
}

/// The three indices of a [`TriangleIndices::Packed9`] triangle.
#[inline(always)]
pub fn unpack9(t: u32) -> [u32; 3] {
    [t & 511, t >> 9 & 511, t >> 18 & 511]
}

/// Packs three indices below 512 as [`TriangleIndices::Packed9`] stores them, `high` above them
/// (bits 27 and up).
#[inline]
pub fn pack9(v: [u32; 3], high: u32) -> u32 {
    debug_assert!(v.iter().all(|&i| i < 512) && high < 1 << 5);
    v[0] | v[1] << 9 | v[2] << 18 | high << 27
}

impl TriangleIndices<'_> {
    /// Number of triangles.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            TriangleIndices::Packed9(t) => t.len(),
            TriangleIndices::U16(t) => t.len(),
            TriangleIndices::U32(t) => t.len(),
        }
    }

    /// True when there are no triangles.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The vertex indices of triangle `i`.
    #[inline]
    pub fn get(&self, i: usize) -> [u32; 3] {
        match self {
            TriangleIndices::Packed9(t) => unpack9(t[i]),
            TriangleIndices::U16(t) => t[i].map(u32::from),
            TriangleIndices::U32(t) => t[i],
        }
    }
}

/// Per-triangle internal-edge flags (bit `i`: edge `i`, corners `i` and `(i + 1) % 3`, is an
/// active convex crease), as a mesh stores them: none, a byte a triangle, or bits 27..30 of a
/// [`TriangleIndices::Packed9`] triangle.
#[derive(Clone, Copy, Debug, Default)]
pub enum EdgeFlags<'a> {
    /// No flags: every edge counts as active.
    #[default]
    None,
    /// A byte a triangle.
    Bytes(&'a [u8]),
    /// In the packed triangles' bits 27..30.
    Packed9(&'a [u32]),
}

impl<'a> From<&'a [u8]> for EdgeFlags<'a> {
    fn from(flags: &'a [u8]) -> Self {
        EdgeFlags::Bytes(flags)
    }
}

impl EdgeFlags<'_> {
    /// Triangles with flags (0 for [`EdgeFlags::None`]).
    pub fn len(&self) -> usize {
        match self {
            EdgeFlags::None => 0,
            EdgeFlags::Bytes(f) => f.len(),
            EdgeFlags::Packed9(t) => t.len(),
        }
    }

    /// True without flags.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The flags of triangle `t`, `None` past the end (or without flags).
    #[inline]
    pub fn get(&self, t: usize) -> Option<u8> {
        match self {
            EdgeFlags::None => None,
            EdgeFlags::Bytes(f) => f.get(t).copied(),
            EdgeFlags::Packed9(p) => p.get(t).map(|&w| (w >> 27 & 7) as u8),
        }
    }

    /// Every triangle's flags, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u8> + '_ {
        (0..self.len()).map(|t| self.get(t).unwrap_or(0))
    }
}

/// Vertex positions 16 bits per coordinate: vertex `i` is `origin + points[i] * step`, computed per
/// coordinate in f32. 6 bytes a vertex instead of 12: the packing the loose kD tree article proposes
/// for physics meshes.
///
/// With `step` a power of two and `origin` on the `step` grid, `points[i] * step` is exact and the
/// sum rounds once, so two meshes that quantize the same point on the same grid decode it to the
/// same f32, whatever their origins: neighboring chunks meet without cracks.
#[derive(Clone, Copy, Debug)]
pub struct QuantizedPositions<'a> {
    /// Coordinates in steps from `origin`.
    pub points: &'a [[u16; 3]],
    /// The position of `[0, 0, 0]`.
    pub origin: Point3<f32>,
    /// The size of one step, on every axis.
    pub step: f32,
}

impl QuantizedPositions<'_> {
    /// The position of vertex `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Point3<f32> {
        let q = self.points[i];
        Point3::new(
            self.origin.x + f32::from(q[0]) * self.step,
            self.origin.y + f32::from(q[1]) * self.step,
            self.origin.z + f32::from(q[2]) * self.step,
        )
    }
}

/// The vertex buffer of a mesh: plain f32 positions, or 16-bit quantized ones (compact physics
/// meshes).
#[derive(Clone, Copy, Debug)]
pub enum Positions<'a> {
    /// 12 bytes a vertex.
    F32(&'a [Point3<f32>]),
    /// 6 bytes a vertex.
    Quantized(QuantizedPositions<'a>),
}

impl Positions<'_> {
    /// Number of vertices.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Positions::F32(p) => p.len(),
            Positions::Quantized(q) => q.points.len(),
        }
    }

    /// True when there are no vertices.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The position of vertex `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Point3<f32> {
        match self {
            Positions::F32(p) => p[i],
            Positions::Quantized(q) => q.get(i),
        }
    }

    /// Every position, decoded.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Point3<f32>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

/// A triangle mesh seen without copying: positions plus an index buffer.
///
/// Indices must be below `positions().len()`; consumers may check with [`check_indices`].
pub trait TriangleSource {
    /// Vertex positions.
    fn positions(&self) -> Positions<'_>;
    /// Triangles as vertex-index triples, counter-clockwise seen from the front.
    fn indices(&self) -> TriangleIndices<'_>;

    /// Number of triangles.
    fn triangle_count(&self) -> usize {
        self.indices().len()
    }

    /// The corners of triangle `i`.
    #[inline]
    fn triangle(&self, i: usize) -> [Point3<f32>; 3] {
        let p = self.positions();
        self.indices().get(i).map(|v| p.get(v as usize))
    }
}

/// Returns the first triangle with an index past the end of the positions, if any.
pub fn check_indices(source: &impl TriangleSource) -> Result<(), usize> {
    let (n, idx) = (source.positions().len(), source.indices());
    (0..idx.len()).find(|&i| idx.get(i).iter().any(|&v| v as usize >= n)).map_or(Ok(()), Err)
}

/// An owned triangle mesh with u32 indices: the simplest [`TriangleSource`].
#[derive(Clone, Default, Debug, PartialEq)]
pub struct TriangleMesh {
    /// Vertex positions.
    pub positions: Vec<Point3<f32>>,
    /// Triangles.
    pub triangles: Vec<[u32; 3]>,
}

impl TriangleSource for TriangleMesh {
    fn positions(&self) -> Positions<'_> {
        Positions::F32(&self.positions)
    }
    fn indices(&self) -> TriangleIndices<'_> {
        TriangleIndices::U32(&self.triangles)
    }
}

/// Spatial queries over a triangle set. Implementors: the kD tree, [`BruteForceTriangles`].
///
/// Semantics every implementor shares, so results compare exactly: a triangle overlaps an AABB when
/// its bounding box does (closed boxes); ray hits use [`ray_triangle`].
pub trait TriangleIndex {
    /// Calls `visit(triangle)` for every triangle whose bounding box overlaps `aabb`, each once.
    fn triangles_in_aabb(&self, aabb: &Aabb, visit: &mut dyn FnMut(u32));

    /// The closest hit with `t` in `[0, max_t]`, ties to the lowest triangle index.
    fn cast_ray(&self, ray: &Ray, max_t: f32, culling: Culling) -> Option<RayHit>;

    /// True when any triangle is hit with `t` in `[0, max_t]`; may stop at the first hit.
    fn ray_hits_any(&self, ray: &Ray, max_t: f32, culling: Culling) -> bool;
}

/// The brute-force triangle index: tests every triangle. O(n) per query; the reference.
#[derive(Clone, Copy, Debug)]
pub struct BruteForceTriangles<'a, S: TriangleSource>(pub &'a S);

impl<S: TriangleSource> TriangleIndex for BruteForceTriangles<'_, S> {
    fn triangles_in_aabb(&self, aabb: &Aabb, visit: &mut dyn FnMut(u32)) {
        for i in 0..self.0.triangle_count() {
            let t = self.0.triangle(i);
            if Aabb::from_points(&t).is_some_and(|b| b.intersects(aabb)) {
                visit(i as u32);
            }
        }
    }

    fn cast_ray(&self, ray: &Ray, max_t: f32, culling: Culling) -> Option<RayHit> {
        let mut best: Option<RayHit> = None;
        for i in 0..self.0.triangle_count() {
            let limit = best.map_or(max_t, |b| b.t);
            if let Some((t, u, v)) = ray_triangle(ray, &self.0.triangle(i), limit, culling)
                && best.is_none_or(|b| t < b.t)
            {
                best = Some(RayHit { t, triangle: i as u32, u, v });
            }
        }
        best
    }

    fn ray_hits_any(&self, ray: &Ray, max_t: f32, culling: Culling) -> bool {
        (0..self.0.triangle_count()).any(|i| ray_triangle(ray, &self.0.triangle(i), max_t, culling).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::Vector3;

    #[test]
    fn quantized_positions_decode_on_a_shared_grid() {
        // The same point on the step grid from two origins a whole number of voxels apart.
        let step = 1.0 / 1024.0;
        let (a, b) = ([[1536u16, 700, 65535]], [[1536u16 + 8 * 1024, 700 + 3 * 1024, 65535 - 40 * 1024]]);
        let pa = QuantizedPositions { points: &a, origin: Point3::new(1000.0, -7.0, 3.0), step };
        let pb = QuantizedPositions { points: &b, origin: Point3::new(992.0, -10.0, 43.0), step };
        assert_eq!(pa.get(0), pb.get(0));
        assert_eq!(pa.get(0), Point3::new(1001.5, -7.0 + 700.0 / 1024.0, 3.0 + 65535.0 / 1024.0));
        let p = Positions::Quantized(pa);
        assert_eq!((p.len(), p.is_empty(), p.iter().next()), (1, false, Some(pa.get(0))));
    }

    #[test]
    fn brute_force_finds_closest() {
        let mut m = TriangleMesh::default();
        for (k, y) in [2.0f32, 1.0, 3.0].iter().enumerate() {
            let b = m.positions.len() as u32;
            m.positions.extend([
                Point3::new(0.0, *y, 0.0),
                Point3::new(1.0, *y, 0.0),
                Point3::new(0.0, *y, 1.0),
            ]);
            m.triangles.push([b, b + 1, b + 2]);
            assert_eq!(m.triangle(k)[0].y, *y);
        }
        let idx = BruteForceTriangles(&m);
        let ray = Ray::new(Point3::new(0.2, 10.0, 0.2), Vector3::new(0.0, -1.0, 0.0));
        let hit = idx.cast_ray(&ray, 100.0, Culling::None).unwrap();
        assert_eq!((hit.triangle, hit.t), (2, 7.0));
        assert!(idx.ray_hits_any(&ray, 100.0, Culling::None));
        assert!(!idx.ray_hits_any(&ray, 6.0, Culling::None));
        let mut found = vec![];
        idx.triangles_in_aabb(&Aabb::new(Point3::new(0.0, 0.5, 0.0), Point3::new(1.0, 2.0, 1.0)), &mut |t| {
            found.push(t)
        });
        assert_eq!(found, vec![0, 1]);
        assert_eq!(check_indices(&m), Ok(()));
        m.triangles.push([0, 1, 9]);
        assert_eq!(check_indices(&m), Err(3));
    }

    #[test]
    fn packed_indices_and_flags_round_trip() {
        let words: Vec<u32> = [([0, 511, 7], 0b101), ([511, 0, 256], 0b010), ([3, 2, 1], 0)]
            .iter()
            .map(|&(v, f)| pack9(v, f))
            .collect();
        let idx = TriangleIndices::Packed9(&words);
        assert_eq!(idx.len(), 3);
        assert_eq!((idx.get(0), idx.get(1), idx.get(2)), ([0, 511, 7], [511, 0, 256], [3, 2, 1]));
        let flags = EdgeFlags::Packed9(&words);
        assert_eq!(flags.iter().collect::<Vec<_>>(), vec![0b101, 0b010, 0]);
        assert_eq!((flags.get(3), EdgeFlags::None.get(0)), (None, None));
        assert_eq!(EdgeFlags::from(&[7u8, 1][..]).get(1), Some(1));
    }
}
