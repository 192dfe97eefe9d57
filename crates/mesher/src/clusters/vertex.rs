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
