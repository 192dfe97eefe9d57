//! The `terrain` suite's contacts or rays for voxterra alone, in a loop: a target for `perf
//! record` or callgrind.
//! `cargo run --release -p voxterra-benches --example terrain_profile -- [contacts|rays] [ROUNDS]`
fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let rays = args.next_if(|a| a == "rays" || a == "contacts").is_some_and(|a| a == "rays");
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    if rays {
        let (hits, per_ray) = voxterra_benches::terrain_suite::profile_rays(100_000, rounds);
        println!("{hits} hits, {per_ray:?} a ray on one thread");
    } else {
        println!("{} contact points", voxterra_benches::terrain_suite::profile_contacts(rounds));
    }
}
