//! One surface cell: the cube between 8 neighboring voxel centers. Its vertex goes at the mass point
//! of its edge crossings (smooth, as surface nets) or at the minimizer of the crossings' planes
//! (sharp, as dual contouring), clamped to the cell; its normal is the occupancy gradient; its
//! material is the dominant matter material of its corners.
//!
//! Everything here depends only on the cell's 8 corner voxels, so two chunks that both place a
//! vertex for the same cell get the same bits: that is what makes chunk seams watertight.

use crate::keys::Key;
use bytemuck::cast;
use wide::{f32x8 as F, i16x8 as J, i32x8 as I};

/// Corner `i` sits at offset `(i & 1, i >> 1 & 1, i >> 2 & 1)` (x, y, z) from the cell's low corner.
/// The 12 edges as corner pairs, low corner first: 4 along X, 4 along Y, 4 along Z.
const EDGES: [(u8, u8); 12] =
    [(0, 1), (2, 3), (4, 5), (6, 7), (0, 2), (1, 3), (4, 6), (5, 7), (0, 4), (1, 5), (2, 6), (3, 7)];

/// Tikhonov weight pulling the sharp vertex toward the mass point. Along directions the crossing
/// planes constrain (eigenvalues near 1 per plane) it barely matters; along unconstrained ones (the
/// tangent of a flat face) it keeps the vertex at the mass point, as truncated-SVD QEF solvers do.
const QEF_REGULARISATION: f32 = 0.05;

/// One cell's corners, for the rare paths that work a cell at a time (three or more materials,
/// degenerate normals).
struct Corners {
    density: [f32; 8],
    material: [u8; 8],
    inside: u8,
    /// Bit `i`: corner `i`'s material is matter.
    matter: u8,
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

/// `-g` normalized (density grows into matter, so this points into air); `None` for a zero gradient.
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

/// Cells placed together. The placement math runs lane-wise over a batch, so it vectorizes across
/// cells rather than within one (a single cell's 12 edges and 3 axes fill vector registers poorly).
pub(crate) const LANES: usize = 8;

/// Up to [`LANES`] active cells: their corner keys, by corner then lane. Lanes from `len` on hold
/// stale keys; they are computed on and never read.
#[derive(Clone, Copy)]
pub(crate) struct Batch {
    pub(crate) len: usize,
    pub(crate) keys: [[Key; LANES]; 8],
}

impl Batch {
    pub(crate) const EMPTY: Batch = Batch { len: 0, keys: [[0; LANES]; 8] };
}

/// Placed vertices of a batch by axis then lane, in cell-local coordinates (`[0, 1]³` from the low
/// corner's center), and each lane's dominant material. `pub` only so the sealed
/// [`MeshOutput`](crate::MeshOutput) can take it; this module is private, so no user can name it.
pub struct PlacedBatch {
    pub(crate) local: [[f32; LANES]; 3],
    pub(crate) normal: [[f32; LANES]; 3],
    pub(crate) material: [u8; LANES],
}

/// Places the vertices of the batch's active cells (some corners inside, some not); `sharp` marks
/// the material ids that place sharp vertices.
///
/// Explicit 8-lane vectors (`wide`: two SSE registers on baseline x86-64, one AVX register where
/// enabled); auto-vectorization of the same loops proved fragile. Each lane computes exactly what a
/// lone cell would (the same IEEE operations in the same order), so batching never changes a bit
/// of the output.
#[inline]
pub(crate) fn place_batch(b: &Batch, sharp: u64, want_normal: bool) -> PlacedBatch {
    // The material phase runs on 16-bit lanes (one SSE register per corner, and SSE2 has 16-bit
    // min and max): ids are at most 63 and density levels at most 256, so nothing overflows.
    let keys: [J; 8] = std::array::from_fn(|i| J::new(b.keys[i].map(|k| k as i16)));
    // Density levels (256ths; 0 for non-matter) and material ids (0 for non-matter: air is never
    // matter, so every matter id is at least 1).
    let level = keys.map(|k| k & J::splat(511));
    let id: [J; 8] = keys.map(|k| k >> 9i32);
    let d: [F; 8] = level.map(|l| I::from_i16x8(l).round_float() * F::splat(1.0 / 256.0));
    // Inside and matter patterns, and the range of matter ids: `id - 1` wraps non-matter to the
    // top, so the minimum skips it.
    let (mut inside, mut matter) = (J::ZERO, J::ZERO);
    let (mut below_lowest, mut highest) = (J::splat(i16::MAX), J::ZERO);
    for i in 0..8 {
        let bit = J::splat(1 << i);
        inside |= level[i].simd_gt(J::splat(128)) & bit;
        matter |= id[i].simd_gt(J::ZERO) & bit;
        highest = highest.max(id[i]);
        below_lowest = below_lowest.min((id[i] - J::ONE) & J::splat(i16::MAX));
    }
    let lowest = below_lowest + J::ONE;
    // The dominant material (the article's rule, as `dominant_mixed`): most cells have one matter
    // material, most others two (grass over dirt): counted lane-wise; three or more one by one.
    // Masses are summed levels: the sums of the f32 densities are exact, so they order the same.
    let (mut count_lo, mut count_hi, mut others) = (J::ZERO, J::ZERO, J::ZERO);
    let (mut mass_lo, mut mass_hi) = (J::ZERO, J::ZERO);
    for i in 0..8 {
        let (is_lo, is_hi) = (id[i].simd_eq(lowest), id[i].simd_eq(highest));
        count_lo -= is_lo;
        count_hi -= is_hi;
        mass_lo += level[i] & is_lo;
        mass_hi += level[i] & is_hi;
        others |= id[i].simd_gt(J::ZERO) & !(is_lo | is_hi);
    }
    let hi_wins = count_hi.simd_gt(count_lo) | (count_hi.simd_eq(count_lo) & mass_hi.simd_gt(mass_lo));
    let (inside, matter) = (inside.to_array(), matter.to_array());
    let chosen = hi_wins.select(highest, lowest).to_array();
    let others = others.to_bitmask() as u8 & lane_mask(b.len);
    let mut material = [0u8; LANES];
    let mut sharp_lanes = 0u8;
    for j in 0..b.len {
        material[j] = if others >> j & 1 != 0 {
            dominant_mixed(&corners(b, &d, inside[j] as u8, matter[j] as u8, j))
        } else {
            // One material (lowest == highest), or two; full ties keep the lower id.
            chosen[j] as u8
        };
        sharp_lanes |= ((sharp >> material[j] & 1) as u8) << j;
    }
    // The mass point: all 12 edges of every lane, masked to the crossing ones. Which edges cross,
    // how many, and the sums of their low corners' coordinates off their own axes (0 or 1 each)
    // are counted on 16-bit lanes; the counts are small integers, so they convert exactly.
    let is_in = level.map(|l| l.simd_gt(J::splat(128)));
    macro_rules! crossing_masks {
        ($($k:literal)*) => {[$(is_in[EDGES[$k].0 as usize] ^ is_in[EDGES[$k].1 as usize],)*]};
    }
    let cross: [J; 12] = crossing_masks!(0 1 2 3 4 5 6 7 8 9 10 11);
    let (mut count, mut base) = (J::ZERO, [J::ZERO; 3]);
    for (k, &c) in cross.iter().enumerate() {
        count -= c;
        for (axis, s) in base.iter_mut().enumerate() {
            if EDGES[k].0 >> axis & 1 != 0 {
                *s -= c;
            }
        }
    }
    debug_assert!(count.to_array()[..b.len].iter().all(|&n| n > 0), "only active cells are placed");
    let to_f = |v: J| I::from_i16x8(v).round_float();
    let inv = F::ONE / to_f(count);
    let sum = base.map(to_f);
    let crossing: [F; 12] = cross.map(|c| cast(I::from_i16x8(c)));
    // Every edge's crossing parameter, unrolled with the edge as a constant (PERF: as a loop the
    // corner picks were run-time indexing). A crossing's ends straddle one half, so db != da, and
    // |0.5 - da| <= |db - da| with the same sign: the rounded quotient is in [0, 1] with no clamp.
    // The others are masked out below (they may be NaN).
    macro_rules! crossings {
        ($($k:literal)*) => {[$({
            let (da, db) = (d[EDGES[$k].0 as usize], d[EDGES[$k].1 as usize]);
            (F::splat(0.5) - da) / (db - da)
        },)*]};
    }
    let t: [F; 12] = crossings!(0 1 2 3 4 5 6 7 8 9 10 11);
    let mut local: [F; 3] = std::array::from_fn(|axis| {
        let acc = (0..4).fold(F::ZERO, |acc, j| acc + (t[4 * axis + j] & crossing[4 * axis + j]));
        (sum[axis] + acc) * inv
    });
    if sharp_lanes != 0 {
        let q = qef_lanes(&d, &t, &crossing, local);
        let m: F = cast(I::new(std::array::from_fn(|j| -((sharp_lanes >> j & 1) as i32))));
        local = std::array::from_fn(|axis| m.select(q[axis], local[axis]));
    }
    let mut normal = [F::ZERO; 3];
    if want_normal {
        let g = gradient_lanes(&d, local);
        let len2 = g[0] * g[0] + g[1] * g[1] + g[2] * g[2];
        let s = F::splat(-1.0) / len2.sqrt();
        normal = g.map(|c| c * s);
        let mut flat = len2.simd_le(F::splat(1e-20)).to_bitmask() as u8 & lane_mask(b.len);
        while flat != 0 {
            let j = flat.trailing_zeros() as usize;
            flat &= flat - 1;
            let n = normal_fallback(&corners(b, &d, inside[j] as u8, matter[j] as u8, j));
            for (axis, v) in n.into_iter().enumerate() {
                normal[axis].as_mut_array()[j] = v;
            }
        }
    }
    PlacedBatch { local: local.map(F::to_array), normal: normal.map(F::to_array), material }
}

/// Bits `0..len` set.
#[inline]
fn lane_mask(len: usize) -> u8 {
    ((1u16 << len) - 1) as u8
}

/// [`gradient`] lane-wise.
#[inline(always)]
fn gradient_lanes(d: &[F; 8], p: [F; 3]) -> [F; 3] {
    let lerp = |a: F, b: F, t: F| a + (b - a) * t;
    let [u, v, w] = p;
    [
        lerp(lerp(d[1] - d[0], d[3] - d[2], v), lerp(d[5] - d[4], d[7] - d[6], v), w),
        lerp(lerp(d[2] - d[0], d[3] - d[1], u), lerp(d[6] - d[4], d[7] - d[5], u), w),
        lerp(lerp(d[4] - d[0], d[5] - d[1], u), lerp(d[6] - d[2], d[7] - d[3], u), v),
    ]
}

/// [`gradient_lanes`] at parameter `t` along edge `k`: on an edge the trilinear gradient is the
/// edge's own difference along its axis and, across it, the lerp of the two end corners' differences
/// (a third of the work of the general form; equal up to rounding).
#[inline(always)]
fn edge_gradient(d: &[F; 8], k: usize, t: F) -> [F; 3] {
    let (lo, hi) = (EDGES[k].0 as usize, EDGES[k].1 as usize);
    let axis = k >> 2;
    std::array::from_fn(|a| {
        if a == axis {
            return d[hi] - d[lo];
        }
        // The difference along `a` through corner `c`: its `a` bit set minus clear.
        let bit = 1 << a;
        let across = |c: usize| d[c | bit] - d[c & !bit];
        let (at_lo, at_hi) = (across(lo), across(hi));
        at_lo + (at_hi - at_lo) * t
    })
}

/// Adds edge `K`'s crossing plane to the normal equations (exact zeros when it does not cross).
#[inline(always)]
fn qef_edge<const K: usize>(d: &[F; 8], t: F, crossing: F, mass: [F; 3], ata: &mut [F; 6], atb: &mut [F; 3]) {
    let a = EDGES[K].0;
    let mut p = [(a & 1) as f32, (a >> 1 & 1) as f32, (a >> 2 & 1) as f32].map(F::splat);
    p[K >> 2] = t;
    // The raw gradient, not normalized: the same plane, weighted by its squared steepness (crisp
    // crossings count more than shallow ones), and no square root per crossing.
    let g = edge_gradient(d, K, t);
    let nrm = g.map(|c| c & crossing);
    let r = (nrm[0] * (p[0] - mass[0]) + nrm[1] * (p[1] - mass[1]) + nrm[2] * (p[2] - mass[2])) & crossing;
    ata[0] += nrm[0] * nrm[0];
    ata[1] += nrm[0] * nrm[1];
    ata[2] += nrm[0] * nrm[2];
    ata[3] += nrm[1] * nrm[1];
    ata[4] += nrm[1] * nrm[2];
    ata[5] += nrm[2] * nrm[2];
    *atb = [atb[0] + nrm[0] * r, atb[1] + nrm[1] * r, atb[2] + nrm[2] * r];
}

/// The dual-contouring vertex of every lane: minimizes the squared distances to the planes through
/// each crossing with the gradient normal there (weighted by the gradient's squared length),
/// regularised toward the mass point, clamped to the cell. `t` holds each edge's crossing
/// parameter, `crossing` masks the edges that cross.
fn qef_lanes(d: &[F; 8], t: &[F; 12], crossing: &[F; 12], mass: [F; 3]) -> [F; 3] {
    // Normal equations relative to the mass point: (AᵀA + λI) δ = Aᵀ(b - A m).
    let mut ata = [F::ZERO; 6]; // xx, xy, xz, yy, yz, zz
    let mut atb = [F::ZERO; 3];
    // Unrolled with the edge as a constant (PERF: as a loop, the corner picks and the axis tests
    // stayed run-time work, half the QEF's instructions).
    macro_rules! edges {
        ($($k:literal)*) => { $(qef_edge::<$k>(d, t[$k], crossing[$k], mass, &mut ata, &mut atb);)* };
    }
    edges!(0 1 2 3 4 5 6 7 8 9 10 11);
    let l = F::splat(QEF_REGULARISATION);
    let (a, b, c, d, e, f) = (ata[0] + l, ata[1], ata[2], ata[3] + l, ata[4], ata[5] + l);
    // Cofactors of the symmetric matrix [[a b c] [b d e] [c e f]]; positive definite (λ > 0).
    let (c00, c01, c02) = (d * f - e * e, c * e - b * f, b * e - c * d);
    let (c11, c12, c22) = (a * f - c * c, b * c - a * e, a * d - b * b);
    let det = a * c00 + b * c01 + c * c02;
    let solvable = det.abs().simd_ge(F::splat(1e-12)) & det.is_finite();
    let inv = F::ONE / det;
    let delta = [
        (c00 * atb[0] + c01 * atb[1] + c02 * atb[2]) * inv,
        (c01 * atb[0] + c11 * atb[1] + c12 * atb[2]) * inv,
        (c02 * atb[0] + c12 * atb[1] + c22 * atb[2]) * inv,
    ];
    std::array::from_fn(|i| {
        let v = mass[i] + delta[i];
        (solvable & v.is_finite()).select(v.max(F::ZERO).min(F::ONE), mass[i])
    })
}

/// Lane `j`'s corners, for the paths that work one cell at a time.
fn corners(b: &Batch, d: &[F; 8], inside: u8, matter: u8, j: usize) -> Corners {
    Corners {
        density: std::array::from_fn(|i| d[i].as_array()[j]),
        material: std::array::from_fn(|i| (b.keys[i][j] >> 9) as u8),
        inside,
        matter,
    }
}

/// The normal when the gradient at the vertex vanishes: the cell-center gradient, then the corner
/// pattern (inside corners minus outside ones), which is never zero for an active cell... except for
/// symmetric patterns, where up is as good as any.
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

/// The dominant matter material of corners with more than one (the article's rule): the most
/// frequent; ties go to the larger summed density, then to the lower id. Loops over the distinct
/// matter materials only (usually two: grass over dirt).
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

    const ROCK: u16 = 3;

    /// The key of a matter corner of material `m` with occupancy byte `occ`.
    fn k(m: u16, occ: u8) -> Key {
        m << 9 | (occ as u16 + 1)
    }

    /// The key of a rock corner of density `d` (a multiple of 1/256 in `(0, 1]`), or 0 for air.
    fn rock(d: f32) -> Key {
        if d == 0.0 { 0 } else { k(ROCK, ((d * 256.0) as u16 - 1) as u8) }
    }

    struct One {
        local: [f32; 3],
        normal: [f32; 3],
        material: u8,
    }

    fn set_lane(b: &mut Batch, j: usize, keys: &[Key; 8]) {
        for (column, &key) in b.keys.iter_mut().zip(keys) {
            column[j] = key;
        }
    }

    /// Places one cell: a batch of one.
    fn place(keys: [Key; 8], sharp: bool) -> One {
        let mut b = Batch::EMPTY;
        set_lane(&mut b, 0, &keys);
        b.len = 1;
        let p = place_batch(&b, if sharp { u64::MAX } else { 0 }, true);
        One { local: p.local.map(|a| a[0]), normal: p.normal.map(|a| a[0]), material: p.material[0] }
    }

    fn active(keys: &[Key; 8]) -> bool {
        let inside = keys.iter().map(|&k| crate::keys::key_inside(k)).sum::<u16>();
        inside != 0 && inside != 8
    }

    #[test]
    fn flat_surface_is_exact_in_both_modes() {
        // Bottom four corners full, top four empty: the surface is the plane y = 0.5.
        let keys = [1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0].map(rock);
        for sharp in [false, true] {
            let p = place(keys, sharp);
            assert_eq!(p.local, [0.5, 0.5, 0.5]);
            assert_eq!(p.normal, [0.0, 1.0, 0.0]);
            assert_eq!(p.material, ROCK as u8);
        }
    }

    #[test]
    fn sharp_corner_moves_out_from_the_mass_point() {
        let keys = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0].map(rock);
        let smooth = place(keys, false).local;
        let sharp = place(keys, true).local;
        assert!((smooth[0] - 1.0 / 6.0).abs() < 1e-6);
        assert!(sharp.iter().all(|&v| v > smooth[0] + 0.05 && v <= 1.0), "{sharp:?}");
    }

    fn corner_keys() -> impl proptest::strategy::Strategy<Value = [Key; 8]> {
        use proptest::prelude::*;
        proptest::array::uniform8(prop_oneof![Just(0u16), (1u16..4, any::<u8>()).prop_map(|(m, o)| k(m, o))])
    }

    proptest::proptest! {
        /// On every edge, the edge gradient is the general trilinear gradient, up to rounding.
        #[test]
        fn edge_gradients_match_the_trilinear_gradient(
            d in proptest::array::uniform8(0.0f32..1.0), t in 0.0f32..1.0,
        ) {
            let dl = d.map(F::splat);
            for k in 0..12 {
                let a = EDGES[k].0;
                let mut p = corner_pos(a);
                p[k >> 2] = t;
                let general = gradient(&d, p);
                let edge = edge_gradient(&dl, k, F::splat(t)).map(|c| c.to_array()[0]);
                for axis in 0..3 {
                    proptest::prop_assert!((general[axis] - edge[axis]).abs() < 1e-5, "edge {k} axis {axis}");
                }
            }
        }

        /// Every vertex stays in its cell, sharp or smooth, whatever the corners; normals are unit
        /// length.
        /// A smooth vertex is the mass point of its cell's edge crossings, computed edge by edge.
        #[test]
        fn smooth_vertices_are_the_mass_point(keys in corner_keys()) {
            proptest::prop_assume!(active(&keys));
            let d = keys.map(|k| (k & 511) as f32 / 256.0);
            let inside = keys.map(crate::keys::key_inside);
            let (mut sum, mut n) = ([0.0f64; 3], 0.0);
            for (a, b) in EDGES {
                if inside[a as usize] != inside[b as usize] {
                    let (da, db) = (d[a as usize] as f64, d[b as usize] as f64);
                    let t = (0.5 - da) / (db - da);
                    let (pa, pb) = (corner_pos(a), corner_pos(b));
                    for axis in 0..3 {
                        sum[axis] += pa[axis] as f64 + (pb[axis] - pa[axis]) as f64 * t;
                    }
                    n += 1.0;
                }
            }
            let p = place(keys, false);
            for (&got, want) in p.local.iter().zip(sum) {
                proptest::prop_assert!((got as f64 - want / n).abs() < 1e-6, "{:?}", p.local);
            }
        }

        /// The lane-wise dominant material (one or two materials; more go one by one) is the
        /// one-by-one rule's, for any ids (up to 63, the 16-bit lanes' limit) and densities.
        #[test]
        fn lane_materials_follow_the_one_by_one_rule(
            ids in proptest::array::uniform3(1u16..64),
            picks in proptest::array::uniform8((0usize..4, 0u8..=255)),
        ) {
            // Air, or one of three ids: cells with one, two and three matter materials.
            let keys = picks.map(|(p, o)| if p == 0 { 0 } else { k(ids[p - 1], o) });
            proptest::prop_assume!(active(&keys));
            let c = Corners {
                density: keys.map(|k| (k & 511) as f32 / 256.0),
                material: keys.map(|k| (k >> 9) as u8),
                inside: (0..8).fold(0, |m, i| m | (crate::keys::key_inside(keys[i]) as u8) << i),
                matter: (0..8).fold(0, |m, i| m | ((keys[i] != 0) as u8) << i),
            };
            proptest::prop_assert_eq!(place(keys, false).material, dominant_mixed(&c));
        }

        #[test]
        fn vertices_stay_in_their_cell(keys in corner_keys()) {
            proptest::prop_assume!(active(&keys));
            for sharp in [false, true] {
                let p = place(keys, sharp);
                proptest::prop_assert!(p.local.iter().all(|v| (0.0..=1.0).contains(v)), "{:?}", p.local);
                let len = p.normal.iter().map(|v| v * v).sum::<f32>().sqrt();
                proptest::prop_assert!((len - 1.0).abs() < 1e-4);
            }
        }

        /// A lane of a full batch gets the bits a lone cell gets, whatever its neighbors: the
        /// batching never shows in the output (and chunk seams depend on that).
        #[test]
        fn lanes_are_independent(cells in proptest::array::uniform8(corner_keys()), sharp in proptest::prelude::any::<u64>()) {
            let cells: Vec<[Key; 8]> = cells.into_iter().filter(active).collect();
            let mut b = Batch::EMPTY;
            for (j, keys) in cells.iter().enumerate() {
                set_lane(&mut b, j, keys);
            }
            b.len = cells.len();
            let all = place_batch(&b, sharp, true);
            for (j, keys) in cells.iter().enumerate() {
                let mut one = Batch::EMPTY;
                set_lane(&mut one, 0, keys);
                one.len = 1;
                let p = place_batch(&one, sharp, true);
                for axis in 0..3 {
                    proptest::prop_assert_eq!(p.local[axis][0].to_bits(), all.local[axis][j].to_bits());
                    proptest::prop_assert_eq!(p.normal[axis][0].to_bits(), all.normal[axis][j].to_bits());
                }
                proptest::prop_assert_eq!(p.material[0], all.material[j]);
            }
        }
    }

    #[test]
    fn dominant_counts_then_mass_then_id() {
        // Corner 5 is air; 3 and 5 tie on count and mass: the lower id.
        let mut keys = [k(3, 255), k(3, 255), k(5, 255), k(5, 255), k(5, 255), 0, k(3, 255), k(7, 255)];
        assert_eq!(place(keys, false).material, 3);
        keys[2] = k(5, 229); // 5 loses mass
        assert_eq!(place(keys, false).material, 3);
        keys[0] = k(3, 127); // 3 loses more
        assert_eq!(place(keys, false).material, 5);
        // Two materials (counted lane-wise, not one by one): count, then mass, then id.
        keys = [k(5, 255), k(3, 255), k(5, 255), k(3, 255), 0, 0, 0, 0];
        assert_eq!(place(keys, false).material, 3);
        keys[1] = k(3, 200);
        assert_eq!(place(keys, false).material, 5);
        keys[4] = k(3, 10);
        assert_eq!(place(keys, false).material, 3);
        keys = [k(3, 127), k(3, 255), 0, 0, 0, 0, k(3, 255), 0]; // only the 3s are matter
        assert_eq!(place(keys, false).material, 3);
        keys = [0, 0, k(5, 255), 0, 0, 0, 0, 0]; // one matter corner
        assert_eq!(place(keys, false).material, 5);
    }
}
