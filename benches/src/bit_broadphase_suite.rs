//! Suite `bit-broadphase`: box queries against the dilated masks, beside a brute-force scan of the
//! same dilated voxels (a dense flag array dilated on its own); candidate chunks against a plain
//! chunk-AABB broadphase; memory; rebuild speed and thread scaling.

use crate::harness::{Budget, Metric, Report, compare};
use crate::world::{Rng, bench_world};
use std::time::Instant;
use voxterra_bit_broadphase::{BitBroadphase, PHYS_SHIFT};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Aabb, MaterialTable, PhysicsChunkKey, Region, VoxelRead};

const PEER: &str = "brute force";

/// Dense per-voxel flags (bit 0 solid, bit 1 water) of the world, dilated by one voxel in all 26
/// directions with three separable passes: independent of the crate's bit tricks.
struct DenseFlags {
    region: Region,
    flags: Vec<u8>,
}

impl DenseFlags {
    fn new(source: &impl VoxelRead, region: Region, table: &MaterialTable) -> Self {
        let [sx, sy, sz] = region.size().map(|v| v as usize);
        let mut flags = vec![0u8; sx * sy * sz];
        source.visit_rows(&region, &mut |p, row| {
            let at = region.index_of(p);
            for (i, v) in row.iter().enumerate() {
                flags[at + i] = table.is_solid(*v) as u8 | (table.is_liquid(*v) as u8) << 1;
            }
        });
        let idx = |x: usize, y: usize, z: usize| x + sx * (z + sz * y);
        for (axis, n) in [(0, sx), (2, sz), (1, sy)] {
            let src = flags.clone();
            for y in 0..sy {
                for z in 0..sz {
                    for x in 0..sx {
                        let c = [x, y, z][axis];
                        let mut f = src[idx(x, y, z)];
                        let mut at = |d: usize| {
                            let mut q = [x, y, z];
                            q[axis] = d;
                            f |= src[idx(q[0], q[1], q[2])];
                        };
                        if c > 0 {
                            at(c - 1);
                        }
                        if c + 1 < n {
                            at(c + 1);
                        }
                        flags[idx(x, y, z)] = f;
                    }
                }
            }
        }
        DenseFlags { region, flags }
    }

    /// The flags a box touches per chunk, as a checksum: the same rule as the broadphase (closed box
    /// against closed voxel cubes), voxel by voxel.
    fn query(&self, b: &Aabb) -> u64 {
        let lo = [0, 1, 2].map(|i| (b.mins[i].ceil() as i64 - 1).max(self.region.min()[i] as i64));
        let hi = [0, 1, 2].map(|i| (b.maxs[i].floor() as i64).min(self.region.max()[i] as i64 - 1));
        // Up to 4 chunks per axis for the boxes used here.
        let c0 = lo.map(|v| v >> PHYS_SHIFT);
        let mut per_chunk = [0u8; 64];
        for y in lo[1]..=hi[1] {
            for z in lo[2]..=hi[2] {
                let row = self.region.index_of(Point3::new(self.region.min().x, y as i32, z as i32));
                for x in lo[0]..=hi[0] {
                    let f = self.flags[row + (x - self.region.min().x as i64) as usize];
                    if f != 0 {
                        let c =
                            [(x >> PHYS_SHIFT) - c0[0], (y >> PHYS_SHIFT) - c0[1], (z >> PHYS_SHIFT) - c0[2]];
                        per_chunk[(c[0] + 4 * (c[2] + 4 * c[1])) as usize] |= f;
                    }
                }
            }
        }
        checksum_slots(&per_chunk, c0)
    }
}

fn checksum_one(key: Point3<i64>, f: u8) -> u64 {
    (key.x as u64).wrapping_mul(73856093)
        ^ (key.y as u64).wrapping_mul(19349663)
        ^ (key.z as u64).wrapping_mul(83492791)
        ^ (f as u64) << 60
}

fn checksum_slots(per_chunk: &[u8; 64], c0: [i64; 3]) -> u64 {
    let mut sum = 0u64;
    for (i, &f) in per_chunk.iter().enumerate() {
        if f != 0 {
            let (cx, cz, cy) = ((i % 4) as i64, ((i / 4) % 4) as i64, (i / 16) as i64);
            sum = sum.wrapping_add(checksum_one(Point3::new(c0[0] + cx, c0[1] + cy, c0[2] + cz), f));
        }
    }
    sum
}

fn bp_query(bp: &BitBroadphase, b: &Aabb) -> u64 {
    let mut sum = 0u64;
    bp.query(b, |k, t| {
        sum =
            sum.wrapping_add(checksum_one(k.to_point().cast::<i64>(), t.solid as u8 | (t.water as u8) << 1));
    });
    sum
}

/// Random boxes of `size` voxels whose min corner is at a random voxel with `pick(voxel, column
/// surface)` true.
fn boxes(
    w: &crate::world::BenchWorld,
    rng: &mut Rng,
    n: usize,
    size: [f32; 3],
    mut pick: impl FnMut(voxterra_core::Voxel, i32, i32) -> bool,
) -> Vec<Aabb> {
    let world = w.params.region().expect("valid");
    let [sx, sy, sz] = world.size();
    let mut out = Vec::with_capacity(n);
    let mut tries = 0;
    while out.len() < n && tries < n * 2000 {
        tries += 1;
        let p = world.min()
            + voxterra_core::nalgebra::Vector3::new(
                rng.coord(sx - 16),
                rng.coord(sy - 16),
                rng.coord(sz - 16),
            );
        let surface =
            (0..sy as i32).rev().find(|&y| !w.store.get(Point3::new(p.x, y, p.z)).is_air()).unwrap_or(0);
        if pick(w.store.get(p), p.y, surface) {
            let f = |v: i32| v as f32 + 0.25;
            let lo = Point3::new(f(p.x), f(p.y), f(p.z));
            out.push(Aabb::new(lo, Point3::new(lo.x + size[0], lo.y + size[1], lo.z + size[2])));
        }
    }
    out
}

/// Runs the suite.
pub fn run(quick: bool) -> Report {
    let budget = Budget::new(quick);
    let w = bench_world(quick);
    let world = w.params.region().expect("valid");
    let table = MaterialTable::default();
    let [sx, sy, sz] = world.size();
    let mut report = Report {
        suite: "bit-broadphase".into(),
        setup: format!(
            "default world {sx}x{sy}x{sz}, seed {}, voxel size 1; peer: a brute-force scan of the same dilated voxels (dense flags)",
            w.params.seed
        ),
        ..Report::default()
    };

    // Rebuild every physics chunk: 1 and 2 threads, identical results.
    let mut built = Vec::new();
    let mut seconds = Vec::new();
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..if quick { 1 } else { 3 } {
            let mut bp = BitBroadphase::new(&table, 1.0).expect("valid voxel size");
            let t = Instant::now();
            let chunks = pool.install(|| bp.rebuild_region(&w.store, &world));
            times.push((t.elapsed().as_secs_f64(), chunks));
            last = Some(bp);
        }
        times.sort_by(|a, b| a.0.total_cmp(&b.0));
        seconds.push(times[times.len() / 2]);
        built.push(last.expect("at least one build"));
    }
    assert!(built[0].chunks() == built[1].chunks(), "1 and 2 threads built different masks");
    let bp = built.pop().expect("two builds");
    let voxels_rebuilt = seconds[0].1 as f64 * 512.0;
    report.metrics.push(Metric {
        name: "rebuild all, M voxels/s (median of 3)".into(),
        voxterra: voxels_rebuilt / seconds[1].0 / 1e6,
        peer: voxels_rebuilt / seconds[0].0 / 1e6,
        peer_name: "(1 thread)".into(),
        goal: format!("{} chunks; 2 threads vs 1: {:.2}x", seconds[0].1, seconds[0].0 / seconds[1].0),
    });

    let stats = bp.stats();
    report.metrics.push(Metric {
        name: "bits per world voxel".into(),
        voxterra: stats.total_bytes() as f64 * 8.0 / world.volume() as f64,
        peer: 2.0,
        peer_name: "(worst case)".into(),
        goal: format!(
            "{} chunks: {} masked, {} all-solid, {} all-water (no masks); {:.2} MiB",
            stats.chunks,
            stats.mask_chunks,
            stats.solid_chunks,
            stats.water_chunks,
            stats.total_bytes() as f64 / 1048576.0
        ),
    });

    // Queries: the peer scans the dense dilated flags.
    let flags = DenseFlags::new(&w.store, world, &table);
    let mut rng = Rng::new(11);
    let n = if quick { 2000 } else { 20000 };
    let near_surface = |v: voxterra_core::Voxel, y: i32, s: i32| v.is_air() && (s..s + 3).contains(&y);
    let chars = boxes(&w, &mut rng, n, [1.0, 2.0, 1.0], near_surface);
    let big = boxes(&w, &mut rng, n / 10, [16.0, 16.0, 16.0], |_, y, s| (s - 12..s + 4).contains(&y));
    // A simulation's pattern: 1024 characters, each queried once per step as it walks a little, so
    // their chunks stay in cache. Steps are laid out body by body, step after step.
    let bodies = &chars[..chars.len().min(1024)];
    let walk: Vec<Aabb> = (0..16)
        .flat_map(|step| {
            bodies.iter().map(move |b| {
                let d = voxterra_core::nalgebra::Vector3::new(0.3 * step as f32, 0.0, 0.2 * step as f32);
                Aabb::new(b.mins + d, b.maxs + d)
            })
        })
        .collect();
    for (name, set, goal) in [
        ("character 1x2x1, 1024 walking", &walk, "<= 20 ns"),
        ("character 1x2x1, cold random", &chars, "(every query a cache miss)"),
        ("16^3 box at the surface", &big, ">= 10x brute force"),
    ] {
        report.cases.push(compare(
            budget,
            name,
            "query",
            set.len() as u64,
            PEER,
            goal,
            || set.iter().fold(0u64, |s, b| s.wrapping_add(bp_query(&bp, b))),
            || set.iter().fold(0u64, |s, b| s.wrapping_add(flags.query(b))),
        ));
    }

    // Candidate chunks: masks against a plain chunk-AABB broadphase (every held chunk whose cube the
    // box touches), on boxes in caves, over the surface and in water.
    let total = if quick { 10_000 } else { 100_000 };
    let third = total / 3;
    let mut sets = Vec::new();
    let sizes =
        |rng: &mut Rng| [1.0 + rng.coord(4) as f32, 1.0 + rng.coord(4) as f32, 1.0 + rng.coord(4) as f32];
    let size = sizes(&mut rng);
    sets.push(("in caves", boxes(&w, &mut rng, third, size, |v, y, s| v.is_air() && y < s - 4)));
    let size = sizes(&mut rng);
    sets.push((
        "over the surface",
        boxes(&w, &mut rng, third, size, |v, y, s| v.is_air() && (s + 1..s + 8).contains(&y)),
    ));
    let size = sizes(&mut rng);
    sets.push(("in water", boxes(&w, &mut rng, total - 2 * third, size, |v, _, _| table.is_liquid(v))));
    for (name, set) in &sets {
        let (mut plain, mut masked) = (0u64, 0u64);
        for b in set {
            let lo = [0, 1, 2].map(|i| (b.mins[i].ceil() as i32 - 1) >> PHYS_SHIFT);
            let hi = [0, 1, 2].map(|i| (b.maxs[i].floor() as i32) >> PHYS_SHIFT);
            for y in lo[1]..=hi[1] {
                for z in lo[2]..=hi[2] {
                    for x in lo[0]..=hi[0] {
                        plain += bp.chunk(PhysicsChunkKey::new(x, y, z)).is_some() as u64;
                    }
                }
            }
            bp.query(b, |_, t| masked += t.solid as u64);
        }
        report.metrics.push(Metric {
            name: format!("solid candidates, {name}"),
            voxterra: masked as f64,
            peer: plain as f64,
            peer_name: "chunk AABBs".into(),
            goal: format!(
                "{} boxes; {:.1}x fewer narrowphase candidates",
                set.len(),
                plain as f64 / masked.max(1) as f64
            ),
        });
    }
    report
}
