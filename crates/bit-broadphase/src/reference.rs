//! The brute-force reference: dilation voxel by voxel and box tests voxel by voxel. Obviously right
//! and slow; the tests compare the bit broadphase against it and the benches time it as the peer.

use crate::Touch;
use crate::masks::PHYS_SHIFT;
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Aabb, MaterialTable, PhysicsChunkKey, VoxelRead};

/// Is voxel `p` within one voxel (26-neighborhood or itself) of a solid / water voxel?
pub fn dilated_at(source: &impl VoxelRead, table: &MaterialTable, p: Point3<i64>) -> Touch {
    let mut t = Touch::default();
    for dy in -1..=1 {
        for dz in -1..=1 {
            for dx in -1..=1 {
                let q = [p.x + dx, p.y + dy, p.z + dz];
                if q.iter().any(|&c| c < i32::MIN as i64 || c > i32::MAX as i64) {
                    continue;
                }
                let v = source.voxel(Point3::new(q[0] as i32, q[1] as i32, q[2] as i32));
                t.solid |= table.is_solid(v);
                t.water |= table.is_liquid(v);
            }
        }
    }
    t
}

/// What a box touches per physics chunk, voxel by voxel: the same rules as
/// [`BitBroadphase::query`](crate::BitBroadphase::query) (closed box against closed voxel cubes,
/// NaN or inverted boxes touch nothing). Returns `(chunk, touch)` sorted by chunk (y, z, x).
pub fn query(
    source: &impl VoxelRead,
    table: &MaterialTable,
    voxel_size: f32,
    aabb: &Aabb,
) -> Vec<(PhysicsChunkKey, Touch)> {
    // Its own rule, independent of the fast path: scan a generous range and keep the voxels whose
    // closed cube [v, v+1] meets the closed box [a, b] on every axis.
    let mut lo = [0i64; 3];
    let mut hi = [0i64; 3];
    let (mut a, mut b) = ([0f64; 3], [0f64; 3]);
    for i in 0..3 {
        a[i] = (aabb.mins[i] * (1.0 / voxel_size)) as f64;
        b[i] = (aabb.maxs[i] * (1.0 / voxel_size)) as f64;
        if a[i].is_nan() || b[i].is_nan() || a[i] > b[i] {
            return Vec::new();
        }
        lo[i] = (a[i].floor() - 2.0).clamp(i32::MIN as f64, i32::MAX as f64) as i64;
        hi[i] = (b[i].ceil() + 1.0).clamp(i32::MIN as f64, i32::MAX as f64) as i64;
    }
    let meets = |v: i64, i: usize| (v as f64) <= b[i] && (v + 1) as f64 >= a[i];
    let mut out: Vec<(PhysicsChunkKey, Touch)> = Vec::new();
    for y in lo[1]..=hi[1] {
        for z in lo[2]..=hi[2] {
            for x in lo[0]..=hi[0] {
                if !(meets(x, 0) && meets(y, 1) && meets(z, 2)) {
                    continue;
                }
                let t = dilated_at(source, table, Point3::new(x, y, z));
                if !(t.solid || t.water) {
                    continue;
                }
                let key = PhysicsChunkKey::new(
                    (x >> PHYS_SHIFT) as i32,
                    (y >> PHYS_SHIFT) as i32,
                    (z >> PHYS_SHIFT) as i32,
                );
                match out.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, acc)) => {
                        acc.solid |= t.solid;
                        acc.water |= t.water;
                    }
                    None => out.push((key, t)),
                }
            }
        }
    }
    out.sort_unstable_by_key(|(k, _)| *k);
    out
}
