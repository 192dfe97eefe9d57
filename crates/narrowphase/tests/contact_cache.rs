//! Kept contact candidates answer exactly what a fresh query answers.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use parry3d::math::{Pose, Vector};
use parry3d::shape::{Ball, Capsule, Compound, Cuboid, Cylinder, Shape, SharedShape};
use proptest::prelude::*;
use voxterra_core::nalgebra::{Isometry3, UnitQuaternion, Vector3};
use voxterra_core::{BruteForceTriangles, TriangleMesh};
use voxterra_narrowphase::convert::ToParry;
use voxterra_narrowphase::{ContactCache, ContactWorkspace, Manifold, NarrowphaseError, TriangleSet};
use voxterra_test_support::grid_mesh;

fn shapes() -> Vec<SharedShape> {
    vec![
        SharedShape::new(Ball::new(0.5)),
        SharedShape::new(Cuboid::new(Vector::new(0.5, 1.0, 0.4))),
        SharedShape::new(Capsule::new_y(0.5, 0.3)),
        // An irregular hull (a rock).
        SharedShape::convex_hull(&[
            Vector::new(-0.6, -0.1, 0.1),
            Vector::new(0.5, 0.0, 0.3),
            Vector::new(0.1, 0.45, -0.1),
            Vector::new(0.0, -0.4, -0.2),
            Vector::new(-0.1, 0.1, 0.5),
            Vector::new(0.2, 0.1, -0.5),
            Vector::new(0.4, -0.3, -0.3),
        ])
        .unwrap(),
        SharedShape::new(Cylinder::new(0.4, 0.6)),
        SharedShape::new(Compound::new(vec![
            (Pose::translation(-0.6, 0.0, 0.0), SharedShape::new(Ball::new(0.4))),
            (Pose::translation(0.6, 0.1, 0.0), SharedShape::new(Cuboid::new(Vector::splat(0.35)))),
        ])),
    ]
}

/// Two bumpy grounds side by side (two sets, as two chunks), one-sided like terrain.
fn grounds(seed: u32) -> [TriangleMesh; 2] {
    let s = seed as f32 * 0.37;
    let h = move |x: f32, z: f32| (x * 0.7 + s).sin() * 0.6 + (z * 0.5 - s).cos() * 0.4;
    let a = grid_mesh(8, 1.0, h);
    let mut b = grid_mesh(8, 1.0, move |x, z| h(x + 8.0, z));
    for p in &mut b.positions {
        p.x += 8.0;
    }
    [a, b]
}

fn pose_of(t: Vector3<f32>, r: [f32; 3]) -> Pose {
    Isometry3::from_parts(t.into(), UnitQuaternion::from_euler_angles(r[0], r[1], r[2])).to_parry()
}

/// A fresh query over both sets: collected in order, then finished.
fn fresh(shape: &dyn Shape, pose: &Pose, sets: &[TriangleMesh; 2], prediction: f32) -> Vec<(u32, Manifold)> {
    let mut ws = ContactWorkspace::new();
    ws.begin();
    for (g, m) in sets.iter().enumerate() {
        let index = BruteForceTriangles(m);
        ws.collect(shape, pose, TriangleSet::new(m, &index).one_sided(), prediction, g as u32).unwrap();
    }
    let mut out = Vec::new();
    ws.finish(|g, m| out.push((g, *m)));
    out
}

/// The same query through a cache: replayed when it covers the pose, else started again.
fn kept(
    shape: &dyn Shape,
    pose: &Pose,
    sets: &[TriangleMesh; 2],
    prediction: f32,
    cache: &mut ContactCache,
) -> (bool, Vec<(u32, Manifold)>) {
    let mut ws = ContactWorkspace::new();
    ws.begin();
    let replayed = ws.collect_kept(shape, pose, prediction, cache).unwrap();
    cache.validate().unwrap();
    if !replayed {
        cache.start(shape, pose, prediction).unwrap();
        for (g, m) in sets.iter().enumerate() {
            let index = BruteForceTriangles(m);
            ws.collect_keeping(shape, TriangleSet::new(m, &index).one_sided(), g as u32, cache).unwrap();
            cache.validate().unwrap();
        }
    }
    let mut out = Vec::new();
    ws.finish(|g, m| out.push((g, *m)));
    (replayed, out)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Shapes resting on, sinking into and hovering over bumpy ground, moving a little each step
    /// (sometimes past the slack): every step's manifolds equal a fresh query's, bit for bit.
    #[test]
    fn kept_candidates_answer_as_a_fresh_query(
        seed in 0u32..50,
        which in 0usize..6,
        start in (1.0f32..15.0, -0.3f32..0.8, 1.0f32..7.0),
        angles in proptest::array::uniform3(-3.2f32..3.2),
        steps in proptest::collection::vec((proptest::array::uniform3(-0.06f32..0.06), proptest::array::uniform3(-0.05f32..0.05)), 1..12),
        slack in 0.0f32..0.3,
    ) {
        let sets = grounds(seed);
        let shape = &shapes()[which];
        let prediction = 0.05;
        let ground = (start.0 * 0.7 + seed as f32 * 0.37).sin() * 0.6;
        let mut t = Vector3::new(start.0, ground + start.1, start.2);
        let mut r = angles;
        let mut cache = ContactCache::new(slack);
        let mut replays = 0;
        for (dt, dr) in steps {
            let pose = pose_of(t, r);
            let want = fresh(&**shape, &pose, &sets, prediction);
            let (replayed, got) = kept(&**shape, &pose, &sets, prediction, &mut cache);
            replays += replayed as usize;
            prop_assert_eq!(format!("{got:?}"), format!("{want:?}"));
            t += Vector3::from(dt);
            r = [r[0] + dr[0], r[1] + dr[1], r[2] + dr[2]];
        }
        let _ = replays;
    }
}

/// The cache notices what makes it stale on its own: a shape of another size or kind, another
/// prediction, a motion past its slack; and it replays within the slack.
#[test]
fn a_cache_covers_only_its_own_query() {
    let sets = grounds(3);
    let ball = Ball::new(0.5);
    let (bigger, cube) = (Ball::new(0.6), Cuboid::new(Vector::splat(0.5)));
    let pose = pose_of(Vector3::new(4.0, 0.9, 4.0), [0.0; 3]);
    let mut cache = ContactCache::new(0.1);
    assert!(!cache.covers(&ball, &pose, 0.05));
    let (replayed, _) = kept(&ball, &pose, &sets, 0.05, &mut cache);
    assert!(!replayed && !cache.is_empty());
    assert!(cache.covers(&ball, &pose, 0.05));
    assert!(cache.covers(&ball, &pose_of(Vector3::new(4.05, 0.9, 4.0), [0.0; 3]), 0.05));
    assert!(!cache.covers(&ball, &pose_of(Vector3::new(4.2, 0.9, 4.0), [0.0; 3]), 0.05));
    assert!(!cache.covers(&ball, &pose_of(Vector3::new(4.0, 0.9, 4.0), [0.0, 0.5, 0.0]), 0.05));
    assert!(!cache.covers(&ball, &pose, 0.06));
    assert!(!cache.covers(&bigger, &pose, 0.05) && !cache.covers(&cube, &pose, 0.05));
    let (replayed, got) =
        kept(&ball, &pose_of(Vector3::new(4.03, 0.9, 4.0), [0.0; 3]), &sets, 0.05, &mut cache);
    assert!(replayed);
    assert_eq!(
        format!("{got:?}"),
        format!("{:?}", fresh(&ball, &pose_of(Vector3::new(4.03, 0.9, 4.0), [0.0; 3]), &sets, 0.05))
    );
    cache.clear();
    assert!(!cache.covers(&ball, &pose, 0.05));
}

/// Keeping before starting is a typed error, not a panic.
#[test]
fn keeping_without_a_start_is_an_error() {
    let sets = grounds(1);
    let index = BruteForceTriangles(&sets[0]);
    let mut cache = ContactCache::new(0.1);
    let r = ContactWorkspace::new().collect_keeping(
        &Ball::new(0.5),
        TriangleSet::new(&sets[0], &index),
        0,
        &mut cache,
    );
    assert!(matches!(r, Err(NarrowphaseError::InvalidParameter { what: "contact cache not started", .. })));
}
