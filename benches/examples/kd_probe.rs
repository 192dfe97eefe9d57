//! Times AABB queries and rays on one chunk-sized terrain mesh, printing result sizes: a probe for
//! the kd-tree's per-query cost.
use voxterra_benches::parry_adapter::ParryTriangles;
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Aabb, Culling, Ray, TriangleIndex, TriangleMesh};
use voxterra_kdtree::KdTree;
use voxterra_worldgen::Terrain;

fn main() {
    let terrain = Terrain::new(1, 128);
    let n = 12u32;
    let mut mesh = TriangleMesh::default();
    for z in 0..=n {
        for x in 0..=n {
            mesh.positions.push(Point3::new(
                x as f32,
                terrain.column(x as i32 + 100, z as i32 + 100).height,
                z as f32,
            ));
        }
    }
    for z in 0..n {
        for x in 0..n {
            let i = z * (n + 1) + x;
            mesh.triangles.push([i, i + n + 1, i + 1]);
            mesh.triangles.push([i + 1, i + n + 1, i + n + 2]);
        }
    }
    let tree = KdTree::build(&mesh).unwrap_or_else(|e| panic!("{e}"));
    let parry = ParryTriangles::build(&mesh);
    println!("{:?}", tree.stats());
    let v = tree.with(&mesh);
    let boxes: Vec<Aabb> = mesh
        .positions
        .iter()
        .step_by(7)
        .map(|p| Aabb::new(p - Vector3::repeat(1.25), p + Vector3::repeat(1.25)))
        .collect();
    for (name, idx) in [("kd", &v as &dyn TriangleIndex), ("parry", &parry as &dyn TriangleIndex)] {
        let t = std::time::Instant::now();
        let mut found = 0;
        for _ in 0..2000 {
            for b in &boxes {
                idx.triangles_in_aabb(b, &mut |_| found += 1);
            }
        }
        let q = 2000 * boxes.len();
        println!(
            "{name}: aabb {:.0} ns/query, {:.1} triangles/query",
            t.elapsed().as_nanos() as f64 / q as f64,
            found as f64 / q as f64
        );
        let rays: Vec<Ray> = mesh
            .positions
            .iter()
            .map(|p| Ray::new(p + Vector3::new(0.3, 50.0, 0.4), Vector3::new(0.0, -1.0, 0.0)))
            .collect();
        let t = std::time::Instant::now();
        let mut hits = 0;
        for _ in 0..2000 {
            for r in &rays {
                hits += idx.cast_ray(r, f32::MAX, Culling::None).is_some() as usize;
            }
        }
        println!(
            "{name}: ray {:.0} ns/ray, {hits} hits",
            t.elapsed().as_nanos() as f64 / (2000 * rays.len()) as f64
        );
    }
}
