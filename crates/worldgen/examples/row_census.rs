//! Why rows are allocated: counts level-0 rows of the default world by what keeps them from packing.
use voxterra_core::{Region, VoxelPos};
use voxterra_voxel_store::{CHUNK_SIZE, VoxelStore};
use voxterra_worldgen::{WorldParams, generate};

fn main() {
    let size = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(512);
    let params = WorldParams::new(1, [size, 128, size]);
    let mut store = VoxelStore::new();
    generate(&params, &mut store, |_, _| {}).unwrap();
    let s = store.memory_stats();
    println!("{s:#?}  bpv {:.3}", s.bytes_per_non_empty_voxel());
    let (mut frac, mut mixed, mut water_frac, mut air_mixed) = (0, 0, 0, 0);
    let mut by_y = vec![0u32; 128];
    for key in store.chunk_keys() {
        let c = store.chunk(key).unwrap();
        for y in 0..CHUNK_SIZE {
            for z in 0..CHUNK_SIZE {
                if c.packed_row(y, z).is_some() {
                    continue;
                }
                by_y[key.y as usize * 32 + y] += 1;
                let row = c.row(y, z);
                let f = row.iter().any(|v| !v.has_default_occupancy());
                if f {
                    frac += 1
                } else {
                    mixed += 1
                }
                if row.iter().any(|v| v.material().id() == 7 && !v.has_default_occupancy()) {
                    water_frac += 1
                }
                if !f && row.iter().any(|v| v.is_air()) {
                    air_mixed += 1
                }
            }
        }
    }
    println!(
        "allocated rows with fractional occupancy {frac}, only mixed materials {mixed} (of which with air {air_mixed}); with fractional water {water_frac}"
    );
    println!("allocated rows by y: {by_y:?}");
    let _ = (Region::from_min_size(VoxelPos::origin(), [1, 1, 1]), ());
}
