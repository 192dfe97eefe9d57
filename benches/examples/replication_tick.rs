//! A replication server's tick for many clients circling over the default world, as the network
//! server runs it: the time of one tick for all of them, once they hold their surroundings. A
//! target for `perf record` or callgrind.
//! With EDITS a tick (default 3: 64 clients making one a second at 20 Hz), each a sphere of
//! radius 2 under a client, carved or filled in turn.
//! `cargo run --release -p voxterra-benches --example replication_tick -- [CLIENTS] [TICKS] [EDITS]`
use std::time::Instant;
use voxterra::replication::{ReplicationConfig, ReplicationServer};
use voxterra::{Brush, BrushOp, BrushShape, Terrain, TerrainConfig};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{MaterialTable, materials};

fn main() {
    let mut args = std::env::args().skip(1);
    let clients: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(64);
    let ticks: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let edits: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let w = voxterra_benches::world::bench_world(false);
    let mut t =
        Terrain::from_store(w.store, MaterialTable::default(), TerrainConfig::default()).expect("terrain");
    let mut server = ReplicationServer::new(ReplicationConfig::default());
    let ids: Vec<_> = (0..clients).map(|_| server.add_client(&t)).collect();
    let viewer = |i: usize, k: usize| {
        let fi = i as f32;
        let (cx, cz) = (128.0 + 256.0 * (fi * 0.618).fract(), 128.0 + 256.0 * (fi * 0.382).fract());
        let a = k as f32 * 0.05 * (4.0 + 8.0 * (fi * 0.754).fract()) / 24.0;
        Point3::new(cx + 24.0 * a.cos(), 76.0, cz + 24.0 * a.sin())
    };
    let mut times = Vec::new();
    let mut bytes = 0usize;
    for k in 0..ticks {
        for e in 0..edits {
            let v = viewer((k * edits + e) % clients, k);
            let op = if (k + e) % 2 == 0 { BrushOp::Subtract } else { BrushOp::Add(materials::ROCK) };
            let center = Point3::new(v.x, 56.0, v.z);
            t.apply_brush(&Brush { shape: BrushShape::Sphere { center, radius: 2.0 }, op }).expect("an edit");
        }
        let start = Instant::now();
        for (i, &id) in ids.iter().enumerate() {
            server.set_viewers(id, &[viewer(i, k)]).expect("a client");
        }
        for msgs in server.tick_clients(&t, &ids, 64 << 10) {
            bytes += msgs.expect("a tick").iter().map(Vec::len).sum::<usize>();
        }
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let steady = &mut times[ticks / 2..];
    steady.sort_by(f64::total_cmp);
    println!(
        "{clients} clients: steady tick p50 {:.2} ms, p99 {:.2} ms; {bytes} bytes in all",
        steady[steady.len() / 2],
        steady[steady.len() * 99 / 100]
    );
}
