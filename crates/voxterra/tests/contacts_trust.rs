//! Contacts a physics engine can trust, at the terrain's level: a shape past the surface (sunk
//! into it, or with the ground raised through it) is always pushed back out, never on down, at any
//! voxel size and far from the origin.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use proptest::prelude::*;
use voxterra::TerrainConfig;
use voxterra::convert::ToParry;
use voxterra::core::nalgebra::{Isometry3, Point3, UnitQuaternion, Vector3};
use voxterra::core::{MaterialTable, Ray, Region, Voxel, VoxelPos, materials as m};
use voxterra::narrowphase::Correction;
use voxterra::parry3d::math::Vector;
use voxterra::parry3d::shape::SharedShape;
use voxterra::{Brush, BrushOp, BrushShape, Terrain, TerrainContactCache};

/// Flat rock ground 20 voxels deep in a 48² block whose corner is at `origin` (voxels), with hills
/// raised on it (sphere centers below the ground, so the surface stays a height field).
fn ground(voxel_size: f32, origin: [i32; 3], hills: &[(f32, f32, f32)]) -> Terrain {
    let mut t = Terrain::new(MaterialTable::default(), TerrainConfig::with_voxel_size(voxel_size)).unwrap();
    let block = Region::from_min_size(VoxelPos::new(origin[0], origin[1], origin[2]), [48, 20, 48]).unwrap();
    t.fill(&block, Voxel::full(m::ROCK)).unwrap();
    let top = (origin[1] + 20) as f32 * voxel_size;
    for &(x, z, r) in hills {
        let center = Point3::new(
            (origin[0] as f32 + x) * voxel_size,
            top - 0.4 * r,
            (origin[2] as f32 + z) * voxel_size,
        );
        t.apply_brush(&Brush { shape: BrushShape::Sphere { center, radius: r }, op: BrushOp::Add(m::ROCK) })
            .unwrap();
    }
    t
}

fn surface_at(t: &Terrain, x: f32, z: f32) -> f32 {
    let top = t.extent().unwrap().max().y as f32 * t.voxel_size() + 10.0;
    t.cast_ray(&Ray::new(Point3::new(x, top, z), -Vector3::y()), 1e4).unwrap().unwrap().point.y
}

fn shape(kind: u8, size: f32) -> SharedShape {
    match kind % 4 {
        0 => SharedShape::ball(size),
        1 => SharedShape::cuboid(size, size * 0.75, size),
        2 => SharedShape::capsule_y(size * 0.8, size * 0.5),
        _ => SharedShape::convex_hull(&[
            Vector::new(-1.0, 0.0, 0.1) * size,
            Vector::new(1.0, 0.1, 0.2) * size,
            Vector::new(0.0, 1.0, 0.0) * size,
            Vector::new(0.1, -0.7, 0.3) * size,
            Vector::new(0.0, 0.2, 1.0) * size,
            Vector::new(0.3, 0.0, -1.0) * size,
        ])
        .unwrap(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A shape whose center lies under the surface (by up to twice its size) gets a penetrating
    /// contact that pushes it up, and none pushes it out through a triangle's back.
    #[test]
    fn sunk_shapes_are_pushed_back_up(
        coarse: bool,
        far: bool,
        hills in proptest::collection::vec((8.0f32..40.0, 8.0f32..40.0, 1.0f32..4.0), 0..4),
        kind in 0u8..4,
        size in 0.05f32..0.9,
        at in (10.0f32..38.0, 10.0f32..38.0),
        under in 0.0f32..2.0,
        rot in proptest::array::uniform3(-3.2f32..3.2),
    ) {
        let vs = if coarse { 1.0 } else { 0.5 };
        let origin = if far { [3331, -21, -777] } else { [0, 0, 0] };
        let hills: Vec<_> = hills.iter().map(|&(x, z, r)| (x, z, r * vs)).collect();
        let t = ground(vs, origin, &hills);
        let (x, z) = ((origin[0] as f32 + at.0) * vs, (origin[2] as f32 + at.1) * vs);
        let y = surface_at(&t, x, z) - under * size - 0.01;
        let s = shape(kind, size);
        let pose = Isometry3::from_parts(
            Vector3::new(x, y, z).into(),
            UnitQuaternion::from_euler_angles(rot[0], rot[1], rot[2]),
        )
        .to_parry();
        let mut out = Vec::new();
        t.contacts(&*s, &pose, 0.002, &mut out).unwrap();
        let deepest = out.iter().map(|m| m.manifold.min_dist()).fold(f32::INFINITY, f32::min);
        prop_assert!(deepest < 0.0, "no penetration for a shape {under} sizes under: {out:?}");
        // Never out through a triangle's back (the one-sided promise: never on down into the
        // solid), and something pushes it up.
        for m in &out {
            let c = t.cached_chunk(m.chunk).flatten();
            for p in m.manifold.points() {
                if p.correction == Correction::Interior {
                    continue; // toward the nearest surface point, not along a triangle
                }
                let c = c.as_deref().expect("contacts come from built chunks");
                let tri = voxterra::core::TriangleSource::triangle(&c.mesh, p.id.triangle as usize);
                let front = (tri[1] - tri[0]).cross(&(tri[2] - tri[0]));
                prop_assert!(p.normal.dot(&front) >= 0.0, "through the back of its triangle: {p:?}");
            }
        }
        let up = out.iter().flat_map(|m| m.manifold.points()).any(|p| p.dist < 0.0 && p.normal.y > 0.0);
        prop_assert!(up, "nothing pushes it up: {out:?}");
    }
}

/// Fully inside the solid, far from any triangle (in all-solid chunks): pushed toward the nearest
/// surface, the contact marked as made for the interior.
#[test]
fn a_shape_deep_in_solid_is_pushed_to_the_nearest_surface() {
    let t = ground(0.5, [3331, -21, -777], &[]);
    let top = -0.5;
    let ball = SharedShape::ball(0.3);
    let pose = voxterra::parry3d::math::Pose::translation(1681.5, top - 4.0, -372.5);
    let mut out = Vec::new();
    t.contacts(&*ball, &pose, 0.002, &mut out).unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    let p = out[0].manifold.points()[0];
    assert_eq!(p.correction, Correction::Interior);
    assert!(p.normal.y > 0.999, "{p:?}");
    assert!((p.dist + 4.3).abs() < 1e-3, "{p:?}");
    // Above the ground, nothing.
    let above = voxterra::parry3d::math::Pose::translation(1681.5, top + 1.0, -372.5);
    out.clear();
    t.contacts(&*ball, &above, 0.002, &mut out).unwrap();
    assert!(out.is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A shape keeping its candidates between queries gets what a fresh query gets, bit for bit,
    /// manifolds and points, step after step: resting, sinking, sliding, turning, at any voxel
    /// size and far from the origin, the ground edited under it midway (which the cache must
    /// notice).
    #[test]
    fn kept_contacts_are_fresh_contacts(
        coarse: bool,
        far: bool,
        hills in proptest::collection::vec((8.0f32..40.0, 8.0f32..40.0, 1.0f32..4.0), 0..4),
        kind in 0u8..4,
        size in 0.1f32..0.9,
        at in (10.0f32..38.0, 10.0f32..38.0),
        height in -0.5f32..0.3,
        rot in proptest::array::uniform3(-3.2f32..3.2),
        steps in proptest::collection::vec((proptest::array::uniform3(-0.04f32..0.04), proptest::array::uniform3(-0.03f32..0.03)), 2..10),
        edit_at in 0usize..10,
    ) {
        let vs = if coarse { 1.0 } else { 0.5 };
        let origin = if far { [3331, -21, -777] } else { [0, 0, 0] };
        let hills: Vec<_> = hills.iter().map(|&(x, z, r)| (x, z, r * vs)).collect();
        let mut t = ground(vs, origin, &hills);
        let (x, z) = ((origin[0] as f32 + at.0) * vs, (origin[2] as f32 + at.1) * vs);
        let mut p = Vector3::new(x, surface_at(&t, x, z) + height * size, z);
        let mut r = rot;
        let s = shape(kind, size);
        let mut cache = TerrainContactCache::new();
        let (mut kept, mut fresh, mut kept_points, mut fresh_points) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (i, (dp, dr)) in steps.iter().enumerate() {
            if i == edit_at {
                // A small hill raised right under the shape.
                let center = Point3::new(p.x, p.y - 1.2 * size, p.z);
                t.apply_brush(&Brush { shape: BrushShape::Sphere { center, radius: size }, op: BrushOp::Add(m::ROCK) }).unwrap();
            }
            let pose = Isometry3::from_parts(p.into(), UnitQuaternion::from_euler_angles(r[0], r[1], r[2])).to_parry();
            kept.clear();
            fresh.clear();
            t.contacts_kept(&*s, &pose, 0.02, &mut cache, &mut kept, &mut kept_points).unwrap();
            t.contacts_kept(&*s, &pose, 0.02, &mut TerrainContactCache::new(), &mut fresh, &mut fresh_points).unwrap();
            prop_assert_eq!(format!("{kept:?}"), format!("{fresh:?}"));
            prop_assert_eq!(format!("{kept_points:?}"), format!("{fresh_points:?}"));
            p += Vector3::from(*dp) * vs;
            r = [r[0] + dr[0], r[1] + dr[1], r[2] + dr[2]];
        }
    }
}
