//! Making a world: tiles of 32 × 32 columns generated in parallel, written in a fixed order.

use crate::terrain_model::{Column, TerrainModel};
use crate::{GenError, GenParams};
use rayon::prelude::*;
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Region, Voxel, VoxelWrite};

/// Tile side in voxels (columns) and the height of one written slab.
const TILE: i32 = 32;
/// Caves are sampled every `CAVE_STEP` voxels and interpolated: smooth walls, a fraction of the cost.
const CAVE_STEP: i32 = 4;

/// What a generation produced.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct GenStats {
    /// Voxels in the world's region.
    pub voxels: u64,
    /// Voxels that are not Air.
    pub non_empty_voxels: u64,
    /// Boxes handed to the destination.
    pub boxes_written: u64,
}

/// Generates the world of `params` into `dest`, in parallel on the current rayon pool.
///
/// `progress(done, total)` is called on the calling thread after each batch of tiles. The voxels
/// written depend only on `params`, never on the thread count: tiles are pure functions of their
/// coordinates and are written in a fixed order.
pub fn generate<W: VoxelWrite>(
    params: &GenParams,
    dest: &mut W,
    mut progress: impl FnMut(u64, u64),
) -> Result<GenStats, GenError<W::Error>> {
    let world = params.region().map_err(GenError::widen)?;
    let terrain = TerrainModel::new(params.seed, params.size[1]);
    let tiles_x = params.size[0].div_ceil(TILE as u32) as i32;
    let tiles_z = params.size[2].div_ceil(TILE as u32) as i32;
    let tiles: Vec<(i32, i32)> = (0..tiles_z).flat_map(|tz| (0..tiles_x).map(move |tx| (tx, tz))).collect();
    let total = tiles.len() as u64;
    // Enough tiles per batch to keep every thread busy, few enough to bound the memory in flight.
    let batch = (rayon::current_num_threads() * 4).max(8);
    let mut stats = GenStats { voxels: world.volume() as u64, ..GenStats::default() };
    for (i, chunk) in tiles.chunks(batch).enumerate() {
        let made: Vec<Vec<(Region, Vec<Voxel>)>> =
            chunk.par_iter().map(|&(tx, tz)| tile(&terrain, &world, tx, tz)).collect();
        for (region, voxels) in made.into_iter().flatten() {
            stats.non_empty_voxels += voxels.iter().filter(|v| !v.is_air()).count() as u64;
            stats.boxes_written += 1;
            dest.write_box(&region, &voxels).map_err(GenError::Write)?;
        }
        progress(((i * batch + chunk.len()) as u64).min(total), total);
    }
    Ok(stats)
}

/// The voxels of one tile: slabs of `TILE` voxels high from the bottom up to the highest non-air
/// voxel (nothing above it is written: the destination already holds Air there).
fn tile(terrain: &TerrainModel, world: &Region, tx: i32, tz: i32) -> Vec<(Region, Vec<Voxel>)> {
    let o = world.min();
    let [sx, sy, sz] = world.size();
    let x0 = o.x + tx * TILE;
    let z0 = o.z + tz * TILE;
    let w = (sx as i32 - tx * TILE).min(TILE) as usize;
    let d = (sz as i32 - tz * TILE).min(TILE) as usize;

    // Columns with a one-column border for slopes.
    let pw = w + 2;
    let cols: Vec<Column> = (0..(d + 2) * pw)
        .map(|i| terrain.column(x0 - 1 + (i % pw) as i32, z0 - 1 + (i / pw) as i32))
        .collect();
    // Padded coordinates: column (x, z) of the tile is at (x + 1, z + 1).
    let padded = |px: usize, pz: usize| cols[pz * pw + px].height;
    let col = |x: usize, z: usize| &cols[(z + 1) * pw + x + 1];
    let slope = |x: usize, z: usize| {
        let dx = (padded(x + 2, z + 1) - padded(x, z + 1)).abs() * 0.5;
        let dz = (padded(x + 1, z + 2) - padded(x + 1, z)).abs() * 0.5;
        dx.max(dz)
    };
    let top = cols.iter().map(|c| c.height).fold(terrain.water_level, f32::max).ceil() as i32 + 1;
    let top = top.min(sy as i32);

    // Coarse cave grid over the tile, interpolated per voxel.
    let (gx, gz, gy) =
        (w / CAVE_STEP as usize + 2, d / CAVE_STEP as usize + 2, (top / CAVE_STEP) as usize + 2);
    let grid: Vec<f32> = (0..gx * gz * gy)
        .map(|i| {
            let (ix, iz, iy) = (i % gx, (i / gx) % gz, i / (gx * gz));
            let s = CAVE_STEP as f32;
            terrain.cave_field(x0 as f32 + ix as f32 * s, iy as f32 * s, z0 as f32 + iz as f32 * s)
        })
        .collect();
    let cave = |x: usize, y: i32, z: usize| {
        let s = CAVE_STEP as usize;
        let (ix, iy, iz) = (x / s, y as usize / s, z / s);
        let (fx, fy, fz) =
            ((x % s) as f32 / s as f32, (y as usize % s) as f32 / s as f32, (z % s) as f32 / s as f32);
        let g = |dx: usize, dy: usize, dz: usize| grid[(ix + dx) + gx * ((iz + dz) + gz * (iy + dy))];
        let lerp = |a: f32, b: f32, t: f32| a + (b - a) * t;
        let x00 = lerp(g(0, 0, 0), g(1, 0, 0), fx);
        let x01 = lerp(g(0, 0, 1), g(1, 0, 1), fx);
        let x10 = lerp(g(0, 1, 0), g(1, 1, 0), fx);
        let x11 = lerp(g(0, 1, 1), g(1, 1, 1), fx);
        lerp(lerp(x00, x01, fz), lerp(x10, x11, fz), fy)
    };

    let slopes: Vec<f32> = (0..w * d).map(|i| slope(i % w, i / w)).collect();
    let mut out = Vec::new();
    let mut y0 = 0;
    while y0 < top {
        let h = (top - y0).min(TILE);
        let region = Region::from_min_size(Point3::new(x0, o.y + y0, z0), [w as u32, h as u32, d as u32])
            .expect("tiles lie inside the checked world region");
        let mut voxels = Vec::with_capacity(w * h as usize * d);
        for y in y0..y0 + h {
            for z in 0..d {
                for x in 0..w {
                    voxels.push(terrain.voxel(col(x, z), slopes[z * w + x], y, cave(x, y, z)));
                }
            }
        }
        out.push((region, voxels));
        y0 += h;
    }
    out
}
