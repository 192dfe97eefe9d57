//! The picture of the last frame: the terrain and the bodies ray traced from a camera on the
//! crater or the overhang.

use crate::demo::report::{DemoArgs, PictureReport, View};
use crate::demo::sim::Final;
use crate::gen_cmd::progress_bar;
use crate::render::{Camera, render};
use std::time::Instant;
use voxterra::core::nalgebra::{Point3, Vector3};
use voxterra::{BodyDesc, World};

/// Renders the last frame: the terrain and the bodies, through a collision world's ray casts.
pub(crate) fn picture(args: &DemoArgs, fin: Final) -> anyhow::Result<PictureReport> {
    let table = fin.terrain.materials().clone();
    let focus = fin.focus;
    // An eye that sees the focus: the first of a ring of viewpoints, low to high, with a clear line
    // of sight (the terrain around a crater may hide it).
    let dist = match args.view {
        View::Crater => 26.0,
        View::Overhang => 44.0,
    };
    let eye = [0.6f32, 0.9, 1.2]
        .iter()
        .flat_map(|&elev| (0..8).map(move |k| (elev, k as f32 * std::f32::consts::FRAC_PI_4 + 0.6)))
        .map(|(elev, az)| {
            focus + Vector3::new(az.cos() * elev.cos(), elev.sin(), az.sin() * elev.cos()) * dist
        })
        .find(|eye| {
            let ray = voxterra::core::Ray::new(Point3::from(*eye), focus - eye);
            fin.terrain.cast_ray(&ray, 1.0).ok().flatten().is_none_or(|h| h.t > 0.9)
        })
        .unwrap_or(focus + Vector3::new(0.0, dist, 0.1));
    let mut world = World::new(fin.terrain);
    for (shape, pose) in fin.bodies {
        world.insert(BodyDesc { shape, pose, velocity: None, user_data: 0 })?;
    }
    world.step(0.0)?;
    let camera = Camera {
        eye: Point3::from(eye),
        target: Point3::from(focus),
        fov: 45.0,
        width: args.resolution[0],
        height: args.resolution[1],
    };
    let bar = progress_bar(0, "rendering ", "rays", args.json)?;
    let start = Instant::now();
    let pic = render(&mut world, &table, &camera, |d, n| {
        bar.set_length(n);
        bar.set_position(d);
    })?;
    bar.finish_and_clear();
    pic.save_png(&args.out)?;
    Ok(PictureReport {
        file: args.out.display().to_string(),
        width: pic.width,
        height: pic.height,
        primary_rays_per_second: pic.rays_per_second(),
        shadow_rays: pic.shadow_rays,
        seconds: start.elapsed().as_secs_f64(),
    })
}
