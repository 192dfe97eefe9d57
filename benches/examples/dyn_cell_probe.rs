//! One frame cell of the dynamic-tree suite alone (ours, parry, obvhs side by side, as the suite
//! runs it), for A/B runs:
//! `cargo run --release -p voxterra-benches --example dyn_cell_probe -- N SHARE [ROUNDS]`
//! (ROUNDS: replays, 3 as in the suite by default).

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n = a.get(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let share = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(0.01);
    let rounds = a.get(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    print!("{}", voxterra_benches::dynamic_tree_suite::run_cell(n, share, rounds).to_table());
}
