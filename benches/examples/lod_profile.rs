//! The `lod` suite's clustered node for voxterra alone, in a loop: a target for `perf record`.
//! `cargo run --release -p voxterra-benches --example lod_profile -- [LEVEL] [ROUNDS] [held]`
//! (`held`: from held chunk clusters, as a view keeps them; `chunks`: making the node's chunk
//! clusters; else from the voxels)
fn main() {
    let mut args = std::env::args().skip(1);
    let level: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let mode = args.next();
    if mode.as_deref() == Some("chunks") {
        let (chunks, per) = voxterra_benches::lod_suite::profile_chunk_clusters(level, rounds);
        println!("{chunks} chunks with surface, {per:?} a chunk's clusters");
        return;
    }
    let held = mode.is_some_and(|a| a == "held");
    let (tris, per_node) = voxterra_benches::lod_suite::profile_node(level, rounds, held);
    println!("level {level}: {tris} triangles, {per_node:?} a node");
}
