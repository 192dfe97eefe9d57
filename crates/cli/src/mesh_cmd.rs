//! `voxterra mesh`: mesh a world (a file, or generated from gen's flags) chunk by chunk in parallel
//! and write it as OBJ or PLY with material colors.

use crate::export::{Format, write_obj, write_ply};
use crate::gen_cmd::progress_bar;
use crate::source::WorldSource;
use anyhow::{Context, bail};

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;
use voxterra::AtomicFile;
use voxterra::mesher::{Mesher, RenderMesh, ShapeMode, Surface};

/// Vertex placement, as on the command line.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub(crate) enum Shape {
    /// By each material's smooth or sharp flag.
    ByMaterial,
    /// Every surface smooth.
    Smooth,
    /// Every surface sharp.
    Sharp,
}

/// Arguments of `voxterra mesh`.
#[derive(clap::Args, Debug)]
pub(crate) struct MeshArgs {
    #[command(flatten)]
    source: WorldSource,
    /// The mesh file to write (atomically). Its extension picks the format unless --format does.
    #[arg(long)]
    out: PathBuf,
    /// obj or ply.
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Vertex placement.
    #[arg(long, value_enum, default_value = "by-material")]
    shape: Shape,
    /// Mesh the water surface instead of the solid terrain.
    #[arg(long)]
    water: bool,
    /// Worker threads (default: all cores; at most 256). The mesh is the same for any count.
    #[arg(long, value_parser = crate::limits::parse_threads)]
    threads: Option<usize>,
    /// Print the summary as one JSON object on stdout (no progress bar).
    #[arg(long)]
    json: bool,
    /// Write the levels-of-detail clipmap around this viewer (x,y,z in voxels) instead of full
    /// resolution: nodes that grow with distance, meeting without cracks.
    #[arg(long, value_parser = crate::render_cmd::parse_point, allow_hyphen_values = true, value_name = "X,Y,Z")]
    lod_from: Option<[f32; 3]>,
}

#[derive(serde::Serialize, Debug)]
struct Summary {
    file: String,
    format: String,
    chunks: usize,
    vertices: usize,
    triangles: usize,
    mesh_seconds: f64,
    write_seconds: f64,
    bytes: u64,
}

pub(crate) fn run(args: &MeshArgs) -> anyhow::Result<()> {
    crate::limits::check_out(&args.out)?;
    let format = match args.format.or_else(|| Format::from_extension(&args.out)) {
        Some(f) => f,
        None => bail!("cannot tell the format from {:?}: give --format obj or --format ply", args.out),
    };
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(n) = args.threads {
        builder = builder.num_threads(n);
    }
    let pool = builder.build().context("starting the worker threads")?;

    // A clipmap pages a lazily generated database's world in as it draws; full resolution reads
    // the whole world.
    let mut terrain = match args.lod_from {
        Some(_) => pool.install(|| args.source.terrain_paged(args.json))?,
        None => pool.install(|| args.source.terrain(args.json))?,
    };
    let table = terrain.materials().clone();

    let mode = match args.shape {
        Shape::ByMaterial => ShapeMode::ByMaterial,
        Shape::Smooth => ShapeMode::Smooth,
        Shape::Sharp => ShapeMode::Sharp,
    };
    let surface = if args.water { Surface::Liquid } else { Surface::Solid };
    let mesher = Mesher::new(&table).with_surface(surface).with_shape_mode(mode);
    let start = Instant::now();
    let (chunks, meshes) = match args.lod_from {
        Some(p) => {
            // The clipmap's nodes, meshed in parallel, in key order.
            let (meshes, _, paging) =
                pool.install(|| crate::lod_render::lod_meshes(&mut terrain, &mesher, p.into(), args.json))?;
            if let (Some(p), false) = (paging, args.json) {
                println!("{}", p.line());
            }
            (meshes.len(), meshes.into_iter().map(|(_, m)| m).collect::<Vec<_>>())
        }
        None => {
            let keys = terrain.render_chunks();
            let bar = progress_bar(keys.len() as u64, "meshing   ", "chunks", args.json)?;
            // In key order whatever the thread count: the file is the same for any --threads.
            // Batches keep the bar moving.
            let mut meshes: Vec<RenderMesh> = Vec::with_capacity(keys.len());
            for batch in keys.chunks(256) {
                let made = pool.install(|| terrain.render_meshes_of(&mesher, batch))?;
                meshes.extend(made.into_iter().map(|(_, m)| m));
                bar.inc(batch.len() as u64);
            }
            bar.finish_and_clear();
            (keys.len(), meshes)
        }
    };
    let mesh_seconds = start.elapsed().as_secs_f64();

    let start = Instant::now();
    let mut file =
        AtomicFile::create(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    {
        let mut w = BufWriter::with_capacity(1 << 20, &mut file);
        match format {
            Format::Obj => write_obj(&mut w, &meshes, &table),
            Format::Ply => write_ply(&mut w, &meshes, &table),
        }
        .and_then(|()| w.flush())
        .with_context(|| format!("writing {}", args.out.display()))?;
    }
    file.commit().with_context(|| format!("saving {}", args.out.display()))?;
    let summary = Summary {
        file: args.out.display().to_string(),
        format: format!("{format:?}").to_lowercase(),
        chunks,
        vertices: meshes.iter().map(|m| m.positions.len()).sum(),
        triangles: meshes.iter().map(|m| m.indices.len()).sum(),
        mesh_seconds,
        write_seconds: start.elapsed().as_secs_f64(),
        bytes: std::fs::metadata(&args.out).map(|m| m.len()).unwrap_or(0),
    };
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        println!(
            "meshed     {} chunks: {} triangles, {} vertices in {:.2} s",
            summary.chunks, summary.triangles, summary.vertices, summary.mesh_seconds
        );
        println!(
            "wrote      {} ({}, {:.1} MiB) in {:.2} s",
            summary.file,
            summary.format,
            summary.bytes as f64 / (1024.0 * 1024.0),
            summary.write_seconds
        );
    }
    Ok(())
}
