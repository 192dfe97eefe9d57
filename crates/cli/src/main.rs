//! `voxterra`: the command-line face of voxterra.
//!
//! - `voxterra gen`: make a procedural world, report its size and memory, optionally save it.
//! - `voxterra fly`: a viewer flying across a paged world (larger than memory): frame times and
//!   peak memory.
//! - `voxterra info FILE`: what a terrain file holds.
//! - `voxterra mesh`: mesh a terrain file or a generated world and write OBJ or PLY.
//! - `voxterra demo`: bodies on live-edited terrain through rapier, optionally beside per-chunk
//!   TriMesh colliders, with a table and a picture.
//! - `voxterra render`: ray cast a terrain file or a generated world into a PNG; `--lod` draws it
//!   through levels of detail around the eye.
//! - `voxterra serve` / `voxterra join`: a server streaming a world to clients over TCP, and a
//!   client that joins, moves, edits and checks what it holds against the server.
//! - `voxterra import` / `export` / `verify` / `edit-soak`: worlds in a chunk database (redb),
//!   every edit durable before it is acknowledged.
//! - `voxterra serve-sim`: a replication server with live edits and three simulated clients in one
//!   process: bytes per tick, time to full detail, a hash check against the server.

mod db_cmd;
mod demo;
mod export;
mod fly;
mod gen_cmd;
mod info_cmd;
mod limits;
mod loadtest;
mod lod_render;
mod mesh_cmd;
mod net_cmd;
mod render;
mod render_cmd;
mod serve_sim;
mod source;

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
    /// Bodies dropped on a live-edited world through rapier: frame times, contacts, fall-throughs,
    /// ghost bumps, a picture; `--baseline trimesh` runs today's TriMesh colliders beside it,
    /// `--baseline voxels` parry's voxels collider.
    Demo(demo::DemoArgs),
    /// Generate a procedural world in memory and print a summary.
    Gen(gen_cmd::GenArgs),
    /// Fly a viewer across a paged world (a database, or generated as visited), paging ahead,
    /// collision ready and levels of detail current each frame: frame times and peak memory.
    Fly(fly::FlyArgs),
    /// Describe a terrain file or a chunk database: size, chunks, compression ratio, voxels per
    /// material (a database: its last durable edit's sequence).
    Info(info_cmd::InfoArgs),
    /// Copy a terrain file into a new chunk database.
    Import(db_cmd::ImportArgs),
    /// Write a chunk database's world as a terrain file.
    Export(db_cmd::ExportArgs),
    /// Check a terrain file or a chunk database: every checksum, every chunk decoded, the terrain's
    /// invariants.
    Verify(db_cmd::VerifyArgs),
    /// Edit a world in a chunk database (created if absent), printing each edit's sequence once it
    /// is durable: the writer a crash test kills. `--check` rebuilds the world from its seed and
    /// the edits the database holds and fails unless they agree.
    EditSoak(db_cmd::EditSoakArgs),
    /// Mesh a world (a file, or generated) and write it as OBJ or PLY with material colors.
    Mesh(mesh_cmd::MeshArgs),
    /// Ray cast a world (a file, or generated) into a PNG from a camera given by flags.
    Render(render_cmd::RenderArgs),
    /// Serve a world (a file, or generated) to clients over TCP on loopback; the token comes from
    /// --token-file or VOXTERRA_TOKEN.
    Serve(net_cmd::ServeArgs),
    /// Join a server: move a viewer, edit, and check every region held against the server's.
    Join(net_cmd::JoinArgs),
    /// Look at a world in a browser: a server with the viewer's page (`cargo xtask web` builds
    /// it); prints the URL to open, the session's token in its fragment.
    View(net_cmd::ViewArgs),
    /// A server and many clients on loopback sockets in one process: tick times, time to full
    /// detail, bytes, edits, and every client's regions checked against the server's.
    Loadtest(loadtest::LoadtestArgs),
    /// A replication server with live edits and three simulated clients moving through the world:
    /// bytes per tick, time to full detail around each, a hash check against the server.
    ServeSim(serve_sim::ServeSimArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Demo(args) => demo::run(&args),
        Command::Gen(args) => gen_cmd::run(&args),
        Command::Fly(args) => fly::run(&args),
        Command::Info(args) => info_cmd::run(&args),
        Command::Import(args) => db_cmd::import(&args),
        Command::Export(args) => db_cmd::export(&args),
        Command::Verify(args) => db_cmd::verify(&args),
        Command::EditSoak(args) => db_cmd::edit_soak(&args),
        Command::Mesh(args) => mesh_cmd::run(&args),
        Command::Render(args) => render_cmd::run(&args),
        Command::ServeSim(args) => serve_sim::run(&args),
        Command::Serve(args) => net_cmd::serve_cmd(&args),
        Command::Join(args) => net_cmd::join_cmd(&args),
        Command::View(args) => net_cmd::view_cmd(&args),
        Command::Loadtest(args) => loadtest::loadtest_cmd(&args),
    }
}
