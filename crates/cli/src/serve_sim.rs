//! `voxterra serve-sim`: one server terrain with live edits and three simulated clients moving
//! through the world in one process, through `voxterra::replication`: bytes per tick, time to full
//! detail around each client, and a hash check that every client's full-resolution regions equal
//! the server's.

use crate::demo::scene::{Fnv, Rng};
use crate::gen_cmd::{parse_size, progress_bar};
use anyhow::Context;
use std::time::Instant;
use voxterra::core::nalgebra::{Point3, Vector3};
use voxterra::core::{Ray, Region, Voxel, VoxelRead, materials};
use voxterra::replication::{ClientId, ReplicaClient, ReplicationConfig, ReplicationServer, client_terrain};
use voxterra::worldgen::GenParams;
use voxterra::{Brush, BrushOp, BrushShape, Terrain, TerrainConfig, VoxelScale};

/// Arguments of `voxterra serve-sim`.
#[derive(clap::Args, Debug)]
pub(crate) struct ServeSimArgs {
    /// World size, X×Y×Z voxels.
    #[arg(long, default_value = "512x128x512", value_parser = parse_size)]
    size: [u32; 3],
    /// Seed of the world, the edits and the clients' paths.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Server ticks at 20 Hz.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    ticks: u32,
    /// Bytes the server may send each client per tick: at least 16384, so the largest message (a
    /// 16³ region of all-different voxels) fits.
    #[arg(long, default_value_t = 32 * 1024, value_parser = clap::value_parser!(u64).range(16384..=1 << 30))]
    budget: u64,
    /// Full resolution within this distance of a client (world units, up to 1e6); mips beyond, to
    /// 8×.
    #[arg(long, default_value_t = 48.0)]
    full_radius: f32,
    /// Print the report as one JSON object (no progress bar).
    #[arg(long)]
    json: bool,
}

/// Ticks per second.
const HZ: f64 = 20.0;

#[derive(serde::Serialize, Debug)]
struct ClientReport {
    bytes: u64,
    bytes_per_tick_mean: f64,
    bytes_per_tick_max: u64,
    messages: u64,
    /// Seconds until every region inside the world within half the full radius of the client was
    /// at full resolution, from its first tick (`null` if never).
    seconds_to_full_detail: Option<f64>,
    /// Ticks, after the first full detail, on which the client's surroundings were not all full.
    ticks_not_ready: u64,
    regions_full: usize,
    hash: String,
    /// Every region of the world within the full radius of its last viewer is ready.
    holds_what_it_should: bool,
    matches_server: bool,
}

#[derive(serde::Serialize, Debug)]
struct Report {
    size: [u32; 3],
    seed: u64,
    ticks: u32,
    budget: u64,
    edits: u64,
    server_ms_per_tick: f64,
    clients: Vec<ClientReport>,
}

/// FNV-1a over the voxels of `regions` in `t`.
fn hash(t: &Terrain, regions: &[Region]) -> u64 {
    let mut h = Fnv::new();
    let mut v = Vec::new();
    for r in regions {
        v.resize(r.len().unwrap_or(0), Voxel::AIR);
        if t.store().read_box(r, &mut v).is_err() {
            continue;
        }
        for x in &v {
            h.bytes(&x.to_bits().to_le_bytes());
        }
    }
    h.finish()
}

/// The world's voxels within `radius` world units of `v` (a box), if any.
fn near(t: &Terrain, v: Point3<f32>, radius: f32) -> Option<Region> {
    near_in(t.extent()?, t.scale(), v, radius)
}

/// The voxels of `extent` within `radius` world units of `v` (a box), if any.
pub(crate) fn near_in(extent: Region, scale: VoxelScale, v: Point3<f32>, radius: f32) -> Option<Region> {
    let clamp = |c: f32, a: usize| {
        scale.length_to_voxels(c).floor().clamp(extent.min()[a] as f32, extent.max()[a] as f32) as i32
    };
    let lo = Point3::new(clamp(v.x - radius, 0), clamp(v.y - radius, 1), clamp(v.z - radius, 2));
    let hi = Point3::new(clamp(v.x + radius, 0) + 1, clamp(v.y + radius, 1) + 1, clamp(v.z + radius, 2) + 1);
    Region::new(lo, hi).ok()?.intersection(&extent)
}

/// The distance from `v` to a voxel box (world units).
fn distance(v: Point3<f32>, r: &Region, scale: VoxelScale) -> f32 {
    let b = scale.region_to_world(r, 0.0);
    v.coords.zip_zip_map(&b.mins.coords, &b.maxs.coords, |p, l, h| (l - p).max(p - h).max(0.0)).norm()
}

/// Client `i`'s viewer at tick `k`: a circle around the world's middle, each client at its own
/// radius and speed (4 to 12 m/s), above the ground.
fn viewer(t: &Terrain, size: [u32; 3], i: usize, k: u32) -> Point3<f32> {
    let (cx, cz) = (size[0] as f32 * 0.5, size[2] as f32 * 0.5);
    let radius = (0.15 + 0.12 * i as f32) * size[0].min(size[2]) as f32;
    let speed = 4.0 + 4.0 * i as f32;
    let angle = i as f32 * 2.1 + speed * k as f32 / HZ as f32 / radius;
    let (x, z) = (cx + radius * angle.cos(), cz + radius * angle.sin());
    let down = Ray::new(Point3::new(x, size[1] as f32 + 8.0, z), -Vector3::y());
    let y = t.cast_ray(&down, 1e4).ok().flatten().map_or(size[1] as f32 * 0.5, |h| h.point.y);
    Point3::new(x, y + 2.0, z)
}

pub(crate) fn run(args: &ServeSimArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.full_radius.is_finite() && args.full_radius > 0.0 && args.full_radius <= 1e6,
        "--full-radius must be positive and at most 1e6"
    );
    let params = GenParams::new(args.seed, args.size);
    let mut server = Terrain::generate(&params, TerrainConfig::default()).context("generating the world")?;
    let r = args.full_radius;
    let config =
        ReplicationConfig { full_radius: r, mip_radii: [2.0 * r, 4.0 * r, 8.0 * r], ..Default::default() };
    let mut srv = ReplicationServer::new(config);
    let mut clients: Vec<(ClientId, ReplicaClient)> = (0..3)
        .map(|_| {
            let c = client_terrain(server.materials().clone(), server.voxel_size())?;
            Ok((srv.add_client(&server), ReplicaClient::new(c)))
        })
        .collect::<anyhow::Result<_>>()?;
    let mut rng = Rng::new(args.seed ^ 0x5eed);
    let n = clients.len();
    let (mut bytes, mut max_tick, mut messages) = (vec![0u64; n], vec![0u64; n], vec![0u64; n]);
    let mut ready_at: Vec<Option<u32>> = vec![None; n];
    let mut not_ready = vec![0u64; n];
    let mut edits = 0u64;
    let mut server_time = 0.0f64;
    let bar = progress_bar(args.ticks as u64, "serving", "ticks", args.json)?;
    for k in 0..args.ticks {
        // Live edits: every fifth tick a crater or a hill near a client, sometimes undone.
        if k % 5 == 4 {
            let who = (rng.range(0.0, 1.0) * n as f32) as usize % n;
            let v = viewer(&server, args.size, who, k);
            let at = v + Vector3::new(rng.range(0.0, 1.0) - 0.5, -2.0, rng.range(0.0, 1.0) - 0.5) * 16.0;
            let op =
                if rng.range(0.0, 1.0) < 0.5 { BrushOp::Subtract } else { BrushOp::Add(materials::ROCK) };
            if rng.range(0.0, 1.0) < 0.15 {
                let _ = server.undo();
            } else {
                server.apply_brush(&Brush { shape: BrushShape::Sphere { center: at, radius: 4.0 }, op })?;
            }
            edits += 1;
        }
        for (i, (id, c)) in clients.iter_mut().enumerate() {
            let v = viewer(&server, args.size, i, k);
            srv.set_viewers(*id, &[v])?;
            let start = Instant::now();
            let msgs = srv.tick(&server, *id, args.budget as usize)?;
            server_time += start.elapsed().as_secs_f64();
            let sent: u64 = msgs.iter().map(|m| m.len() as u64).sum();
            bytes[i] += sent;
            max_tick[i] = max_tick[i].max(sent);
            messages[i] += msgs.len() as u64;
            for m in &msgs {
                c.apply(m).context("a client refused a server message")?;
            }
            // Full detail: every region within half the full radius, inside the world.
            let ready = near(&server, v, 0.5 * r).is_some_and(|b| c.is_ready(&b));
            match (ready, ready_at[i]) {
                (true, None) => ready_at[i] = Some(k),
                (false, Some(_)) => not_ready[i] += 1,
                _ => {}
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    // Deliver what is still due, then compare every full region the server believes each holds.
    let mut reports = Vec::with_capacity(n);
    for (i, (id, c)) in clients.iter_mut().enumerate() {
        loop {
            let msgs = srv.tick(&server, *id, usize::MAX)?;
            if msgs.is_empty() {
                break;
            }
            for m in &msgs {
                c.apply(m)?;
            }
        }
        let regions: Vec<Region> =
            srv.full_regions(*id)?.iter().map(|k| k.region()).collect::<Result<_, _>>()?;
        // What it must hold: every region of the world within the full radius of its viewer.
        let v = viewer(&server, args.size, i, args.ticks - 1);
        let complete = near(&server, v, r).is_some_and(|b| {
            voxterra::replication::RegionKey::range(&b).is_some_and(|keys| {
                keys.iter().all(|k| {
                    let kr = k.region().expect("a key of the world");
                    distance(v, &kr, server.scale()) > r || c.is_ready(&kr)
                })
            })
        });
        let (ours, theirs) = (hash(c.terrain(), &regions), hash(&server, &regions));
        reports.push(ClientReport {
            bytes: bytes[i],
            bytes_per_tick_mean: bytes[i] as f64 / args.ticks as f64,
            bytes_per_tick_max: max_tick[i],
            messages: messages[i],
            seconds_to_full_detail: ready_at[i].map(|t| (t + 1) as f64 / HZ),
            ticks_not_ready: not_ready[i],
            regions_full: regions.len(),
            hash: format!("{ours:016x}"),
            holds_what_it_should: complete,
            matches_server: ours == theirs,
        });
    }
    let report = Report {
        size: args.size,
        seed: args.seed,
        ticks: args.ticks,
        budget: args.budget,
        edits,
        server_ms_per_tick: server_time * 1e3 / args.ticks as f64,
        clients: reports,
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print_table(&report);
    }
    anyhow::ensure!(report.clients.iter().all(|c| c.matches_server), "a client differs from the server");
    anyhow::ensure!(
        report.clients.iter().all(|c| c.holds_what_it_should && c.regions_full > 0),
        "a client holds less than the full radius around it"
    );
    Ok(())
}

fn print_table(r: &Report) {
    println!(
        "voxterra serve-sim: world {}x{}x{} seed {}, {} ticks at 20 Hz, {} bytes a client a tick, {} edits, server {:.2} ms a tick",
        r.size[0], r.size[1], r.size[2], r.seed, r.ticks, r.budget, r.edits, r.server_ms_per_tick
    );
    println!(
        "{:<8}{:>14}{:>14}{:>14}{:>12}{:>18}{:>12}{:>10}  {:<18}= server, all near",
        "client",
        "bytes",
        "bytes/tick",
        "max/tick",
        "messages",
        "full detail (s)",
        "not ready",
        "regions",
        "hash",
    );
    for (i, c) in r.clients.iter().enumerate() {
        let detail = c.seconds_to_full_detail.map_or("never".to_string(), |s| format!("{s:.2}"));
        println!(
            "{:<8}{:>14}{:>14.0}{:>14}{:>12}{:>18}{:>12}{:>10}  {:<18}{}",
            i,
            c.bytes,
            c.bytes_per_tick_mean,
            c.bytes_per_tick_max,
            c.messages,
            detail,
            c.ticks_not_ready,
            c.regions_full,
            c.hash,
            if c.matches_server { "yes" } else { "NO" },
        );
        if !c.holds_what_it_should {
            println!("        client {i} lacks regions within the full radius");
        }
    }
}
