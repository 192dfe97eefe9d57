//! The terrain suite's second peer: parry's own `Voxels` shape (what rapier 0.36's
//! `ColliderBuilder::voxels` makes), built from the same world's solid voxels (a solid material at
//! an occupancy byte of 128 or more, the mesher's inside) and edited in place with `set_voxel`.
//! Blocky, not smooth: its rays and contacts meet cubes, not our surface, so only the work is
//! compared (edit → ready, rays, contacts of resting bodies, memory), not the answers.

use parry3d::math::{IVector, Pose, Vector};
use parry3d::query::{ContactManifold, DefaultQueryDispatcher, PersistentQueryDispatcher, RayCast};
use parry3d::shape::{Shape, Voxels};
use rayon::prelude::*;
use voxterra::core::nalgebra::Point3;
use voxterra::core::{DenseVoxels, MaterialTable, Voxel};

/// Parry's manifold type as the suites use it.
type Manifold = ContactManifold<(), ()>;

/// Whether `v` is solid as the mesher's inside.
fn solid(table: &MaterialTable, v: Voxel) -> bool {
    table.is_solid(v) && v.occupancy_byte() >= 128
}

/// The world's solid voxels as parry `Voxels` of side 1 (voxel `p` fills `p .. p + 1`, as our
/// voxel's cube), and how many.
pub fn build(dense: &DenseVoxels) -> (Voxels, usize) {
    let table = MaterialTable::default();
    let keys: Vec<IVector> = dense
        .region()
        .iter()
        .zip(dense.as_slice())
        .filter(|(_, v)| solid(&table, **v))
        .map(|(p, _)| IVector::new(p.x, p.y, p.z))
        .collect();
    (Voxels::new(Vector::splat(1.0), &keys), keys.len())
}

/// A sphere brush of `radius` at `center` on `voxels`, as the suite's brush writes occupancy: a
/// carve empties the voxels it covers past half, a fill fills them; returns the voxels flipped.
pub fn brush(voxels: &mut Voxels, center: Point3<f32>, radius: f32, carve: bool) -> usize {
    let lo = center.map(|v| (v - radius - 1.0).floor() as i32);
    let side = (2.0 * radius + 3.0).ceil() as i32;
    let mut flipped = 0;
    for y in lo.y..lo.y + side {
        for z in lo.z..lo.z + side {
            for x in lo.x..lo.x + side {
                let c = Point3::new(x as f32 + 0.5, y as f32 + 0.5, z as f32 + 0.5);
                let cover = (0.5 - ((c - center).norm() - radius)).clamp(0.0, 1.0);
                if cover > 0.5 {
                    let key = IVector::new(x, y, z);
                    let was = voxels.voxel_state(key).is_some_and(|s| !s.is_empty());
                    if was == carve {
                        voxels.set_voxel(key, !carve);
                        flipped += 1;
                    }
                }
            }
        }
    }
    flipped
}

/// The rays that hit `voxels` within `max_t`, cast on every thread.
pub fn cast(voxels: &Voxels, rays: &[parry3d::query::Ray], max_t: f32) -> usize {
    rays.par_iter().filter(|r| voxels.cast_local_ray(r, max_t, true).is_some()).count()
}

/// One frame of contacts between each body (`shape`, `pose`) and `voxels`: the points found.
pub fn frame(
    voxels: &Voxels,
    bodies: &[(&dyn Shape, Pose)],
    prediction: f32,
    manifolds: &mut Vec<Manifold>,
) -> usize {
    let mut points = 0;
    for (shape, pose) in bodies {
        manifolds.clear();
        DefaultQueryDispatcher
            .contact_manifolds(&pose.inverse(), *shape, voxels, prediction, manifolds, &mut None)
            .expect("a supported pair");
        points += manifolds.iter().map(|m| m.points.len()).sum::<usize>();
    }
    points
}
