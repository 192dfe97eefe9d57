//! How many of the benchmark meshes' quads are planar: the case for quads as first-class kD-tree
//! primitives (issue 5's stretch goal, the article's future work), which only planar quad pairs
//! can use. `cargo run --release -p voxterra-benches --example kd_quad_share`
//!
//! A quad is a pair of triangles sharing an edge: the kd suite's terrain grid emits each grid
//! cell as two consecutive triangles, and the mesher each crossing edge's quad as two. A quad
//! counts as planar when its fourth vertex lies within `tol` of the first triangle's plane.

use voxterra_benches::kdtree_suite::terrain_grid;
use voxterra_benches::world::bench_world;
use voxterra_core::nalgebra::Point3;
use voxterra_core::{MaterialTable, Region};
use voxterra_mesher::{MeshWorkspace, Mesher, RenderMesh, ShapeMode};
use voxterra_worldgen::Terrain;

/// Counts of consecutive triangle pairs: (sharing an edge, planar within each tolerance).
fn planar_pairs(p: &[Point3<f32>], t: &[[u32; 3]], tols: &[f32]) -> (usize, Vec<usize>) {
    let mut quads = 0;
    let mut planar = vec![0; tols.len()];
    for q in t.chunks_exact(2) {
        let [a, b, c] = q[0];
        let shared = q[1].iter().filter(|v| q[0].contains(v)).count();
        let Some(&d) = q[1].iter().find(|v| !q[0].contains(v)) else { continue };
        if shared != 2 {
            continue;
        }
        quads += 1;
        let (pa, pb, pc, pd) = (p[a as usize], p[b as usize], p[c as usize], p[d as usize]);
        let n = (pb - pa).cross(&(pc - pa));
        let dist = (n.dot(&(pd - pa)) / n.norm()).abs();
        for (k, &tol) in tols.iter().enumerate() {
            planar[k] += usize::from(dist <= tol);
        }
    }
    (quads, planar)
}

fn main() {
    let tols = [0.0, 1e-3, 1e-2];
    let terrain = Terrain::new(1, 128);
    let (p, t) = terrain_grid(&terrain, 317, 40, 40);
    let (quads, planar) = planar_pairs(&p, &t, &tols);
    println!(
        "kd suite terrain grid: {} triangles, {quads} quads; planar within {tols:?} m: {planar:?}",
        t.len()
    );

    // The mesher's smooth surface over the quick benchmark world, chunk by chunk.
    let world = bench_world(true);
    let table = MaterialTable::default();
    let mesher = Mesher::new(&table).with_shape_mode(ShapeMode::Smooth);
    let (mut ws, mut out) = (MeshWorkspace::new(), RenderMesh::default());
    let region = world.params.region().expect("valid world");
    let (first, last) = region.chunk_range(5).expect("non-empty world");
    let (mut tris, mut quads, mut planar) = (0, 0, vec![0; tols.len()]);
    for y in first.y..=last.y {
        for z in first.z..=last.z {
            for x in first.x..=last.x {
                let r = Region::chunk(Point3::new(x, y, z), 5).expect("in range");
                mesher.mesh(&world.store, &r, &mut ws, &mut out).expect("chunks are small");
                tris += out.indices.len();
                let (q, p) = planar_pairs(&out.positions, &out.indices, &tols);
                quads += q;
                planar.iter_mut().zip(p).for_each(|(a, b)| *a += b);
            }
        }
    }
    println!(
        "mesher, smooth, quick world: {tris} triangles, {quads} quads; planar within {tols:?} m: {planar:?}"
    );
}
