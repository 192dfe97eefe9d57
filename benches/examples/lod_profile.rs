//! The `lod` suite's clustered node for voxterra alone, in a loop: a target for `perf record`.
//! `cargo run --release -p voxterra-benches --example lod_profile -- [LEVEL] [ROUNDS] [held]`
//! (`held`: from held chunk clusters, as a view keeps them; else from the voxels)
fn main() {
    let mut args = std::env::args().skip(1);
    let level: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let held = args.next().is_some_and(|a| a == "held");
    let (tris, per_node) = voxterra_benches::lod_suite::profile_node(level, rounds, held);
    println!("level {level}: {tris} triangles, {per_node:?} a node");
}
