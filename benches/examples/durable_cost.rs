//! What keeping a world in a chunk database costs, on the default world: its bytes against the
//! world file's, a cold chunk load (read and decode) from it, and an edit committed at once, in
//! groups of 16, or kept in memory only.
//! `cargo run --release -p voxterra-benches --example durable_cost -- [EDITS]`
use std::time::Instant;
use voxterra::chunk_db::{ChunkDb, Durability, RedbChunkDb};
use voxterra::core::nalgebra::Point3;
use voxterra::core::{MaterialTable, Voxel, materials};
use voxterra::decode_chunk;
use voxterra::{Brush, BrushOp, BrushShape, DurableTerrain, Terrain, TerrainConfig};

fn percentiles(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[(v.len() * 99 / 100).min(v.len() - 1)])
}

fn brush(i: usize) -> Brush {
    let f = i as f32;
    let center = Point3::new(40.0 + (f * 37.3) % 430.0, 50.0 + (f * 7.7) % 30.0, 40.0 + (f * 53.1) % 430.0);
    let op = if i.is_multiple_of(2) { BrushOp::Subtract } else { BrushOp::Add(materials::ROCK) };
    Brush { shape: BrushShape::Sphere { center, radius: 3.0 }, op }
}

fn main() {
    let edits: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(400);
    let dir = std::env::temp_dir().join(format!("voxterra-durable-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let w = voxterra_benches::world::bench_world(false);
    let table = MaterialTable::default();
    let non_empty = w.store.stats().non_empty_voxels as f64;
    let file = dir.join("w.vxt");
    let start = Instant::now();
    let saved = voxterra::save(&file, &w.store, &table, |_, _| {}).expect("the world file");
    let file_s = start.elapsed().as_secs_f64();
    let path = dir.join("w.redb");
    let db = RedbChunkDb::create(&path).expect("a database");
    let start = Instant::now();
    voxterra::write_world(&w.store, &table, 1.0, 0, &db, |_, _| {}).expect("the world written");
    let db_s = start.elapsed().as_secs_f64();
    let db_bytes = db.file_len().expect("its size");
    println!(
        "bytes per non-empty voxel: database {:.4} ({db_bytes} B, written in {db_s:.2} s), world file {:.4} ({} B, {file_s:.2} s)",
        db_bytes as f64 / non_empty,
        saved.bytes as f64 / non_empty,
        saved.bytes
    );
    drop(db);
    // Cold loads: a fresh handle, chunks in a scattered order.
    let db = RedbChunkDb::open(&path).expect("the database");
    let keys = db.keys().expect("its keys");
    let known = table.solid_mask() | table.liquid_mask() | 1;
    let mut buf = vec![Voxel::AIR; 32 * 32 * 32];
    let mut loads = Vec::new();
    for i in 0..keys.len().min(2000) {
        let k = keys[(i * 7919) % keys.len()];
        let start = Instant::now();
        let record = db.chunk(k).expect("a read").expect("a stored chunk");
        decode_chunk(k, &record, &mut buf, known).expect("a good record");
        loads.push(start.elapsed().as_secs_f64() * 1e6);
    }
    let (p50, p99) = percentiles(loads);
    println!("cold chunk load (read + decode): p50 {p50:.1} us, p99 {p99:.1} us");
    drop(db);
    // Edits: in memory, committed at once, committed in groups of 16.
    let mut memory =
        Terrain::from_store(w.store.clone(), table.clone(), TerrainConfig::default()).expect("a terrain");
    let mut times = Vec::new();
    for i in 0..edits {
        let start = Instant::now();
        memory.apply_brush(&brush(i)).expect("an edit");
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let (m50, m99) = percentiles(times);
    println!("edit in memory: p50 {m50:.3} ms, p99 {m99:.3} ms");
    for (name, group) in [("committed at once", 1usize), ("committed in groups of 16", 16)] {
        let db = RedbChunkDb::open(&path).expect("the database");
        let durability = if group == 1 { Durability::Immediate } else { Durability::Deferred };
        let mut d = DurableTerrain::open(db, TerrainConfig::default(), durability).expect("the world");
        let mut times = Vec::new();
        for i in 0..edits {
            let start = Instant::now();
            d.apply_brush(&brush(i)).expect("an edit");
            if (i + 1) % group == 0 && group > 1 {
                d.flush().expect("a flush");
            }
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
        let total: f64 = times.iter().sum();
        let (p50, p99) = percentiles(times);
        println!("edit {name}: p50 {p50:.3} ms, p99 {p99:.3} ms, mean {:.3} ms", total / edits as f64);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
