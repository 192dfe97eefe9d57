//! `voxterra info FILE`: what a terrain file holds.

use anyhow::Context;
use std::path::PathBuf;
use voxterra::codec::{ReadLimits, TerrainFileReader};
use voxterra::core::Voxel;

/// Arguments of `voxterra info`.
#[derive(clap::Args, Debug)]
pub(crate) struct InfoArgs {
    /// The terrain file or chunk database.
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

#[derive(serde::Serialize, Debug, Clone, Copy)]
struct Bounds {
    min: [i32; 3],
    size: [u32; 3],
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
    /// The box of the non-empty voxels: its lowest corner and its size (absent when all is air).
    bounds: Option<Bounds>,
    bytes_per_non_empty_voxel: f64,
    materials: Vec<MaterialCount>,
}

pub(crate) fn run(args: &InfoArgs) -> anyhow::Result<()> {
    if crate::db_cmd::is_db(&args.file) {
        return crate::db_cmd::info(&args.file, args.json);
    }
    let mut reader = TerrainFileReader::open_path(&args.file, ReadLimits::default())
        .with_context(|| format!("opening {}", args.file.display()))?;
    let mut counts = [0u64; 64];
    let mut voxels = vec![Voxel::AIR; reader.chunk_voxels()];
    let keys: Vec<_> = reader.entries().iter().map(|e| e.key).collect();
    let (mut lo, mut hi) = ([i64::MAX; 3], [i64::MIN; 3]);
    for key in &keys {
        reader.read_chunk(*key, &mut voxels).with_context(|| format!("reading chunk {key:?}"))?;
        let side = voxterra::core::StoreChunkKey::SIZE as usize;
        let base = [key.x, key.y, key.z].map(|c| i64::from(c) * side as i64);
        for (i, v) in voxels.iter().enumerate() {
            counts[v.material().id() as usize] += 1;
            if !v.is_air() {
                // Buffer order: X, then Z, then Y.
                let p = [i % side, i / (side * side), i / side % side];
                for a in 0..3 {
                    let c = base[a] + p[a] as i64;
                    (lo[a], hi[a]) = (lo[a].min(c), hi[a].max(c));
                }
            }
        }
    }
    let bounds = (lo[0] <= hi[0])
        .then(|| Bounds { min: lo.map(|c| c as i32), size: [0, 1, 2].map(|a| (hi[a] - lo[a] + 1) as u32) });
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
        bounds,
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
    match info.bounds {
        Some(b) => println!(
            "world      {}x{}x{} voxels from ({}, {}, {})",
            b.size[0], b.size[1], b.size[2], b.min[0], b.min[1], b.min[2]
        ),
        None => println!("world      all air"),
    }
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
