//! `voxterra gen`: generate a world and print voxels, chunks, memory and time.

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Instant;
use voxterra::store::VoxelStore;
use voxterra::worldgen::{GenParams, generate};

/// Arguments of `voxterra gen`.
#[derive(clap::Args, Debug)]
pub(crate) struct GenArgs {
    /// World size in voxels, X×Y×Z (Y is up), e.g. 512x128x512.
    #[arg(long, default_value = "512x128x512", value_parser = parse_size)]
    size: [u32; 3],
    /// Seed of every noise field.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads (default: all cores; at most 256). The world is the same for any count.
    #[arg(long, value_parser = crate::limits::parse_threads)]
    threads: Option<usize>,
    /// Print the summary as one JSON object on stdout (no progress bar).
    #[arg(long)]
    json: bool,
    /// Save the world to this file (atomically: the previous file survives any failure).
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Write the world into this new chunk database (redb; it must not exist).
    #[arg(long)]
    db: Option<std::path::PathBuf>,
    /// With --db: store only the generator's parameters, not the chunks. The world is made at
    /// once whatever its size; its chunks are generated when first used and stored once edited.
    #[arg(long, requires = "db", conflicts_with = "out")]
    lazy: bool,
}

/// The summary `gen` prints.
#[derive(serde::Serialize, Debug)]
struct Summary {
    seed: u64,
    size: [u32; 3],
    voxels: u64,
    non_empty_voxels: u64,
    chunks: usize,
    allocated_rows: usize,
    memory_bytes: usize,
    bytes_per_non_empty_voxel: f64,
    dense_bytes: u64,
    seconds: f64,
    threads: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    saved: Option<Saved>,
    /// What `--db` wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    db: Option<Saved>,
}

/// What `--out` wrote.
#[derive(serde::Serialize, Debug)]
struct Saved {
    file: String,
    bytes: u64,
    chunks: usize,
    seconds: f64,
    bytes_per_non_empty_voxel: f64,
}

pub(crate) fn parse_size(s: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = s.split(['x', 'X', ',']).collect();
    let nums: Result<Vec<u32>, _> = parts.iter().map(|p| p.trim().parse::<u32>()).collect();
    match nums {
        Ok(n) if n.len() == 3 && n.iter().all(|&v| v > 0) => Ok([n[0], n[1], n[2]]),
        _ => Err(format!("expected X×Y×Z with three positive integers, like 512x128x512; got {s:?}")),
    }
}

/// A progress bar on stderr, hidden when the output is JSON.
pub(crate) fn progress_bar(len: u64, what: &str, unit: &str, hidden: bool) -> anyhow::Result<ProgressBar> {
    let bar = ProgressBar::new(len);
    if hidden {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    let template = format!("{{spinner}} {what} [{{bar:40}}] {{pos}}/{{len}} {unit} {{elapsed}} {{msg}}");
    bar.set_style(
        ProgressStyle::with_template(&template).context("progress template")?.progress_chars("=> "),
    );
    Ok(bar)
}

pub(crate) fn run(args: &GenArgs) -> anyhow::Result<()> {
    if let Some(out) = &args.out {
        crate::limits::check_out(out)?;
    }
    if let Some(db) = &args.db
        && db.exists()
    {
        anyhow::bail!("{}: a file is there already (gen --db makes a new database)", db.display());
    }
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(n) = args.threads {
        builder = builder.num_threads(n);
    }
    let pool = builder.build().context("starting the worker threads")?;
    let params = GenParams::new(args.seed, args.size);
    params.region().context("checking the world size")?;
    if let (true, Some(path)) = (args.lazy, &args.db) {
        return gen_lazy(args, &params, path);
    }

    let bar = progress_bar(0, "generating", "tiles", args.json)?;

    let start = Instant::now();
    let mut store = VoxelStore::new();
    let stats = pool
        .install(|| {
            generate(&params, &mut store, |done, total| {
                bar.set_length(total);
                bar.set_position(done);
            })
        })
        .context("generating the world")?;
    let seconds = start.elapsed().as_secs_f64();
    bar.finish_and_clear();

    let mem = store.stats();
    let saved = match &args.out {
        None => None,
        Some(path) => {
            let bar = progress_bar(store.chunk_count() as u64, "saving    ", "chunks", args.json)?;
            let start = Instant::now();
            let table = voxterra::core::MaterialTable::default();
            let stats = voxterra::save(path, &store, &table, |done, _| bar.set_position(done))
                .with_context(|| format!("saving {}", path.display()))?;
            bar.finish_and_clear();
            Some(Saved {
                file: path.display().to_string(),
                bytes: stats.bytes,
                chunks: stats.chunks,
                seconds: start.elapsed().as_secs_f64(),
                bytes_per_non_empty_voxel: stats.bytes as f64 / mem.non_empty_voxels.max(1) as f64,
            })
        }
    };
    let db = match &args.db {
        None => None,
        Some(path) => {
            let bar = progress_bar(store.chunk_count() as u64, "writing   ", "chunks", args.json)?;
            let start = Instant::now();
            let db = voxterra::chunk_db::RedbChunkDb::create(path)?;
            let table = voxterra::core::MaterialTable::default();
            let chunks = voxterra::write_world(&store, &table, 1.0, 0, &db, |done, total| {
                bar.set_length(total);
                bar.set_position(done);
            })
            .with_context(|| format!("writing {}", path.display()))?;
            bar.finish_and_clear();
            let bytes = db.file_len()?;
            Some(Saved {
                file: path.display().to_string(),
                bytes,
                chunks,
                seconds: start.elapsed().as_secs_f64(),
                bytes_per_non_empty_voxel: bytes as f64 / mem.non_empty_voxels.max(1) as f64,
            })
        }
    };
    let summary = Summary {
        seed: args.seed,
        size: args.size,
        voxels: stats.voxels,
        non_empty_voxels: mem.non_empty_voxels,
        chunks: mem.chunks,
        allocated_rows: mem.allocated_rows,
        memory_bytes: mem.total_bytes,
        bytes_per_non_empty_voxel: mem.bytes_per_non_empty_voxel(),
        dense_bytes: stats.voxels * 2,
        seconds,
        threads: pool.current_num_threads(),
        saved,
        db,
    };
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        let mib = |b: f64| b / (1024.0 * 1024.0);
        println!("world      {}x{}x{} voxels, seed {}", args.size[0], args.size[1], args.size[2], args.seed);
        println!(
            "voxels     {} ({} non-empty, {:.1}%)",
            summary.voxels,
            summary.non_empty_voxels,
            100.0 * summary.non_empty_voxels as f64 / summary.voxels as f64
        );
        println!("chunks     {} of 32^3 ({} allocated rows)", summary.chunks, summary.allocated_rows);
        println!(
            "memory     {:.2} MiB ({:.3} bytes per non-empty voxel; dense 2-byte array: {:.2} MiB)",
            mib(summary.memory_bytes as f64),
            summary.bytes_per_non_empty_voxel,
            mib(summary.dense_bytes as f64)
        );
        println!("time       {:.2} s on {} threads", seconds, summary.threads);
        for (label, written) in [("saved   ", &summary.saved), ("database", &summary.db)] {
            if let Some(s) = written {
                println!(
                    "{label}   {} ({:.2} MiB, {} chunks, {:.4} bytes per non-empty voxel) in {:.2} s",
                    s.file,
                    mib(s.bytes as f64),
                    s.chunks,
                    s.bytes_per_non_empty_voxel,
                    s.seconds
                );
            }
        }
    }
    Ok(())
}

/// `gen --db --lazy`: a database naming the generator, no chunk stored.
fn gen_lazy(args: &GenArgs, params: &GenParams, path: &std::path::Path) -> anyhow::Result<()> {
    let start = Instant::now();
    let db = voxterra::chunk_db::RedbChunkDb::create(path)?;
    let d = voxterra::DurableTerrain::create_generated(
        params,
        db,
        voxterra::TerrainConfig::default(),
        voxterra::chunk_db::Durability::Immediate,
    )
    .with_context(|| format!("writing {}", path.display()))?;
    let bytes = d.db().file_len()?;
    let seconds = start.elapsed().as_secs_f64();
    if args.json {
        let out = serde_json::json!({
            "seed": args.seed, "size": args.size, "voxels": params.size.iter().map(|&v| v as u64).product::<u64>(),
            "lazy": true, "db": { "file": path.display().to_string(), "bytes": bytes, "chunks": 0, "seconds": seconds },
        });
        println!("{out}");
    } else {
        println!("world      {}x{}x{} voxels, seed {}", args.size[0], args.size[1], args.size[2], args.seed);
        println!(
            "database   {} ({bytes} bytes: the generator's parameters, no chunk) in {seconds:.3} s",
            path.display()
        );
        println!("           chunks are generated when first used and stored once edited");
    }
    Ok(())
}
