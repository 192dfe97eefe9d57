//! Suite `store`: the row-packed voxel store against a plain dense 2-byte-per-voxel array holding
//! the same voxels of the default world.

use crate::harness::{Budget, Metric, Report, compare};
use crate::world::{Rng, bench_world};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{DenseVoxels, Region, Voxel, VoxelPos, VoxelRead};

const DENSE: &str = "dense array";

/// Copies `region` out of the dense array row by row: the fastest a dense box read can be.
fn dense_read_box(dense: &DenseVoxels, region: &Region, out: &mut [Voxel]) {
    let sx = region.size()[0] as usize;
    let x0 = (region.min().x - dense.region().min().x) as usize;
    let mut at = 0;
    for y in region.min().y..region.max().y {
        for z in region.min().z..region.max().z {
            out[at..at + sx].copy_from_slice(&dense.row(y, z)[x0..x0 + sx]);
            at += sx;
        }
    }
}

/// Writes `voxels` into the dense array row by row.
fn dense_write_box(dense: &mut DenseVoxels, region: &Region, voxels: &[Voxel]) {
    let world = *dense.region();
    let sx = region.size()[0] as usize;
    let mut at = 0;
    for y in region.min().y..region.max().y {
        for z in region.min().z..region.max().z {
            let i = world.index_of(Point3::new(region.min().x, y, z));
            dense.as_mut_slice()[i..i + sx].copy_from_slice(&voxels[at..at + sx]);
            at += sx;
        }
    }
}

fn checksum(voxels: &[Voxel]) -> u64 {
    voxels.iter().map(|v| v.to_bits() as u64).sum()
}

fn random_box(rng: &mut Rng, world: &Region, size: u32) -> Region {
    let [sx, sy, sz] = world.size();
    let min = world.min()
        + voxterra_core::nalgebra::Vector3::new(
            rng.coord(sx - size),
            rng.coord(sy - size),
            rng.coord(sz - size),
        );
    Region::from_min_size(min, [size; 3]).expect("inside the world")
}

/// Runs the suite.
pub fn run(quick: bool) -> Report {
    let budget = Budget::new(quick);
    let mut w = bench_world(quick);
    let world = w.params.region().expect("valid world");
    let [sx, sy, sz] = world.size();
    let mut report = Report {
        suite: "store".into(),
        setup: format!(
            "default world {sx}x{sy}x{sz}, seed {}; peer: the same voxels in a dense 2-byte array",
            w.params.seed
        ),
        ..Report::default()
    };
    let mut rng = Rng::new(7);

    // Random single-voxel reads.
    let points: Vec<VoxelPos> = (0..1_000_000)
        .map(|_| {
            world.min() + voxterra_core::nalgebra::Vector3::new(rng.coord(sx), rng.coord(sy), rng.coord(sz))
        })
        .collect();
    let (store, dense) = (&w.store, &w.dense);
    report.cases.push(compare(
        budget,
        "random voxel reads",
        "read",
        points.len() as u64,
        DENSE,
        "time within 1.3x (speed >= 0.77)",
        || points.iter().map(|p| store.get(*p).to_bits() as u64).sum::<u64>(),
        || points.iter().map(|p| dense.voxel(*p).to_bits() as u64).sum::<u64>(),
    ));

    // Row reads over the whole world: every voxel through the zero-copy row path.
    report.cases.push(compare(
        budget,
        "row reads (whole world)",
        "voxel",
        world.volume() as u64,
        DENSE,
        "throughput >= 0.95x",
        || store.rows(&world).map(|(_, row)| checksum(row)).sum::<u64>(),
        || {
            let mut sum = 0;
            for y in world.min().y..world.max().y {
                for z in world.min().z..world.max().z {
                    sum += checksum(dense.row(y, z));
                }
            }
            sum
        },
    ));

    // Box reads: unaligned 40^3 boxes into a dense buffer.
    let boxes: Vec<Region> = (0..200).map(|_| random_box(&mut rng, &world, 40)).collect();
    let mut buf_a = vec![Voxel::AIR; 40 * 40 * 40];
    let mut buf_b = buf_a.clone();
    report.cases.push(compare(
        budget,
        "box reads (40^3, unaligned)",
        "voxel",
        boxes.len() as u64 * 64_000,
        DENSE,
        "throughput >= 0.9x",
        || {
            boxes
                .iter()
                .map(|r| {
                    store.read_box(r, &mut buf_a).expect("sized");
                    checksum(&buf_a[..64]) + buf_a[63_999].to_bits() as u64
                })
                .sum::<u64>()
        },
        || {
            boxes
                .iter()
                .map(|r| {
                    dense_read_box(dense, r, &mut buf_b);
                    checksum(&buf_b[..64]) + buf_b[63_999].to_bits() as u64
                })
                .sum::<u64>()
        },
    ));

    // Memory of the world as generated (before the write case changes it).
    let mem = w.store.stats();
    let non_empty = mem.non_empty_voxels as f64;
    report.metrics.push(Metric {
        name: "bytes per non-empty voxel".into(),
        voxterra: mem.bytes_per_non_empty_voxel(),
        peer: w.dense.heap_bytes() as f64 / non_empty,
        peer_name: DENSE.into(),
        goal: "<= 0.40 (Roblox: 0.49 row-packed, 2.97 unpacked chunks)".into(),
    });
    report.metrics.push(Metric {
        name: "memory MiB".into(),
        voxterra: mem.total_bytes as f64 / 1048576.0,
        peer: w.dense.heap_bytes() as f64 / 1048576.0,
        peer_name: DENSE.into(),
        goal: format!(
            "{} chunks, {} allocated rows, mips {:.1} MiB",
            mem.chunks,
            mem.allocated_rows,
            mem.mip_bytes as f64 / 1048576.0
        ),
    });

    // Box writes: unaligned 32^3 boxes of real terrain copied elsewhere; alternate two contents so
    // every repetition really changes voxels.
    let writes: Vec<(Region, [Vec<Voxel>; 2])> = (0..32)
        .map(|_| {
            let dest = random_box(&mut rng, &world, 32);
            let content = |rng: &mut Rng| {
                let src = random_box(rng, &world, 32);
                let mut v = vec![Voxel::AIR; 32 * 32 * 32];
                w.store.read_box(&src, &mut v).expect("sized");
                v
            };
            (dest, [content(&mut rng), content(&mut rng)])
        })
        .collect();
    let (mut flip_a, mut flip_b) = (0usize, 0usize);
    let (store, dense) = (&mut w.store, &mut w.dense);
    let store_cell = std::cell::RefCell::new(store);
    let dense_cell = std::cell::RefCell::new(dense);
    report.cases.push(compare(
        budget,
        "box writes (32^3, unaligned)",
        "voxel",
        writes.len() as u64 * 32_768,
        DENSE,
        "(no goal; writes are rare)",
        || {
            flip_a ^= 1;
            let mut s = store_cell.borrow_mut();
            for (r, c) in &writes {
                s.write_box(r, &c[flip_a]).expect("inside limits");
            }
            writes.len()
        },
        || {
            flip_b ^= 1;
            let mut d = dense_cell.borrow_mut();
            for (r, c) in &writes {
                dense_write_box(&mut d, r, &c[flip_b]);
            }
            writes.len()
        },
    ));
    let (store, dense) = (store_cell.into_inner(), dense_cell.into_inner());
    // Both must hold the same world after the writes.
    let mut all = vec![Voxel::AIR; world.len().expect("world fits memory")];
    store.read_box(&world, &mut all).expect("sized");
    assert!(all == dense.as_slice(), "store and dense array differ after the writes");

    report
}
