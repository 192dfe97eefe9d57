//! The store against a dense array under random sequences of writes: every read, the dirty region,
//! the chunk invariants and the mip guarantee are checked after each step.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use proptest::prelude::*;
use voxterra_core::nalgebra::Point3;
use voxterra_core::{CoreError, DenseVoxels, Material, Region, Voxel, VoxelPos, VoxelRead, VoxelWrite};
use voxterra_test_support::Rng;
use voxterra_voxel_store::{StoreError, StoreLimits, VoxelStore};

/// The reference world: [-40, 40)³, so chunks -2..=1 on each axis, negative coordinates included.
const LO: i32 = -40;
const SIZE: u32 = 80;

fn domain() -> Region {
    Region::from_min_size(Point3::new(LO, LO, LO), [SIZE; 3]).unwrap()
}

fn voxel_from(bits: u64) -> Voxel {
    let m = Material::new((bits % 5) as u8).unwrap(); // air and 4 materials
    // Mostly default occupancy, so rows pack; sometimes fractional, so they unpack.
    let occ = if bits >> 8 & 3 == 0 { (bits >> 16) as u8 } else { 255 };
    Voxel::new(m, occ)
}

fn arb_voxel() -> impl Strategy<Value = Voxel> {
    any::<u64>().prop_map(voxel_from)
}

fn arb_region() -> impl Strategy<Value = Region> {
    // Corners inside the domain, some regions spanning several chunks, some single rows or voxels.
    (
        proptest::array::uniform3(LO..LO + SIZE as i32),
        proptest::array::uniform3(prop_oneof![1u32..3, 1u32..40]),
    )
        .prop_map(|(min, size)| {
            let size = [0, 1, 2].map(|i| size[i].min((LO + SIZE as i32 - min[i]) as u32));
            Region::from_min_size(min.into(), size).unwrap()
        })
}

#[derive(Clone, Debug)]
enum Op {
    Set(VoxelPos, Voxel),
    Fill(Region, Voxel),
    /// Write a box whose content is uniform, layered by Y (rows pack), or noisy (rows unpack).
    WriteBox(Region, u8, u64),
    /// A sphere-ish brush that adds or removes material.
    Brush(Region, Voxel),
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (proptest::array::uniform3(LO..LO + SIZE as i32), arb_voxel())
            .prop_map(|(p, v)| Op::Set(p.into(), v)),
        (arb_region(), arb_voxel()).prop_map(|(r, v)| Op::Fill(r, v)),
        (arb_region(), Just(Voxel::AIR)).prop_map(|(r, v)| Op::Fill(r, v)),
        (arb_region(), 0u8..3, any::<u64>()).prop_map(|(r, k, s)| Op::WriteBox(r, k, s)),
        (arb_region(), arb_voxel()).prop_map(|(r, v)| Op::Brush(r, v)),
    ]
}

fn box_content(region: &Region, kind: u8, seed: u64) -> Vec<Voxel> {
    let mut rng = Rng::new(seed);
    let base = voxel_from(rng.next_u64());
    let layers: Vec<Voxel> =
        (0..region.size()[1]).map(|_| voxel_from(rng.next_u64() & !0x300 | 0x100)).collect();
    region
        .iter()
        .map(|p| match kind {
            0 => base,
            1 => layers[(p.y - region.min().y) as usize],
            _ => voxel_from(rng.next_u64()),
        })
        .collect()
}

fn brush_fn(region: Region, v: Voxel) -> impl Fn(VoxelPos, Voxel) -> Voxel {
    let half = region.size().map(|s| s as f32 / 2.0);
    let c: voxterra_core::nalgebra::Vector3<f32> =
        region.min().coords.cast::<f32>() + voxterra_core::nalgebra::Vector3::from(half);
    let r = region.size().iter().copied().min().unwrap() as f32 / 2.0;
    move |p, old| {
        let d = (p.coords.cast::<f32>() + voxterra_core::nalgebra::Vector3::repeat(0.5) - c).norm();
        if d < r {
            v
        } else if d < r + 1.0 {
            Voxel::with_occupancy(old.material(), old.occupancy() * 0.5)
        } else {
            old
        }
    }
}

fn check(store: &VoxelStore, dense: &DenseVoxels, probes: &[VoxelPos]) -> Result<(), TestCaseError> {
    store.validate().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let d = domain();
    let mut out = vec![Voxel::AIR; d.len().unwrap()];
    store.read_box(&d, &mut out).unwrap();
    prop_assert!(out == dense.as_slice(), "read_box differs from the dense reference");
    // Rows cover the domain exactly once and agree with the reference.
    let mut seen = 0usize;
    for (start, row) in store.rows(&d) {
        seen += row.len();
        prop_assert!(dense.row(start.y, start.z)[(start.x - LO) as usize..][..row.len()] == *row);
    }
    prop_assert_eq!(seen, d.len().unwrap());
    // The two traversal paths (external `next`, internal `fold`) yield the same segments, also for a
    // region that starts and ends inside chunks.
    for region in [d, Region::from_min_size(Point3::new(LO + 3, LO + 7, LO + 1), [61, 50, 45]).unwrap()] {
        let mut by_next = Vec::new();
        for (p, row) in store.rows(&region) {
            // A `for` loop drives `next`.
            by_next.push((p, row.to_vec()));
        }
        let by_fold = store.rows(&region).fold(Vec::new(), |mut v, (p, row)| {
            v.push((p, row.to_vec()));
            v
        });
        prop_assert!(by_next == by_fold, "next and fold disagree");
        // visit_rows: buffer order (y, z, x) and the same voxels.
        let mut ordered: Vec<(VoxelPos, Vec<Voxel>)> = Vec::new();
        store.visit_rows(&region, &mut |p, row| ordered.push((p, row.to_vec())));
        prop_assert!(
            ordered.windows(2).all(|w| (w[0].0.y, w[0].0.z, w[0].0.x) < (w[1].0.y, w[1].0.z, w[1].0.x)),
            "visit_rows out of order"
        );
        let flat: Vec<Voxel> = ordered.iter().flat_map(|(_, r)| r.iter().copied()).collect();
        let mut boxed = vec![Voxel::AIR; region.len().unwrap()];
        store.read_box(&region, &mut boxed).unwrap();
        prop_assert!(flat == boxed, "visit_rows voxels differ from read_box");
        prop_assert_eq!(by_next.iter().map(|(_, r)| r.len()).sum::<usize>(), region.len().unwrap());
    }
    // `uniform` never claims a mixed region, and answers whenever the X rows it crosses (snapped to
    // whole chunks, the store's packing unit) are one packed material.
    let mut uniform_regions = vec![d];
    for p in probes {
        for size in [1u32, 3, 34] {
            uniform_regions.push(Region::from_min_size(*p, [size, size, size]).unwrap());
        }
    }
    for region in uniform_regions {
        let mut all = vec![Voxel::AIR; region.len().unwrap()];
        store.read_box(&region, &mut all).unwrap();
        match store.uniform(&region) {
            Some(v) => prop_assert!(all.iter().all(|&a| a == v), "uniform({:?}) = {:?} is wrong", region, v),
            None => {
                let snap = |v: i32, up: bool| ((v + up as i32 * 31) >> 5) << 5;
                let (lo, hi) = (region.min(), region.max());
                let wide = Region::new(
                    Point3::new(snap(lo.x, false), lo.y, lo.z),
                    Point3::new(snap(hi.x, true), hi.y, hi.z),
                )
                .unwrap();
                let mut rows = vec![Voxel::AIR; wide.len().unwrap()];
                store.read_box(&wide, &mut rows).unwrap();
                let first = rows[0];
                prop_assert!(
                    !(first.has_default_occupancy() && rows.iter().all(|&a| a == first)),
                    "uniform({:?}) missed a region of packed {:?} rows",
                    region,
                    first
                );
            }
        }
    }
    for p in probes {
        prop_assert_eq!(store.get(*p), dense.voxel(*p));
        let mut one = [Voxel::AIR; 3];
        store.read_row(*p, &mut one).unwrap();
        dense.read_row(*p, &mut one.clone()).unwrap();
    }
    // Outside the domain everything is air and no chunk is held.
    for key in store.chunk_keys() {
        prop_assert!((-2..=1).contains(&key.x) && (-2..=1).contains(&key.y) && (-2..=1).contains(&key.z));
    }
    Ok(())
}

fn changed_bounds(before: &DenseVoxels, after: &DenseVoxels) -> Option<Region> {
    let mut dirty = voxterra_core::DirtyBounds::new();
    for p in domain().iter() {
        if before.voxel(p) != after.voxel(p) {
            dirty.add_run(p.x, p.x + 1, p.y, p.z);
        }
    }
    dirty.region()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn store_matches_dense(ops in proptest::collection::vec(arb_op(), 1..10),
                           probes in proptest::collection::vec(proptest::array::uniform3(LO - 5..LO + SIZE as i32 + 5), 16)) {
        let probes: Vec<VoxelPos> = probes.into_iter().map(Into::into).collect();
        let mut store = VoxelStore::new();
        let mut dense = DenseVoxels::new(domain(), 1 << 20).unwrap();
        for op in ops {
            let before = dense.clone();
            let dirty = match &op {
                Op::Set(p, v) => { dense.set(*p, *v); store.set(*p, *v).unwrap() }
                Op::Fill(r, v) => { dense.fill(r, *v).unwrap(); store.fill(r, *v).unwrap() }
                Op::WriteBox(r, k, s) => {
                    let data = box_content(r, *k, *s);
                    dense.write_box(r, &data).unwrap();
                    store.write_box(r, &data).unwrap()
                }
                Op::Brush(r, v) => {
                    let f = brush_fn(*r, *v);
                    for p in r.iter() { let old = dense.voxel(p); dense.set(p, f(p, old)); }
                    store.brush(r, &f).unwrap()
                }
            };
            prop_assert_eq!(dirty, changed_bounds(&before, &dense), "dirty region of {:?}", op);
            check(&store, &dense, &probes)?;
        }
        // Emptying everything drops every chunk.
        store.fill(&domain(), Voxel::AIR).unwrap();
        prop_assert_eq!(store.chunk_count(), 0);
    }
}

#[test]
fn rows_pack_and_unpack() {
    let rock = Voxel::full(Material::new(3).unwrap());
    let mut store = VoxelStore::new();
    let slab = Region::from_min_size(Point3::new(0, 0, 0), [32, 4, 32]).unwrap();
    store.fill(&slab, rock).unwrap();
    let key = voxterra_core::StoreChunkKey::new(0, 0, 0);
    assert_eq!(store.chunk(key).unwrap().allocated_rows(), 0);
    assert_eq!(store.chunk(key).unwrap().packed_row(2, 5), Some(rock.material()));
    store.set(Point3::new(7, 2, 5), Voxel::new(rock.material(), 100)).unwrap();
    assert_eq!(store.chunk(key).unwrap().allocated_rows(), 1);
    assert_eq!(store.chunk(key).unwrap().packed_row(2, 5), None);
    store.set(Point3::new(7, 2, 5), rock).unwrap();
    assert_eq!(store.chunk(key).unwrap().allocated_rows(), 0, "a row that becomes uniform packs again");
    // A partial-row write of the row's own content changes nothing.
    assert_eq!(
        store.fill(&Region::from_min_size(Point3::new(3, 1, 1), [5, 1, 1]).unwrap(), rock).unwrap(),
        None
    );
    let stats = store.stats();
    assert_eq!((stats.chunks, stats.allocated_rows, stats.non_empty_voxels), (1, 0, 32 * 4 * 32));
    // Mips: a 4-high slab fills the 8³ mip's bottom layer and half of the 4³ mip's.
    let c = store.chunk(key).unwrap();
    assert_eq!(c.mip_voxel(2, 3, 0, 3), Some(rock));
    assert_eq!(c.mip_voxel(3, 0, 0, 0), Some(Voxel::new(rock.material(), 127)));
    assert_eq!(c.mip_voxel(3, 0, 1, 0), Some(Voxel::AIR));
    assert_eq!(c.mip_voxel(4, 0, 0, 0), None);
    store.validate().unwrap();
}

#[test]
fn huge_regions_and_extremes() {
    let rock = Voxel::full(Material::new(3).unwrap());
    let mut store = VoxelStore::with_limits(StoreLimits { max_chunks: 64 });
    let all =
        Region::new(Point3::new(i32::MIN, i32::MIN, i32::MIN), Point3::new(i32::MAX, i32::MAX, i32::MAX))
            .unwrap();
    // Too many chunks: refused before any change.
    assert!(matches!(store.fill(&all, rock), Err(StoreError::TooManyChunks { .. })));
    assert!(matches!(store.brush(&all, |_, v| v), Err(StoreError::TooManyChunks { .. })));
    assert_eq!(store.chunk_count(), 0);
    // Corners of the coordinate space work.
    let corner = Point3::new(i32::MIN, i32::MIN, i32::MIN);
    store.set(corner, rock).unwrap();
    let top = Point3::new(i32::MAX - 1, i32::MAX - 1, i32::MAX - 1);
    store.set(top, rock).unwrap();
    assert_eq!(store.get(corner), rock);
    assert_eq!(store.get(top), rock);
    assert_eq!(store.get(Point3::new(i32::MAX, 0, 0)), Voxel::AIR);
    assert!(matches!(
        store.set(Point3::new(i32::MAX, 0, 0), rock),
        Err(StoreError::Core(CoreError::RegionOverflow { .. }))
    ));
    let edge =
        Region::from_min_size(Point3::new(i32::MAX - 3, i32::MAX - 3, i32::MAX - 3), [3, 3, 3]).unwrap();
    assert_eq!(store.rows(&edge).map(|(_, r)| r.len()).sum::<usize>(), 27);
    assert_eq!(store.rows(&edge).flat_map(|(_, r)| r).filter(|v| !v.is_air()).count(), 1);
    // Clearing everything visits only held chunks.
    assert_eq!(store.chunk_count(), 2);
    let dirty = store.fill(&all, Voxel::AIR).unwrap().unwrap();
    assert_eq!((dirty.min(), dirty.max()), (corner, Point3::new(i32::MAX, i32::MAX, i32::MAX)));
    assert_eq!(store.chunk_count(), 0);
    // Buffers must match their region.
    let r = Region::from_min_size(Point3::new(0, 0, 0), [2, 2, 2]).unwrap();
    assert!(matches!(
        store.write_box(&r, &[rock; 7]),
        Err(StoreError::Core(CoreError::BufferSize { expected: 8, got: 7 }))
    ));
    let mut out = [Voxel::AIR; 9];
    assert!(matches!(store.read_box(&r, &mut out), Err(CoreError::BufferSize { expected: 8, got: 9 })));
    assert!(voxterra_core::StoreChunkKey::range(&all).unwrap().count() > 64);
}

#[test]
fn many_readers() {
    let rock = Voxel::full(Material::new(3).unwrap());
    let mut store = VoxelStore::new();
    store.fill(&Region::from_min_size(Point3::new(-50, -5, -50), [100, 10, 100]).unwrap(), rock).unwrap();
    let store = &store;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                s.spawn(move || {
                    (0..100).filter(|i| !store.get(Point3::new(i - 50, t, i - 50)).is_air()).count()
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), 100);
        }
    });
}
