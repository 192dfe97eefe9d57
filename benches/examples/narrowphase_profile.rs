//! The `narrowphase` suite's resting-contact case for voxterra alone, in a loop: a target for
//! `perf record` or callgrind. `cargo run --release -p voxterra-benches --example narrowphase_profile -- [ROUNDS]`
fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let points = voxterra_benches::narrowphase_suite::profile_contacts(rounds);
    println!("{points} contact points");
}
