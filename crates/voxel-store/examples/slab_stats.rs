//! Prints the memory statistics of a flat slab: a quick look at where the bytes go.
use voxterra_core::{Region, Voxel, VoxelPos, materials};
use voxterra_voxel_store::VoxelStore;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut store = VoxelStore::new();
    store.fill(
        &Region::from_min_size(VoxelPos::new(-40, 0, -40), [80, 10, 80])?,
        Voxel::full(materials::ROCK),
    )?;
    println!("{:#?}", store.stats());
    Ok(())
}
