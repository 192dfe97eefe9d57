//! The `detach` suite's floating-block search for voxterra alone, in a loop: a target for `perf
//! record`. `cargo run --release -p voxterra-benches --example detach_profile -- [ROUNDS]`
fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(50);
    let (found, per) = voxterra_benches::detach_suite::profile_floating_block(rounds);
    println!("{found} voxels detached, {per:?} a search");
}
