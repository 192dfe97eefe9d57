//! Times closest-hit rays on the `kdtree` suite's 200k-triangle terrain (down and oblique; rays
//! that hit and rays that miss apart), for the kD tree and parry, with the suite's rays: a probe for
//! ray traversal work (run it under `perf`). With `BUILDS=k` it times k builds instead.
//!
//! `cargo run --release -p voxterra-benches --example kd_ray_probe` (`AABB=1`: box queries instead;
//! `CHUNK_BUILDS=k`: k rounds of builds of the suite's chunk meshes, best and median round and a
//! hash of the trees, then parry's `TriMesh` on them; `CHUNK_AABB=1`: box queries on them)
use voxterra_benches::kdtree_suite::{rays, terrain_grid};
use voxterra_benches::parry_adapter::ParryTriangles;
use voxterra_benches::world::Rng;
use voxterra_core::{Culling, TriangleIndex, TriangleMesh};
use voxterra_kdtree::KdTree;
use voxterra_worldgen::Terrain;

fn main() {
    let terrain = Terrain::new(1, 128);
    if std::env::var("CHUNK_AABB").is_ok() {
        // The suite's chunk-mesh box queries: 16 boxes on each of 400 chunks.
        let chunks = voxterra_benches::kdtree_suite::chunk_meshes(&terrain, 400);
        let trees: Vec<KdTree> =
            chunks.iter().map(|c| KdTree::build(c).unwrap_or_else(|e| panic!("{e}"))).collect();
        let parry: Vec<ParryTriangles> = chunks.iter().map(ParryTriangles::build).collect();
        let mut rng = Rng(9);
        let boxes: Vec<Vec<_>> =
            chunks.iter().map(|c| voxterra_benches::kdtree_suite::boxes(&mut rng, c, 16, 2.5)).collect();
        let queries = (16 * chunks.len()) as f64;
        for side in ["kd", "parry"] {
            let mut best = f64::MAX;
            let mut found = 0;
            for _ in 0..20 {
                let t = std::time::Instant::now();
                found = 0;
                for (i, c) in chunks.iter().enumerate() {
                    let view = trees[i].with(c);
                    let idx: &dyn TriangleIndex = if side == "kd" { &view } else { &parry[i] };
                    for b in &boxes[i] {
                        idx.triangles_in_aabb(b, &mut |_| found += 1);
                    }
                }
                best = best.min(t.elapsed().as_nanos() as f64 / queries);
            }
            println!("chunk aabb {side:6} {best:7.0} ns/query  {found} triangles");
        }
        return;
    }
    if let Some(k) = std::env::var("CHUNK_BUILDS").ok().and_then(|v| v.parse::<u32>().ok()) {
        // The suite's 400 chunk meshes, k times.
        let chunks = voxterra_benches::kdtree_suite::chunk_meshes(&terrain, 400);
        // Per round of 400 builds; the fastest and the median round (the machines are noisy).
        let mut rounds: Vec<f64> = (0..k)
            .map(|_| {
                let t = std::time::Instant::now();
                let built = chunks.iter().filter(|c| std::hint::black_box(KdTree::build(*c)).is_ok()).count();
                assert_eq!(built, chunks.len());
                t.elapsed().as_secs_f64() * 1e6 / chunks.len() as f64
            })
            .collect();
        rounds.sort_by(f64::total_cmp);
        let per = format!("best {:.1}, median {:.1}", rounds[0], rounds[rounds.len() / 2]);
        // A hash of the trees, so a build change can show it left them identical.
        let mut h = std::hash::DefaultHasher::new();
        let mut nodes = 0;
        for c in &chunks {
            nodes += KdTree::build(c).map_or(0, |t| t.stats().nodes);
            std::hash::Hash::hash(&format!("{:?}", KdTree::build(c).map_err(|e| e.to_string())), &mut h);
        }
        let hash = std::hash::Hasher::finish(&h);
        println!("{k} × 400 chunk builds: {per} µs each ({nodes} nodes, trees {hash:016x})");
        // parry's TriMesh on the same meshes, a quarter as many rounds.
        let mut rounds: Vec<f64> = (0..k.div_ceil(4))
            .map(|_| {
                let t = std::time::Instant::now();
                let built = chunks
                    .iter()
                    .filter(|c| std::hint::black_box(ParryTriangles::build(*c)).mesh.num_triangles() > 0)
                    .count();
                assert_eq!(built, chunks.len());
                t.elapsed().as_secs_f64() * 1e6 / chunks.len() as f64
            })
            .collect();
        rounds.sort_by(f64::total_cmp);
        println!("parry: best {:.1}, median {:.1} µs each", rounds[0], rounds[rounds.len() / 2]);
        return;
    }
    let (positions, triangles) = terrain_grid(&terrain, 317, 40, 40);
    let mesh = TriangleMesh { positions, triangles };
    let t = std::time::Instant::now();
    let tree = KdTree::build(&mesh).unwrap_or_else(|e| panic!("{e}"));
    println!("build {:.1} ms, {:?}", t.elapsed().as_secs_f64() * 1e3, tree.stats());
    if let Some(k) = std::env::var("BUILDS").ok().and_then(|v| v.parse::<u32>().ok()) {
        let t = std::time::Instant::now();
        let nodes: usize = (0..k).map(|_| KdTree::build(&mesh).map_or(0, |t| t.stats().nodes)).sum();
        println!("{k} builds: {:.1} ms each ({nodes} nodes)", t.elapsed().as_secs_f64() * 1e3 / k as f64);
        let t = std::time::Instant::now();
        let tris: usize = (0..k.div_ceil(4)).map(|_| ParryTriangles::build(&mesh).mesh.num_triangles()).sum();
        println!("parry: {:.1} ms each ({tris})", t.elapsed().as_secs_f64() * 1e3 / k.div_ceil(4) as f64);
        return;
    }
    let parry = ParryTriangles::build(&mesh);
    let view = tree.with(&mesh);
    if std::env::var("AABB").is_ok() {
        // Character-sized boxes at random surface points, as the suite's.
        let mut rng = Rng(7);
        let boxes = voxterra_benches::kdtree_suite::boxes(&mut rng, &mesh, 25_000, 2.5);
        for (side, idx) in [("kd", &view as &dyn TriangleIndex), ("parry", &parry as &dyn TriangleIndex)] {
            let mut best = f64::MAX;
            let mut found = 0;
            for _ in 0..5 {
                let t = std::time::Instant::now();
                found = 0;
                for b in &boxes {
                    idx.triangles_in_aabb(b, &mut |_| found += 1);
                }
                best = best.min(t.elapsed().as_nanos() as f64 / boxes.len() as f64);
            }
            println!("aabb {side:6} {best:7.0} ns/query  {found} triangles");
        }
        return;
    }
    let mut rng = Rng(5);
    for (name, oblique) in [("down", false), ("oblique", true)] {
        let all = rays(&mut rng, tree.bounds(), 100_000, oblique);
        for want in [true, false] {
            let set: Vec<_> = all
                .iter()
                .copied()
                .filter(|r| view.cast_ray(r, f32::MAX, Culling::None).is_some() == want)
                .collect();
            if set.is_empty() {
                continue;
            }
            println!("{name}, rays that {}: {}", if want { "hit" } else { "miss" }, set.len());
            for (side, idx) in [("kd", &view as &dyn TriangleIndex), ("parry", &parry as &dyn TriangleIndex)]
            {
                let mut best = f64::MAX;
                let mut hits = 0;
                for _ in 0..5 {
                    let t = std::time::Instant::now();
                    hits = set.iter().filter(|r| idx.cast_ray(r, f32::MAX, Culling::None).is_some()).count();
                    best = best.min(t.elapsed().as_nanos() as f64 / set.len() as f64);
                }
                println!("{name:8} {side:6} {best:7.0} ns/ray  {hits} hits");
            }
        }
    }
}
