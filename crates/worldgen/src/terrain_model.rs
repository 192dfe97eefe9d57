//! The terrain model: noise fields → per-column heights, biomes and surface materials → voxels.
//!
//! Everything is a pure function of the seed and absolute coordinates, so any tile can be made on any
//! thread in any order and the world is the same.

use fastnoise_lite::{FastNoiseLite, FractalType, NoiseType};
use voxterra_core::{Material, Voxel, materials as m};

/// Biomes, ordered along the biome noise axis.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Biome {
    /// Sand dunes over sandstone.
    Dunes,
    /// Flat grassland with lakes.
    Plains,
    /// Rolling grassy hills with rocky cliffs.
    Hills,
    /// Ridged rock mountains with snow caps.
    Mountains,
}

/// Where each biome sits on the biome noise axis; heights blend between neighbors.
const ANCHORS: [(f32, Biome); 4] =
    [(-0.45, Biome::Dunes), (-0.1, Biome::Plains), (0.2, Biome::Hills), (0.5, Biome::Mountains)];

fn noise(seed: i32, kind: NoiseType, freq: f32, fractal: Option<(FractalType, i32)>) -> FastNoiseLite {
    let mut n = FastNoiseLite::with_seed(seed);
    n.set_noise_type(Some(kind));
    n.set_frequency(Some(freq));
    if let Some((f, octaves)) = fractal {
        n.set_fractal_type(Some(f));
        n.set_fractal_octaves(Some(octaves));
    }
    n
}

/// One 64-bit seed → independent 32-bit seeds per field (splitmix64).
fn sub_seed(seed: u64, field: u64) -> i32 {
    let mut z = seed.wrapping_add(field.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as i32
}

/// Per-column result of the 2D fields.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    /// Surface height above the world's bottom, in voxels (fractional).
    pub height: f32,
    /// The dominant biome.
    pub biome: Biome,
    /// How far inside a canyon, 0..=1.
    pub canyon: f32,
    /// Cold regions freeze the top of their water.
    pub cold: bool,
}

/// The noise fields of one seed, scaled to a world height.
pub struct TerrainModel {
    biome: FastNoiseLite,
    temperature: FastNoiseLite,
    rolling: FastNoiseLite,
    ridges: FastNoiseLite,
    dunes: FastNoiseLite,
    canyon: FastNoiseLite,
    tunnels: FastNoiseLite,
    tunnels2: FastNoiseLite,
    caverns: FastNoiseLite,
    cave_regions: FastNoiseLite,
    /// World height in voxels.
    height: f32,
    /// Water surface above the bottom, in voxels.
    pub water_level: f32,
}

impl TerrainModel {
    /// The fields for `seed` in a world `height` voxels tall.
    pub fn new(seed: u64, height: u32) -> Self {
        use FractalType::{FBm, Ridged};
        use NoiseType::{OpenSimplex2, OpenSimplex2S};
        let h = height as f32;
        TerrainModel {
            biome: noise(sub_seed(seed, 1), OpenSimplex2, 1.0 / 420.0, Some((FBm, 2))),
            temperature: noise(sub_seed(seed, 2), OpenSimplex2, 1.0 / 600.0, None),
            rolling: noise(sub_seed(seed, 3), OpenSimplex2S, 1.0 / 160.0, Some((FBm, 5))),
            ridges: noise(sub_seed(seed, 4), OpenSimplex2, 1.0 / 220.0, Some((Ridged, 5))),
            dunes: noise(sub_seed(seed, 5), OpenSimplex2, 1.0 / 48.0, Some((FBm, 2))),
            canyon: noise(sub_seed(seed, 6), OpenSimplex2, 1.0 / 300.0, Some((FBm, 2))),
            tunnels: noise(sub_seed(seed, 7), OpenSimplex2, 1.0 / 64.0, Some((FBm, 2))),
            tunnels2: noise(sub_seed(seed, 9), OpenSimplex2, 1.0 / 64.0, Some((FBm, 2))),
            caverns: noise(sub_seed(seed, 8), OpenSimplex2, 1.0 / 90.0, None),
            cave_regions: noise(sub_seed(seed, 10), OpenSimplex2, 1.0 / 250.0, None),
            height: h,
            water_level: (0.33 * h).floor() + 0.4,
        }
    }

    fn biome_height(&self, b: Biome, x: f32, z: f32) -> f32 {
        let h = self.height;
        match b {
            Biome::Dunes => {
                // Crests: folded noise gives sharp-topped ridges.
                let d = 1.0 - self.dunes.get_noise_2d(x, z * 0.6).abs();
                0.36 * h + 0.07 * h * d * d
            }
            Biome::Plains => 0.355 * h + 0.035 * h * self.rolling.get_noise_2d(x, z),
            Biome::Hills => 0.42 * h + 0.16 * h * self.rolling.get_noise_2d(x, z),
            Biome::Mountains => 0.42 * h + 0.55 * h * (self.ridges.get_noise_2d(x, z) * 0.5 + 0.5),
        }
    }

    /// The column at absolute `(x, z)`.
    pub fn column(&self, x: i32, z: i32) -> Column {
        let (xf, zf) = (x as f32, z as f32);
        let t = self.biome.get_noise_2d(xf, zf);
        // Blend the two biomes around t with a smoothstep so borders have no cliffs.
        let i = ANCHORS.iter().position(|a| t < a.0).unwrap_or(ANCHORS.len());
        let (height, biome) = if i == 0 {
            (self.biome_height(ANCHORS[0].1, xf, zf), ANCHORS[0].1)
        } else if i == ANCHORS.len() {
            (self.biome_height(ANCHORS[i - 1].1, xf, zf), ANCHORS[i - 1].1)
        } else {
            let (a, b) = (ANCHORS[i - 1], ANCHORS[i]);
            let s = smoothstep((t - a.0) / (b.0 - a.0));
            let h = self.biome_height(a.1, xf, zf) * (1.0 - s) + self.biome_height(b.1, xf, zf) * s;
            (h, if s < 0.5 { a.1 } else { b.1 })
        };
        // Canyons cut the low biomes; their floors drop below the water level and become rivers.
        let low = match biome {
            Biome::Dunes | Biome::Plains => 1.0,
            Biome::Hills => 0.5,
            Biome::Mountains => 0.0,
        };
        let c = self.canyon.get_noise_2d(xf, zf).abs();
        let canyon = if c < 0.07 { smoothstep((0.07 - c) / 0.05) * low } else { 0.0 };
        // At least one voxel of ground, at most one under the top (a world under two voxels tall
        // is one layer of ground).
        let height = (height - canyon * 0.2 * self.height).clamp(1.0, (self.height - 1.0).max(1.0));
        Column { height, biome, canyon, cold: self.temperature.get_noise_2d(xf, zf) < -0.35 }
    }

    /// The cave field at absolute `(x, y, z)`: positive inside caves. Sampled on a coarse grid and
    /// interpolated by the generator.
    pub fn cave_field(&self, x: f32, y: f32, z: f32) -> f32 {
        // A tunnel is where two noise fields are both near zero: the crossing of two sheets is a tube.
        let a = self.tunnels.get_noise_3d(x, y * 1.5, z).abs();
        let b = self.tunnels2.get_noise_3d(x, y * 1.5, z).abs();
        let tunnel = 0.06 - a.max(b);
        let cavern = self.caverns.get_noise_3d(x, y * 2.0, z) - 0.72;
        // Cave systems cluster: outside cave regions the field is pushed negative.
        let region = ((self.cave_regions.get_noise_3d(x, y * 0.5, z) + 0.1) * 0.5).min(0.0);
        tunnel.max(cavern) + region
    }

    /// The voxel at height `y` (voxels above the bottom) in a column with the given slope and cave
    /// field value.
    #[inline]
    pub fn voxel(&self, col: &Column, slope: f32, y: i32, cave: f32) -> Voxel {
        let yf = y as f32;
        let terrain = (col.height - yf).clamp(0.0, 1.0);
        // Caves fade out near the bottom and just under the surface, so few break through.
        let fade = ((col.height - yf - 3.0) * 0.25).clamp(0.0, 1.0) * ((yf - 3.0) * 0.5).clamp(0.0, 1.0);
        // carve: how much of the voxel the cave leaves (1 = untouched); one voxel of transition.
        let carve = 1.0 - fade * (1.0 - (0.5 - cave / 0.035).clamp(0.0, 1.0));
        let occupancy = terrain.min(carve);
        let water = (self.water_level - yf).clamp(0.0, 1.0);
        if occupancy >= 0.5 || (occupancy > 0.0 && (water == 0.0 || carve < 1.0)) {
            return Voxel::with_occupancy(self.material(col, slope, y), occupancy);
        }
        if water > 0.0 && carve == 1.0 {
            let frozen = col.cold && yf + 1.0 >= self.water_level;
            return Voxel::with_occupancy(
                if frozen { m::ICE } else { m::WATER },
                if frozen { 1.0 } else { water },
            );
        }
        Voxel::AIR
    }

    /// Material by biome, depth below the surface and slope.
    fn material(&self, col: &Column, slope: f32, y: i32) -> Material {
        let depth = col.height - y as f32;
        let h = self.height;
        if (y as f32) < 0.1 * h {
            return m::BASALT;
        }
        let wl = self.water_level;
        if col.canyon > 0.2 && slope > 0.7 && depth < 8.0 {
            // Canyon walls show strata where they are exposed.
            return [m::SANDSTONE, m::SANDSTONE, m::ROCK, m::SANDSTONE, m::GRAVEL]
                [(y / 3).rem_euclid(5) as usize];
        }
        if col.height < wl - 2.5 {
            return if depth < 2.0 {
                m::MUD
            } else if depth < 4.0 {
                m::GRAVEL
            } else {
                m::ROCK
            };
        }
        if col.height < wl + 1.5 && col.biome != Biome::Mountains {
            return if depth < 3.0 { m::SAND } else { m::ROCK };
        }
        match col.biome {
            Biome::Dunes => {
                if depth < 6.0 {
                    m::SAND
                } else if depth < 14.0 {
                    m::SANDSTONE
                } else {
                    m::ROCK
                }
            }
            Biome::Mountains if col.height > 0.72 * h && slope < 1.2 => {
                if depth < 2.0 {
                    m::SNOW
                } else {
                    m::ROCK
                }
            }
            Biome::Mountains if slope > 0.9 => {
                if depth < 6.0 {
                    m::SLATE
                } else {
                    m::ROCK
                }
            }
            _ if slope > 1.3 => m::ROCK,
            _ => {
                if depth < 1.0 {
                    m::GRASS
                } else if depth < 4.0 {
                    m::DIRT
                } else {
                    m::ROCK
                }
            }
        }
    }
}

#[inline]
fn smoothstep(t: f32) -> f32 {
    let t = t.clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}
