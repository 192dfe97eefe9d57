//! Oort's mesh–mesh pipeline against references: OBB SAT against parry's cuboid test, Möller
//! against an exact segment–triangle brute force, the multi-pass test against all pairs.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use parry3d::shape::Cuboid;
use proptest::prelude::*;
use voxterra_core::nalgebra::{Isometry3 as Isometry, Matrix3, Point3, UnitQuaternion, Vector3};
use voxterra_core::{Aabb, TriangleMesh};
use voxterra_narrowphase::convert::ToParry;
use voxterra_narrowphase::mesh_mesh::{intersecting_pairs, intersecting_pairs_brute_force};
use voxterra_narrowphase::{
    MeshCollider, MeshMeshOptions, Obb, RigidBody, apply_impulse, collide, meshes_intersect,
    triangles_intersect_f64,
};

type P = Point3<f64>;

// ---- an exact reference, independent of the Möller code -----------------------------------

fn orient3d(a: &P, b: &P, c: &P, d: &P) -> f64 {
    (b - a).dot(&(c - a).cross(&(d - a)))
}

fn flat2(p: &P, k: usize) -> [f64; 2] {
    [p[(k + 1) % 3], p[(k + 2) % 3]]
}

fn orient2d(a: [f64; 2], b: [f64; 2], c: [f64; 2]) -> f64 {
    (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
}

fn point_in_tri2(t: [[f64; 2]; 3], p: [f64; 2]) -> bool {
    let s = [orient2d(t[0], t[1], p), orient2d(t[1], t[2], p), orient2d(t[2], t[0], p)];
    s.iter().all(|&v| v >= 0.0) || s.iter().all(|&v| v <= 0.0)
}

fn segs_meet2(p: [f64; 2], q: [f64; 2], r: [f64; 2], s: [f64; 2]) -> bool {
    // Parametric, exact on small integers: a point of each closed segment coincides.
    let within = |a: [f64; 2], b: [f64; 2], x: [f64; 2]| {
        orient2d(a, b, x) == 0.0
            && a[0].min(b[0]) <= x[0]
            && x[0] <= a[0].max(b[0])
            && a[1].min(b[1]) <= x[1]
            && x[1] <= a[1].max(b[1])
    };
    let (d1, d2, d3, d4) = (orient2d(r, s, p), orient2d(r, s, q), orient2d(p, q, r), orient2d(p, q, s));
    (d1 * d2 < 0.0 && d3 * d4 < 0.0)
        || within(r, s, p)
        || within(r, s, q)
        || within(p, q, r)
        || within(p, q, s)
}

/// Does closed segment p–q meet closed triangle t?
fn segment_meets_triangle(p: &P, q: &P, t: &[P; 3]) -> bool {
    let n = (t[1] - t[0]).cross(&(t[2] - t[0]));
    let (dp, dq) = (n.dot(&(p - t[0])), n.dot(&(q - t[0])));
    if (dp > 0.0 && dq > 0.0) || (dp < 0.0 && dq < 0.0) {
        return false;
    }
    if dp == 0.0 && dq == 0.0 {
        let k = (0..3).max_by(|&i, &j| n[i].abs().total_cmp(&n[j].abs())).unwrap();
        let t2 = t.map(|v| flat2(&v, k));
        let (p2, q2) = (flat2(p, k), flat2(q, k));
        return point_in_tri2(t2, p2)
            || point_in_tri2(t2, q2)
            || (0..3).any(|i| segs_meet2(p2, q2, t2[i], t2[(i + 1) % 3]));
    }
    let s = [orient3d(p, q, &t[0], &t[1]), orient3d(p, q, &t[1], &t[2]), orient3d(p, q, &t[2], &t[0])];
    s.iter().all(|&v| v >= 0.0) || s.iter().all(|&v| v <= 0.0)
}

fn brute_tri_tri(a: &[P; 3], b: &[P; 3]) -> bool {
    (0..3).any(|i| segment_meets_triangle(&a[i], &a[(i + 1) % 3], b))
        || (0..3).any(|i| segment_meets_triangle(&b[i], &b[(i + 1) % 3], a))
}

fn area_ok(t: &[P; 3]) -> bool {
    (t[1] - t[0]).cross(&(t[2] - t[0])) != Vector3::zeros()
}

fn grid_tri(range: i32, flat: bool) -> impl Strategy<Value = [P; 3]> {
    proptest::array::uniform3(proptest::array::uniform3(-range..=range)).prop_map(move |t| {
        t.map(|v| Point3::new(v[0] as f64, v[1] as f64, if flat { 0.0 } else { v[2] as f64 }))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Integer coordinates: every predicate is exact, so touching, edge-on and coplanar cases are
    /// decided exactly on both sides.
    #[test]
    fn moller_equals_the_brute_force_on_grids(a in grid_tri(3, false), b in grid_tri(3, false)) {
        prop_assume!(area_ok(&a) && area_ok(&b));
        prop_assert_eq!(triangles_intersect_f64(&a, &b), brute_tri_tri(&a, &b));
    }

    #[test]
    fn moller_equals_the_brute_force_coplanar(a in grid_tri(3, true), b in grid_tri(3, true)) {
        prop_assume!(area_ok(&a) && area_ok(&b));
        prop_assert_eq!(triangles_intersect_f64(&a, &b), brute_tri_tri(&a, &b));
    }

    /// Random floats: the same wherever the answer is not within rounding of touching.
    #[test]
    fn moller_equals_the_brute_force_on_floats(a in proptest::array::uniform3(proptest::array::uniform3(-2.0f64..2.0)),
                                               b in proptest::array::uniform3(proptest::array::uniform3(-2.0f64..2.0))) {
        let (a, b) = (a.map(Point3::from), b.map(Point3::from));
        prop_assume!(area_ok(&a) && area_ok(&b));
        prop_assert_eq!(triangles_intersect_f64(&a, &b), brute_tri_tri(&a, &b));
    }

    /// OBB SAT against parry's cuboid–cuboid intersection test, away from touching (where the
    /// epsilon that keeps parallel edges safe may report a touch parry does not).
    #[test]
    fn obbs_match_parry(ha in proptest::array::uniform3(0.1f32..2.0), hb in proptest::array::uniform3(0.1f32..2.0),
                        t in proptest::array::uniform3(-3.0f32..3.0), ra in proptest::array::uniform3(-3.2f32..3.2),
                        rb in proptest::array::uniform3(-3.2f32..3.2), snap in 0usize..3) {
        let rot = |r: [f32; 3]| match snap {
            0 => UnitQuaternion::from_euler_angles(r[0], r[1], r[2]),
            // Parallel edges: axis-aligned, or turned by quarter turns.
            1 => UnitQuaternion::identity(),
            _ => UnitQuaternion::from_euler_angles(0.0, std::f32::consts::FRAC_PI_2 * (r[1] > 0.0) as u8 as f32, 0.0),
        };
        let pa = Isometry::from_parts(Vector3::zeros().into(), rot(ra));
        let pb = Isometry::from_parts(Vector3::from(t).into(), rot(rb));
        let (ca, cb) = (Cuboid::new(Vector3::from(ha).to_parry()), Cuboid::new(Vector3::from(hb).to_parry()));
        let (ppa, ppb) = (pa.to_parry(), pb.to_parry());
        let d = parry3d::query::distance(&ppa, &ca, &ppb, &cb).unwrap().distance;
        prop_assume!(d == 0.0 || d > 1e-3);
        let box_of = |h: [f32; 3]| Aabb::new(Point3::from(-Vector3::from(h)), Point3::from(Vector3::from(h)));
        let ours = Obb::from_aabb(&box_of(ha), &pa).intersects(&Obb::from_aabb(&box_of(hb), &pb));
        let theirs = parry3d::query::intersection_test(&ppa, &ca, &ppb, &cb).unwrap().intersecting;
        prop_assert_eq!(ours, theirs);
    }
}

/// A closed, tessellated box: `n` × `n` quads a face, 12 n² triangles, wound outward.
fn tessellated_box(half: Vector3<f32>, n: u32) -> TriangleMesh {
    let mut m = TriangleMesh::default();
    for axis in 0..3 {
        for sign in [-1.0f32, 1.0] {
            let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
            let base = m.positions.len() as u32;
            for j in 0..=n {
                for i in 0..=n {
                    let mut p = Vector3::zeros();
                    p[axis] = sign * half[axis];
                    p[u] = (i as f32 / n as f32 * 2.0 - 1.0) * half[u];
                    p[v] = (j as f32 / n as f32 * 2.0 - 1.0) * half[v];
                    m.positions.push(Point3::from(p));
                }
            }
            for j in 0..n {
                for i in 0..n {
                    let a = base + j * (n + 1) + i;
                    let (b, c, d) = (a + 1, a + n + 1, a + n + 2);
                    if sign > 0.0 {
                        m.triangles.extend([[a, b, d], [a, d, c]]);
                    } else {
                        m.triangles.extend([[a, d, b], [a, c, d]]);
                    }
                }
            }
        }
    }
    m
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// The multi-pass test finds exactly the brute force's pairs, and in parallel the same.
    #[test]
    fn multi_pass_equals_all_pairs(t in proptest::array::uniform3(-1.6f32..1.6), r in proptest::array::uniform3(-3.2f32..3.2)) {
        let a = MeshCollider::new(&tessellated_box(Vector3::new(1.0, 0.6, 0.8), 5)).unwrap();
        let b = MeshCollider::new(&tessellated_box(Vector3::new(0.7, 0.9, 0.5), 4)).unwrap();
        let pa = Isometry::identity();
        let pb = Isometry::from_parts(Vector3::from(t).into(), UnitQuaternion::from_euler_angles(r[0], r[1], r[2]));
        let (fast, stats) = intersecting_pairs(&a, &pa, &b, &pb, &MeshMeshOptions { parallel_threshold: usize::MAX });
        let brute = intersecting_pairs_brute_force(&a, &pa, &b, &pb);
        prop_assert_eq!(&fast, &brute);
        prop_assert!(stats.triangle_pairs <= a.triangle_count() * b.triangle_count());
        let (parallel, _) = intersecting_pairs(&a, &pa, &b, &pb, &MeshMeshOptions { parallel_threshold: 0 });
        prop_assert_eq!(&parallel, &brute);
        prop_assert_eq!(meshes_intersect(&a, &pa, &b, &pb), !brute.is_empty());
    }
}

#[test]
fn hit_data_points_and_normals_face_each_other() {
    let a = MeshCollider::new(&tessellated_box(Vector3::new(1.0, 1.0, 1.0), 4)).unwrap();
    let b = MeshCollider::new(&tessellated_box(Vector3::new(1.0, 1.0, 1.0), 4)).unwrap();
    // b overlaps a's +x face by 0.1.
    let (pa, pb) = (Isometry::identity(), Isometry::translation(1.9, 0.05, -0.03));
    let hit = collide(&a, &pa, &b, &pb, &MeshMeshOptions::default()).unwrap().unwrap();
    // The article's mean normal: dominated by the overlapping faces (the sides' crossing
    // triangles pull it off axis).
    assert!(
        hit.a.normal.x > 0.7 && hit.a.normal.x.abs() > hit.a.normal.y.abs().max(hit.a.normal.z.abs()),
        "{hit:?}"
    );
    assert!(hit.b.normal.x < -0.7, "{hit:?}");
    assert!(hit.a.point.x > 0.8 && hit.b.point.x < 1.1);
    // Far apart: no hit, and the spheres reject it.
    let far = Isometry::translation(10.0, 0.0, 0.0);
    assert!(collide(&a, &pa, &b, &far, &MeshMeshOptions::default()).unwrap().is_none());
    let (_, stats) = intersecting_pairs(&a, &pa, &b, &far, &MeshMeshOptions::default());
    assert!(!stats.spheres_overlap && stats.triangle_pairs == 0);
    // A NaN pose is an error.
    assert_eq!(
        collide(&a, &pa, &b, &Isometry::translation(f32::NAN, 0.0, 0.0), &MeshMeshOptions::default()),
        Err(voxterra_narrowphase::NarrowphaseError::NonFinitePose)
    );
}

fn body(mass: f32, center: Point3<f32>, linvel: Vector3<f32>) -> RigidBody {
    let i = mass * 2.0 / 5.0; // a unit-radius ball's inertia
    RigidBody { mass, inv_inertia: Matrix3::identity() / i, center, linvel, angvel: Vector3::zeros() }
}

#[test]
fn impulses_conserve_momentum_and_never_add_energy() {
    let a_mesh = MeshCollider::new(&tessellated_box(Vector3::new(1.0, 1.0, 1.0), 2)).unwrap();
    let (pa, pb) = (Isometry::identity(), Isometry::translation(1.95, 0.3, 0.2));
    let hit = collide(&a_mesh, &pa, &a_mesh, &pb, &MeshMeshOptions::default()).unwrap().unwrap();
    for e in [0.0f32, 0.5, 1.0] {
        let mut a = body(2.0, Point3::origin(), Vector3::new(3.0, 0.5, 0.0));
        let mut b = body(5.0, Point3::new(1.95, 0.3, 0.2), Vector3::new(-1.0, 0.0, 0.2));
        let p0 = a.linvel * a.mass + b.linvel * b.mass;
        let energy = |x: &RigidBody| {
            0.5 * x.mass * x.linvel.norm_squared()
                + 0.5 * x.angvel.dot(&(x.inv_inertia.try_inverse().unwrap() * x.angvel))
        };
        let e0 = energy(&a) + energy(&b);
        let j = apply_impulse(&mut a, &mut b, &hit, e);
        assert!(j > 0.0);
        let p1 = a.linvel * a.mass + b.linvel * b.mass;
        assert!((p1 - p0).norm() < 1e-4, "momentum {p0} -> {p1}");
        assert!(energy(&a) + energy(&b) <= e0 + 1e-4);
        // Afterwards they separate (or rest, plastic) along the normal at the contact.
        let n = hit.b.normal.into_inner();
        let c = voxterra_core::nalgebra::center(&hit.a.point, &hit.b.point);
        let va = a.linvel + a.angvel.cross(&(c - a.center));
        let vb = b.linvel + b.angvel.cross(&(c - b.center));
        assert!((va - vb).dot(&n) >= -1e-4);
        // A second impulse does nothing: they no longer approach.
        assert!(apply_impulse(&mut a, &mut b, &hit, e) < 1e-3);
    }
    // A static body takes nothing.
    let mut ground = RigidBody {
        mass: f32::INFINITY,
        inv_inertia: Matrix3::zeros(),
        ..body(1.0, Point3::new(1.95, 0.3, 0.2), Vector3::zeros())
    };
    let mut a = body(2.0, Point3::origin(), Vector3::new(3.0, 0.0, 0.0));
    assert!(apply_impulse(&mut a, &mut ground, &hit, 1.0) > 0.0);
    assert_eq!(ground.linvel, Vector3::zeros());
    assert_eq!(ground.angvel, Vector3::zeros());
    let c = voxterra_core::nalgebra::center(&hit.a.point, &hit.b.point);
    let va = a.linvel + a.angvel.cross(&(c - a.center));
    assert!(va.dot(&hit.b.normal) > 0.0, "a bounces off the static body");
}
