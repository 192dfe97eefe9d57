//! Mesh–mesh intersection tests: voxterra's against all pairs and parry's TriMesh–TriMesh.

use crate::harness::{Budget, CaseResult, Metric, Report, compare_prechecked};
use parry3d::shape::TriMesh;
use voxterra_core::TriangleMesh;
use voxterra_core::nalgebra::{Isometry3, Point3, Vector3};
use voxterra_narrowphase::convert::ToParry;
use voxterra_narrowphase::mesh_mesh::{intersecting_pairs, intersecting_pairs_brute_force};
use voxterra_narrowphase::{MeshCollider, MeshMeshOptions};

/// A closed UV sphere of about `2 · n²` triangles.
pub(crate) fn sphere(radius: f32, n: u32) -> TriangleMesh {
    let mut m = TriangleMesh::default();
    for j in 0..=n {
        let theta = std::f32::consts::PI * j as f32 / n as f32;
        for i in 0..n {
            let phi = std::f32::consts::TAU * i as f32 / n as f32;
            m.positions
                .push(Point3::new(theta.sin() * phi.cos(), theta.cos(), theta.sin() * phi.sin()) * radius);
        }
    }
    for j in 0..n {
        for i in 0..n {
            let (a, b) = (j * n + i, j * n + (i + 1) % n);
            let (c, d) = (a + n, b + n);
            m.triangles.extend([[a, b, d], [a, d, c]]);
        }
    }
    m
}

pub(crate) fn mesh_mesh_cases(report: &mut Report, quick: bool) {
    let n = if quick { 30 } else { 50 };
    let mesh_a = sphere(1.0, n);
    let mesh_b = sphere(0.8, n);
    let (a, b) = (MeshCollider::new(&mesh_a).expect("finite"), MeshCollider::new(&mesh_b).expect("finite"));
    let pa = Isometry3::identity();
    let budget = Budget { reps: 3 };
    let opts = MeshMeshOptions::default();
    for (what, pb) in [
        ("in contact", Isometry3::new(Vector3::new(1.7, 0.1, 0.05), Vector3::new(0.3, 0.2, 0.1))),
        ("near miss", Isometry3::new(Vector3::new(1.81, 0.0, 0.0), Vector3::new(0.3, 0.2, 0.1))),
    ] {
        let fast = intersecting_pairs(&a, &pa, &b, &pb, &opts).0;
        let brute = intersecting_pairs_brute_force(&a, &pa, &b, &pb);
        assert_eq!(fast, brute, "mesh-mesh {what}: multi-pass and brute force disagree");
        report.cases.push(compare_prechecked(
            budget,
            &format!("mesh-mesh {}k tris, {what}", (a.triangle_count() + 500) / 1000),
            "test",
            1,
            "Möller, all pairs",
            "≥ 500× the brute force",
            || intersecting_pairs(&a, &pa, &b, &pb, &opts).0.len(),
            || intersecting_pairs_brute_force(&a, &pa, &b, &pb).len(),
        ));
        // parry's TriMesh–TriMesh intersection test, where it supports the pair.
        let parry_mesh = |m: &TriangleMesh| {
            TriMesh::new(m.positions.iter().map(|p| p.to_parry()).collect(), m.triangles.clone())
                .expect("a mesh")
        };
        let (ta, tb) = (parry_mesh(&mesh_a), parry_mesh(&mesh_b));
        let (ppa, ppb) = (pa.to_parry(), pb.to_parry());
        match parry3d::query::intersection_test(&ppa, &ta, &ppb, &tb) {
            Ok(hit) => {
                assert_eq!(hit.intersecting, !brute.is_empty(), "parry's TriMesh test disagrees ({what})");
                report.cases.push(compare_prechecked(
                    Budget { reps: 7 },
                    &format!("mesh-mesh {what}, boolean"),
                    "test",
                    1,
                    "parry TriMesh-TriMesh",
                    "(beside)",
                    || voxterra_narrowphase::meshes_intersect(&a, &pa, &b, &pb),
                    || {
                        parry3d::query::intersection_test(&ppa, &ta, &ppb, &tb)
                            .expect("supported")
                            .intersecting
                    },
                ));
            }
            Err(_) => report.metrics.push(Metric {
                name: format!("parry TriMesh-TriMesh intersection test ({what})"),
                voxterra: 1.0,
                peer: 0.0,
                peer_name: "parry".into(),
                goal: "unsupported by parry 0.31's DefaultQueryDispatcher".into(),
            }),
        }
        // 2 threads against 1 on the triangle pairs (every candidate pair on the pool).
        let all_parallel = MeshMeshOptions { parallel_threshold: 0 };
        let pool = |k| rayon::ThreadPoolBuilder::new().num_threads(k).build().expect("a pool");
        let (one, two) = (pool(1), pool(2));
        let r: CaseResult = compare_prechecked(
            Budget { reps: 7 },
            &format!("mesh-mesh {what}, 2 threads"),
            "test",
            1,
            "1 thread",
            "(speed-up)",
            || two.install(|| intersecting_pairs(&a, &pa, &b, &pb, &all_parallel).0.len()),
            || one.install(|| intersecting_pairs(&a, &pa, &b, &pb, &all_parallel).0.len()),
        );
        report.cases.push(r);
        let (_, stats) = intersecting_pairs(&a, &pa, &b, &pb, &opts);
        report.metrics.push(Metric {
            name: format!("mesh-mesh {what}: triangle pairs tested"),
            voxterra: stats.triangle_pairs as f64,
            peer: (a.triangle_count() * b.triangle_count()) as f64,
            peer_name: "all pairs".into(),
            goal: format!("{} node pairs; {} intersecting", stats.node_pairs, fast.len()),
        });
    }
}
