//! Replication: clients that received every message for a region equal the server there, bit for
//! bit, whatever edits, undos and moves came between; duplicated, reordered, dropped and damaged
//! messages never corrupt a client; mip-only regions never answer physics; the same input gives
//! the same bytes on 1 and 2 threads.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use proptest::prelude::*;
use voxterra::core::nalgebra::Point3;
use voxterra::core::{Region, Voxel, VoxelRead, materials};
use voxterra::parry3d::math::Pose;
use voxterra::parry3d::shape::SharedShape;
use voxterra::replication::{
    Applied, MIN_TICK_BUDGET, ReplicaClient, ReplicationConfig, ReplicationError, ReplicationServer,
    client_terrain,
};
use voxterra::worldgen::GenParams;
use voxterra::{Brush, BrushOp, BrushShape, Terrain, TerrainConfig};

const SIZE: [u32; 3] = [96, 48, 96];

fn server(seed: u64) -> Terrain {
    Terrain::generate(&GenParams::new(seed, SIZE), TerrainConfig::default()).unwrap()
}

fn client(t: &Terrain) -> ReplicaClient {
    ReplicaClient::new(client_terrain(t.materials().clone(), t.voxel_size()).unwrap())
}

fn config() -> ReplicationConfig {
    ReplicationConfig { full_radius: 24.0, mip_radii: [48.0, 96.0, 160.0], resend_messages: 1 << 16 }
}

fn dense(t: &Terrain, r: &Region) -> Vec<Voxel> {
    let mut v = vec![Voxel::AIR; r.len().unwrap()];
    t.store().read_box(r, &mut v).unwrap();
    v
}

/// Every region the server believes the client holds equals the server's voxels.
fn assert_mirrors(
    server: &Terrain,
    srv: &ReplicationServer,
    id: voxterra::replication::ClientId,
    c: &ReplicaClient,
) {
    let held = srv.full_regions(id).unwrap();
    assert!(!held.is_empty());
    for k in held {
        let r = k.region().unwrap();
        assert!(c.is_ready(&r), "{k:?} sent but not ready");
        assert!(dense(server, &r) == dense(c.terrain(), &r), "region {k:?} differs");
    }
}

/// Ticks until nothing is due, applying everything in order.
fn drain(
    t: &Terrain,
    srv: &mut ReplicationServer,
    id: voxterra::replication::ClientId,
    c: &mut ReplicaClient,
) {
    loop {
        let msgs = srv.tick(t, id, 1 << 20).unwrap();
        srv.validate().unwrap();
        if msgs.is_empty() {
            return;
        }
        for m in msgs {
            c.apply(&m).unwrap();
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Brush([f32; 3], f32, bool),
    Undo,
    Move([f32; 2]),
    Tick(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (proptest::array::uniform3(0.0f32..96.0), 2.0f32..6.0, any::<bool>()).prop_map(|(c, r, add)| Op::Brush(c, r, add)),
        1 => Just(Op::Undo),
        1 => proptest::array::uniform2(0.0f32..96.0).prop_map(Op::Move),
        3 => (MIN_TICK_BUDGET..40_000).prop_map(Op::Tick),
    ]
}

fn run_ops(
    t: &mut Terrain,
    srv: &mut ReplicationServer,
    id: voxterra::replication::ClientId,
    c: &mut ReplicaClient,
    ops: &[Op],
) {
    for o in ops {
        match o {
            Op::Brush(p, r, add) => {
                let op = if *add { BrushOp::Add(materials::ROCK) } else { BrushOp::Subtract };
                let shape = BrushShape::Sphere { center: Point3::new(p[0], p[1] * 0.5, p[2]), radius: *r };
                t.apply_brush(&Brush { shape, op }).unwrap();
            }
            Op::Undo => {
                let _ = t.undo();
            }
            Op::Move(p) => srv.set_viewers(id, &[Point3::new(p[0], 30.0, p[1])]).unwrap(),
            Op::Tick(budget) => {
                for m in srv.tick(t, id, *budget).unwrap() {
                    c.apply(&m).unwrap();
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10))]

    /// After any sequence of edits, undos, moves and budgeted ticks, once the due messages are
    /// delivered the client equals the server in every region it holds.
    #[test]
    fn clients_mirror_the_server_where_they_hold_full_data(
        seed in 1u64..200,
        ops in proptest::collection::vec(op(), 1..24),
    ) {
        let mut t = server(seed);
        let mut srv = ReplicationServer::new(config());
        let id = srv.add_client(&t);
        srv.set_viewers(id, &[Point3::new(48.0, 30.0, 48.0)]).unwrap();
        let mut c = client(&t);
        run_ops(&mut t, &mut srv, id, &mut c, &ops);
        drain(&t, &mut srv, id, &mut c);
        assert_mirrors(&t, &srv, id, &c);
    }
}

#[test]
fn duplicated_reordered_and_dropped_messages_never_corrupt_a_client() {
    let mut t = server(7);
    let mut srv = ReplicationServer::new(config());
    let id = srv.add_client(&t);
    srv.set_viewers(id, &[Point3::new(40.0, 30.0, 40.0)]).unwrap();
    let mut c = client(&t);
    let mut rng = voxterra_test_support::Rng::new(3);
    let mut held = 0;
    for round in 0..12 {
        let carve = Brush {
            shape: BrushShape::Sphere {
                center: Point3::new(30.0 + round as f32 * 2.0, 20.0, 40.0),
                radius: 4.0,
            },
            op: BrushOp::Subtract,
        };
        t.apply_brush(&carve).unwrap();
        let msgs = srv.tick(&t, id, 3 * MIN_TICK_BUDGET).unwrap();
        srv.validate().unwrap();
        // A hostile network: each message dropped, duplicated or delivered, in a shuffled order.
        let mut wire: Vec<&Vec<u8>> = Vec::new();
        for m in &msgs {
            match rng.below(4) {
                0 => {}
                1 => wire.extend([m, m]),
                _ => wire.push(m),
            }
        }
        for i in (1..wire.len()).rev() {
            wire.swap(i, rng.below(i as u64 + 1) as usize);
        }
        for m in wire {
            let (before, revision) = (c.expected(), c.terrain().revision());
            match c.apply(m).unwrap() {
                Applied::Ignored(_) => assert_eq!((c.expected(), c.terrain().revision()), (before, revision)),
                Applied::Held(n) => {
                    held += 1;
                    assert!(n > before);
                    assert_eq!((c.expected(), c.terrain().revision()), (before, revision));
                }
                _ => assert!(c.expected() > before),
            }
        }
        // The game asks for exactly what it missed.
        let request = c.resend_request();
        let again = srv.resend(id, &request).unwrap();
        assert!(again.len() <= request.missing.len() + msgs.len());
        for m in again {
            c.apply(&m).unwrap();
        }
        assert!(c.resend_request().missing.is_empty());
    }
    assert!(held > 0, "the shuffles left gaps");
    drain(&t, &mut srv, id, &mut c);
    assert_mirrors(&t, &srv, id, &c);
}

/// A client that lagged while its viewer was elsewhere and the server's delta log overflowed:
/// every region it calls ready equals the server's, and every ray it accepts answers as the
/// server's does.
#[test]
fn a_lagging_client_never_calls_stale_regions_ready() {
    let size = [224, 48, 64];
    let config_t = TerrainConfig { delta_log_bytes: 16 << 10, ..TerrainConfig::default() };
    let mut t = Terrain::generate(&GenParams::new(4, size), config_t).unwrap();
    let mut srv = ReplicationServer::new(config());
    let id = srv.add_client(&t);
    let mut c = client(&t);
    let (a, b) = (Point3::new(40.0, 30.0, 32.0), Point3::new(166.0, 30.0, 32.0));
    srv.set_viewers(id, &[a]).unwrap();
    drain(&t, &mut srv, id, &mut c);
    let near_a = c.ready_regions().count();
    assert!(near_a > 0);
    srv.set_viewers(id, &[b]).unwrap();
    drain(&t, &mut srv, id, &mut c);
    // Forty craters at A without ticking this client: more than the 16 KiB log holds.
    let mut rng = voxterra_test_support::Rng::new(40);
    let seq0 = t.sequence();
    for _ in 0..40 {
        let (x, z) = (a.x + rng.range(-16.0, 16.0), a.z + rng.range(-16.0, 16.0));
        let down = voxterra::core::Ray::new(Point3::new(x, 60.0, z), -voxterra::core::nalgebra::Vector3::y());
        let center = t.cast_ray(&down, 100.0).unwrap().unwrap().point;
        t.apply_brush(&Brush { shape: BrushShape::Sphere { center, radius: 5.0 }, op: BrushOp::Subtract })
            .unwrap();
    }
    assert_eq!(t.sequence(), seq0 + 40);
    assert!(
        t.edits_since(seq0).len() < 40,
        "the log overflowed: the client is further behind than it reaches"
    );
    let stale_before = c.ready_regions().filter(|k| {
        let r = k.region().unwrap();
        dense(&t, &r) != dense(c.terrain(), &r)
    });
    assert!(stale_before.count() > 0, "the craters changed regions the client holds");
    drain(&t, &mut srv, id, &mut c);
    let ready: Vec<_> = c.ready_regions().collect();
    assert!(!ready.is_empty());
    for k in &ready {
        let r = k.region().unwrap();
        assert!(dense(&t, &r) == dense(c.terrain(), &r), "ready region {k:?} differs from the server's");
    }
    let (mut accepted, mut refused) = (0, 0);
    for i in 0..180 {
        let (x, z) = (a.x - 20.0 + (i % 15) as f32 * 3.0, a.z - 18.0 + (i / 15) as f32 * 3.0);
        let ray = voxterra::core::Ray::new(Point3::new(x, 44.0, z), -voxterra::core::nalgebra::Vector3::y());
        match c.cast_ray(&ray, 40.0) {
            Ok(hit) => {
                accepted += 1;
                // The triangle's index is a chunk-mesh id, not part of the answer.
                let answer =
                    |h: Option<voxterra::TerrainRayHit>| h.map(|h| (h.t, h.point, h.normal, h.material));
                assert_eq!(answer(hit), answer(t.cast_ray(&ray, 40.0).unwrap()), "ray {i}");
            }
            Err(ReplicationError::NotReady(_)) => refused += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(accepted + refused, 180);
}

/// Frames whose key puts the box outside the i32 voxel space are refused before anything is
/// stored, a mip's chunk included (its coarse box alone would fit).
#[test]
fn keys_outside_the_voxel_space_are_refused() {
    let t = server(3);
    let mut c = client(&t);
    // A frame numbered 0 of `kind`, `key` and `level` around a valid packet: a box of air of the
    // size the kind names (a patch of 4³ at its region's corner).
    let frame = |kind: u8, key: [i32; 3], level: u8| {
        let mut frame = Vec::new();
        frame.extend_from_slice(b"VXR2");
        frame.extend_from_slice(&[0; 16]);
        frame.push(kind);
        for k in key {
            frame.extend_from_slice(&k.to_le_bytes());
        }
        frame.push(level);
        if kind == 2 {
            frame.extend_from_slice(&[0, 0, 0, 4, 4, 4]);
        }
        let side = match kind {
            1 => 32usize >> level,
            2 => 4,
            _ => 16,
        };
        voxterra::codec::encode_packet(&vec![Voxel::AIR; side * side * side], [side; 3], &mut frame);
        let crc = crc32(&frame);
        frame.extend_from_slice(&crc.to_le_bytes());
        frame
    };
    let chunk_keys = [[1 << 26, 0, 0], [0, -(1 << 26) - 1, 0], [0, 0, i32::MAX]];
    let region_keys = [[1 << 27, 0, 0], [0, -(1 << 27) - 1, 0], [0, 0, i32::MIN]];
    for (kind, level) in [(1u8, 2u8), (1, 1), (1, 3), (0, 0), (2, 0)] {
        for key in if kind == 1 { chunk_keys } else { region_keys } {
            let got = c.apply(&frame(kind, key, level));
            assert!(matches!(got, Err(ReplicationError::Malformed(_))), "{key:?} kind {kind}: {got:?}");
            assert_eq!(c.expected(), 0);
        }
    }
    // The same frame with a key in range is applied.
    assert!(matches!(c.apply(&frame(1, [0; 3], 2)), Ok(Applied::Mip(_, 2))));
}

/// A budget under the largest message is refused, not silently exceeded.
#[test]
fn a_budget_under_the_largest_message_is_refused() {
    let t = server(3);
    let mut srv = ReplicationServer::new(config());
    let id = srv.add_client(&t);
    srv.set_viewers(id, &[Point3::new(48.0, 30.0, 48.0)]).unwrap();
    assert!(matches!(srv.tick(&t, id, 64), Err(ReplicationError::BudgetTooSmall { budget: 64, .. })));
    for _ in 0..4 {
        let msgs = srv.tick(&t, id, MIN_TICK_BUDGET).unwrap();
        srv.validate().unwrap();
        assert!(msgs.iter().map(Vec::len).sum::<usize>() <= MIN_TICK_BUDGET);
    }
}

#[test]
fn malformed_messages_are_refused_and_change_nothing() {
    let t = server(9);
    let mut srv = ReplicationServer::new(config());
    let id = srv.add_client(&t);
    srv.set_viewers(id, &[Point3::new(48.0, 30.0, 48.0)]).unwrap();
    let mut c = client(&t);
    let msgs = srv.tick(&t, id, 1 << 20).unwrap();
    srv.validate().unwrap();
    let m = &msgs[0];
    let mut rng = voxterra_test_support::Rng::new(1);
    for _ in 0..200 {
        let mut bad = m.clone();
        let i = rng.below(bad.len() as u64) as usize;
        bad[i] ^= 1 << rng.below(8);
        assert!(matches!(c.apply(&bad), Err(ReplicationError::Malformed(_))));
        let cut = rng.below(bad.len() as u64) as usize;
        assert!(matches!(c.apply(&m[..cut]), Err(ReplicationError::Malformed(_))));
    }
    // A well-formed frame around voxels that do not decode: the packet is refused.
    let mut frame = m[..34].to_vec();
    frame.extend_from_slice(&[0xff; 9]);
    let crc = crc32(&frame);
    frame.extend_from_slice(&crc.to_le_bytes());
    assert!(matches!(c.apply(&frame), Err(ReplicationError::Packet(_))), "{:?}", c.apply(&frame));
    assert_eq!(c.expected(), 0);
    assert!(c.terrain().extent().is_none(), "nothing was written");
    for m in &msgs {
        c.apply(m).unwrap();
    }
    assert_mirrors(&t, &srv, id, &c);
}

/// CRC-32 (IEEE), bit by bit: the reference for the frame's checksum.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { crc >> 1 ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

#[test]
fn mip_only_regions_never_answer_physics() {
    let t = server(11);
    let mut srv = ReplicationServer::new(ReplicationConfig { full_radius: 12.0, ..config() });
    let id = srv.add_client(&t);
    srv.set_viewers(id, &[Point3::new(16.0, 30.0, 16.0)]).unwrap();
    let mut c = client(&t);
    drain(&t, &mut srv, id, &mut c);
    let ball = SharedShape::ball(1.0);
    let ground = |x: f32, z: f32| {
        let down = voxterra::core::Ray::new(Point3::new(x, 60.0, z), -voxterra::core::nalgebra::Vector3::y());
        t.cast_ray(&down, 100.0).unwrap().unwrap().point.y
    };
    // Far away the client has mips only: contacts and rays say so, and the terrain has no voxels.
    let far = Pose::translation(80.0, ground(80.0, 80.0) + 0.9, 80.0);
    let mut out = Vec::new();
    assert!(matches!(c.contacts(&*ball, &far, 0.02, &mut out), Err(ReplicationError::NotReady(_))));
    let key = voxterra::core::StoreChunkKey::containing(Point3::new(80, ground(80.0, 80.0) as i32, 80));
    assert!(c.mip(key).is_some(), "far chunks come as mips");
    let region = key.region().unwrap();
    assert!(dense(c.terrain(), &region).iter().all(|v| v.is_air()), "mips never reach the terrain");
    let down =
        voxterra::core::Ray::new(Point3::new(80.0, 60.0, 80.0), -voxterra::core::nalgebra::Vector3::y());
    assert!(matches!(c.cast_ray(&down, 100.0), Err(ReplicationError::NotReady(_))));
    // Near the viewer it answers as the server does.
    let near = Pose::translation(16.0, ground(16.0, 16.0) + 0.9, 16.0);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    c.contacts(&*ball, &near, 0.02, &mut a).unwrap();
    t.contacts(&*ball, &near, 0.02, &mut b).unwrap();
    assert!(!a.is_empty());
    assert_eq!(a, b);
}

#[test]
fn the_same_input_gives_the_same_bytes_on_one_and_two_threads() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut t = server(5);
            let mut srv = ReplicationServer::new(config());
            let id = srv.add_client(&t);
            let mut c = client(&t);
            let ops = [
                Op::Move([20.0, 20.0]),
                Op::Tick(MIN_TICK_BUDGET),
                Op::Brush([22.0, 40.0, 22.0], 5.0, false),
                Op::Tick(MIN_TICK_BUDGET),
                Op::Move([60.0, 70.0]),
                Op::Brush([60.0, 40.0, 70.0], 4.0, true),
                Op::Undo,
                Op::Tick(2 * MIN_TICK_BUDGET),
            ];
            let mut all = Vec::new();
            for o in &ops {
                match o {
                    Op::Tick(budget) => {
                        let m = srv.tick(&t, id, *budget).unwrap();
                        srv.validate().unwrap();
                        for x in &m {
                            c.apply(x).unwrap();
                        }
                        all.extend(m);
                    }
                    _ => run_ops(&mut t, &mut srv, id, &mut c, std::slice::from_ref(o)),
                }
            }
            loop {
                let m = srv.tick(&t, id, 1 << 16).unwrap();
                srv.validate().unwrap();
                if m.is_empty() {
                    break;
                }
                all.extend(m);
            }
            all
        })
    };
    let (one, two) = (run(1), run(2));
    assert!(!one.is_empty());
    assert!(one == two);
}

#[test]
fn the_fuzz_corpus_replays() {
    voxterra_test_support::replay_corpus("apply_message", voxterra::fuzz::check_apply_message);
}
