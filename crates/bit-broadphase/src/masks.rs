//! One physics chunk's masks: which of its 8³ voxels may hold solid geometry or water, dilated by
//! one voxel in all 26 directions, one `u64` per Y slice (bit `z * 8 + x`).

use voxterra_core::nalgebra::Point3;
use voxterra_core::{PhysicsChunkKey, Region, VoxelRead};

/// log2 of the physics chunk side ([`PhysicsChunkKey::SHIFT`]).
pub const PHYS_SHIFT: u32 = PhysicsChunkKey::SHIFT;
/// Voxels along each side of a physics chunk.
pub const PHYS_SIZE: i32 = 1 << PHYS_SHIFT;

/// The dilated masks of one chunk: bit `z * 8 + x` of `solid[y]` is set when voxel `(x, y, z)` of
/// the chunk, or one of its 26 neighbors, is solid; likewise `water`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Masks {
    /// Solid mask per Y slice.
    pub solid: [u64; 8],
    /// Water mask per Y slice.
    pub water: [u64; 8],
}

// PERF: 2 bits per voxel, the article's worst case; the slab stores these back to back.
const _: () = assert!(std::mem::size_of::<Masks>() == 128);

/// What a chunk's 10³ neighborhood holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ChunkState {
    /// Every voxel of the 10³ box is solid: the masks would be all ones for solid, all zeros for water.
    Solid,
    /// Every voxel of the 10³ box is water.
    Water,
    /// Anything else with some solid or water.
    Masks(Masks),
}

/// The first voxel of a chunk's 10³ neighborhood, per axis (i64: it may lie outside i32).
fn origin(key: PhysicsChunkKey) -> [i64; 3] {
    key.to_array().map(|k| ((k as i64) << PHYS_SHIFT) - 1)
}

/// The region a chunk's masks are built from: the chunk and one voxel around it, clipped to the i32
/// voxel space (what lies beyond reads as Air).
pub fn neighborhood(key: PhysicsChunkKey) -> Region {
    let o = origin(key);
    let clip = |v: i64| v.clamp(i32::MIN as i64, i32::MAX as i64) as i32;
    let lo = Point3::new(clip(o[0]), clip(o[1]), clip(o[2]));
    let hi = Point3::new(clip(o[0] + 10), clip(o[1] + 10), clip(o[2] + 10));
    Region::new(lo, hi).expect("a clipped neighborhood keeps min <= max")
}

/// Builds a chunk's state from its 10³ neighborhood: `None` when it holds neither solid nor water.
///
/// `solid` and `liquid` are the material table's masks (bit `id` set for solid / liquid materials).
pub(crate) fn build(
    source: &impl VoxelRead,
    key: PhysicsChunkKey,
    solid: u64,
    liquid: u64,
) -> Option<ChunkState> {
    // 10 rows of 10 bits per (y, z): bit i is voxel x = base - 1 + i.
    let region = neighborhood(key);
    let [x0, y0, z0] = origin(key);
    let mut s_rows = [[0u16; 10]; 10];
    let mut w_rows = [[0u16; 10]; 10];
    source.visit_rows(&region, &mut |p, row| {
        let (y, z) = ((p.y as i64 - y0) as usize, (p.z as i64 - z0) as usize);
        let mut s = 0u16;
        let mut w = 0u16;
        for (i, v) in row.iter().enumerate() {
            let m = v.material().id();
            s |= ((solid >> m & 1) as u16) << i;
            w |= ((liquid >> m & 1) as u16) << i;
        }
        let shift = p.x as i64 - x0;
        s_rows[y][z] |= s << shift;
        w_rows[y][z] |= w << shift;
    });
    state_of(&s_rows, &w_rows)
}

/// A chunk's state from its neighborhood's rows (10 bits per (y, z), bit i: voxel x = base - 1 + i).
fn state_of(s_rows: &[[u16; 10]; 10], w_rows: &[[u16; 10]; 10]) -> Option<ChunkState> {
    let full = |rows: &[[u16; 10]; 10]| rows.iter().flatten().all(|&r| r == 0x3ff);
    let empty = |rows: &[[u16; 10]; 10]| rows.iter().flatten().all(|&r| r == 0);
    if full(s_rows) {
        return Some(ChunkState::Solid);
    }
    if full(w_rows) {
        return Some(ChunkState::Water);
    }
    if empty(s_rows) && empty(w_rows) {
        return None;
    }
    Some(ChunkState::Masks(Masks { solid: dilate(s_rows), water: dilate(w_rows) }))
}

/// [`build`] for several chunks near each other (their neighborhoods within 64 voxels along X, as
/// the chunks of one storage chunk are), reading the voxels once: each voxel's bit is made
/// once however many neighborhoods hold it. The same states as [`build`], chunk by chunk.
pub(crate) fn build_group(
    source: &impl VoxelRead,
    keys: &[PhysicsChunkKey],
    solid: u64,
    liquid: u64,
) -> Vec<Option<ChunkState>> {
    let single = || keys.iter().map(|&k| build(source, k, solid, liquid)).collect();
    let Some(first) = keys.first() else { return Vec::new() };
    let (mut lo, mut hi) = (origin(*first), origin(*first));
    for &k in keys {
        let o = origin(k);
        for a in 0..3 {
            lo[a] = lo[a].min(o[a]);
            hi[a] = hi[a].max(o[a] + 10);
        }
    }
    let fits = |v: i64| (i32::MIN as i64..=i32::MAX as i64).contains(&v);
    if hi[0] - lo[0] > 64 || !lo.iter().chain(&hi).all(|&v| fits(v)) {
        return single();
    }
    let Ok(region) = Region::new(
        Point3::new(lo[0] as i32, lo[1] as i32, lo[2] as i32),
        Point3::new(hi[0] as i32, hi[1] as i32, hi[2] as i32),
    ) else {
        return single();
    };
    let nz = (hi[2] - lo[2]) as usize;
    let rows = (hi[1] - lo[1]) as usize * nz;
    let (mut s_bits, mut w_bits) = (vec![0u64; rows], vec![0u64; rows]);
    source.visit_rows(&region, &mut |p, row| {
        let at = (p.y as i64 - lo[1]) as usize * nz + (p.z as i64 - lo[2]) as usize;
        let shift = p.x as i64 - lo[0];
        let (mut s, mut w) = (0u64, 0u64);
        for (i, v) in row.iter().enumerate() {
            let m = v.material().id();
            s |= (solid >> m & 1) << i;
            w |= (liquid >> m & 1) << i;
        }
        s_bits[at] |= s << shift;
        w_bits[at] |= w << shift;
    });
    keys.iter()
        .map(|&k| {
            let o = origin(k);
            let (dx, dy, dz) = ((o[0] - lo[0]) as u32, (o[1] - lo[1]) as usize, (o[2] - lo[2]) as usize);
            let mut s_rows = [[0u16; 10]; 10];
            let mut w_rows = [[0u16; 10]; 10];
            for y in 0..10 {
                for z in 0..10 {
                    let at = (dy + y) * nz + dz + z;
                    s_rows[y][z] = (s_bits[at] >> dx & 0x3ff) as u16;
                    w_rows[y][z] = (w_bits[at] >> dx & 0x3ff) as u16;
                }
            }
            state_of(&s_rows, &w_rows)
        })
        .collect()
}

/// The article's bit dilation: shift-or along X, then OR of neighboring rows along Z and along Y;
/// the 8³ center is kept.
fn dilate(rows: &[[u16; 10]; 10]) -> [u64; 8] {
    let mut x = [[0u16; 10]; 10];
    for (xy, ry) in x.iter_mut().zip(rows) {
        for (xz, &r) in xy.iter_mut().zip(ry) {
            *xz = r | r << 1 | r >> 1;
        }
    }
    let mut z = [[0u16; 8]; 10];
    for (zy, xy) in z.iter_mut().zip(&x) {
        for (i, zz) in zy.iter_mut().enumerate() {
            *zz = xy[i] | xy[i + 1] | xy[i + 2];
        }
    }
    let mut out = [0u64; 8];
    for (y, slice) in out.iter_mut().enumerate() {
        let rows = z[y].iter().zip(&z[y + 1]).zip(&z[y + 2]);
        for (zi, ((a, b), c)) in rows.enumerate() {
            let r = a | b | c;
            *slice |= (((r >> 1) & 0xff) as u64) << (zi * 8);
        }
    }
    out
}

/// `MASK_X[a][b]`: bits of every slot with `a <= x <= b` (any z). `MASK_Z` likewise for z. A box's XZ
/// footprint in a chunk is `MASK_X[x0][x1] & MASK_Z[z0][z1]`: two loads and an AND.
pub(crate) static MASK_X: [[u64; 8]; 8] = {
    let mut t = [[0u64; 8]; 8];
    let mut a = 0;
    while a < 8 {
        let mut b = a;
        while b < 8 {
            let row = ((1u64 << (b + 1)) - 1) & !((1u64 << a) - 1);
            t[a][b] = row * 0x0101_0101_0101_0101;
            b += 1;
        }
        a += 1;
    }
    t
};

/// See [`MASK_X`].
pub(crate) static MASK_Z: [[u64; 8]; 8] = {
    let mut t = [[0u64; 8]; 8];
    let mut a = 0;
    while a < 8 {
        let mut b = a;
        while b < 8 {
            let rows = (b - a + 1) * 8;
            let bits = if rows == 64 { u64::MAX } else { (1u64 << rows) - 1 };
            t[a][b] = bits << (a * 8);
            b += 1;
        }
        a += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_tables_match_loops() {
        for (a, b, c, d) in (0..8).flat_map(|a| {
            (a..8).flat_map(move |b| (0..8).flat_map(move |c| (c..8).map(move |d| (a, b, c, d))))
        }) {
            let mut want = 0u64;
            for z in c..=d {
                for x in a..=b {
                    want |= 1 << (z * 8 + x);
                }
            }
            assert_eq!(MASK_X[a][b] & MASK_Z[c][d], want);
        }
    }
}
