//! Contacts against parry's own per-triangle `contact`, the manifold rules, bad input.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use parry3d::math::{Pose, Vector};
use parry3d::shape::{
    Ball, Capsule, Compound, Cone, ConvexPolyhedron, Cuboid, Cylinder, RoundCuboid, Shape, SharedShape,
    Triangle,
};
use proptest::prelude::*;
use voxterra_core::nalgebra::{Isometry3, Point3, Unit, UnitQuaternion, Vector3};
use voxterra_core::{BruteForceTriangles, TriangleMesh};
use voxterra_narrowphase::convert::{FromParry, ToParry};
use voxterra_narrowphase::manifold::{ReduceScratch, reduce};
use voxterra_narrowphase::{
    ContactPoint, ContactWorkspace, Correction, FeatureId, Manifold, NarrowphaseError, TriangleFeature,
    TriangleSet, contact_points, contacts,
};
use voxterra_test_support::grid_mesh;
use voxterra_test_support::reference::{P, Polytope, closest_on_triangle, p64, tri64};

fn one_triangle(t: [Point3<f32>; 3]) -> TriangleMesh {
    TriangleMesh { positions: t.to_vec(), triangles: vec![[0, 1, 2]] }
}

fn points_of(shape: &dyn Shape, pose: &Pose, mesh: &TriangleMesh, prediction: f32) -> Vec<ContactPoint> {
    let index = BruteForceTriangles(mesh);
    let mut out = vec![];
    contact_points(
        shape,
        pose,
        TriangleSet::new(mesh, &index),
        prediction,
        &mut ContactWorkspace::new(),
        &mut out,
    )
    .unwrap();
    out
}

/// The least overlap of a box (half extents `h` at `pose`) and a triangle over the 13 axes that
/// can separate them: their exact penetration depth (negative when apart).
fn least_overlap(h: &[f32; 3], pose: &Pose, tri: &[Point3<f32>; 3]) -> f32 {
    let iso = Isometry3::from_parry(pose);
    let u = [0, 1, 2].map(|i| iso.rotation * Vector3::ith(i, 1.0));
    let e = [tri[1] - tri[0], tri[2] - tri[1], tri[0] - tri[2]];
    let mut axes = vec![e[0].cross(&e[1])];
    axes.extend(u);
    axes.extend(u.iter().flat_map(|a| e.iter().map(move |b| a.cross(b))));
    let c = iso.translation.vector;
    axes.iter()
        .filter(|l| l.norm() > 1e-6)
        .map(|l| {
            let l = l.normalize();
            let rb: f32 = (0..3).map(|i| h[i] * u[i].dot(&l).abs()).sum();
            let p = tri.map(|v| v.coords.dot(&l));
            let (lo, hi) = (p[0].min(p[1]).min(p[2]), p[0].max(p[1]).max(p[2]));
            (hi - (c.dot(&l) - rb)).min((c.dot(&l) + rb) - lo)
        })
        .fold(f32::INFINITY, f32::min)
}

fn arb_triangle() -> impl Strategy<Value = [Point3<f32>; 3]> {
    proptest::array::uniform3(proptest::array::uniform3(-2.0f32..2.0).prop_map(Point3::from))
        .prop_filter("not degenerate", |t| (t[1] - t[0]).cross(&(t[2] - t[0])).norm() > 0.3)
}

/// parry's triangle of `tri`.
fn parry_triangle(tri: &[Point3<f32>; 3]) -> Triangle {
    Triangle::new(tri[0].to_parry(), tri[1].to_parry(), tri[2].to_parry())
}

/// A pose from a translation and Euler angles (roll, pitch, yaw).
fn pose_of(t: [f32; 3], r: [f32; 3]) -> Pose {
    Isometry3::from_parts(Vector3::from(t).into(), UnitQuaternion::from_euler_angles(r[0], r[1], r[2]))
        .to_parry()
}

fn arb_pose() -> impl Strategy<Value = Pose> {
    (proptest::array::uniform3(-2.5f32..2.5), proptest::array::uniform3(-3.2f32..3.2))
        .prop_map(|(t, r)| pose_of(t, r))
}

/// One point per triangle for these shapes, equal to parry's `contact` within 1e-4.
fn agrees_with_parry(shape: &dyn Shape, pose: &Pose, tri: [Point3<f32>; 3]) -> Result<(), TestCaseError> {
    let prediction = 0.1;
    let mesh = one_triangle(tri);
    let ours = points_of(shape, pose, &mesh, prediction);
    let t = parry_triangle(&tri);
    let theirs = parry3d::query::contact(pose, shape, &Pose::IDENTITY, &t, prediction).unwrap();
    match (ours.first(), theirs) {
        (None, None) => {}
        // parry's `contact` can answer past the prediction (a round shape's border added after
        // GJK stopped): no contact.
        (None, Some(p)) if p.dist > prediction => {}
        (Some(o), Some(p)) => {
            prop_assert_eq!(ours.len(), 1);
            prop_assert!((o.dist - p.dist).abs() < 1e-4, "dist {} vs parry {}", o.dist, p.dist);
            // Witness points on the triangle agree; normals only where parry's answer is exact
            // (separated: GJK closest points). Penetrating, parry runs EPA, whose normal can be a
            // degree off the exact closest-feature direction ours computes (depths still agree).
            // EPA's normal, a degree off, moves its witness by up to the depth times that angle.
            let reach = 1e-3 + 0.02 * (-p.dist).max(0.0);
            prop_assert!((o.on_triangle - Point3::from_parry(p.point2)).norm() < reach, "{:?} vs {:?}", o, p);
            if p.dist > 1e-3 {
                prop_assert!(
                    (o.normal.into_inner() - Vector3::from_parry(p.normal2)).norm() < 1e-3,
                    "{:?} vs {:?}",
                    o,
                    p
                );
            }
        }
        (o, p) => {
            // Only a grazing contact at the prediction boundary may differ.
            let d = o.map(|o| o.dist).or(p.map(|p| p.dist)).unwrap();
            prop_assert!((d - prediction).abs() < 1e-4, "ours {o:?}, parry {p:?}");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn balls_match_parry(tri in arb_triangle(), pose in arb_pose(), r in 0.2f32..1.5) {
        agrees_with_parry(&Ball::new(r), &pose, tri)?;
    }

    /// Capsules against parry's exact reference: GJK's distance between the capsule's core segment
    /// and the triangle, minus the radius (a capsule is a segment swept by a ball). parry's own
    /// capsule contact runs EPA when penetrating, which can be more than 1e-3 off that depth.
    #[test]
    fn capsules_match_parry(tri in arb_triangle(), pose in arb_pose(), half in 0.1f32..1.0, r in 0.2f32..0.8) {
        let cap = Capsule::new_y(half, r);
        let mesh = one_triangle(tri);
        let ours = points_of(&cap, &pose, &mesh, 0.1);
        let t = parry_triangle(&tri);
        let core = parry3d::shape::Segment::new(cap.segment.a, cap.segment.b);
        let d = parry3d::query::distance(&pose, &core, &Pose::IDENTITY, &t).unwrap().distance;
        if d > 1e-3 {
            let want = d - r;
            match ours.first() {
                Some(o) => prop_assert!((o.dist - want).abs() < 1e-4, "ours {}, exact {want}", o.dist),
                None => prop_assert!(want > 0.1 - 1e-4, "no contact, exact {want}"),
            }
        } else {
            // Segment touching or crossing the triangle: GJK/EPA on both sides, parry's answer.
            agrees_with_parry(&cap, &pose, tri)?;
        }
    }

    #[test]
    fn gjk_shapes_match_parry(tri in arb_triangle(), pose in arb_pose(), which in 0usize..3) {
        let shapes: [SharedShape; 3] = [
            SharedShape::new(Cylinder::new(0.6, 0.5)),
            SharedShape::new(Cone::new(0.6, 0.5)),
            SharedShape::new(RoundCuboid { inner_shape: Cuboid::new(Vector::new(0.4, 0.3, 0.5)), border_radius: 0.1 }),
        ];
        agrees_with_parry(&*shapes[which].0, &pose, tri)?;
    }

    /// Convex hulls against the exact f64 reference: the deepest point at the exact penetration
    /// depth (within the bias toward face axes), its normal the way out (moved back by the depth,
    /// the hull no longer overlaps the triangle), apart the exact distance, and every point on
    /// both shapes.
    #[test]
    fn hulls_match_the_exact_reference(
        tri in arb_triangle(),
        pose in arb_pose(),
        pts in proptest::collection::vec(proptest::array::uniform3(-1.0f32..1.0), 4..24),
        rock_instead in any::<bool>(),
    ) {
        let shape = if rock_instead {
            rock()
        } else {
            let pts: Vec<Vector> = pts.iter().map(|&p| Vector::from_array(p)).collect();
            match ConvexPolyhedron::from_convex_hull(&pts) {
                Some(h) if h.faces().len() >= 4 => h,
                _ => return Ok(()),
            }
        };
        hull_matches_the_reference(&shape, &pose, tri)?;
    }

    /// Cuboids: never deeper than the exact minimum translation (the least overlap over all 13
    /// separating axes, computed here by brute force) beyond the bias toward face axes, yet of
    /// parry's size (its EPA can stop short of the exact depth), and both find a contact or
    /// neither does, away from touching.
    #[test]
    fn cuboids_match_parry_depth(tri in arb_triangle(), pose in arb_pose(), h in proptest::array::uniform3(0.2f32..1.0)) {
        let cube = Cuboid::new(Vector::from_array(h));
        let mesh = one_triangle(tri);
        let ours = points_of(&cube, &pose, &mesh, 0.0);
        let t = parry_triangle(&tri);
        let theirs = parry3d::query::contact(&pose, &cube, &Pose::IDENTITY, &t, 0.0).unwrap();
        let deepest = ours.iter().map(|p| p.dist).fold(f32::INFINITY, f32::min);
        match theirs {
            Some(p) if p.dist < -1e-3 => {
                let exact = least_overlap(&h, &pose, &tri);
                let bias = 1e-3 * (1.0 + h.iter().fold(0.0f32, |a, &b| a.max(b)));
                prop_assert!(deepest >= -exact - bias - 1e-4, "ours {deepest} deeper than the exact {exact}");
                prop_assert!(deepest <= 0.5 * p.dist, "ours {deepest}, parry {}", p.dist);
            }
            None => prop_assert!(ours.is_empty() || deepest > -1e-3, "ours {deepest}, parry none"),
            _ => {}
        }
        for p in &ours {
            prop_assert!(p.dist <= 1e-5 && p.dist.is_finite());
            prop_assert!((p.on_shape - (p.on_triangle + p.normal.into_inner() * p.dist)).norm() < 1e-4);
        }
    }

    /// Never more than 4 points a manifold, every manifold keeps its group's deepest point, and
    /// the deepest point of all is kept.
    #[test]
    fn reduction_keeps_the_deepest_and_at_most_four(pts in proptest::collection::vec(
        (proptest::array::uniform3(-3.0f32..3.0), -0.5f32..0.1, 0usize..3), 1..40)) {
        let normals = [Vector3::y(), Vector3::new(0.05, 1.0, 0.0).normalize(), Vector3::x()];
        let points: Vec<ContactPoint> = pts.iter().enumerate().map(|(i, &(p, d, n))| ContactPoint {
            on_shape: Point3::from(p) + normals[n] * d,
            on_triangle: Point3::from(p),
            normal: Unit::new_normalize(normals[n]),
            dist: d,
            id: FeatureId { triangle: i as u32, feature: TriangleFeature::Face, part: 0, sub: 0 },
            correction: Correction::None,
        }).collect();
        let mut out = vec![];
        reduce(&points, &mut ReduceScratch::default(), &mut out);
        let min = points.iter().map(|p| p.dist).fold(f32::INFINITY, f32::min);
        prop_assert!(out.iter().all(|m| !m.points().is_empty() && m.points().len() <= 4));
        prop_assert!(out.iter().any(|m| m.points().iter().any(|p| p.dist == min)));
        for m in &out {
            for p in m.points() {
                prop_assert!(p.normal.dot(&m.normal) >= 5f32.to_radians().cos() - 1e-6);
            }
        }
        let total: usize = out.iter().map(|m| m.points().len()).sum();
        prop_assert!(total <= points.len());
    }
}

/// One hull against one triangle, checked against [`Polytope`]'s exact answers in f64.
fn hull_matches_the_reference(
    shape: &ConvexPolyhedron,
    pose: &Pose,
    tri: [Point3<f32>; 3],
) -> Result<(), TestCaseError> {
    let prediction = 0.1;
    let mesh = one_triangle(tri);
    let ours = points_of(shape, pose, &mesh, prediction);
    let iso = Isometry3::from_parry(pose);
    let corners: Vec<P> = shape.points().iter().map(|&p| p64(&(iso * Point3::from_parry(p)))).collect();
    let size = 1.0 + shape.points().iter().map(|p| p.abs().max_element()).fold(0.0f32, f32::max);
    let exact = Polytope::new(corners.clone());
    let t = tri64(&tri, 1.0);
    let overlap = exact.sat(&t);
    // parry merges faces within about a degree: a point on a merged face lies up to its corners'
    // distance from its plane off the true hull.
    let merged = merge_deviation(shape);
    let bias = 1e-3 * size + 1e-4 + 2.0 * merged;
    let deepest = ours.iter().min_by(|a, b| a.dist.total_cmp(&b.dist));
    if overlap > 1e-4 {
        let Some(d) = deepest else {
            return Err(TestCaseError::fail(format!("overlap {overlap}, no contact")));
        };
        prop_assert!(
            f64::from(d.dist) >= -overlap - f64::from(bias)
                && f64::from(d.dist) <= -overlap + f64::from(bias),
            "deepest {} against the exact depth {overlap}",
            d.dist
        );
        // Moved back along its normal by its depth, the hull clears the triangle.
        let back = p64(&Point3::from(d.normal.into_inner() * -d.dist));
        let moved = Polytope::new(corners.iter().map(|c| c + back.coords).collect());
        prop_assert!(moved.sat(&t) < f64::from(bias), "moved by {:?}: still overlaps {}", d, moved.sat(&t));
    } else if overlap < -1e-4 {
        let dist = exact.distance(&t);
        if dist < f64::from(prediction) - 1e-4 {
            let Some(d) = deepest else {
                return Err(TestCaseError::fail(format!("apart by {dist}, no contact")));
            };
            prop_assert!(
                (f64::from(d.dist) - dist).abs() < f64::from(1e-4 + merged),
                "ours {}, exact {dist}, merged faces {merged}",
                d.dist
            );
        } else if dist > f64::from(prediction + 1e-4 + merged) {
            prop_assert!(ours.is_empty(), "apart by {dist}: {ours:?}");
        }
    }
    for p in &ours {
        prop_assert!(p.dist <= prediction && p.dist.is_finite());
        prop_assert!((p.on_shape - (p.on_triangle + p.normal.into_inner() * p.dist)).norm() < 1e-4 * size);
        let on_tri = closest_on_triangle(&p64(&p.on_triangle), &t).0;
        prop_assert!((on_tri - p64(&p.on_triangle)).norm() < 1e-4, "{p:?} off the triangle");
        let s = p64(&p.on_shape);
        let outside = exact.faces.iter().map(|(n, c)| (s - c[0]).dot(n)).fold(f64::NEG_INFINITY, f64::max);
        prop_assert!(outside.abs() < f64::from(1e-4 * size + merged), "{p:?} off the hull by {outside}");
    }
    Ok(())
}

/// How far the corners of parry's merged faces lie from their faces' planes.
fn merge_deviation(shape: &ConvexPolyhedron) -> f32 {
    let ring = shape.vertices_adj_to_face();
    let mut worst = 0.0f32;
    for f in shape.faces() {
        let r = &ring
            [f.first_vertex_or_edge as usize..(f.first_vertex_or_edge + f.num_vertices_or_edges) as usize];
        let d: Vec<f32> = r.iter().map(|&i| shape.points()[i as usize].dot(f.normal)).collect();
        let (lo, hi) = d.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
        worst = worst.max(hi - lo);
    }
    worst
}

fn rock() -> ConvexPolyhedron {
    // 32 points on a squashed sphere, deterministic.
    let pts: Vec<Vector> = (0..32)
        .map(|i| {
            let (a, b) = (i as f32 * 2.399_963, (i as f32 + 0.5) / 32.0);
            let z = 1.0 - 2.0 * b;
            let r = (1.0 - z * z).sqrt();
            Vector::new(r * a.cos() * 0.6, z * 0.4, r * a.sin() * 0.5)
        })
        .collect();
    ConvexPolyhedron::from_convex_hull(&pts).unwrap()
}

fn flat_ground(half: f32) -> TriangleMesh {
    TriangleMesh {
        positions: vec![
            Point3::new(-half, 0.0, -half),
            Point3::new(half, 0.0, -half),
            Point3::new(half, 0.0, half),
            Point3::new(-half, 0.0, half),
        ],
        triangles: vec![[0, 2, 1], [0, 3, 2]],
    }
}

/// The one manifold of a 1×2×1 `shape` (a box, or a hull of its corners) at `pose` resting 1 cm
/// into flat ground: its four bottom corners, at the depth within `depth_tol`.
fn rests_on_its_bottom_corners(shape: &dyn Shape, pose: &Pose, depth_tol: f32) -> Manifold {
    let ground = flat_ground(5.0);
    let index = BruteForceTriangles(&ground);
    let mut out = vec![];
    contacts(shape, pose, TriangleSet::new(&ground, &index), 0.02, &mut ContactWorkspace::new(), &mut out)
        .unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    let m = out[0];
    assert_eq!(m.points().len(), 4, "{m:?}");
    assert!(m.normal.y > 0.9999);
    let mut corners: Vec<Point3<f32>> = [(-0.5, -0.5), (0.5, -0.5), (0.5, 0.5), (-0.5, 0.5)]
        .iter()
        .map(|&(x, z)| Point3::from_parry(*pose * Vector::new(x, -1.0, z)))
        .collect();
    for p in m.points() {
        assert!((p.dist - p.on_shape.y).abs() < 1e-5 && (p.dist + 0.01).abs() < depth_tol, "{p:?}");
        let k = corners.iter().position(|c| (c - p.on_shape).norm() < 1e-4).expect("a corner");
        corners.remove(k);
    }
    m
}

#[test]
fn a_resting_box_gets_its_four_corners() {
    let cube = Cuboid::new(Vector::new(0.5, 1.0, 0.5));
    for yaw in [0.0f32, 0.3, 1.0] {
        rests_on_its_bottom_corners(&cube, &pose_of([0.3, 0.99, -0.2], [0.0, yaw, 0.0]), 1e-5);
    }
}

/// A hull resting flat gets the corners of its face over the ground, whichever way rounding
/// falls: nudged by a hair, the same points (the witness does not hop between tied features).
#[test]
fn a_resting_hull_gets_its_face_corners_stably() {
    let corners: Vec<Vector> = (0..8)
        .map(|i| {
            Vector::new(
                if i & 1 == 0 { -0.5 } else { 0.5 },
                if i & 2 == 0 { -1.0 } else { 1.0 },
                if i & 4 == 0 { -0.5 } else { 0.5 },
            )
        })
        .collect();
    let hull = ConvexPolyhedron::from_convex_hull(&corners).unwrap();
    for yaw in [0.0f32, 0.3, 1.0] {
        let mut seen: Option<Vec<(u32, u32)>> = None;
        for nudge in [0.0f32, 1e-6, -1e-6, 3e-6] {
            let pose = pose_of([0.3 + nudge, 0.99 + nudge, -0.2 - nudge], [nudge, yaw, -nudge]);
            let m = rests_on_its_bottom_corners(&hull, &pose, 1e-4);
            let mut ids: Vec<(u32, u32)> = m.points().iter().map(|p| (p.id.triangle, p.id.sub)).collect();
            ids.sort_unstable();
            match &seen {
                None => seen = Some(ids),
                Some(s) => assert_eq!(s, &ids, "yaw {yaw}, nudge {nudge}"),
            }
        }
    }
}

#[test]
fn compounds_report_each_part() {
    let ground = flat_ground(5.0);
    let index = BruteForceTriangles(&ground);
    let parts = vec![
        (Pose::translation(-1.0, 0.0, 0.0), SharedShape::ball(0.5)),
        (Pose::translation(1.0, 0.0, 0.0), SharedShape::ball(0.5)),
    ];
    let dumbbell = Compound::new(parts);
    let pose = Pose::translation(0.0, 0.45, 0.0);
    let mut out = vec![];
    contact_points(
        &dumbbell,
        &pose,
        TriangleSet::new(&ground, &index),
        0.0,
        &mut ContactWorkspace::new(),
        &mut out,
    )
    .unwrap();
    let parts: Vec<u32> = out.iter().map(|p| p.id.part).collect();
    assert!(parts.contains(&0) && parts.contains(&1), "{out:?}");
    assert!(out.iter().all(|p| (p.dist + 0.05).abs() < 1e-5));
}

#[test]
fn bad_input_is_refused_or_touches_nothing() {
    let ground = flat_ground(5.0);
    let index = BruteForceTriangles(&ground);
    let set = TriangleSet::new(&ground, &index);
    let mut ws = ContactWorkspace::new();
    let mut out = vec![];
    let ball = Ball::new(0.5);
    let nan = Pose::translation(f32::NAN, 0.0, 0.0);
    assert_eq!(contacts(&ball, &nan, set, 0.0, &mut ws, &mut out), Err(NarrowphaseError::NonFinitePose));
    let inf = Pose::translation(0.0, f32::INFINITY, 0.0);
    assert_eq!(contacts(&ball, &inf, set, 0.0, &mut ws, &mut out), Err(NarrowphaseError::NonFinitePose));
    let here = Pose::translation(0.0, 0.4, 0.0);
    assert!(matches!(
        contacts(&ball, &here, set, -1.0, &mut ws, &mut out),
        Err(NarrowphaseError::InvalidParameter { .. })
    ));
    assert!(matches!(
        contacts(&ball, &here, set, f32::NAN, &mut ws, &mut out),
        Err(NarrowphaseError::InvalidParameter { .. })
    ));
    assert_eq!(
        contacts(&Ball::new(0.0), &here, set, 0.0, &mut ws, &mut out),
        Err(NarrowphaseError::DegenerateShape)
    );
    assert_eq!(
        contacts(&Cuboid::new(Vector::ZERO), &here, set, 0.0, &mut ws, &mut out),
        Err(NarrowphaseError::DegenerateShape)
    );
    let positions = ground.positions.iter().map(|p| p.to_parry()).collect();
    let mesh_shape = parry3d::shape::TriMesh::new(positions, ground.triangles.clone()).unwrap();
    assert!(matches!(
        contacts(&mesh_shape, &here, set, 0.0, &mut ws, &mut out),
        Err(NarrowphaseError::UnsupportedShape(_))
    ));
    assert!(out.is_empty());
    // Degenerate and non-finite triangles touch nothing.
    let bad = TriangleMesh {
        positions: vec![
            Point3::origin(),
            Point3::new(1.0, 0.0, 0.0),
            Point3::new(2.0, 0.0, 0.0),
            Point3::new(f32::NAN, 0.0, 0.0),
        ],
        triangles: vec![[0, 1, 2], [0, 1, 3]],
    };
    let bad_index = BruteForceTriangles(&bad);
    for shape in [&ball as &dyn Shape, &Cuboid::new(Vector::ONE)] {
        contacts(
            shape,
            &Pose::translation(0.5, 0.2, 0.0),
            TriangleSet::new(&bad, &bad_index),
            0.1,
            &mut ws,
            &mut out,
        )
        .unwrap();
        assert!(out.is_empty());
    }
}

/// The kD tree and the brute-force index find the same contacts, in the same order.
#[test]
fn any_index_gives_the_same_contacts() {
    let mesh = grid_mesh(24, 0.5, |x, z| (x * 0.7).sin() * 0.4 + (z * 0.3).cos() * 0.3);
    let tree = voxterra_kdtree::KdTree::build(&mesh).unwrap();
    let view = tree.with(&mesh);
    let brute = BruteForceTriangles(&mesh);
    let shapes: [SharedShape; 3] =
        [SharedShape::ball(0.6), SharedShape::cuboid(0.5, 1.0, 0.5), SharedShape::capsule_y(0.5, 0.4)];
    for (k, s) in shapes.iter().enumerate() {
        for step in 0..10 {
            let pose =
                Pose::translation(2.0 + step as f32 * 0.7, 0.3 + k as f32 * 0.2, 3.0 + step as f32 * 0.3);
            let (mut a, mut b) = (vec![], vec![]);
            contacts(
                &*s.0,
                &pose,
                TriangleSet::new(&mesh, &view),
                0.05,
                &mut ContactWorkspace::new(),
                &mut a,
            )
            .unwrap();
            contacts(
                &*s.0,
                &pose,
                TriangleSet::new(&mesh, &brute),
                0.05,
                &mut ContactWorkspace::new(),
                &mut b,
            )
            .unwrap();
            assert_eq!(a, b);
        }
    }
}

/// A one-sided floor: shapes sunk past it, center under the surface, are never pushed down
/// through it (along the face some triangle pushes them the whole way back up); the same floor
/// two-sided pushes some of them down.
#[test]
fn one_sided_triangles_never_push_through_their_back() {
    let ground = flat_ground(5.0);
    let index = BruteForceTriangles(&ground);
    let shapes: Vec<SharedShape> = vec![
        SharedShape::ball(0.5),
        SharedShape::cuboid(0.5, 0.3, 0.4),
        SharedShape::capsule_y(0.4, 0.3),
        SharedShape::new(rock()),
    ];
    let mut pushed_down_two_sided = 0;
    for (k, s) in shapes.iter().enumerate() {
        for i in 0..40 {
            let depth = 0.05 + i as f32 * 0.01; // center 5..45 mm under the floor
            let pose = pose_of(
                [0.1 * i as f32 - 2.0, -depth, 0.3],
                [0.3 * i as f32, 0.7 * k as f32, 0.1 * i as f32],
            );
            if s.compute_aabb(&pose).maxs.y < 0.02 {
                continue; // wholly under the floor: no triangle is near it
            }
            for one_sided in [true, false] {
                let set = TriangleSet::new(&ground, &index);
                let set = if one_sided { set.one_sided() } else { set };
                let mut out = Vec::new();
                contact_points(&**s, &pose, set, 0.01, &mut ContactWorkspace::new(), &mut out).unwrap();
                assert!(!out.is_empty(), "shape {k} case {i}, one-sided {one_sided}: the floor holds it");
                let lowest = s.compute_aabb(&pose).mins.y;
                let mut deepest = f32::INFINITY;
                for p in &out {
                    if one_sided {
                        assert!(p.normal.y >= 0.0, "shape {k} case {i}: normal {:?}", p.normal);
                        if p.normal.y > 0.999 {
                            // Along the face: the shape's point over the triangle, never deeper than
                            // its lowest point.
                            assert!(p.dist >= lowest - 1e-4, "depth {} under {lowest}", p.dist);
                            assert!((p.on_shape.y - p.dist).abs() < 1e-4, "{p:?}");
                            deepest = deepest.min(p.dist);
                        }
                    } else if p.normal.y < 0.0 {
                        pushed_down_two_sided += 1;
                    }
                }
                if one_sided {
                    // Some triangle pushes it the whole way back up: from its lowest point.
                    assert!((deepest - lowest).abs() < 1e-4, "deepest {deepest} vs {lowest}");
                }
            }
        }
    }
    assert!(pushed_down_two_sided > 0, "two-sided, a sunk shape is pushed down");
}

/// Random convex rocks deep in a triangle: every pair GJK says overlaps gets a contact.
#[test]
fn deep_polyhedra_always_get_a_contact() {
    let tri = [Point3::new(-3.0, 0.0, -3.0), Point3::new(0.0, 0.0, 3.0), Point3::new(3.0, 0.0, -3.0)];
    let mesh = one_triangle(tri);
    let t = parry_triangle(&tri);
    let mut seed = 7u64;
    let mut rnd = move || {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 40) as f32 / (1u64 << 24) as f32
    };
    let mut intersecting = 0;
    for i in 0..3000 {
        let pts: Vec<Vector> = (0..12)
            .map(|_| {
                let d = Vector::new(rnd() * 2.0 - 1.0, rnd() * 1.4 - 0.7, rnd() * 2.0 - 1.0);
                d.normalize() * 0.55 * (0.7 + 0.3 * rnd())
            })
            .collect();
        let shape = ConvexPolyhedron::from_convex_hull(&pts).unwrap();
        let t3 = [rnd() - 0.5, (rnd() - 0.5) * 0.8, rnd() - 0.5];
        let pose = pose_of(t3, [rnd() * 6.3, rnd() * 6.3, rnd() * 6.3]);
        // GJK's distance, not parry's intersection test: that one also reports shapes up to about
        // 1e-4 apart as intersecting.
        if parry3d::query::distance(&pose, &shape, &Pose::IDENTITY, &t).unwrap().distance > 0.0 {
            continue;
        }
        intersecting += 1;
        let out = points_of(&shape, &pose, &mesh, 0.0);
        assert!(!out.is_empty(), "case {i}: intersecting but no contact");
        assert!(out.iter().all(|p| p.dist <= 1e-4 && p.dist.is_finite()));
    }
    assert!(intersecting > 1000, "{intersecting}");
}
