//! `voxterra render`: a terrain file or a generated world, ray cast into a PNG from a camera given by
//! flags.

use crate::gen_cmd::progress_bar;
use crate::lod_render::{lod_scene, render_lod};
use crate::render::{Camera, Picture, render};
use crate::source::WorldSource;
use anyhow::Context;
use std::path::PathBuf;
use voxterra::core::nalgebra::Point3;
use voxterra::mesher::Mesher;
use voxterra::{Terrain, World};

/// Arguments of `voxterra render`.
#[derive(clap::Args, Debug)]
pub(crate) struct RenderArgs {
    #[command(flatten)]
    source: WorldSource,
    /// The PNG to write (atomically).
    #[arg(long, default_value = "render.png")]
    out: PathBuf,
    /// Camera position, x,y,z in voxels (default: above a corner of the world, looking in).
    #[arg(long, value_parser = parse_point, allow_hyphen_values = true)]
    eye: Option<[f32; 3]>,
    /// The point the camera looks at (default: the world's center at ground level).
    #[arg(long, value_parser = parse_point, allow_hyphen_values = true)]
    target: Option<[f32; 3]>,
    /// Vertical field of view, degrees (above 0, below 180).
    #[arg(long, default_value_t = 50.0, value_parser = parse_fov, allow_hyphen_values = true)]
    fov: f32,
    /// Picture size, W×H pixels.
    #[arg(long, default_value = "1280x720", value_parser = parse_resolution)]
    resolution: [u32; 2],
    /// Worker threads (default: all cores; at most 256). The picture is the same for any count.
    #[arg(long, value_parser = crate::limits::parse_threads)]
    threads: Option<usize>,
    /// Draw the terrain through levels of detail: the clipmap around the eye, cast through one
    /// kD tree over its meshes (default eye: over the world's center, looking at the horizon).
    #[arg(long)]
    lod: bool,
    /// With --lod, colour each level: 0 red, 1 orange, 2 green, 3 cyan, 4 blue, 5 violet (level 0
    /// lies under the default eye, out of its frame).
    #[arg(long, requires = "lod")]
    tint_levels: bool,
}

/// `x,y,z` as three floats.
pub(crate) fn parse_point(s: &str) -> Result<[f32; 3], String> {
    let v: Result<Vec<f32>, _> = s.split(',').map(|p| p.trim().parse::<f32>()).collect();
    match v {
        Ok(v) if v.len() == 3 && v.iter().all(|c| c.is_finite()) => Ok([v[0], v[1], v[2]]),
        _ => Err(format!("expected x,y,z with three finite numbers; got {s:?}")),
    }
}

/// A vertical field of view in degrees: finite, above 0 and below 180.
pub(crate) fn parse_fov(s: &str) -> Result<f32, String> {
    match s.trim().parse::<f32>() {
        Ok(f) if f > 0.0 && f < 180.0 => Ok(f),
        _ => Err(format!("expected a field of view in degrees above 0 and below 180; got {s:?}")),
    }
}

/// `W×H` as two positive integers of at most 16 384.
pub(crate) fn parse_resolution(s: &str) -> Result<[u32; 2], String> {
    let v: Result<Vec<u32>, _> = s.split(['x', 'X']).map(|p| p.trim().parse::<u32>()).collect();
    match v {
        Ok(v) if v.len() == 2 && v.iter().all(|&c| (1..=16_384).contains(&c)) => Ok([v[0], v[1]]),
        _ => Err(format!("expected W×H with two integers in 1..=16384, like 1280x720; got {s:?}")),
    }
}

/// A camera over `terrain`'s extent: `eye` and `target` where given, else above a corner looking
/// at the center. An eye on its target looks nowhere: refused.
pub(crate) fn camera_for(
    terrain: &Terrain,
    eye: Option<[f32; 3]>,
    target: Option<[f32; 3]>,
    fov: f32,
    [width, height]: [u32; 2],
) -> anyhow::Result<Camera> {
    let (lo, hi) = world_box(terrain);
    let size = [hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]];
    let center = [lo[0] + size[0] * 0.5, lo[1] + size[1] * 0.4, lo[2] + size[2] * 0.5];
    let eye = eye.unwrap_or([lo[0] + size[0] * 0.05, hi[1] + size[1] * 0.9, lo[2] + size[2] * 0.05]);
    let (eye, target) = (Point3::from(eye), Point3::from(target.unwrap_or(center)));
    anyhow::ensure!(eye != target, "the camera's eye is on its target ({eye}): it looks nowhere");
    Ok(Camera { eye, target, fov, width, height })
}

pub(crate) fn run(args: &RenderArgs) -> anyhow::Result<()> {
    crate::limits::check_png_out(&args.out)?;
    Picture::ensure_fits(args.resolution[0], args.resolution[1])?;
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(n) = args.threads {
        builder = builder.num_threads(n);
    }
    let pool = builder.build().context("starting the worker threads")?;
    if let (Some(eye), Some(target)) = (args.eye, args.target) {
        anyhow::ensure!(eye != target, "--eye and --target are the same point: the camera looks nowhere");
    }
    pool.install(|| {
        if args.lod {
            let mut terrain = args.source.terrain_paged(false)?;
            return render_lod_picture(args, &mut terrain);
        }
        let terrain = args.source.terrain(false)?;
        let camera = camera_for(&terrain, args.eye, args.target, args.fov, args.resolution)?;
        let table = terrain.materials().clone();
        let mut world = World::new(terrain);
        let bar = progress_bar(0, "rendering ", "rays", false)?;
        let picture = render(&mut world, &table, &camera, |d, n| {
            bar.set_length(n);
            bar.set_position(d);
        })?;
        bar.finish_and_clear();
        picture.save_png(&args.out)?;
        report(&args.out, &picture);
        Ok(())
    })
}

/// `render --lod`: the clipmap around the eye, its triangles against full resolution's, the
/// picture.
fn render_lod_picture(args: &RenderArgs, terrain: &mut Terrain) -> anyhow::Result<()> {
    // Over the world's center above its peaks, looking out past a far corner to the horizon.
    let (lo, hi) = world_box(terrain);
    let h = hi[1] - lo[1];
    let center = [(lo[0] + hi[0]) * 0.5, hi[1] + h * 0.15, (lo[2] + hi[2]) * 0.5];
    let eye = args.eye.unwrap_or(center);
    let target = args.target.unwrap_or([hi[0], lo[1] + h * 0.35, hi[2]]);
    let camera = camera_for(terrain, Some(eye), Some(target), args.fov, args.resolution)?;
    let mesher = Mesher::new(terrain.materials());
    let scale = terrain.scale();
    let scene = lod_scene(terrain, &mesher, scale.point_to_voxels(&camera.eye), false)?;
    let mut camera = camera;
    // The scene is in voxel units.
    camera.eye = scale.point_to_voxels(&camera.eye);
    camera.target = scale.point_to_voxels(&camera.target);
    let bar = progress_bar(0, "rendering ", "rays", false)?;
    let (picture, folded) = render_lod(&scene, terrain.materials(), &camera, args.tint_levels, |d, n| {
        bar.set_length(n);
        bar.set_position(d);
    })?;
    bar.finish_and_clear();
    picture.save_png(&args.out)?;
    println!(
        "levels     {} triangles in {:.2} s; nodes per level (finest first) {:?}",
        scene.mesh.indices.len(),
        scene.seconds,
        scene.nodes_per_level
    );
    println!(
        "pixels     {} show terrain: {} see a triangle from behind ({:.3}%), {} in shadow ({:.1}%)",
        folded.terrain,
        folded.back_faces,
        folded.back_faces as f64 * 100.0 / folded.terrain.max(1) as f64,
        folded.shadowed,
        folded.shadowed as f64 * 100.0 / folded.terrain.max(1) as f64
    );
    if let Some(p) = &scene.paging {
        println!("{}", p.line());
    }
    report(&args.out, &picture);
    Ok(())
}

/// The line a render prints about its picture.
fn report(out: &std::path::Path, picture: &crate::render::Picture) {
    println!(
        "{}: {}x{} pixels, {:.2} M primary rays/s ({:.3} s), {} shadow rays ({:.3} s), {} threads",
        out.display(),
        picture.width,
        picture.height,
        picture.rays_per_second() / 1e6,
        picture.primary_seconds,
        picture.shadow_rays,
        picture.shadow_seconds,
        rayon::current_num_threads()
    );
}

/// The world's box in world units (64 units at the origin for an empty terrain); a paged world's
/// whole, visited or not.
fn world_box(terrain: &Terrain) -> ([f32; 3], [f32; 3]) {
    terrain.world_bounds().map_or(([0.0; 3], [64.0; 3]), |e| {
        let b = terrain.scale().region_to_world(&e, 0.0);
        (b.mins.into(), b.maxs.into())
    })
}
