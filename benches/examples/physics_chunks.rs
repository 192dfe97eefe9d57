//! Physics-mesh builds of surface chunks, one by one: the per-chunk cost behind an edit's
//! collision rebuild (the grown region's mesh, the chunk's triangles and edge flags taken from it,
//! kD tree), split into its parts; the chunk's plain mesh beside it.
//!
//! `cargo run --release -p voxterra-benches --example physics_chunks`

use std::time::Instant;
use voxterra_benches::world::bench_world;
use voxterra_core::{MaterialTable, PhysicsChunkKey};
use voxterra_kdtree::KdTree;
use voxterra_mesher::{MeshWorkspace, Mesher, PhysicsMesh};

fn main() {
    let world = bench_world(true);
    let region = world.params.region().expect("a valid world");
    let mesher = Mesher::new(&MaterialTable::default());
    let mut ws = MeshWorkspace::new();
    let mut mesh = PhysicsMesh::default();
    let keys: Vec<PhysicsChunkKey> = PhysicsChunkKey::range(&region)
        .expect("non-empty")
        .iter()
        .filter(|k| {
            mesher.mesh(&world.store, &k.region().expect("in range"), &mut ws, &mut mesh).expect("meshable");
            !mesh.triangles().is_empty()
        })
        .take(4000)
        .collect();
    let per_chunk = |f: &mut dyn FnMut(PhysicsChunkKey)| {
        let mut runs: Vec<f64> = (0..5)
            .map(|_| {
                let t = Instant::now();
                for &k in &keys {
                    f(k);
                }
                t.elapsed().as_secs_f64() * 1e6 / keys.len() as f64
            })
            .collect();
        runs.sort_by(f64::total_cmp);
        runs[2]
    };
    let plain = per_chunk(&mut |k| {
        mesher.mesh(&world.store, &k.region().expect("in range"), &mut ws, &mut mesh).expect("meshable");
    });
    let grown = per_chunk(&mut |k| {
        mesher
            .mesh(&world.store, &k.region().expect("in range").expanded(1), &mut ws, &mut mesh)
            .expect("meshable");
    });
    let physics = per_chunk(&mut |k| {
        mesher
            .mesh_physics(&world.store, &k.region().expect("in range"), &mut ws, &mut mesh)
            .expect("meshable");
    });
    let tree = per_chunk(&mut |k| {
        mesher.mesh(&world.store, &k.region().expect("in range"), &mut ws, &mut mesh).expect("meshable");
        std::hint::black_box(KdTree::build(&mesh).expect("finite"));
    });
    println!("{} surface chunks, µs a chunk (median of 5 passes):", keys.len());
    println!(
        "  plain mesh {plain:.1}, grown mesh {grown:.1}, mesh_physics {physics:.1} (own triangles and edge flags {:.1})",
        physics - grown
    );
    println!("  mesh + kD tree {tree:.1} (tree {:.1})", tree - plain);
}
