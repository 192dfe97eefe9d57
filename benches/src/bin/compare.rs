//! `compare SUITE [--quick] [--json]`: voxterra and its peer, side by side in one process.

use clap::Parser;
use voxterra_benches::{
    bit_broadphase_suite, codec_suite, detach_suite, dynamic_tree_suite, kdtree_suite, lod_suite,
    mesher_suite, narrowphase_suite, replication_suite, store_suite, terrain_suite,
};

const SUITES: &[&str] = &[
    "store",
    "codec",
    "bit-broadphase",
    "kdtree",
    "mesher",
    "dynamic-aabb-tree",
    "narrowphase",
    "terrain",
    "lod",
    "detach",
    "replication",
];

/// Runs a benchmark suite for voxterra and its named peer, interleaved, and prints medians and ratios.
#[derive(Parser, Debug)]
#[command(name = "compare")]
struct Args {
    /// The suite to run: store, codec, bit-broadphase, kdtree, mesher, dynamic-aabb-tree, narrowphase, terrain, lod, detach, replication; or all of them, in that order.
    suite: String,
    /// Smaller world and fewer repetitions: a smoke run.
    #[arg(long)]
    quick: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if cfg!(debug_assertions) {
        eprintln!("warning: compare was built without optimizations; run it with --release for real figures");
    }
    let names: Vec<&str> = if args.suite == "all" { SUITES.to_vec() } else { vec![args.suite.as_str()] };
    let mut reports = Vec::new();
    for name in names {
        let Some(report) = run(name, args.quick) else {
            anyhow::bail!("unknown suite {name:?}; suites: {}, or all", SUITES.join(", "))
        };
        if !args.json {
            print!("{}", report.to_table());
        }
        reports.push(report);
    }
    if args.json {
        match reports.as_slice() {
            [one] => println!("{}", serde_json::to_string_pretty(one)?),
            all => println!("{}", serde_json::to_string_pretty(all)?),
        }
    }
    Ok(())
}

/// Runs suite `name`; `None` for a name no suite has.
fn run(name: &str, quick: bool) -> Option<voxterra_benches::harness::Report> {
    Some(match name {
        "store" => store_suite::run(quick),
        "codec" => codec_suite::run(quick),
        "bit-broadphase" => bit_broadphase_suite::run(quick),
        "kdtree" => kdtree_suite::run(quick),
        "mesher" => mesher_suite::run(quick),
        "dynamic-aabb-tree" => dynamic_tree_suite::run(quick),
        "narrowphase" => narrowphase_suite::run(quick),
        "terrain" => terrain_suite::run(quick),
        "lod" => lod_suite::run(quick),
        "detach" => detach_suite::run(quick),
        "replication" => replication_suite::run(quick),
        _ => return None,
    })
}
