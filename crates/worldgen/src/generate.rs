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
    let t = Tile::new(terrain, world, tx, tz);
    let o = world.min();
    let mut out = Vec::new();
    let mut y0 = 0;
    while y0 < t.top {
        let h = (t.top - y0).min(TILE);
        let region =
            Region::from_min_size(Point3::new(t.x0, o.y + y0, t.z0), [t.w as u32, h as u32, t.d as u32])
                .expect("tiles lie inside the checked world region");
        out.push((region, t.voxels(terrain, y0..y0 + h)));
        y0 += h;
    }
    out
}

/// Generates the voxels of `region` (any box, inside the world or not) into `out` (one voxel per
/// position of `region`, in (y, z, x) order): exactly what [`generate`] writes there, Air outside
/// the world. What a paged terrain calls for chunks it never stored; a column of chunks generated
/// in one call shares its columns' noise.
pub fn generate_region(params: &GenParams, region: &Region, out: &mut [Voxel]) -> Result<(), GenError> {
    let world = params.region()?;
    let len = region.len().map_err(|_| GenError::TooLarge {
        size: region.size(),
        voxels: region.volume(),
        limit: usize::MAX as u64,
    })?;
    assert_eq!(out.len(), len, "one voxel per position of the region");
    out.fill(Voxel::AIR);
    let Some(inside) = region.intersection(&world) else { return Ok(()) };
    let terrain = TerrainModel::new(params.seed, params.size[1]);
    let o = world.min();
    let (lo, hi) = (inside.min() - o, inside.max() - o);
    let [rx, _, rz] = region.size().map(|s| s as usize);
    for tz in lo.z / TILE..=(hi.z - 1) / TILE {
        for tx in lo.x / TILE..=(hi.x - 1) / TILE {
            let t = Tile::new(&terrain, &world, tx, tz);
            let (ylo, yhi) = (lo.y, hi.y.min(t.top));
            if ylo >= yhi {
                continue;
            }
            let voxels = t.voxels(&terrain, ylo..yhi);
            for y in ylo..yhi {
                for z in 0..t.d as i32 {
                    let wz = t.z0 + z;
                    if wz < inside.min().z || wz >= inside.max().z {
                        continue;
                    }
                    for x in 0..t.w as i32 {
                        let wx = t.x0 + x;
                        if wx < inside.min().x || wx >= inside.max().x {
                            continue;
                        }
                        let src = ((y - ylo) as usize * t.d + z as usize) * t.w + x as usize;
                        let (dx, dy, dz) = (
                            (wx - region.min().x) as usize,
                            (o.y + y - region.min().y) as usize,
                            (wz - region.min().z) as usize,
                        );
                        out[(dy * rz + dz) * rx + dx] = voxels[src];
                    }
                }
            }
        }
    }
    Ok(())
}

/// One tile's columns, slopes and height: what every voxel of the tile reads.
struct Tile {
    x0: i32,
    z0: i32,
    w: usize,
    d: usize,
    /// Layers (from the world's bottom) up to the highest non-air voxel.
    top: i32,
    cols: Vec<Column>,
    slopes: Vec<f32>,
}

impl Tile {
    fn new(terrain: &TerrainModel, world: &Region, tx: i32, tz: i32) -> Tile {
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
        let slope = |x: usize, z: usize| {
            let dx = (padded(x + 2, z + 1) - padded(x, z + 1)).abs() * 0.5;
            let dz = (padded(x + 1, z + 2) - padded(x + 1, z)).abs() * 0.5;
            dx.max(dz)
        };
        let slopes: Vec<f32> = (0..w * d).map(|i| slope(i % w, i / w)).collect();
        let top = cols.iter().map(|c| c.height).fold(terrain.water_level, f32::max).ceil() as i32 + 1;
        let top = top.min(sy as i32);
        Tile { x0, z0, w, d, top, cols, slopes }
    }

    /// The voxels of layers `ys` (from the world's bottom, within `0..top`), in (y, z, x) order.
    /// The cave field is sampled on a grid every `CAVE_STEP` voxels from the bottom and
    /// interpolated, so any range of layers reads the same grid points.
    fn voxels(&self, terrain: &TerrainModel, ys: std::ops::Range<i32>) -> Vec<Voxel> {
        let (w, d) = (self.w, self.d);
        let pw = w + 2;
        let col = |x: usize, z: usize| &self.cols[(z + 1) * pw + x + 1];
        let s = CAVE_STEP as usize;
        let iy0 = ys.start as usize / s;
        let (gx, gz, gy) = (w / s + 2, d / s + 2, (ys.end as usize - 1) / s + 2 - iy0);
        let grid: Vec<f32> = (0..gx * gz * gy)
            .map(|i| {
                let (ix, iz, iy) = (i % gx, (i / gx) % gz, i / (gx * gz) + iy0);
                let sf = CAVE_STEP as f32;
                terrain.cave_field(
                    self.x0 as f32 + ix as f32 * sf,
                    iy as f32 * sf,
                    self.z0 as f32 + iz as f32 * sf,
                )
            })
            .collect();
        let cave = |x: usize, y: i32, z: usize| {
            let (ix, iy, iz) = (x / s, y as usize / s - iy0, z / s);
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
        let mut voxels = Vec::with_capacity(w * d * ys.len());
        for y in ys {
            for z in 0..d {
                for x in 0..w {
                    voxels.push(terrain.voxel(col(x, z), self.slopes[z * w + x], y, cave(x, y, z)));
                }
            }
        }
        voxels
    }
}
