//! Shape casts against parry's cast against one TriMesh of the same triangles.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use parry3d::math::{Pose, Vector};
use parry3d::query::ShapeCastOptions;
use parry3d::shape::{SharedShape, TriMesh};
use proptest::prelude::*;
use voxterra_core::nalgebra::{Isometry3, UnitQuaternion, Vector3};
use voxterra_core::{BruteForceTriangles, TriangleMesh};
use voxterra_narrowphase::convert::ToParry;
use voxterra_narrowphase::{CastOptions, NarrowphaseError, TriangleSet, cast_shape};
use voxterra_test_support::grid_mesh;

fn terrain() -> TriangleMesh {
    grid_mesh(16, 0.5, |x, z| (x * 0.9).sin() * 0.5 + (z * 0.4).cos() * 0.4)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(240))]

    /// Times of impact against parry's, with no target distance and with one (a character's
    /// skin): the shape stops that far from the surface, its witnesses that far apart along the
    /// normal.
    #[test]
    fn time_of_impact_matches_parry(x in 1.0f32..7.0, z in 1.0f32..7.0, dir in proptest::array::uniform3(-1.0f32..1.0),
                                    which in 0usize..4, r in proptest::array::uniform3(-3.2f32..3.2),
                                    target in prop_oneof![Just(0.0f32), 0.0f32..0.3]) {
        let mesh = terrain();
        let index = BruteForceTriangles(&mesh);
        let trimesh = TriMesh::new(mesh.positions.iter().map(|p| p.to_parry()).collect(), mesh.triangles.clone()).unwrap();
        let shapes = [SharedShape::ball(0.4), SharedShape::cuboid(0.3, 0.6, 0.3), SharedShape::capsule_y(0.4, 0.3), SharedShape::cylinder(0.3, 0.4)];
        let shape = &*shapes[which].0;
        let pose = Isometry3::from_parts(Vector3::new(x, 2.5, z).into(), UnitQuaternion::from_euler_angles(r[0], r[1], r[2])).to_parry();
        let vel = Vector::new(dir[0], -1.0 - dir[1].abs(), dir[2]);
        let options = CastOptions { target_distance: target, stop_at_penetration: true };
        let ours = cast_shape(shape, &pose, vel, 4.0, TriangleSet::new(&mesh, &index), options).unwrap();
        let theirs = parry3d::query::cast_shapes(&pose, vel, shape, &Pose::IDENTITY, Vector::ZERO, &trimesh,
            ShapeCastOptions { max_time_of_impact: 4.0, target_distance: target, ..Default::default() }).unwrap();
        match (ours, theirs) {
            (Some(o), Some(t)) => {
                prop_assert!((o.toi - t.time_of_impact).abs() < 1e-3, "ours {}, parry {}", o.toi, t.time_of_impact);
                prop_assert!(o.normal.into_inner().iter().all(|v| v.is_finite()));
                let gap = (o.on_shape - o.on_triangle).dot(&o.normal);
                // A box's touching points come from its contact routine, which prefers a face
                // axis within a bias of a thousandth of (1 + its largest half extent).
                let slack = if which == 1 { 1e-3 * (1.0 + 0.6) } else { 0.0 };
                prop_assert!((gap - target).abs() < 1e-3 + slack, "gap {gap}, target {target}");
            }
            (None, None) => {}
            (o, t) => prop_assert!(false, "ours {o:?}, parry {t:?}"),
        }
    }
}

#[test]
fn bad_casts_are_refused() {
    let mesh = terrain();
    let index = BruteForceTriangles(&mesh);
    let set = TriangleSet::new(&mesh, &index);
    let ball = parry3d::shape::Ball::new(0.5);
    let pose = Pose::translation(2.0, 3.0, 2.0);
    let down = Vector::new(0.0, -1.0, 0.0);
    assert!(matches!(
        cast_shape(&ball, &pose, Vector::new(f32::NAN, 0.0, 0.0), 1.0, set, CastOptions::default()),
        Err(NarrowphaseError::InvalidParameter { .. })
    ));
    assert!(matches!(
        cast_shape(&ball, &pose, down, -1.0, set, CastOptions::default()),
        Err(NarrowphaseError::InvalidParameter { .. })
    ));
    assert!(matches!(
        cast_shape(&ball, &pose, down, f32::INFINITY, set, CastOptions::default()),
        Err(NarrowphaseError::InvalidParameter { .. })
    ));
    let nan = Pose::translation(0.0, f32::NAN, 0.0);
    assert_eq!(
        cast_shape(&ball, &nan, down, 1.0, set, CastOptions::default()),
        Err(NarrowphaseError::NonFinitePose)
    );
    // Moving away, or not at all from far above: no hit.
    assert_eq!(cast_shape(&ball, &pose, -down, 10.0, set, CastOptions::default()), Ok(None));
    assert_eq!(cast_shape(&ball, &pose, Vector::ZERO, 10.0, set, CastOptions::default()), Ok(None));
    // Falling: hits before it would pass y = 0.
    let hit = cast_shape(&ball, &pose, down, 10.0, set, CastOptions::default()).unwrap().unwrap();
    assert!(hit.toi > 1.0 && hit.toi < 3.5 && hit.normal.y > 0.0, "{hit:?}");
}
