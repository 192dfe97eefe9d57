//! Why rows are allocated: counts the level-0 rows of a world by what keeps them from packing
//! (fractional occupancy or mixed materials) and by height. A tool for tuning memory.
//!
//! `cargo run --release -p voxterra-worldgen --example row_census [SIZE_XZ]`

use voxterra_core::materials;
use voxterra_voxel_store::{CHUNK_SIZE, VoxelStore};
use voxterra_worldgen::{GenParams, generate};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let size = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(512);
    let params = GenParams::new(1, [size, 128, size]);
    let mut store = VoxelStore::new();
    generate(&params, &mut store, |_, _| {})?;
    let s = store.stats();
    println!("{s:#?}\nbytes per non-empty voxel {:.3}", s.bytes_per_non_empty_voxel());
    let (mut fractional, mut mixed, mut water) = (0, 0, 0);
    let mut by_y = vec![0u32; params.size[1] as usize];
    for key in store.chunk_keys() {
        let Some(c) = store.chunk(key) else { continue };
        for y in 0..CHUNK_SIZE {
            for z in 0..CHUNK_SIZE {
                if c.packed_row(y, z).is_some() {
                    continue;
                }
                let wy = key.y as usize * CHUNK_SIZE + y;
                if let Some(n) = by_y.get_mut(wy) {
                    *n += 1;
                }
                let row = c.row(y, z);
                if row.iter().any(|v| !v.has_default_occupancy()) {
                    fractional += 1
                } else {
                    mixed += 1
                }
                water +=
                    row.iter().any(|v| v.material() == materials::WATER && !v.has_default_occupancy()) as u32;
            }
        }
    }
    println!(
        "allocated rows: {fractional} with fractional occupancy, {mixed} with mixed materials only, {water} with a water surface"
    );
    println!("allocated rows by height: {by_y:?}");
    Ok(())
}
