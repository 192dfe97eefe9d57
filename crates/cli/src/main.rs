//! `voxterra`: the command-line face of voxterra.
//!
//! - `voxterra gen`: make a procedural world and report its size and memory.

mod gen_cmd;

use clap::{Parser, Subcommand};

/// Smooth voxel terrain: generate, inspect, mesh and simulate voxel worlds.
#[derive(Parser, Debug)]
#[command(name = "voxterra", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Generate a procedural world in memory and print a summary.
    Gen(gen_cmd::GenArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Gen(args) => gen_cmd::run(&args),
    }
}
