//! Writes the seed corpus for the fuzz targets into fuzz/corpus/: small valid inputs the fuzzer
//! mutates from. Run once when the formats change: `cargo run -p voxterra-codec --example fuzz_seeds`.

use voxterra_codec::{Compression, TerrainFileWriter, WriteOptions, rle};
use voxterra_core::{MaterialTable, Region, Voxel, VoxelPos, materials as m};
use voxterra_voxel_store::VoxelStore;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let write = |target: &str, name: &str, bytes: &[u8]| std::fs::write(root.join(target).join(name), bytes);

    // decode_rle: dims (n % 16 + 1 each) then a stream.
    let box_of = |voxels: &[Voxel]| {
        let mut b = Vec::new();
        rle::encode(voxels, &mut b);
        b
    };
    let mut s = vec![3, 3, 3]; // 4x4x4
    s.extend(box_of(
        &[vec![Voxel::full(m::ROCK); 40], vec![Voxel::new(m::GRASS, 100); 8], vec![Voxel::AIR; 16]].concat(),
    ));
    write("decode_rle", "layers", &s)?;
    let mut s = vec![15, 0, 0]; // 16x1x1
    s.extend(box_of(&(0..16).map(|i| Voxel::new(m::WATER, i * 16)).collect::<Vec<_>>()));
    write("decode_rle", "gradient", &s)?;
    write("decode_rle", "bad_air", &[0, 0, 0, 0x40, 7])?;

    // roundtrip: voxel byte pairs.
    write("roundtrip", "mixed", &[3, 255, 3, 255, 3, 255, 1, 17, 0, 0, 0, 9, 7, 128, 7, 128])?;
    write("roundtrip", "run", &[4u8, 255].repeat(300))?;

    // open_world: real files, both compressors.
    let mut store = VoxelStore::new();
    store.fill(&Region::from_min_size(VoxelPos::new(-3, 0, 0), [40, 4, 6])?, Voxel::full(m::SAND))?;
    store.set(VoxelPos::new(1, 4, 1), Voxel::new(m::GRASS, 77))?;
    for (name, c) in [("lz4", Compression::Lz4), ("plain", Compression::None)] {
        let mut w =
            TerrainFileWriter::new(Vec::new(), &MaterialTable::default(), WriteOptions { compression: c })?;
        for k in store.chunk_keys() {
            w.write_chunk(k, &store)?;
        }
        write("open_world", name, &w.finish()?.0)?;
    }
    Ok(())
}
