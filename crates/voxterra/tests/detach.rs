//! Detached regions against a brute-force flood fill of the whole stored box.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use proptest::prelude::*;
use voxterra::core::nalgebra::{Matrix3, Point3, Vector3};
use voxterra::core::{MaterialTable, Region, Voxel, VoxelPos, VoxelRead, materials};
use voxterra::detach::{DetachedPiece, DetachedRegion};
use voxterra::worldgen::GenParams;
use voxterra::{Brush, BrushOp, BrushShape, Terrain};
use voxterra::{DetachConfig, TerrainConfig};

/// Every face-connected piece of holding voxels in the terrain's stored box, by brute force: its
/// voxels (sorted by y, z, x) and whether it reaches the lowest layer any of them is in (the
/// default anchor).
fn pieces(t: &Terrain) -> Vec<(Vec<VoxelPos>, bool)> {
    let e = t.extent().unwrap();
    let lowest = e.iter().filter(|p| t.is_holding(*p)).map(|p| p.y).min().unwrap_or(i32::MAX);
    let size = e.size().map(|s| s as usize);
    let at = |p: VoxelPos| -> usize {
        let d = p - e.min();
        d.x as usize + size[0] * (d.z as usize + size[2] * d.y as usize)
    };
    let holding: Vec<bool> = e.iter().map(|p| t.is_holding(p)).collect();
    let mut label = vec![u32::MAX; holding.len()];
    let mut out = Vec::new();
    for start in e.iter() {
        if !holding[at(start)] || label[at(start)] != u32::MAX {
            continue;
        }
        let id = out.len() as u32;
        let mut stack = vec![start];
        label[at(start)] = id;
        let mut voxels = Vec::new();
        while let Some(p) = stack.pop() {
            voxels.push(p);
            for d in [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]] {
                let q = p + voxterra::core::nalgebra::Vector3::from(d);
                if e.contains(q) && holding[at(q)] && label[at(q)] == u32::MAX {
                    label[at(q)] = id;
                    stack.push(q);
                }
            }
        }
        voxels.sort_unstable_by_key(|p| (p.y, p.z, p.x));
        let floor = voxels.iter().any(|p| p.y <= lowest);
        out.push((voxels, floor));
    }
    out
}

/// What the search should find around `dirty`: the pieces with a voxel in it (grown by one) that
/// reach no floor and are within the budget, in the order of their first seed.
fn expected(t: &Terrain, dirty: &Region, budget: usize) -> Vec<Vec<VoxelPos>> {
    let all = pieces(t);
    let near = dirty.expanded(1);
    let mut order: Vec<(VoxelPos, Vec<VoxelPos>)> = all
        .into_iter()
        .filter(|(v, floor)| !floor && v.len() <= budget)
        .filter_map(|(v, _)| {
            // The first seed of a piece is its first voxel in the grown box, in (y, z, x) order.
            let first = v.iter().filter(|p| near.contains(**p)).min_by_key(|p| (p.y, p.z, p.x)).copied()?;
            Some((first, v))
        })
        .collect();
    order.sort_unstable_by_key(|(f, _)| (f.y, f.z, f.x));
    order.into_iter().map(|(_, v)| v).collect()
}

fn budgeted(budget: usize) -> DetachConfig {
    DetachConfig { budget, ..DetachConfig::default() }
}

fn found(t: &Terrain, dirty: &Region, budget: usize) -> Vec<Vec<VoxelPos>> {
    t.find_detached(dirty, &budgeted(budget)).into_iter().map(|r: DetachedRegion| r.voxels).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Floating rocks added over a random world, then a random carve: the pieces found around the
    /// carve are the brute force's, with a budget large enough and one too small (then attached).
    #[test]
    fn detection_equals_a_brute_force_flood_fill(
        seed in 1u64..500,
        rocks in proptest::collection::vec((proptest::array::uniform3(4.0f32..60.0), 1.5f32..5.0), 1..4),
        carve in (proptest::array::uniform3(0.0f32..64.0), 2.0f32..8.0),
    ) {
        let mut t = Terrain::generate(&GenParams::new(seed, [64, 48, 64]), TerrainConfig::default()).unwrap();
        for (c, r) in &rocks {
            let rock = BrushShape::Sphere { center: Point3::new(c[0], 30.0 + c[1] * 0.3, c[2]), radius: *r };
            t.apply_brush(&Brush { shape: rock, op: BrushOp::Add(materials::ROCK) }).unwrap();
        }
        let hole = BrushShape::Sphere { center: Point3::new(carve.0[0], carve.0[1] * 0.7, carve.0[2]), radius: carve.1 };
        let report = t.apply_brush(&Brush { shape: hole, op: BrushOp::Subtract }).unwrap();
        let dirty = report.dirty.unwrap_or_else(|| Region::from_min_size(Point3::new(0, 30, 0), [64, 18, 64]).unwrap());
        for budget in [1 << 20, 40] {
            prop_assert_eq!(found(&t, &dirty, budget), expected(&t, &dirty, budget), "budget {}", budget);
        }
        // Around the rocks themselves: floating pieces are found there.
        let sky = Region::from_min_size(Point3::new(0, 30, 0), [64, 18, 64]).unwrap();
        prop_assert_eq!(found(&t, &sky, 1 << 20), expected(&t, &sky, 1 << 20));
    }
}

#[test]
fn an_arch_cut_through_falls_and_its_piers_stay() {
    let mut t = Terrain::new(voxterra::core::MaterialTable::default(), TerrainConfig::default()).unwrap();
    let rock = |min: [f32; 3], max: [f32; 3]| Brush {
        shape: BrushShape::Box { min: Point3::from(min), max: Point3::from(max) },
        op: BrushOp::Add(materials::ROCK),
    };
    // Ground, two piers and a lintel over them.
    t.apply_brush(&rock([0.0, 0.0, 0.0], [40.0, 4.0, 16.0])).unwrap();
    t.apply_brush(&rock([4.0, 4.0, 4.0], [10.0, 20.0, 12.0])).unwrap();
    t.apply_brush(&rock([30.0, 4.0, 4.0], [36.0, 20.0, 12.0])).unwrap();
    t.apply_brush(&rock([4.0, 20.0, 4.0], [36.0, 26.0, 12.0])).unwrap();
    assert!(t.find_detached(&t.extent().unwrap(), &budgeted(1 << 20)).is_empty(), "the arch stands");
    // Cut the lintel beside each pier: the middle falls, the piers stand.
    let mut dirty = None::<Region>;
    for x in [12.0, 26.0] {
        let cut = Brush {
            shape: BrushShape::Box { min: Point3::new(x, 18.0, 0.0), max: Point3::new(x + 2.0, 30.0, 16.0) },
            op: BrushOp::Subtract,
        };
        let d = t.apply_brush(&cut).unwrap().dirty.unwrap();
        dirty = Some(dirty.map_or(d, |r| r.union(&d)));
    }
    let pieces = t.find_detached(&dirty.unwrap(), &budgeted(1 << 20));
    assert_eq!(pieces.len(), 1, "{pieces:?}");
    let p = &pieces[0];
    assert!(p.bounds.min().x >= 13 && p.bounds.max().x <= 27, "{:?}", p.bounds);
    assert!(p.voxels.iter().all(|v| v.y >= 20));
    // With a budget under the piece's size it counts as attached.
    assert!(t.find_detached(&dirty.unwrap(), &budgeted(p.voxels.len() - 1)).is_empty());
}

fn detaching(budget: usize) -> TerrainConfig {
    TerrainConfig { detach: Some(budgeted(budget)), ..TerrainConfig::default() }
}

fn dense(t: &Terrain, r: &Region) -> Vec<Voxel> {
    let mut v = vec![Voxel::AIR; r.len().unwrap()];
    t.store().read_box(r, &mut v).unwrap();
    v
}

/// Mass, centre and inertia of a piece's voxels by the textbook two passes over its dense box:
/// the centre first, then each voxel's cube about it (parallel axis), in f64.
fn brute_mass(piece: &DetachedPiece, table: &MaterialTable, vs: f64) -> (f64, [f64; 3], Matrix3<f64>) {
    let voxels: Vec<(VoxelPos, f64)> = piece
        .bounds
        .iter()
        .map(|p| {
            let v = piece.voxels.voxel(p);
            (p, v.occupancy() as f64 * table.get(v.material()).unwrap().density as f64 * vs.powi(3))
        })
        .filter(|(_, m)| *m > 0.0)
        .collect();
    let centre = |p: VoxelPos| Vector3::new(p.x as f64 + 0.5, p.y as f64 + 0.5, p.z as f64 + 0.5) * vs;
    let mass: f64 = voxels.iter().map(|(_, m)| m).sum();
    let c = voxels.iter().map(|(p, m)| centre(*p) * *m).sum::<Vector3<f64>>() / mass;
    let mut inertia = Matrix3::zeros();
    for (p, m) in &voxels {
        let r = centre(*p) - c;
        inertia += (Matrix3::identity() * (r.norm_squared() + vs * vs / 6.0) - r * r.transpose()) * *m;
    }
    (mass, [c.x, c.y, c.z], inertia)
}

/// The brute force's pieces an edit cut loose: those holding a voxel beside one it emptied.
fn cut_loose(after: &Terrain, lost: &[VoxelPos], budget: usize) -> Vec<Vec<VoxelPos>> {
    let near = |v: &Vec<VoxelPos>| v.iter().any(|p| lost.iter().any(|q| (p - q).abs().sum() == 1));
    pieces(after)
        .into_iter()
        .filter(|(v, floor)| !floor && v.len() <= budget && near(v))
        .map(|(v, _)| v)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    /// A carve that cuts rocks and ledges loose takes exactly the brute force's pieces out in the
    /// same edit; the pieces' masses are the brute force's; one undo puts every voxel back; the
    /// edit's delta gives a replica the same voxels.
    #[test]
    fn detaching_edits_remove_the_pieces_undo_and_deltas_agree(
        seed in 1u64..500,
        rocks in proptest::collection::vec((proptest::array::uniform3(8.0f32..56.0), 2.0f32..5.0), 1..4),
        carve_r in 2.0f32..6.0,
        pick in 0usize..4,
    ) {
        let mut t = Terrain::generate(&GenParams::new(seed, [64, 48, 64]), TerrainConfig::default()).unwrap();
        // Rocks on stalks rising from the ground; the carve cuts one stalk.
        let mut stalks = Vec::new();
        for (c, r) in &rocks {
            let top = 34.0 + c[1] * 0.2;
            let stalk = BrushShape::Box { min: Point3::new(c[0] - 1.0, 0.0, c[2] - 1.0), max: Point3::new(c[0] + 1.0, top, c[2] + 1.0) };
            t.apply_brush(&Brush { shape: stalk, op: BrushOp::Add(materials::ROCK) }).unwrap();
            let rock = BrushShape::Sphere { center: Point3::new(c[0], top + r - 1.0, c[2]), radius: *r };
            t.apply_brush(&Brush { shape: rock, op: BrushOp::Add(materials::SANDSTONE) }).unwrap();
            stalks.push(Point3::new(c[0], top - 2.0, c[2]));
        }
        let extent = t.extent().unwrap().expanded(2);
        let before = dense(&t, &extent);
        let mut plain = Terrain::from_store(t.store().clone(), MaterialTable::default(), TerrainConfig::default()).unwrap();
        let mut replica = Terrain::from_store(t.store().clone(), MaterialTable::default(), TerrainConfig::default()).unwrap();
        replica.set_sequence(t.sequence());
        t.reconfigure(detaching(1 << 20)).unwrap();
        let hole = Brush { shape: BrushShape::Sphere { center: stalks[pick % stalks.len()], radius: carve_r }, op: BrushOp::Subtract };
        plain.apply_brush(&hole).unwrap();
        let seq = t.sequence();
        let report = t.apply_brush(&hole).unwrap();
        t.validate().unwrap();

        // The brute force on the same carve without detection.
        let lost: Vec<VoxelPos> = extent.iter().filter(|p| {
            let v = before[extent.index_of(*p)];
            MaterialTable::default().is_solid(v) && v.occupancy_byte() >= 128 && !plain.is_holding(*p)
        }).collect();
        let want = cut_loose(&plain, &lost, 1 << 20);
        prop_assert_eq!(report.detached + report.debris, want.len());
        let pieces = t.take_detached();
        prop_assert_eq!(pieces.len(), report.detached);
        let big: Vec<usize> = want.iter().map(Vec::len).filter(|n| *n >= 8).collect();
        prop_assert_eq!(pieces.iter().map(|p| p.solid_voxels).collect::<Vec<_>>(), big);
        for p in want.iter().flatten() {
            prop_assert!(t.voxel(*p).is_air(), "{:?} stayed", p);
        }
        // Everything else that holds terrain up is where it was.
        for p in extent.iter() {
            if plain.is_holding(p) && !want.iter().any(|v| v.binary_search_by_key(&(p.y, p.z, p.x), |q| (q.y, q.z, q.x)).is_ok()) {
                prop_assert_eq!(t.voxel(p), plain.voxel(p));
            }
        }
        let table = MaterialTable::default();
        for piece in &pieces {
            let (mass, c, inertia) = brute_mass(piece, &table, 1.0);
            prop_assert!((piece.mass.mass as f64 - mass).abs() <= 1e-4 * mass);
            for (got, want) in piece.mass.center.iter().zip(c) {
                prop_assert!((*got as f64 - want).abs() < 1e-3);
            }
            let scale = inertia.abs().max();
            prop_assert!((piece.mass.inertia.cast::<f64>() - inertia).abs().max() <= 1e-4 * scale);
            prop_assert!(!piece.mesh.indices.is_empty() && piece.shape_parts >= 1);
        }
        // The delta carries the pieces' removal too.
        for d in t.edits_since(seq) {
            replica.apply_delta(&d).unwrap();
        }
        replica.validate().unwrap();
        let after = t.extent().unwrap().union(&extent);
        prop_assert!(dense(&replica, &after) == dense(&t, &after));
        // One undo step brings every voxel back.
        t.undo().unwrap();
        t.validate().unwrap();
        prop_assert!(dense(&t, &extent) == before);
        t.redo().unwrap();
        t.validate().unwrap();
        prop_assert!(dense(&t, &after) == dense(&replica, &after));
    }
}

/// Ground, two piers and a lintel, in voxels from `o`.
fn arch(t: &mut Terrain, o: [i32; 3]) {
    for (min, size) in [
        ([0, 0, 0], [40, 4, 16]),
        ([4, 4, 4], [6, 16, 8]),
        ([30, 4, 4], [6, 16, 8]),
        ([4, 20, 4], [32, 6, 8]),
    ] {
        let min = Point3::new(min[0] + o[0], min[1] + o[1], min[2] + o[2]);
        t.fill(&Region::from_min_size(min, size).unwrap(), Voxel::full(materials::ROCK)).unwrap();
    }
}

/// Empties a layer through both piers near their feet: the arch (an upside-down U) comes loose.
fn cut_piers(t: &mut Terrain, o: [i32; 3]) -> voxterra::EditReport {
    let layer = Region::from_min_size(Point3::new(o[0], o[1] + 6, o[2]), [40, 2, 16]).unwrap();
    t.fill(&layer, Voxel::AIR).unwrap()
}

#[test]
fn a_loose_arch_collides_as_a_decomposition_that_covers_it() {
    for (vs, o) in [(1.0f32, [0, 0, 0]), (0.5, [4096, -40, -8192])] {
        let mut t =
            Terrain::new(MaterialTable::default(), TerrainConfig { voxel_size: vs, ..detaching(1 << 20) })
                .unwrap();
        arch(&mut t, o);
        let report = cut_piers(&mut t, o);
        assert_eq!(report.detached, 1, "{report:?}");
        let piece = t.take_detached().pop().unwrap();
        assert!(piece.shape_parts > 1, "a U's hull spans its opening: {} parts", piece.shape_parts);
        // Every solid voxel's centre lies in the shape or within half a voxel of it.
        for p in piece.bounds.iter() {
            if piece.voxels.voxel(p).occupancy_byte() < 128 {
                continue;
            }
            let world = (p.cast::<f64>() + Vector3::repeat(0.5)) * vs as f64;
            let local = (world - piece.mass.center.cast::<f64>().coords).cast::<f32>();
            let q = voxterra::parry3d::math::Vector::new(local.x, local.y, local.z);
            let d = piece.shape.distance_to_local_point(q, true);
            assert!(d <= 0.5 * vs, "voxel {p:?} is {d} outside the shape");
        }
        // The parts stay close to the piece, where its hull spans the opening.
        let parts = piece.shape.as_compound().unwrap().shapes();
        let parts_volume: f32 = parts.iter().map(|(_, s)| s.mass_properties(1.0).mass()).sum();
        assert!(parts_volume < 2.0 * piece.volume, "{parts_volume} for {}", piece.volume);
        let points: Vec<_> = piece
            .mesh
            .positions
            .iter()
            .map(|p| voxterra::parry3d::math::Vector::new(p.x, p.y, p.z))
            .collect();
        let hull = voxterra::parry3d::shape::SharedShape::convex_hull(&points).unwrap();
        assert!(hull.mass_properties(1.0).mass() > voxterra::detach::POOR_HULL_RATIO * piece.volume);
    }
}

#[test]
fn a_cut_lintel_is_one_hull_and_small_bits_are_debris() {
    let mut t = Terrain::new(MaterialTable::default(), detaching(1 << 20)).unwrap();
    arch(&mut t, [0; 3]);
    // A pebble on a thin stalk beside the arch.
    t.fill(&Region::from_min_size(Point3::new(20, 4, 14), [1, 6, 1]).unwrap(), Voxel::full(materials::ROCK))
        .unwrap();
    t.fill(&Region::from_min_size(Point3::new(20, 10, 14), [2, 1, 2]).unwrap(), Voxel::full(materials::ROCK))
        .unwrap();
    let r = t.fill(&Region::from_min_size(Point3::new(20, 8, 14), [1, 1, 1]).unwrap(), Voxel::AIR).unwrap();
    assert_eq!((r.detached, r.debris), (0, 1), "the pebble and its stalk's top: 5 voxels");
    assert!(t.voxel(VoxelPos::new(21, 10, 15)).is_air());
    for x in [12.0, 26.0] {
        t.apply_brush(&Brush {
            shape: BrushShape::Box { min: Point3::new(x, 18.0, 0.0), max: Point3::new(x + 2.0, 30.0, 12.0) },
            op: BrushOp::Subtract,
        })
        .unwrap();
    }
    let pieces = t.take_detached();
    assert_eq!(pieces.len(), 1);
    let lintel = &pieces[0];
    assert_eq!(lintel.shape_parts, 1, "a box's hull is the box");
    assert_eq!(lintel.solid_voxels, 12 * 6 * 8);
    assert_eq!(lintel.material, materials::ROCK);
    let density = MaterialTable::default().get(materials::ROCK).unwrap().density;
    assert!((lintel.mass.mass - lintel.volume * density).abs() < 1e-3 * lintel.mass.mass);
    // The lintel's centre: x in [14, 26), y in [20, 26), z in [4, 12).
    assert!((lintel.mass.center - Point3::new(20.0, 23.0, 8.0)).norm() < 0.05, "{:?}", lintel.mass.center);
    // Its mesh sits around the centre where the lintel was.
    let lo = lintel.mesh.positions.iter().fold(f32::INFINITY, |m, p| m.min(p.y));
    assert!((lo + 3.0).abs() < 0.6, "bottom at {lo}");
}

#[test]
fn pieces_are_the_same_on_one_and_two_threads() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut t = Terrain::new(MaterialTable::default(), detaching(1 << 20)).unwrap();
            arch(&mut t, [0; 3]);
            for x in [11.0, 19.0, 27.0] {
                t.apply_brush(&Brush {
                    shape: BrushShape::Box {
                        min: Point3::new(x, 18.0, 0.0),
                        max: Point3::new(x + 1.5, 30.0, 16.0),
                    },
                    op: BrushOp::Subtract,
                })
                .unwrap();
            }
            cut_piers(&mut t, [0; 3]);
            t.take_detached()
        })
    };
    let (one, two) = (run(1), run(2));
    assert_eq!(one.len(), 4, "two lintel spans, then both piers' tops");
    assert_eq!(one.len(), two.len());
    for (a, b) in one.iter().zip(&two) {
        assert_eq!((a.bounds, a.solid_voxels, a.shape_parts), (b.bounds, b.solid_voxels, b.shape_parts));
        assert_eq!(a.mesh, b.mesh);
        assert_eq!(a.mass.mass.to_bits(), b.mass.mass.to_bits());
        assert_eq!(a.mass.center.map(f32::to_bits), b.mass.center.map(f32::to_bits));
    }
}

/// A ground, a post and a table top on it, in voxels (min, size), away from y 0 and from chunk
/// borders, as a user builds a scene by hand.
fn table_scene(t: &mut Terrain) {
    let rock = Voxel::full(materials::ROCK);
    for (min, size) in [([0, 5, 0], [16, 4, 16]), ([7, 9, 7], [2, 6, 2]), ([4, 15, 4], [8, 2, 8])] {
        t.fill(&Region::from_min_size(VoxelPos::from(min), size).unwrap(), rock).unwrap();
    }
}

/// Cuts the post; the pieces taken out (bounds and solid voxels) and the voxels left.
fn cut_post(t: &mut Terrain) -> (Vec<(Region, usize)>, Vec<Voxel>) {
    let cut = Region::from_min_size(VoxelPos::new(7, 11, 7), [2, 1, 2]).unwrap();
    t.fill(&cut, Voxel::AIR).unwrap();
    let pieces = t.take_detached().iter().map(|p| (p.bounds, p.solid_voxels)).collect();
    let all = Region::from_min_size(VoxelPos::new(-2, -2, -2), [20, 24, 20]).unwrap();
    (pieces, dense(t, &all))
}

/// A replica's terrain: a client that received everything a server over `t` sends.
fn replica_of(t: &Terrain) -> Terrain {
    use voxterra::replication::{ReplicaClient, ReplicationConfig, ReplicationServer, client_terrain};
    let config = ReplicationConfig { full_radius: 1e4, ..ReplicationConfig::default() };
    let mut server = ReplicationServer::new(config);
    let id = server.add_client(t);
    let e = t.extent().unwrap();
    let centre = Point3::from((e.min().coords + e.max().coords).cast::<f32>() * 0.5 * t.voxel_size());
    server.set_viewers(id, &[centre]).unwrap();
    let mut client = ReplicaClient::new(client_terrain(t.materials().clone(), t.voxel_size()).unwrap());
    loop {
        let msgs = server.tick(t, id, usize::MAX).unwrap();
        if msgs.is_empty() {
            break;
        }
        for m in &msgs {
            client.apply(m).unwrap();
        }
    }
    Terrain::from_store(client.terrain().store().clone(), MaterialTable::default(), detaching(1 << 20))
        .unwrap()
}

/// The same voxels give the same pieces whichever way the terrain was made: by edits, loaded from
/// a file (whose chunks start at y 0, below the ground), or received by a replica.
#[test]
fn the_anchor_depends_on_the_voxels_not_on_how_the_terrain_was_made() {
    let mut made = Terrain::new(MaterialTable::default(), detaching(1 << 20)).unwrap();
    table_scene(&mut made);
    let mut plain = Terrain::new(MaterialTable::default(), TerrainConfig::default()).unwrap();
    table_scene(&mut plain);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("table.vxt");
    plain.save(&path).unwrap();
    let mut loaded = Terrain::load(&path, detaching(1 << 20)).unwrap();
    assert_eq!(loaded.extent().unwrap().min().y, 0, "the loaded extent starts at the chunk's bottom");
    let mut replica = replica_of(&plain);

    let want = cut_post(&mut made);
    // The top and the post above the cut fall (8 x 8 x 2 + 2 x 2 x 3); the ground holds.
    assert_eq!(want.0.iter().map(|p| p.1).collect::<Vec<_>>(), vec![140]);
    assert_eq!(cut_post(&mut loaded), want, "loaded");
    assert_eq!(cut_post(&mut replica), want, "replica");
}

/// A generated world away from the origin: a crater near its top takes out what a flood fill with
/// the anchor rule says (here nothing: the world's ground holds), the same when generated, loaded
/// or rebuilt voxel by voxel through edits.
#[test]
fn a_generated_world_away_from_the_origin_keeps_its_ground() {
    let mut params = GenParams::new(7, [48, 40, 48]);
    params.origin = VoxelPos::new(3, 5, -7);
    let mut generated = Terrain::generate(&params, detaching(1 << 20)).unwrap();
    let box_ = Region::from_min_size(params.origin, params.size).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gen.vxt");
    generated.save(&path).unwrap();
    let mut loaded = Terrain::load(&path, detaching(1 << 20)).unwrap();
    // By edits: one fill per run of equal voxels along X.
    let mut made = Terrain::new(MaterialTable::default(), TerrainConfig::default()).unwrap();
    let voxels = dense(&generated, &box_);
    let s = box_.size();
    for y in 0..s[1] as i32 {
        for z in 0..s[2] as i32 {
            let mut x = 0;
            while x < s[0] as i32 {
                let at = |x: i32| voxels[box_.index_of(box_.min() + Vector3::new(x, y, z))];
                let (v, start) = (at(x), x);
                while x < s[0] as i32 && at(x) == v {
                    x += 1;
                }
                if !v.is_air() {
                    let run = Region::from_min_size(
                        box_.min() + Vector3::new(start, y, z),
                        [(x - start) as u32, 1, 1],
                    );
                    made.fill(&run.unwrap(), v).unwrap();
                }
            }
        }
    }
    made.reconfigure(detaching(1 << 20)).unwrap();
    // The crater: where a ray down the middle meets the ground.
    let top = voxterra::core::Ray::new(Point3::new(27.0, 60.0, 17.0), -Vector3::y());
    let hit = generated.cast_ray(&top, 100.0).unwrap().unwrap();
    let crater =
        Brush { shape: BrushShape::Sphere { center: hit.point, radius: 3.0 }, op: BrushOp::Subtract };
    let mut results = Vec::new();
    for t in [&mut generated, &mut loaded, &mut made] {
        let report = t.apply_brush(&crater).unwrap();
        let pieces: Vec<(Region, usize)> =
            t.take_detached().iter().map(|p| (p.bounds, p.solid_voxels)).collect();
        let removed: usize = pieces.iter().map(|p| p.1).sum();
        assert!(removed < 200, "a crater near the top cut {removed} voxels loose");
        // The brute force agrees on what is left floating near the crater: nothing beyond debris.
        let dirty = report.dirty.unwrap();
        assert_eq!(found(t, &dirty, 1 << 20), expected(t, &dirty, 1 << 20));
        results.push((report.detached, report.debris, pieces, dense(t, &box_.expanded(2))));
    }
    assert_eq!(results[0], results[1], "loaded");
    assert_eq!(results[0], results[2], "made by edits");
}

/// A voxel holds at an occupancy byte of 128 and up, as the mesher's inside: a post of one layer at
/// 127 holds nothing up, at 128 it does.
#[test]
fn half_occupancy_does_not_hold() {
    for (occupancy, falls) in [(127u8, true), (128, false)] {
        let mut t = Terrain::new(MaterialTable::default(), detaching(1 << 20)).unwrap();
        table_scene(&mut t);
        let layer = Region::from_min_size(VoxelPos::new(7, 11, 7), [2, 1, 2]).unwrap();
        let report = t.fill(&layer, Voxel::new(materials::ROCK, occupancy)).unwrap();
        assert_eq!(report.detached == 1, falls, "occupancy {occupancy}");
        assert_eq!(t.is_holding(VoxelPos::new(7, 11, 7)), !falls);
    }
}

/// An explicit floor: with `Anchor::Floor` under the ground, the ground itself would fall if cut
/// free; with it at the ground's bottom, the ground holds and the cut top falls.
#[test]
fn an_explicit_floor_anchors_only_at_or_below_it() {
    use voxterra::detach::Anchor;
    let config = |anchor| TerrainConfig {
        detach: Some(DetachConfig { anchor, ..budgeted(1 << 20) }),
        ..TerrainConfig::default()
    };
    let mut held = Terrain::new(MaterialTable::default(), config(Anchor::Floor(5))).unwrap();
    table_scene(&mut held);
    assert_eq!(cut_post(&mut held).0.iter().map(|p| p.1).collect::<Vec<_>>(), vec![140]);
    let mut sky = Terrain::new(MaterialTable::default(), config(Anchor::Floor(-100))).unwrap();
    table_scene(&mut sky);
    let (pieces, _) = cut_post(&mut sky);
    let mut sizes: Vec<usize> = pieces.iter().map(|p| p.1).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, vec![140, 16 * 4 * 16 + 2 * 2 * 2], "both halves fall in the sky");
    assert_eq!(held.anchor_layer(Anchor::LowestSolid), Some(5));
}

/// The lowest solid layer follows edits: solid added below lowers it, the layer carved away
/// raises it, an edit above leaves it.
#[test]
fn the_lowest_solid_layer_follows_edits() {
    use voxterra::detach::Anchor;
    let mut t = Terrain::new(MaterialTable::default(), TerrainConfig::default()).unwrap();
    assert_eq!(t.anchor_layer(Anchor::LowestSolid), None);
    table_scene(&mut t);
    assert_eq!(t.anchor_layer(Anchor::LowestSolid), Some(5));
    t.set_voxel(VoxelPos::new(40, -37, 3), Voxel::full(materials::DIRT)).unwrap();
    assert_eq!(t.anchor_layer(Anchor::LowestSolid), Some(-37));
    t.set_voxel(VoxelPos::new(40, -37, 3), Voxel::new(materials::DIRT, 127)).unwrap();
    assert_eq!(t.anchor_layer(Anchor::LowestSolid), Some(5), "under half full holds nothing");
    t.fill(&Region::from_min_size(VoxelPos::new(0, 5, 0), [16, 1, 16]).unwrap(), Voxel::AIR).unwrap();
    assert_eq!(t.anchor_layer(Anchor::LowestSolid), Some(6));
    t.fill(&Region::from_min_size(VoxelPos::new(4, 16, 4), [2, 1, 2]).unwrap(), Voxel::AIR).unwrap();
    assert_eq!(t.anchor_layer(Anchor::LowestSolid), Some(6));
    t.undo().unwrap();
    t.undo().unwrap();
    assert_eq!(t.anchor_layer(Anchor::LowestSolid), Some(5));
    assert_eq!(t.anchor_layer(Anchor::Floor(-3)), Some(-3));
}
