//! The `terrain` suite's contacts, rays or edits for voxterra alone, in a loop: a target for `perf
//! record` or callgrind.
//! `cargo run --release -p voxterra-benches --example terrain_profile -- [contacts|rays|rays-parallel|edits|edits-alone] [ROUNDS]`
//! (`edits-alone`: the edits without rebuilding the chunks they touch)
fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let what =
        args.next_if(|a| ["rays", "rays-parallel", "contacts", "edits", "edits-alone"].contains(&a.as_str()));
    let rays = what.as_deref().is_some_and(|a| a.starts_with("rays"));
    let parallel = what.as_deref() == Some("rays-parallel");
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    if let Some(w @ ("edits" | "edits-alone")) = what.as_deref() {
        let (built, per_edit) = voxterra_benches::terrain_profile::profile_edits_with(rounds, w == "edits");
        println!("{built} chunks built, {per_edit:?} an edit");
    } else if rays {
        let (hits, per_ray) = voxterra_benches::terrain_profile::profile_rays(100_000, rounds, parallel);
        let threads = if parallel { rayon::current_num_threads() } else { 1 };
        println!("{hits} hits, {per_ray:?} a ray on {threads} threads");
    } else {
        println!("{} contact points", voxterra_benches::terrain_profile::profile_contacts(rounds));
    }
}
