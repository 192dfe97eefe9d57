//! `voxterra info FILE`: what a world file holds.

use anyhow::Context;
use std::path::PathBuf;
use voxterra::codec::{ReadLimits, WorldReader};
use voxterra::core::Voxel;

/// Arguments of `voxterra info`.
#[derive(clap::Args, Debug)]
pub(crate) struct InfoArgs {
    /// The world file.
    file: PathBuf,
    /// Print one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(serde::Serialize, Debug)]
struct MaterialCount {
    id: u8,
    name: String,
    voxels: u64,
}

#[derive(serde::Serialize, Debug)]
struct Info {
    file: String,
    bytes: u64,
    chunks: usize,
    chunk_size: u32,
    raw_bytes: u64,
    ratio: f64,
    non_empty_voxels: u64,
    bytes_per_non_empty_voxel: f64,
    materials: Vec<MaterialCount>,
}

pub(crate) fn run(args: &InfoArgs) -> anyhow::Result<()> {
    let mut reader = WorldReader::open_path(&args.file, ReadLimits::default())
        .with_context(|| format!("opening {}", args.file.display()))?;
    let mut counts = [0u64; 64];
    let mut voxels = vec![Voxel::AIR; reader.chunk_voxels()];
    let keys: Vec<_> = reader.entries().iter().map(|e| e.key).collect();
    for key in &keys {
        reader.read_chunk(*key, &mut voxels).with_context(|| format!("reading chunk {key:?}"))?;
        for v in &voxels {
            counts[v.material().id() as usize] += 1;
        }
    }
    let table = reader.material_table();
    let non_empty: u64 = counts[1..].iter().sum();
    let raw = keys.len() as u64 * reader.chunk_voxels() as u64 * 2;
    let info = Info {
        file: args.file.display().to_string(),
        bytes: reader.file_len(),
        chunks: keys.len(),
        chunk_size: voxterra::core::StoreChunkKey::SIZE as u32,
        raw_bytes: raw,
        ratio: raw as f64 / reader.file_len() as f64,
        non_empty_voxels: non_empty,
        bytes_per_non_empty_voxel: if non_empty == 0 {
            0.0
        } else {
            reader.file_len() as f64 / non_empty as f64
        },
        materials: table
            .iter()
            .filter(|(m, _)| counts[m.id() as usize] > 0)
            .map(|(m, e)| MaterialCount { id: m.id(), name: e.name.clone(), voxels: counts[m.id() as usize] })
            .collect(),
    };
    if args.json {
        println!("{}", serde_json::to_string(&info)?);
        return Ok(());
    }
    println!("file       {} ({} bytes)", info.file, info.bytes);
    println!("chunks     {} of {}^3", info.chunks, info.chunk_size);
    println!("ratio      {:.1}x smaller than raw 2-byte voxels ({} bytes)", info.ratio, info.raw_bytes);
    println!(
        "non-empty  {} voxels, {:.4} bytes each on disk",
        info.non_empty_voxels, info.bytes_per_non_empty_voxel
    );
    println!("materials");
    for m in &info.materials {
        println!("  {:>2} {:<12} {:>12}", m.id, m.name, m.voxels);
    }
    Ok(())
}
