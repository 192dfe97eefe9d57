//! The `lod` suite's clustered node for voxterra alone, in a loop: a target for `perf record`.
//! `cargo run --release -p voxterra-benches --example lod_profile -- [LEVEL] [ROUNDS]`
fn main() {
    let mut args = std::env::args().skip(1);
    let level: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let (tris, per_node) = voxterra_benches::lod_suite::profile_node(level, rounds);
    println!("level {level}: {tris} triangles, {per_node:?} a node");
}
