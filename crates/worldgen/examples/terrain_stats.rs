//! Prints the height and biome distribution of a world's columns: for tuning the terrain model.
use voxterra_worldgen::{Biome, TerrainModel};

fn main() {
    let seed = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let size = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(512);
    let t = TerrainModel::new(seed, 128);
    let mut hist = [0u32; 13];
    let mut biomes = [0u32; 4];
    let (mut canyon, mut cold, mut under) = (0, 0, 0);
    for z in 0..size {
        for x in 0..size {
            let c = t.column(x, z);
            hist[(c.height / 10.0) as usize] += 1;
            biomes[match c.biome {
                Biome::Dunes => 0,
                Biome::Plains => 1,
                Biome::Hills => 2,
                Biome::Mountains => 3,
            }] += 1;
            canyon += (c.canyon > 0.2) as u32;
            cold += c.cold as u32;
            under += (c.height < t.water_level) as u32;
        }
    }
    println!("water level {}", t.water_level);
    println!("heights by 10s: {hist:?}");
    println!("dunes/plains/hills/mountains: {biomes:?}; canyon {canyon}, cold {cold}, under water {under}");
}
