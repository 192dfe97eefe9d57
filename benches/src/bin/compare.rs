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
    /// The suite to run: store, codec, bit-broadphase, kdtree, mesher, dynamic-aabb-tree, narrowphase, terrain, lod, detach, replication.
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
    let report = match args.suite.as_str() {
        "store" => store_suite::run(args.quick),
        "codec" => codec_suite::run(args.quick),
        "bit-broadphase" => bit_broadphase_suite::run(args.quick),
        "kdtree" => kdtree_suite::run(args.quick),
        "mesher" => mesher_suite::run(args.quick),
        "dynamic-aabb-tree" => dynamic_tree_suite::run(args.quick),
        "narrowphase" => narrowphase_suite::run(args.quick),
        "terrain" => terrain_suite::run(args.quick),
        "lod" => lod_suite::run(args.quick),
        "detach" => detach_suite::run(args.quick),
        "replication" => replication_suite::run(args.quick),
        other => anyhow::bail!("unknown suite {other:?}; suites: {}", SUITES.join(", ")),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.to_table());
    }
    Ok(())
}
