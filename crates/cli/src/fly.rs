//! `voxterra fly`: a viewer flying across a paged world at a steady speed, paging ahead, keeping
//! collision ready around it and its levels of detail current, one frame at a time: frame times,
//! what paging cost each frame, how much of the world it touched, and peak resident memory.

use anyhow::Context;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use voxterra::core::nalgebra::Point3;
use voxterra::core::{Aabb, MaterialTable};
use voxterra::lod::{LodConfig, LodView};
use voxterra::mesher::Mesher;
use voxterra::paging::GeneratorSource;
use voxterra::worldgen::GenParams;
use voxterra::{DurableTerrain, PrepareBudget, Terrain, TerrainConfig};

/// `voxterra fly` flags.
#[derive(clap::Args, Debug)]
pub(crate) struct FlyArgs {
    /// Fly over the world in this chunk database (opened read-only, paged); without it, over the
    /// world of --size and --seed generated as it is visited.
    #[arg(long, value_name = "DB")]
    db: Option<PathBuf>,
    /// Size of the generated world, X×Y×Z (without --db).
    #[arg(long, default_value = "8192x256x8192", value_parser = crate::gen_cmd::parse_size, conflicts_with = "db")]
    size: [u32; 3],
    /// Seed of the generated world (without --db).
    #[arg(long, default_value_t = 1, conflicts_with = "db")]
    seed: u64,
    /// Distance flown, km (world units are meters; the path bounces off the world's edges).
    #[arg(long, default_value_t = 10.0)]
    km: f32,
    /// Speed, m/s.
    #[arg(long, default_value_t = 50.0)]
    speed: f32,
    /// Frames per second: each frame moves the viewer speed/fps and waits for the next tick of
    /// the clock (--unpaced runs them back to back).
    #[arg(long, default_value_t = 60.0)]
    fps: f32,
    /// Run frames back to back instead of on the clock (the loader gets less time per frame).
    #[arg(long)]
    unpaced: bool,
    /// Paged in ahead around the viewer, m (half the side of a square column).
    #[arg(long, default_value_t = 256.0)]
    radius: f32,
    /// Collision kept ready around a character on the ground under the viewer, m (half the side
    /// of a cube).
    #[arg(long, default_value_t = 24.0)]
    collision: f32,
    /// Levels of detail: the distances (m) where levels 1, 2, … begin.
    #[arg(long, default_value = "48,96,192", value_delimiter = ',')]
    lod: Vec<f32>,
    /// Resident voxel budget, MiB.
    #[arg(long, default_value_t = 256)]
    budget_mb: usize,
    /// Collision cache budget, MiB.
    #[arg(long, default_value_t = 64)]
    cache_mb: usize,
    /// Paging's share of a frame, ms (taking in loaded chunks and evicting).
    #[arg(long, default_value_t = 1.5)]
    page_ms: f32,
    /// Print the summary as one JSON object on stdout (no progress bar).
    #[arg(long)]
    json: bool,
}

/// Milliseconds: p50, p99, max.
#[derive(serde::Serialize, Debug)]
struct Spread {
    p50: f64,
    p99: f64,
    max: f64,
}

fn spread(mut v: Vec<f64>) -> Spread {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v.get(((v.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(0.0);
    Spread { p50: at(0.5), p99: at(0.99), max: v.last().copied().unwrap_or(0.0) }
}

/// What `fly` prints.
#[derive(serde::Serialize, Debug)]
struct FlySummary {
    world: [u32; 3],
    km: f32,
    speed: f32,
    frames: usize,
    /// Paging in the start's surroundings before the first frame (a loading screen).
    opening_seconds: f64,
    seconds: f64,
    /// Whole frame: paging, collision readiness, levels of detail.
    frame_ms: Spread,
    /// Paging alone.
    page_ms: Spread,
    readiness_ms: Spread,
    lod_ms: Spread,
    frames_over_4ms: usize,
    paging_over_4ms: usize,
    /// Frames whose collision box (a character on the ground under the viewer) was not yet
    /// paged in.
    ground_not_paged: usize,
    /// Frames whose collision box was paged in but its collision data not all built yet (the
    /// readiness budget: 16 chunks, 1 ms a frame).
    collision_not_built: usize,
    chunks_loaded: u64,
    chunks_evicted: u64,
    resident_chunks: usize,
    resident_mib: f64,
    /// Share of the world's chunk columns that were ever paged in.
    world_touched: f64,
    lod_nodes: usize,
    peak_rss_mib: f64,
}

/// Peak resident memory of this process (VmHWM), MiB; 0 where /proc does not say.
pub(crate) fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

pub(crate) fn run(args: &FlyArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.speed > 0.0 && args.fps > 0.0 && args.km >= 0.0,
        "speed, fps and km must be positive"
    );
    anyhow::ensure!(args.radius > 0.0 && args.collision > 0.0, "radius and collision must be positive");
    let config = TerrainConfig {
        resident_bytes: args.budget_mb.saturating_mul(1 << 20),
        cache_bytes: args.cache_mb.saturating_mul(1 << 20),
        ..TerrainConfig::default()
    };
    let (mut terrain, world) = match &args.db {
        Some(path) => {
            let db = voxterra::chunk_db::RedbChunkDb::open_read_only(path)
                .with_context(|| format!("opening {}", path.display()))?;
            let generator = voxterra::stored_generator(&db)?;
            let world = generator.map(|g| g.size).context(
                "the database names no generator (fly pages generated worlds: gen --db --lazy, or edited ones)",
            )?;
            let d = DurableTerrain::open_paged(db, config, voxterra::chunk_db::Durability::Deferred)?;
            (d.into_parts().0, world)
        }
        None => {
            let params = GenParams::new(args.seed, args.size);
            params.region().context("checking the world size")?;
            let source = Arc::new(GeneratorSource(params));
            (Terrain::paged(source, MaterialTable::default(), config)?, args.size)
        }
    };
    let mesher = Mesher::new(terrain.materials());
    let mut view = LodView::new(LodConfig { distances: args.lod.clone(), hysteresis: 0.25 })?;
    let frames = (args.km * 1000.0 / args.speed * args.fps).ceil() as usize;
    let step = args.speed / args.fps;
    let bar = crate::gen_cmd::progress_bar(frames as u64, "flying    ", "frames", args.json)?;
    let mut columns = std::collections::HashSet::new();

    // Diagonally through the centre, bouncing off the edges; at 3/4 of the world's height.
    let (w, d) = (world[0] as f32, world[2] as f32);
    let margin = args.radius.min(w / 4.0).min(d / 4.0);
    let height = world[1] as f32 * 0.75;
    let dir = voxterra::core::nalgebra::Vector2::new(w, d).normalize();
    let start_at = voxterra::core::nalgebra::Vector2::new(margin, margin);
    let span = voxterra::core::nalgebra::Vector2::new(w - 2.0 * margin, d - 2.0 * margin);
    let at = |s: f32| {
        // A triangle wave per axis: bounces between the margins.
        let bounce = |x: f32, len: f32| {
            let m = x.rem_euclid(2.0 * len);
            if m < len { m } else { 2.0 * len - m }
        };
        Point3::new(start_at.x + bounce(dir.x * s, span.x), height, start_at.y + bounce(dir.y * s, span.y))
    };

    // The loading screen: the start's surroundings in memory before the first frame.
    let opening = Instant::now();
    let first = at(0.0);
    let r = args.radius;
    let start_box = Aabb::new(
        Point3::new(first.x - r, 0.0, first.z - r),
        Point3::new(first.x + r, world[1] as f32, first.z + r),
    );
    for region in terrain.page_in(&[start_box])?.changed {
        columns.insert((region.min().x >> 5, region.min().z >> 5));
    }
    view.update(&terrain, &mesher, &[first])?;
    let opening = opening.elapsed().as_secs_f64();

    let (mut frame_ms, mut page_ms, mut ready_ms, mut lod_ms) = (vec![], vec![], vec![], vec![]);
    let (mut ground_not_paged, mut collision_not_built) = (0, 0);
    let page_budget = Duration::from_secs_f32(args.page_ms / 1000.0);
    let started = Instant::now();
    for i in 0..frames {
        let frame_start = Instant::now();
        let eye = at(i as f32 * step);
        let r = args.radius;
        let around = Aabb::new(
            Point3::new(eye.x - r, 0.0, eye.z - r),
            Point3::new(eye.x + r, world[1] as f32, eye.z + r),
        );
        let report = terrain.page(&[around], page_budget)?;
        for region in &report.changed {
            view.mark_edited(region);
            columns.insert((region.min().x >> 5, region.min().z >> 5));
        }
        let t1 = Instant::now();
        // A character on the ground under the viewer: its collision ready nearest first.
        let down = voxterra::core::Ray::new(eye, voxterra::core::nalgebra::Vector3::new(0.0, -1.0, 0.0));
        let floor = terrain.cast_ray(&down, eye.y)?.map_or(0.0, |h| h.point.y);
        let c = args.collision;
        let ground = Aabb::new(
            Point3::new(eye.x - c, floor - c, eye.z - c),
            Point3::new(eye.x + c, floor + c, eye.z + c),
        );
        if !terrain.is_paged_in(&ground) {
            ground_not_paged += 1;
        } else if !terrain.prepare(&[ground], PrepareBudget::new(16, Duration::from_millis(1))).ready {
            collision_not_built += 1;
        }
        let t2 = Instant::now();
        view.update(&terrain, &mesher, &[eye])?;
        let t3 = Instant::now();
        page_ms.push((t1 - frame_start).as_secs_f64() * 1e3);
        ready_ms.push((t2 - t1).as_secs_f64() * 1e3);
        lod_ms.push((t3 - t2).as_secs_f64() * 1e3);
        frame_ms.push((t3 - frame_start).as_secs_f64() * 1e3);
        bar.set_position(i as u64 + 1);
        if !args.unpaced {
            let due = started + Duration::from_secs_f64((i + 1) as f64 / args.fps as f64);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
    }
    bar.finish_and_clear();
    let stats = terrain.page_stats().context("a paged terrain")?;
    let over = |v: &[f64]| v.iter().filter(|&&t| t > 4.0).count();
    let summary = FlySummary {
        world,
        km: args.km,
        speed: args.speed,
        frames,
        opening_seconds: opening,
        seconds: started.elapsed().as_secs_f64(),
        frames_over_4ms: over(&frame_ms),
        paging_over_4ms: over(&page_ms),
        frame_ms: spread(frame_ms),
        page_ms: spread(page_ms),
        readiness_ms: spread(ready_ms),
        lod_ms: spread(lod_ms),
        ground_not_paged,
        collision_not_built,
        chunks_loaded: stats.loaded_total,
        chunks_evicted: stats.evicted_total,
        resident_chunks: stats.resident,
        resident_mib: stats.bytes as f64 / (1 << 20) as f64,
        world_touched: columns.len() as f64 / ((w / 32.0).ceil() * (d / 32.0).ceil()) as f64,
        lod_nodes: view.nodes().count(),
        peak_rss_mib: peak_rss_mib(),
    };
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        let s = &summary;
        let show = |name: &str, x: &Spread| {
            println!("{name:<12} p50 {:.3}  p99 {:.3}  max {:.3} ms", x.p50, x.p99, x.max)
        };
        println!(
            "world        {}x{}x{}, {:.1} km at {} m/s, {} frames in {:.1} s",
            s.world[0], s.world[1], s.world[2], s.km, s.speed, s.frames, s.seconds
        );
        println!("opening      {:.2} s (the start's surroundings paged in)", s.opening_seconds);
        show("frame", &s.frame_ms);
        show("paging", &s.page_ms);
        show("readiness", &s.readiness_ms);
        show("lod", &s.lod_ms);
        println!("over 4 ms    {} frames ({} of them paging)", s.frames_over_4ms, s.paging_over_4ms);
        println!(
            "collision    not paged in {} frames, paged but not built in {}",
            s.ground_not_paged, s.collision_not_built
        );
        println!(
            "chunks       {} loaded, {} evicted, {} resident ({:.1} MiB)",
            s.chunks_loaded, s.chunks_evicted, s.resident_chunks, s.resident_mib
        );
        println!("touched      {:.2}% of the world's columns", s.world_touched * 100.0);
        println!("peak memory  {:.1} MiB (VmHWM)", s.peak_rss_mib);
    }
    Ok(())
}
