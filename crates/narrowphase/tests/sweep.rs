//! Sweeps against parry's own composite sweep (the one rapier runs against a triangle mesh) over
//! the same triangles, and the cases continuous collision exists for: fast spinning bodies stop
//! at the surface, resting and sliding bodies move on, bodies behind a one-sided surface pass.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use parry3d::math::{Pose, Rotation, Vector};
use parry3d::query::sweep_toi::{
    Sweep, SweepCompositeFastShape, SweepToiStatus, ToiProxy, sweep_time_of_impact_composite,
};
use parry3d::shape::{
    Ball, Capsule, Compound, Cuboid, Cylinder, Shape, SharedShape, TriMesh, TriMeshFlags, Triangle,
};
use proptest::prelude::*;
use voxterra_core::nalgebra::{Point3, UnitQuaternion};
use voxterra_core::{BruteForceTriangles, TriangleMesh};
use voxterra_narrowphase::convert::ToParry;
use voxterra_narrowphase::{CastOptions, NarrowphaseError, TriangleSet, cast_shape, sweep_shape};
use voxterra_test_support::grid_mesh;

const SLOP: f32 = 0.005;

/// Rolling ground, counter-clockwise from above (its front faces +y).
fn terrain() -> TriangleMesh {
    grid_mesh(16, 0.5, |x, z| (x * 0.9).sin() * 0.5 + (z * 0.4).cos() * 0.4)
}

fn shapes() -> Vec<SharedShape> {
    vec![
        SharedShape::ball(0.3),
        SharedShape::cuboid(0.4, 0.05, 0.3),
        SharedShape::capsule_y(0.35, 0.1),
        SharedShape::convex_hull(&[
            Vector::new(-0.4, 0.0, 0.0),
            Vector::new(0.35, 0.05, 0.1),
            Vector::new(0.0, 0.3, 0.0),
            Vector::new(0.05, -0.25, 0.1),
            Vector::new(0.0, 0.05, 0.35),
        ])
        .unwrap(),
    ]
}

/// The distance between `shape` at `pose` and the triangle `t` of `mesh`.
fn distance_to(mesh: &TriangleMesh, t: u32, shape: &dyn Shape, pose: &Pose) -> f32 {
    let [a, b, c] = mesh.triangles[t as usize].map(|i| mesh.positions[i as usize].to_parry());
    parry3d::query::distance(pose, shape, &Pose::IDENTITY, &Triangle::new(a, b, c)).unwrap().distance
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Hits where parry's sweep of the same shape over an oriented TriMesh of the same triangles
    /// hits, at the same fraction or earlier: parry's root finder can miss a triangle the motion
    /// passes close by when its window is the whole step, so its answer depends on the order it
    /// visits triangles in; voxterra's retries with the window cut to its best hit. An earlier hit
    /// is a real one: the shape within the slop of the triangle hit.
    #[test]
    fn matches_parrys_composite_sweep(x in 1.5f32..6.5, z in 1.5f32..6.5, height in 0.6f32..3.0,
                                      drop in 1.0f32..6.0, dir in proptest::array::uniform2(-1.0f32..1.0),
                                      which in 0usize..4, r0 in proptest::array::uniform3(-3.2f32..3.2),
                                      spin in proptest::array::uniform3(-0.6f32..0.6)) {
        let mesh = terrain();
        let index = BruteForceTriangles(&mesh);
        let positions = mesh.positions.iter().map(|p| p.to_parry()).collect();
        let trimesh = TriMesh::with_flags(positions, mesh.triangles.clone(), TriMeshFlags::ORIENTED).unwrap();
        let shape = shapes().swap_remove(which);
        let q0 = UnitQuaternion::from_euler_angles(r0[0], r0[1], r0[2]).to_parry();
        let q1 = Rotation::from_scaled_axis(Vector::from(spin)) * q0;
        let start = Pose::from_parts(Vector::new(x, height, z), q0);
        let end = Pose::from_parts(Vector::new(x + dir[0], height - drop, z + dir[1]), q1);
        let props = shape.mass_properties(1.0);
        let sweep = Sweep::from_poses(&start, &end, props.local_com);
        let ours = sweep_shape(&*shape.0, &sweep, 1.0, SLOP, TriangleSet::new(&mesh, &index).one_sided()).unwrap();
        let fast = SweepCompositeFastShape {
            proxy: &ToiProxy::from_shape(&*shape.0).unwrap(),
            sweep: &sweep,
            local_centroid: props.local_com,
            min_extent: shape.ccd_thickness(),
        };
        let theirs = sweep_time_of_impact_composite(&trimesh, &Pose::IDENTITY, fast, true, false, 1.0, SLOP).unwrap();
        let theirs = (theirs.status != SweepToiStatus::Separated).then_some(theirs.fraction);
        // The root finders stop within a quarter of the slop of the target: a fraction of the
        // slop's length over the motion apart is a tie.
        let travel = (sweep.c2 - sweep.c1).length() + shape.compute_local_bounding_sphere().radius * spin.iter().map(|a| a.abs()).sum::<f32>();
        let tie = SLOP / travel;
        match (ours, theirs) {
            (None, None) => {}
            (Some(o), Some(t)) if (o.fraction - t).abs() <= tie => {}
            (Some(o), t) if t.is_none_or(|t| o.fraction < t) => {
                let d = distance_to(&mesh, o.id.triangle, &*shape.0, &sweep.transform_at(o.fraction));
                prop_assert!(d < 2.0 * SLOP, "ours {o:?} (distance {d}), parry {t:?}");
            }
            (o, t) => prop_assert!(false, "ours {o:?}, parry {t:?}"),
        }
    }
}

#[test]
fn a_fast_spinning_plate_stops_at_a_thin_surface() {
    // One two-triangle floor at y = 0, a plate falling 30 units in the step while turning 90°.
    let mesh = TriangleMesh {
        positions: vec![
            Point3::new(-5.0, 0.0, -5.0),
            Point3::new(5.0, 0.0, -5.0),
            Point3::new(5.0, 0.0, 5.0),
            Point3::new(-5.0, 0.0, 5.0),
        ],
        triangles: vec![[0, 2, 1], [0, 3, 2]],
    };
    let index = BruteForceTriangles(&mesh);
    let plate = Cuboid::new(Vector::new(0.5, 0.02, 0.5));
    let start = Pose::from_parts(Vector::new(0.0, 15.0, 0.0), Rotation::from_rotation_x(1.2));
    let end = Pose::from_parts(Vector::new(0.3, -15.0, 0.0), Rotation::from_rotation_x(1.2 + 1.57));
    let sweep = Sweep::from_poses(&start, &end, Vector::ZERO);
    let hit =
        sweep_shape(&plate, &sweep, 1.0, SLOP, TriangleSet::new(&mesh, &index).one_sided()).unwrap().unwrap();
    let at = sweep.transform_at(hit.fraction);
    let lowest = plate.compute_aabb(&at).mins.y;
    assert!((lowest - SLOP).abs() < 2e-3, "stops {lowest} above the floor, {hit:?}");
    assert!(hit.normal.y > 0.99 && hit.fraction > 0.4 && hit.fraction < 0.55, "{hit:?}");
}

#[test]
fn resting_and_sliding_bodies_move_on_and_bodies_behind_pass() {
    let mesh = terrain();
    let index = BruteForceTriangles(&mesh);
    let set = TriangleSet::new(&mesh, &index).one_sided();
    let ball = Ball::new(0.3);
    // Resting on the ground at (4, 4), sliding 2 cm along it in the step: not pinned.
    let below = |x: f32, z: f32| {
        let probe = Pose::translation(x, 5.0, z);
        let down = Vector::new(0.0, -1.0, 0.0);
        let plain = TriangleSet::new(&mesh, &index);
        let hit = cast_shape(&ball, &probe, down, 10.0, plain, CastOptions::default()).unwrap().unwrap();
        5.0 - hit.toi
    };
    let y = below(4.0, 4.0);
    let resting = Pose::translation(4.0, y, 4.0);
    let slid = Pose::translation(4.02, below(4.02, 4.0) + 0.001, 4.0);
    let sweep = Sweep::from_poses(&resting, &slid, Vector::ZERO);
    assert_eq!(sweep_shape(&ball, &sweep, 1.0, SLOP, set).unwrap(), None);
    // Pressed into the ground over the step: its core stops it.
    let sunk = Pose::translation(4.0, y - 2.0, 4.0);
    let hit = sweep_shape(&ball, &Sweep::from_poses(&resting, &sunk, Vector::ZERO), 1.0, SLOP, set).unwrap();
    assert!(hit.is_some_and(|h| h.fraction > 0.0 && h.fraction < 0.2), "{hit:?}");
    // Under the surface, moving up through it: one-sided, so it passes.
    let under = Pose::translation(4.0, -3.0, 4.0);
    let up = Pose::translation(4.0, 3.0, 4.0);
    assert_eq!(
        sweep_shape(&ball, &Sweep::from_poses(&under, &up, Vector::ZERO), 1.0, SLOP, set).unwrap(),
        None
    );
    // Two-sided, it stops.
    let two_sided = TriangleSet::new(&mesh, &index);
    assert!(
        sweep_shape(&ball, &Sweep::from_poses(&under, &up, Vector::ZERO), 1.0, SLOP, two_sided)
            .unwrap()
            .is_some()
    );
}

#[test]
fn compound_parts_report_themselves_and_bad_sweeps_are_refused() {
    let mesh = terrain();
    let index = BruteForceTriangles(&mesh);
    let set = TriangleSet::new(&mesh, &index).one_sided();
    let dumbbell = Compound::new(vec![
        (Pose::translation(-0.5, 0.0, 0.0), SharedShape::ball(0.2)),
        (Pose::translation(0.5, -0.3, 0.0), SharedShape::ball(0.2)),
    ]);
    let sweep = Sweep::from_poses(
        &Pose::translation(4.0, 4.0, 4.0),
        &Pose::translation(4.0, -4.0, 4.0),
        Vector::ZERO,
    );
    let hit = sweep_shape(&dumbbell, &sweep, 1.0, SLOP, set).unwrap().unwrap();
    assert_eq!(hit.id.part, 1, "the lower ball lands first: {hit:?}");
    let capsule = Capsule::new_y(0.3, 0.1);
    let nan = Sweep { c1: Vector::new(f32::NAN, 0.0, 0.0), ..sweep };
    assert!(matches!(
        sweep_shape(&capsule, &nan, 1.0, SLOP, set),
        Err(NarrowphaseError::InvalidParameter { .. })
    ));
    assert!(matches!(
        sweep_shape(&capsule, &sweep, 1.5, SLOP, set),
        Err(NarrowphaseError::InvalidParameter { .. })
    ));
    assert!(matches!(
        sweep_shape(&capsule, &sweep, 1.0, 0.0, set),
        Err(NarrowphaseError::InvalidParameter { .. })
    ));
    assert!(matches!(
        sweep_shape(&Cylinder::new(0.3, 0.2), &sweep, 1.0, SLOP, set),
        Err(NarrowphaseError::UnsupportedShape(_))
    ));
}
