//! The dynamic-tree suite's query cases alone (ours, parry, obvhs side by side), for A/B runs:
//! `cargo run --release -p voxterra-benches --example dyn_query_probe -- [N]`.

fn main() {
    let n = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    print!("{}", voxterra_benches::dynamic_tree_suite::run_queries(false, n).to_table());
}
