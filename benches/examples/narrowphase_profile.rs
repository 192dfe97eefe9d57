//! The `narrowphase` suite's resting-contact case (with `warm`, its sliding case keeping contact
//! candidates; with `casts`, its shape-cast case) for voxterra alone, in a loop: a target for
//! `perf record` or callgrind.
//! `cargo run --release -p voxterra-benches --example narrowphase_profile -- [contacts|warm|casts] [ROUNDS]`
fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let what = args.next_if(|a| ["casts", "contacts", "warm"].contains(&a.as_str()));
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    if what.as_deref() == Some("warm") {
        println!("{} contact points", voxterra_benches::narrowphase_suite::profile_warm(rounds));
    } else if what.as_deref() == Some("casts") {
        let hits = voxterra_benches::narrowphase_suite::profile_casts(rounds);
        println!("{hits} hits");
    } else {
        let points = voxterra_benches::narrowphase_suite::profile_contacts(rounds);
        println!("{points} contact points");
    }
}
