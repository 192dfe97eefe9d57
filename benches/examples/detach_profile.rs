//! The `detach` suite's searches for voxterra alone, in a loop: a target for `perf record`.
//! `cargo run --release -p voxterra-benches --example detach_profile -- [block|carves] [ROUNDS]`
//! (`block`: the floating block, the worst within the budget; `carves`: the typical carves)
fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let carves = args.next_if(|a| a == "carves" || a == "block").is_some_and(|a| a == "carves");
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(50);
    if carves {
        let (found, per) = voxterra_benches::detach_suite::profile_carves(rounds);
        println!("{found} pieces, {per:?} a search");
    } else {
        let (found, per) = voxterra_benches::detach_suite::profile_floating_block(rounds);
        println!("{found} voxels detached, {per:?} a search");
    }
}
