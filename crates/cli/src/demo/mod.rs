//! `voxterra demo`: bodies dropped on a generated world, rapier integrating them at 60 Hz, craters
//! dug and hills raised under them (and elsewhere) while they fall and rest, and a character
//! walking a course of ramps across chunk seams and over freshly raised ground, a rock overhang cut
//! loose to fall as a body; a table of what it
//! cost, whether anything fell through and how the character fared, optionally beside the same
//! scene on per-chunk TriMesh colliders (what rapier users do today), and a ray-cast picture of
//! the last frame.

mod picture;
mod report;
pub(crate) mod scene;
mod sim;
mod timed;

use crate::demo::picture::picture;
use crate::demo::report::{MIN_SIZE, Report, RunReport, Spread};
use crate::demo::sim::simulate;
use crate::gen_cmd::progress_bar;
use anyhow::Context;
pub(crate) use report::DemoArgs;

pub(crate) fn run(args: &DemoArgs) -> anyhow::Result<()> {
    // A world from a database: the scene is built on it, its size is the database's.
    let mut args = args.clone();
    if let Some(path) = &args.db {
        let t = crate::db_cmd::open_read_terrain(path, voxterra::TerrainConfig::default())?;
        anyhow::ensure!(
            !(t.is_paged() && args.baseline.is_some()),
            "--baseline needs the whole world in memory; {} is a lazily generated world, paged",
            path.display()
        );
        let extent = t.world_bounds().context("the database's world is empty")?;
        anyhow::ensure!(
            extent.min() == voxterra::core::VoxelPos::new(0, 0, 0),
            "the demo needs a world from the origin; the database's starts at {:?}",
            extent.min()
        );
        args.size = extent.size();
    }
    let args = &args;
    if !args.no_picture {
        crate::limits::check_png_out(&args.out)?;
        crate::render::Picture::ensure_fits(args.resolution[0], args.resolution[1])?;
    }
    anyhow::ensure!(
        args.size.iter().zip(MIN_SIZE).all(|(&s, m)| s >= m),
        "the demo needs a world of at least {}x{}x{} voxels (the plaza, the character's course and the \
         drop zones); got {}x{}x{}",
        MIN_SIZE[0],
        MIN_SIZE[1],
        MIN_SIZE[2],
        args.size[0],
        args.size[1],
        args.size[2]
    );
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(n) = args.threads {
        builder = builder.num_threads(n);
    }
    let pool = builder.build().context("starting the worker threads")?;
    pool.install(|| {
        let runs = 1 + u64::from(args.baseline.is_some());
        let bar = progress_bar(u64::from(args.frames) * runs, "simulating", "frames", args.json)?;
        // Drawn from the start: setting up many bodies takes a while before the first frame.
        bar.enable_steady_tick(std::time::Duration::from_millis(250));
        let (voxterra, fin) = simulate(args, None, &bar)?;
        let baseline = match args.baseline {
            Some(b) => Some(simulate(args, Some(b), &bar)?.0),
            None => None,
        };
        bar.finish_and_clear();
        let picture = if args.no_picture { None } else { Some(picture(args, fin)?) };
        let report = Report {
            bodies: args.bodies,
            frames: args.frames,
            seed: args.seed,
            size: args.size,
            threads: rayon::current_num_threads(),
            voxterra,
            baseline,
            picture,
        };
        if args.json {
            println!("{}", serde_json::to_string(&report)?);
        } else {
            print_table(&report);
        }
        Ok(())
    })
}

fn print_table(r: &Report) {
    println!(
        "voxterra demo: {} bodies, {} frames at 60 Hz, world {}x{}x{} seed {}, {} threads",
        r.bodies, r.frames, r.size[0], r.size[1], r.size[2], r.seed, r.threads
    );
    let runs: Vec<&RunReport> = std::iter::once(&r.voxterra).chain(r.baseline.as_ref()).collect();
    let row = |name: &str, f: &dyn Fn(&RunReport) -> String| {
        let cells: Vec<String> = runs.iter().map(|x| format!("{:>24}", f(x))).collect();
        println!("{name:<34}{}", cells.join(""));
    };
    row("terrain collider", &|x| x.collider.to_string());
    let ms = |s: Spread| format!("{:.2} / {:.2} / {:.2}", s.p50, s.p99, s.max);
    row("frame ms (p50 / p99 / max)", &|x| ms(x.frame_ms));
    row("  rapier step (without terrain)", &|x| ms(x.rapier_step_ms));
    row("  terrain contacts", &|x| ms(x.terrain_contacts_ms));
    row("  edits", &|x| ms(x.edits_ms));
    row("  cache builds", &|x| ms(x.cache_builds_ms));
    row("terrain share of frame time", &|x| format!("{:.1}%", 100.0 * x.terrain_share));
    row("worst edit stall ms", &|x| format!("{:.2}", x.worst_edit_stall_ms));
    row("terrain contacts per frame", &|x| format!("{:.0}", x.contacts_per_frame));
    row("terrain collision memory", &|x| format!("{:.2} MiB", x.terrain_collision_bytes as f64 / 1048576.0));
    row("setup (before frame 0)", &|x| format!("{:.0} ms", x.setup_ms));
    row("bodies at rest", &|x| format!("{}", x.bodies_at_rest));
    row("bodies fell through", &|x| format!("{}", x.fell_through));
    row("pieces cut loose (at rest)", &|x| format!("{} ({})", x.detached_pieces, x.pieces_at_rest));
    row("pieces fell through", &|x| format!("{}", x.pieces_fell_through));
    row("character grounded", &|x| format!("{:.1}% of steps", 100.0 * x.character_grounded));
    row("character stuck steps", &|x| format!("{}", x.character_stuck_steps));
    row("queries the terrain refused", &|x| format!("{}", x.refused_queries));
    row("ghost bumps on flat ground", &|x| format!("{} of {}", x.ghost_bumps, x.flat_contacts));
    row("run time", &|x| format!("{:.1} s", x.total_seconds));
    row("state hash", &|x| x.state_hash.clone());
    if let Some(p) = &r.picture {
        println!(
            "picture: {} ({}x{}), {:.2} M primary rays/s, {} shadow rays, {:.2} s",
            p.file,
            p.width,
            p.height,
            p.primary_rays_per_second / 1e6,
            p.shadow_rays,
            p.seconds
        );
    }
}
