//! `voxterra`: the command-line face of voxterra.
//!
//! - `voxterra gen`: make a procedural world, report its size and memory, optionally save it.
//! - `voxterra info FILE`: what a world file holds.
//! - `voxterra mesh`: mesh a world file or a generated world and write OBJ or PLY.

mod export;
mod gen_cmd;
mod info_cmd;
mod mesh_cmd;

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
    /// Describe a world file: size, chunks, compression ratio, voxels per material.
    Info(info_cmd::InfoArgs),
    /// Mesh a world (a file, or generated) and write it as OBJ or PLY with material colors.
    Mesh(mesh_cmd::MeshArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Gen(args) => gen_cmd::run(&args),
        Command::Info(args) => info_cmd::run(&args),
        Command::Mesh(args) => mesh_cmd::run(&args),
    }
}
