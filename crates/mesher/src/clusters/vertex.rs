//! Where a cluster's vertex goes: its cells' sums ([`Cluster`]), and the point nearest their
//! tangent planes, pulled toward their mass point and kept within its cube ([`place`]).

use crate::clusters::node::{CellVertex, ClusterKey, ClusterVertex};
use voxterra_core::Material;
use voxterra_core::nalgebra::{Point3, Vector3};

/// One cluster's accumulated cells.
#[derive(Default, Clone)]
pub(crate) struct Cluster {
    pub(crate) sum: [f64; 3],
    pub(crate) normal: [f64; 3],
    /// The cells' tangent planes (each vertex's normal through it) as a quadric: `Σ n nᵀ` (upper
    /// triangle: xx, xy, xz, yy, yz, zz) and `Σ n (n · p)`.
    pub(crate) ata: [f64; 6],
    pub(crate) atb: [f64; 3],
    pub(crate) cells: u32,
    /// Cells per material id, as (id, count): the first few inline (PERF: an allocation per
    /// cluster was a tenth of making a chunk's clusters), the rest beyond.
    pub(crate) materials: [(u8, u32); 4],
    pub(crate) distinct: u8,
    pub(crate) more: Vec<(u8, u32)>,
}

impl Cluster {
    /// Adds a cell's vertex (cells go in (y, z, x) order: a cluster's sums depend on its cells
    /// alone, whichever region they were read from).
    pub(crate) fn add(&mut self, (_, p, n, m): &CellVertex) {
        for a in 0..3 {
            self.sum[a] += p[a] as f64;
            self.normal[a] += n[a] as f64;
        }
        let (nn, pp) = (n.cast::<f64>(), p.coords.cast::<f64>());
        let d = nn.dot(&pp);
        let q = [nn.x * nn.x, nn.x * nn.y, nn.x * nn.z, nn.y * nn.y, nn.y * nn.z, nn.z * nn.z];
        for (a, v) in self.ata.iter_mut().zip(q) {
            *a += v;
        }
        for a in 0..3 {
            self.atb[a] += nn[a] * d;
        }
        self.cells += 1;
        let id = m.id();
        let inline = &mut self.materials[..self.distinct as usize];
        if let Some(e) = inline.iter_mut().find(|e| e.0 == id) {
            e.1 += 1;
        } else if (self.distinct as usize) < self.materials.len() {
            self.materials[self.distinct as usize] = (id, 1);
            self.distinct += 1;
        } else {
            match self.more.iter_mut().find(|e| e.0 == id) {
                Some(e) => e.1 += 1,
                None => self.more.push((id, 1)),
            }
        }
    }
}

/// A cluster's vertex from its sums: the mass point, the mean normal, the most common material
/// (ties to the lower id).
pub(crate) fn place(key: &ClusterKey, c: &Cluster) -> ClusterVertex {
    let n = c.cells as f64;
    let mass = voxterra_core::nalgebra::Vector3::new(c.sum[0] / n, c.sum[1] / n, c.sum[2] / n);
    // The point nearest the cells' tangent planes, pulled toward the mass point (Tikhonov), kept
    // in the cluster's cube: it sits on the surface where the mass point of a curved patch sinks
    // under it.
    let lambda = 0.05 * n;
    let a = c.ata;
    let m = voxterra_core::nalgebra::Matrix3::new(
        a[0] + lambda,
        a[1],
        a[2],
        a[1],
        a[3] + lambda,
        a[4],
        a[2],
        a[4],
        a[5] + lambda,
    );
    let rhs = voxterra_core::nalgebra::Vector3::new(c.atb[0], c.atb[1], c.atb[2]) + mass * lambda;
    // A lone cell keeps its own vertex, exactly (level 0 is the mesher's mesh).
    let placed = if c.cells == 1 { mass } else { solve_spd(&m, &rhs).unwrap_or(mass) };
    let (l, cc) = (key.0, key.1);
    let side = (1i64 << l) as f64;
    // Never farther than a quarter cluster from the mass point: where the planes disagree (two
    // sheets through one cluster) their solution can run to the cube's corner.
    let reach = 0.25 * side;
    let shift = placed - mass;
    let placed = if shift.norm() > reach { mass + shift * (reach / shift.norm()) } else { placed };
    let p = voxterra_core::nalgebra::Vector3::from_fn(|i, _| {
        let lo = (cc[i] as i64 as f64) * side + 0.5;
        let v = placed[i];
        if v.is_finite() { v.clamp(lo, lo + side) } else { mass[i] }
    });
    let position = Point3::new(p.x as f32, p.y as f32, p.z as f32);
    let normal = Vector3::new(c.normal[0] as f32, c.normal[1] as f32, c.normal[2] as f32);
    let normal = normal.try_normalize(1e-12).unwrap_or(Vector3::y());
    let counts = c.materials[..c.distinct as usize].iter().chain(&c.more);
    let material = counts.max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0))).map_or(0, |e| e.0);
    ClusterVertex { position, normal, material: Material::from_low_bits(material) }
}

/// `m⁻¹ b` for a symmetric positive definite `m` by Cholesky, written out for 3×3 (PERF:
/// nalgebra's general one was a tenth of making a chunk's clusters); `None` when `m` is not
/// positive definite.
pub(crate) fn solve_spd(
    m: &voxterra_core::nalgebra::Matrix3<f64>,
    b: &voxterra_core::nalgebra::Vector3<f64>,
) -> Option<voxterra_core::nalgebra::Vector3<f64>> {
    let l00 = m[(0, 0)].sqrt();
    let l10 = m[(1, 0)] / l00;
    let l20 = m[(2, 0)] / l00;
    let l11 = (m[(1, 1)] - l10 * l10).sqrt();
    let l21 = (m[(2, 1)] - l20 * l10) / l11;
    let l22 = (m[(2, 2)] - l20 * l20 - l21 * l21).sqrt();
    if !(l00 > 0.0 && l11 > 0.0 && l22 > 0.0) {
        return None;
    }
    // L y = b, then Lᵀ x = y.
    let y0 = b[0] / l00;
    let y1 = (b[1] - l10 * y0) / l11;
    let y2 = (b[2] - l20 * y0 - l21 * y1) / l22;
    let x2 = y2 / l22;
    let x1 = (y1 - l21 * x2) / l11;
    let x0 = (y0 - l10 * x1 - l20 * x2) / l00;
    Some(voxterra_core::nalgebra::Vector3::new(x0, x1, x2))
}

/// The cube's twelve edges as corner pairs (corner `i` at `(i & 1, i >> 1 & 1, i >> 2 & 1)`): x
/// edges, then y, then z.
const EDGES: [(u8, u8); 12] =
    [(0, 1), (2, 3), (4, 5), (6, 7), (0, 2), (1, 3), (4, 6), (5, 7), (0, 4), (1, 5), (2, 6), (3, 7)];

/// The separate pieces of surface ("sheets") that cross a cluster's cube, as marching cubes draws
/// them from its corners' signs, inside corners diagonal on a face joined: two where a cluster
/// holds both slopes under a ridge or both sides of a thin wall. A cluster keeps a vertex per
/// sheet (Schaefer, Ju and Warren, "Manifold Dual Contouring", 2007), so polygons of one sheet
/// never reach across to the other and fold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Sheets {
    pub(crate) count: u8,
    /// Each edge's sheet, `u8::MAX` where the edge does not cross; sheets numbered in the order
    /// of their first edge.
    edge: [u8; 12],
    /// Each sheet's centre: the mean of its crossing edges' midpoints, in the cube's unit
    /// coordinates.
    centre: [[f32; 3]; 4],
}

static SHEETS: std::sync::LazyLock<[Sheets; 256]> =
    std::sync::LazyLock::new(|| core::array::from_fn(|c| Sheets::of(c as u8)));

/// The sheets of a cube whose inside corners are `corners` (bit `x + 2y + 4z`).
pub(crate) fn sheets(corners: u8) -> &'static Sheets {
    &SHEETS[corners as usize]
}

/// [`sheets`] of every corner pattern.
pub(crate) fn sheet_table() -> &'static [Sheets; 256] {
    &SHEETS
}

impl Sheets {
    fn of(inside: u8) -> Self {
        let crosses = |e: usize| {
            let (a, b) = EDGES[e];
            (inside >> a & 1) != (inside >> b & 1)
        };
        let edge_of = |a: u8, b: u8| EDGES.iter().position(|&e| e == (a.min(b), a.max(b))).unwrap_or(0);
        let mut parent: [usize; 12] = core::array::from_fn(|i| i);
        fn root(p: &[usize; 12], mut i: usize) -> usize {
            while p[i] != i {
                i = p[i];
            }
            i
        }
        let mut join = |a: usize, b: usize| {
            let (ra, rb) = (root(&parent, a), root(&parent, b));
            parent[ra.max(rb)] = ra.min(rb);
        };
        // Each face's pieces of surface join its crossing edges in pairs: the two of a face
        // crossed twice; on a face crossed four times, the two around each outside corner.
        for axis in 0..3u8 {
            for side in 0..2u8 {
                let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
                let base = side << axis;
                let ring = [base, base | 1 << u, base | 1 << u | 1 << v, base | 1 << v];
                let around = |k: usize| edge_of(ring[k], ring[(k + 1) % 4]);
                let cut: Vec<usize> = (0..4).map(around).filter(|&e| crosses(e)).collect();
                if cut.len() == 2 {
                    join(cut[0], cut[1]);
                } else if cut.len() == 4 {
                    for (k, corner) in ring.iter().enumerate() {
                        if inside >> corner & 1 == 0 {
                            join(around((k + 3) % 4), around(k));
                        }
                    }
                }
            }
        }
        let mut out = Sheets { count: 0, edge: [u8::MAX; 12], centre: [[0.0; 3]; 4] };
        let mut sums = [([0.0f32; 3], 0u32); 4];
        for e in (0..12).filter(|&e| crosses(e)) {
            let r = root(&parent, e);
            let sheet = if r == e {
                out.count += 1;
                out.count - 1
            } else {
                out.edge[r]
            };
            out.edge[e] = sheet;
            let (a, b) = EDGES[e];
            let (sum, n) = &mut sums[sheet as usize];
            for (k, s) in sum.iter_mut().enumerate() {
                *s += ((a >> k & 1) + (b >> k & 1)) as f32 * 0.5;
            }
            *n += 1;
        }
        for (c, (sum, n)) in out.centre.iter_mut().zip(sums) {
            *c = sum.map(|v| v / n.max(1) as f32);
        }
        out
    }

    /// The sheet through the cube's edge along `axis` from corner `low` (its end with the lower
    /// coordinate), 0 where the edge does not cross.
    pub(crate) fn on_edge(&self, axis: usize, low: u8) -> u8 {
        let e = match axis {
            0 => low >> 1,
            1 => 4 + (low & 1) + 2 * (low >> 2),
            _ => 8 + low,
        };
        match self.edge.get(e as usize) {
            Some(&s) if s != u8::MAX => s,
            _ => 0,
        }
    }

    /// The sheet whose centre is nearest `p` (the cube's unit coordinates), the first on ties.
    pub(crate) fn nearest(&self, p: [f32; 3]) -> u8 {
        let d = |c: &[f32; 3]| (0..3).map(|a| (p[a] - c[a]) * (p[a] - c[a])).sum::<f32>();
        let mut best = 0;
        for s in 1..self.count {
            if d(&self.centre[s as usize]) < d(&self.centre[best as usize]) {
                best = s;
            }
        }
        best
    }
}

/// Where a cell's vertex at `p` lies in the cube of the level-`level` cluster at `coords`, in the
/// cube's unit coordinates (a cell vertex sits half a voxel past its cell's grid point).
pub(crate) fn unit_in(level: u32, coords: [i32; 3], p: &Point3<f32>) -> [f32; 3] {
    let side = (1i64 << level) as f32;
    [0, 1, 2].map(|a| (p[a] - 0.5 - (coords[a] as i64 * (1i64 << level)) as f32) / side)
}

/// Which corners of the level-`level` cube at `coords` are inside (bit `x + 2y + 4z`), as `inside`
/// tells of each corner voxel (a corner past `i32` is outside).
pub(crate) fn cube_corners(
    level: u32,
    coords: [i32; 3],
    mut inside: impl FnMut(voxterra_core::VoxelPos) -> bool,
) -> u8 {
    let mut out = 0u8;
    for i in 0..8u8 {
        let at = |a: usize| i32::try_from((coords[a] as i64 + (i >> a & 1) as i64) << level).ok();
        let (Some(x), Some(y), Some(z)) = (at(0), at(1), at(2)) else { continue };
        if inside(Point3::new(x, y, z)) {
            out |= 1 << i;
        }
    }
    out
}

/// The sums of a cluster with more than one sheet, one per sheet: each cell to the sheet nearest
/// its vertex. A sheet no cell is nearest takes the cluster's cells whole.
pub(crate) fn sheet_sums<'a>(
    level: u32,
    coords: [i32; 3],
    corners: u8,
    cells: impl Iterator<Item = &'a CellVertex> + Clone,
) -> Vec<Cluster> {
    let sh = sheets(corners);
    let mut out = vec![Cluster::default(); sh.count as usize];
    for c in cells.clone() {
        out[sh.nearest(unit_in(level, coords, &c.1)) as usize].add(c);
    }
    for sheet in out.iter_mut().filter(|s| s.cells == 0) {
        for c in cells.clone() {
            sheet.add(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::sheets;

    #[test]
    fn sheets_of_corner_signs() {
        let count = |c: u8| sheets(c).count;
        assert_eq!(count(0), 0);
        assert_eq!(count(0xff), 0);
        assert_eq!(count(1), 1); // one corner cut off
        assert_eq!(count(0b0000_0011), 1); // an edge
        assert_eq!(count(0b0000_1111), 1); // a plane
        assert_eq!(count(0b1000_0001), 2); // opposite corners
        assert_eq!(count(0b0000_0110), 1); // inside diagonal on a face: joined
        assert_eq!(count(!0b0000_0110), 2); // outside diagonal on a face: two corners cut off
        assert_eq!(count(!0b1000_0001), 2);
        assert_eq!(count(0b1001_0110), 4); // four corners apart
        // Every configuration: at most four sheets, every edge's sheet among them.
        for c in 0..=255u8 {
            let s = sheets(c);
            assert!(s.count <= 4);
            for axis in 0..3 {
                for low in (0..8u8).filter(|l| l >> axis & 1 == 0) {
                    assert!(s.on_edge(axis, low) < s.count.max(1));
                }
            }
        }
        // The sheets of two corners cut off lie by their corners.
        let s = sheets(!0b1000_0001);
        assert_ne!(s.nearest([0.1, 0.1, 0.1]), s.nearest([0.9, 0.9, 0.9]));
        assert_eq!(s.on_edge(0, 0), s.nearest([0.1, 0.1, 0.1]));
        // Corner 2 cut off apart from the rest (inside 0, 3, 6, 7: the inside diagonal of face
        // z = 0 joined): its three edges on one sheet, every other crossing edge on the other.
        let s = sheets(0b1100_1001);
        let corner2 = [s.on_edge(1, 0), s.on_edge(0, 2), s.on_edge(2, 2)];
        let rest = [s.on_edge(0, 0), s.on_edge(1, 1), s.on_edge(1, 4), s.on_edge(1, 5), s.on_edge(2, 0)];
        assert!(corner2.iter().all(|&e| e == corner2[0]));
        assert!(rest.iter().all(|&e| e == rest[0] && e != corner2[0]));
    }
}
