//! One surface cell: the cube between 8 neighbouring voxel centres. Its vertex goes at the mass point
//! of its edge crossings (smooth, as surface nets) or at the minimiser of the crossings' planes
//! (sharp, as dual contouring), clamped to the cell; its normal is the occupancy gradient; its
//! material is the dominant matter material of its corners.
//!
//! Everything here depends only on the cell's 8 corner voxels, so two chunks that both place a
//! vertex for the same cell get the same bits: that is what makes chunk seams watertight.

/// Corner `i` sits at offset `(i & 1, i >> 1 & 1, i >> 2 & 1)` (x, y, z) from the cell's low corner.
/// The 12 edges as corner pairs, low corner first: 4 along X, 4 along Y, 4 along Z.
const EDGES: [(u8, u8); 12] =
    [(0, 1), (2, 3), (4, 5), (6, 7), (0, 2), (1, 3), (4, 6), (5, 7), (0, 4), (1, 5), (2, 6), (3, 7)];

/// For each inside-corner pattern, the edges whose ends differ (bit k = `EDGES[k]`).
const CROSSINGS: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut pattern = 0;
    while pattern < 256 {
        let mut k = 0;
        while k < 12 {
            let (a, b) = EDGES[k];
            if (pattern >> a & 1) != (pattern >> b & 1) {
                table[pattern] |= 1 << k;
            }
            k += 1;
        }
        pattern += 1;
    }
    table
};

/// Tikhonov weight pulling the sharp vertex toward the mass point. Along directions the crossing
/// planes constrain (eigenvalues near 1 per plane) it barely matters; along unconstrained ones (the
/// tangent of a flat face) it keeps the vertex at the mass point, as truncated-SVD QEF solvers do.
const QEF_REGULARISATION: f32 = 0.05;

/// The 8 corners of a cell: matter densities (occupancy, 0 for non-matter), materials, and which
/// corners are inside (density above one half).
pub(crate) struct Corners {
    pub(crate) density: [f32; 8],
    pub(crate) material: [u8; 8],
    pub(crate) inside: u8,
    /// Bit `i`: corner `i`'s material is matter.
    pub(crate) matter: u8,
    /// Byte `i` is 0xff when corner `i`'s material is matter.
    pub(crate) matter_bytes: u64,
}

/// A placed vertex in cell-local coordinates (`[0, 1]³` from the low corner's centre).
pub(crate) struct Placed {
    pub(crate) local: [f32; 3],
    pub(crate) normal: [f32; 3],
}

#[inline]
fn lerp(a: f32, b: f32, t: f32) -> f32 {
    a + (b - a) * t
}

/// The gradient of the trilinear interpolant of the corner densities at local point `p`.
#[inline]
fn gradient(d: &[f32; 8], p: [f32; 3]) -> [f32; 3] {
    let [u, v, w] = p;
    let gx = lerp(lerp(d[1] - d[0], d[3] - d[2], v), lerp(d[5] - d[4], d[7] - d[6], v), w);
    let gy = lerp(lerp(d[2] - d[0], d[3] - d[1], u), lerp(d[6] - d[4], d[7] - d[5], u), w);
    let gz = lerp(lerp(d[4] - d[0], d[5] - d[1], u), lerp(d[6] - d[2], d[7] - d[3], u), v);
    [gx, gy, gz]
}

/// `-g` normalised (density grows into matter, so this points into air); `None` for a zero gradient.
#[inline]
fn outward(g: [f32; 3]) -> Option<[f32; 3]> {
    let len2 = g[0] * g[0] + g[1] * g[1] + g[2] * g[2];
    (len2 > 1e-20).then(|| {
        let s = -1.0 / len2.sqrt();
        [g[0] * s, g[1] * s, g[2] * s]
    })
}

#[inline]
fn corner_pos(i: u8) -> [f32; 3] {
    [(i & 1) as f32, (i >> 1 & 1) as f32, (i >> 2 & 1) as f32]
}

/// For each crossing pattern (12 bits are too many for a table; the pattern of inside corners is
/// 8): the sum of the crossings' low-corner coordinates off their own axis, which are 0 or 1. The
/// crossing's coordinate on its own axis is its `t`, added at run time.
const BASE_SUMS: [[f32; 3]; 256] = {
    let mut table = [[0.0f32; 3]; 256];
    let mut pattern = 0;
    while pattern < 256 {
        let edges = CROSSINGS[pattern];
        let mut k = 0;
        while k < 12 {
            if edges >> k & 1 != 0 {
                let a = EDGES[k].0;
                table[pattern][0] += (a & 1) as f32;
                table[pattern][1] += (a >> 1 & 1) as f32;
                table[pattern][2] += (a >> 2 & 1) as f32;
            }
            k += 1;
        }
        pattern += 1;
    }
    table
};

/// `1 / n` for the crossing counts an active cell can have (3 to 12).
const RECIPROCALS: [f32; 13] = {
    let mut r = [0.0f32; 13];
    let mut n = 1;
    while n < 13 {
        r[n] = 1.0 / n as f32;
        n += 1;
    }
    r
};

/// `t` of the crossing on edge `k`: where the density reaches one half.
#[inline(always)]
fn crossing_t(d: &[f32; 8], k: usize) -> f32 {
    let (a, b) = EDGES[k];
    let (da, db) = (d[a as usize], d[b as usize]);
    // The ends straddle one half, so db != da and t is in [0, 1].
    ((0.5 - da) / (db - da)).clamp(0.0, 1.0)
}

/// Places the vertex of an active cell (`inside` neither 0 nor 255).
#[inline]
pub(crate) fn place(c: &Corners, sharp: bool, want_normal: bool) -> Placed {
    let edges = CROSSINGS[c.inside as usize];
    debug_assert!(edges != 0, "place() is only called for active cells");
    // All 12 edges at once, four per axis in lock-step (vectorises), then masked to the crossing
    // ones: no data-dependent branch, which a per-crossing loop mispredicts.
    let d = &c.density;
    let ends: [([usize; 4], [usize; 4]); 3] =
        [([0, 2, 4, 6], [1, 3, 5, 7]), ([0, 1, 4, 5], [2, 3, 6, 7]), ([0, 1, 2, 3], [4, 5, 6, 7])];
    let mut sum = BASE_SUMS[c.inside as usize];
    for (axis, (lo, hi)) in ends.iter().enumerate() {
        let mut acc = 0.0f32;
        for j in 0..4 {
            let (da, db) = (d[lo[j]], d[hi[j]]);
            let t = ((0.5 - da) / (db - da)).clamp(0.0, 1.0);
            acc += if edges >> (4 * axis + j) & 1 != 0 { t } else { 0.0 };
        }
        sum[axis] += acc;
    }
    let inv = RECIPROCALS[edges.count_ones() as usize];
    let mass = [sum[0] * inv, sum[1] * inv, sum[2] * inv];
    let local = if sharp { qef(c, edges, mass) } else { mass };
    let normal = if want_normal { vertex_normal(c, local) } else { [0.0; 3] };
    Placed { local, normal }
}

/// The unit normal at the vertex; falls back to the cell-centre gradient, then to the corner pattern
/// (inside corners minus outside ones), which is never zero for an active cell... except for
/// symmetric patterns, where up is as good as any.
#[inline(always)]
fn vertex_normal(c: &Corners, local: [f32; 3]) -> [f32; 3] {
    match outward(gradient(&c.density, local)) {
        Some(n) => n,
        None => normal_fallback(c),
    }
}

#[cold]
fn normal_fallback(c: &Corners) -> [f32; 3] {
    if let Some(n) = outward(gradient(&c.density, [0.5; 3])) {
        return n;
    }
    let mut g = [0.0f32; 3];
    for i in 0..8u8 {
        let s = if c.inside >> i & 1 != 0 { 1.0 } else { -1.0 };
        let p = corner_pos(i);
        for a in 0..3 {
            g[a] += s * (p[a] - 0.5);
        }
    }
    outward(g).unwrap_or([0.0, 1.0, 0.0])
}

/// The dual-contouring vertex: minimises the squared distances to the planes through each crossing
/// with the gradient normal there (weighted by the gradient's squared length), regularised toward
/// the mass point, clamped to the cell.
fn qef(c: &Corners, edges: u16, mass: [f32; 3]) -> [f32; 3] {
    // Normal equations relative to the mass point: (AᵀA + λI) δ = Aᵀ(b - A m).
    let mut ata = [0.0f32; 6]; // xx, xy, xz, yy, yz, zz
    let mut atb = [0.0f32; 3];
    let mut bits = edges;
    while bits != 0 {
        let k = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        let (t, a) = (crossing_t(&c.density, k), EDGES[k].0);
        let p = match k >> 2 {
            0 => [t, (a >> 1 & 1) as f32, (a >> 2 & 1) as f32],
            1 => [(a & 1) as f32, t, (a >> 2 & 1) as f32],
            _ => [(a & 1) as f32, (a >> 1 & 1) as f32, t],
        };
        // The raw gradient, not normalised: the same plane, weighted by its squared steepness
        // (crisp crossings count more than shallow ones), and no square root per crossing.
        let nrm = gradient(&c.density, p);
        let r = nrm[0] * (p[0] - mass[0]) + nrm[1] * (p[1] - mass[1]) + nrm[2] * (p[2] - mass[2]);
        ata[0] += nrm[0] * nrm[0];
        ata[1] += nrm[0] * nrm[1];
        ata[2] += nrm[0] * nrm[2];
        ata[3] += nrm[1] * nrm[1];
        ata[4] += nrm[1] * nrm[2];
        ata[5] += nrm[2] * nrm[2];
        atb = [atb[0] + nrm[0] * r, atb[1] + nrm[1] * r, atb[2] + nrm[2] * r];
    }
    let l = QEF_REGULARISATION;
    let (a, b, c, d, e, f) = (ata[0] + l, ata[1], ata[2], ata[3] + l, ata[4], ata[5] + l);
    // Cofactors of the symmetric matrix [[a b c] [b d e] [c e f]]; positive definite (λ > 0).
    let (c00, c01, c02) = (d * f - e * e, c * e - b * f, b * e - c * d);
    let (c11, c12, c22) = (a * f - c * c, b * c - a * e, a * d - b * b);
    let det = a * c00 + b * c01 + c * c02;
    if det.abs() < 1e-12 || !det.is_finite() {
        return mass;
    }
    let inv = 1.0 / det;
    let delta = [
        (c00 * atb[0] + c01 * atb[1] + c02 * atb[2]) * inv,
        (c01 * atb[0] + c11 * atb[1] + c12 * atb[2]) * inv,
        (c02 * atb[0] + c12 * atb[1] + c22 * atb[2]) * inv,
    ];
    let mut out = [0.0f32; 3];
    for i in 0..3 {
        let v = mass[i] + delta[i];
        out[i] = if v.is_finite() { v.clamp(0.0, 1.0) } else { mass[i] };
    }
    out
}

/// The dominant matter material of the corners (the article's rule): the most frequent; ties go to
/// the larger summed density, then to the lower id. `matter` marks matter material ids.
#[inline]
pub(crate) fn dominant(c: &Corners) -> u8 {
    // Most cells have one matter material: compare all 8 bytes with the first matter one at once.
    let first = c.material[(c.matter | 0x80).trailing_zeros() as usize & 7];
    let differ = u64::from_le_bytes(c.material) ^ (first as u64 * 0x0101_0101_0101_0101);
    if differ & c.matter_bytes == 0 {
        return first;
    }
    dominant_mixed(c)
}

/// The general case, over the distinct matter materials only (usually two: grass over dirt).
fn dominant_mixed(c: &Corners) -> u8 {
    let mut remaining = c.matter;
    let (mut best, mut best_count, mut best_mass) = (0u8, 0u32, 0.0f32);
    while remaining != 0 {
        let m = c.material[remaining.trailing_zeros() as usize];
        let (mut same, mut mass) = (0u8, 0.0f32);
        for i in 0..8 {
            let eq = c.material[i] == m;
            same |= (eq as u8) << i;
            mass += if eq { c.density[i] } else { 0.0 };
        }
        remaining &= !same;
        let count = same.count_ones();
        // Candidates come in corner order, not id order, so the id tie-break is explicit.
        if count > best_count
            || (count == best_count && (mass > best_mass || (mass == best_mass && m < best)))
        {
            (best, best_count, best_mass) = (m, count, mass);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corners(density: [f32; 8]) -> Corners {
        let inside = (0..8).fold(0u8, |acc, i| acc | ((density[i] > 0.5) as u8) << i);
        Corners { density, material: [3; 8], inside, matter: 0xff, matter_bytes: u64::MAX }
    }

    #[test]
    fn flat_surface_is_exact_in_both_modes() {
        // Bottom four corners full, top four empty: the surface is the plane y = 0.5.
        let c = corners([1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]);
        for sharp in [false, true] {
            let p = place(&c, sharp, true);
            assert_eq!(p.local, [0.5, 0.5, 0.5]);
            assert_eq!(p.normal, [0.0, 1.0, 0.0]);
        }
    }

    #[test]
    fn sharp_corner_moves_out_from_the_mass_point() {
        let c = corners([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        let smooth = place(&c, false, false).local;
        let sharp = place(&c, true, false).local;
        assert!((smooth[0] - 1.0 / 6.0).abs() < 1e-6);
        assert!(sharp.iter().all(|&v| v > smooth[0] + 0.05 && v <= 1.0), "{sharp:?}");
    }

    proptest::proptest! {
        /// Every vertex stays in its cell, sharp or smooth, whatever the corner densities; normals
        /// are unit length.
        #[test]
        fn vertices_stay_in_their_cell(bytes in proptest::array::uniform8(0u8..=255), air in 0u8..=255) {
            let density = std::array::from_fn(|i| {
                if air >> i & 1 != 0 { 0.0 } else { (bytes[i] as f32 + 1.0) / 256.0 }
            });
            let c = corners(density);
            proptest::prop_assume!(c.inside != 0 && c.inside != 255);
            for sharp in [false, true] {
                let p = place(&c, sharp, true);
                proptest::prop_assert!(p.local.iter().all(|v| (0.0..=1.0).contains(v)), "{:?}", p.local);
                let len = p.normal.iter().map(|v| v * v).sum::<f32>().sqrt();
                proptest::prop_assert!((len - 1.0).abs() < 1e-4);
            }
        }
    }

    #[test]
    fn dominant_counts_then_mass_then_id() {
        let mut c = corners([1.0; 8]);
        c.material = [3, 3, 5, 5, 5, 0, 3, 7];
        c.matter = 0b1101_1111; // corner 5 is air
        c.matter_bytes = 0xffff_00ff_ffff_ffff;
        assert_eq!(dominant(&c), 3); // 3 and 5 tie on count and mass: lower id
        c.density[2] = 0.9;
        assert_eq!(dominant(&c), 3);
        c.density[0] = 0.5;
        assert_eq!(dominant(&c), 5);
        c.material[7] = 5;
        c.matter = 0b0100_0011; // only the 3s are matter
        c.matter_bytes = 0x00ff_0000_0000_ffff;
        assert_eq!(dominant(&c), 3);
        c.matter = 0b0000_0100; // one matter corner
        c.matter_bytes = 0x0000_0000_00ff_0000;
        assert_eq!(dominant(&c), 5);
    }
}
