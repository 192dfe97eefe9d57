//! The `narrowphase` suite's resting-contact case (or, with `casts`, its shape-cast case) for
//! voxterra alone, in a loop: a target for `perf record` or callgrind.
//! `cargo run --release -p voxterra-benches --example narrowphase_profile -- [contacts|casts] [ROUNDS]`
fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let casts = args.next_if(|a| a == "casts" || a == "contacts").is_some_and(|a| a == "casts");
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    if casts {
        let hits = voxterra_benches::narrowphase_suite::profile_casts(rounds);
        println!("{hits} hits");
    } else {
        let points = voxterra_benches::narrowphase_suite::profile_contacts(rounds);
        println!("{points} contact points");
    }
}
