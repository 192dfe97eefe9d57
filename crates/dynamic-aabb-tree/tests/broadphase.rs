//! The dynamic AABB tree against core's O(n²) brute-force broadphase: random create / move /
//! destroy sequences with identical pairs at every step, queries, determinism across thread
//! counts, and rejected input.

// Tests unwrap: a failure should stop the test where it happened.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Aabb, Broadphase, BruteForceBroadphase, ProxyError, ProxyId, ProxyMove, Ray};
use voxterra_dynamic_aabb_tree::{DynamicAabbTree, MAX_COORD, ProxyKind, TreeConfig};

#[derive(Clone, Debug)]
enum Op {
    Create {
        b: Aabb,
        kind: ProxyKind,
    },
    Move {
        pick: usize,
        b: Aabb,
        d: [f32; 3],
    },
    /// Moves in one batch; `bad` puts a NaN box at that position.
    MoveMany {
        moves: Vec<(usize, Aabb, [f32; 3])>,
        bad: Option<usize>,
    },
    Destroy {
        pick: usize,
    },
    Pairs,
    Query {
        b: Aabb,
    },
    Ray {
        origin: [f32; 3],
        dir: [f32; 3],
    },
}

fn aabb() -> impl Strategy<Value = Aabb> {
    // A small world so boxes overlap often; sizes include zero (points and planes).
    ([0.0f32..24.0, 0.0f32..24.0, 0.0f32..24.0], [0.0f32..5.0, 0.0f32..5.0, 0.0f32..5.0], 0u8..8).prop_map(
        |(m, e, snap)| {
            // Snap some boxes to the integer grid so faces touch exactly.
            let m = if snap == 0 { m.map(f32::floor) } else { m };
            let e = if snap <= 1 { e.map(f32::floor) } else { e };
            Aabb::new(Point3::from(m), Point3::new(m[0] + e[0], m[1] + e[1], m[2] + e[2]))
        },
    )
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (aabb(), prop_oneof![3 => Just(ProxyKind::Dynamic), 1 => Just(ProxyKind::Static)])
            .prop_map(|(b, kind)| Op::Create { b, kind }),
        6 => (any::<usize>(), aabb(), [-3.0f32..3.0, -3.0f32..3.0, -3.0f32..3.0])
            .prop_map(|(pick, b, d)| Op::Move { pick, b, d }),
        2 => (
            prop::collection::vec((any::<usize>(), aabb(), [-3.0f32..3.0, -3.0f32..3.0, -3.0f32..3.0]), 0..40),
            prop::option::weighted(0.2, any::<usize>()),
        )
            .prop_map(|(moves, bad)| Op::MoveMany { moves, bad }),
        1 => any::<usize>().prop_map(|pick| Op::Destroy { pick }),
        3 => Just(Op::Pairs),
        1 => aabb().prop_map(|b| Op::Query { b }),
        1 => ([-5.0f32..30.0, -5.0f32..30.0, -5.0f32..30.0], [-1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0])
            .prop_map(|(origin, dir)| Op::Ray { origin, dir }),
    ]
}

/// A small move: a box near its old position (as bodies move), so fat boxes matter.
fn nudge(old: Aabb, d: [f32; 3]) -> Aabb {
    let d = Vector3::from(d) * 0.1;
    Aabb::new(old.mins + d, old.maxs + d)
}

struct Pair {
    tree: DynamicAabbTree,
    brute: BruteForceBroadphase,
    live: Vec<(ProxyId, ProxyKind)>,
}

impl Pair {
    fn new(config: TreeConfig) -> Self {
        Pair { tree: DynamicAabbTree::with_config(config), brute: BruteForceBroadphase::new(), live: vec![] }
    }

    fn kind(&self, id: ProxyId) -> ProxyKind {
        self.live.iter().find(|l| l.0 == id).unwrap().1
    }

    fn apply(&mut self, op: &Op) {
        match op {
            Op::Create { b, kind } => {
                let ud = self.live.len() as u64 * 7 + 1;
                let id = self.tree.create_proxy_of_kind(*b, ud, *kind).unwrap();
                assert_eq!(self.brute.create_proxy(*b, ud).unwrap(), id, "ids are handed out alike");
                self.live.push((id, *kind));
                assert_eq!(self.tree.user_data(id), Some(ud));
                assert_eq!(self.tree.kind(id), Some(*kind));
            }
            Op::Move { pick, b, d } => {
                if self.live.is_empty() {
                    return;
                }
                let id = self.live[pick % self.live.len()].0;
                // Half the moves are nudges, half jumps anywhere.
                let to = if pick % 2 == 0 { nudge(self.tree.aabb(id).unwrap(), *d) } else { *b };
                let disp = Vector3::from(*d);
                self.tree.move_proxy(id, to, disp).unwrap();
                self.brute.move_proxy(id, to, disp).unwrap();
                assert!(self.tree.fat_aabb(id).unwrap().contains(&to));
            }
            Op::MoveMany { moves, bad } => {
                if self.live.is_empty() {
                    return;
                }
                let mut batch: Vec<ProxyMove> = moves
                    .iter()
                    .map(|&(pick, b, d)| {
                        let id = self.live[pick % self.live.len()].0;
                        let to = if pick % 2 == 0 { nudge(self.tree.aabb(id).unwrap(), d) } else { b };
                        ProxyMove { id, aabb: to, displacement: Vector3::from(d) }
                    })
                    .collect();
                let bad = bad.filter(|_| !batch.is_empty()).map(|k| k % batch.len());
                if let Some(k) = bad {
                    batch[k].aabb.mins.x = f32::NAN;
                }
                let got = self.tree.move_proxies(&batch);
                let applied = bad.unwrap_or(batch.len());
                for m in &batch[..applied] {
                    self.brute.move_proxy(m.id, m.aabb, m.displacement).unwrap();
                }
                match bad {
                    Some(_) => assert!(matches!(got, Err(ProxyError::InvalidAabb { .. })), "{got:?}"),
                    None => assert!(got.is_ok(), "{got:?}"),
                }
                // The moves before a bad one stand (a proxy may appear twice: the last one wins).
                for m in &batch[..applied] {
                    let last = batch[..applied].iter().rev().find(|n| n.id == m.id).unwrap();
                    assert_eq!(self.tree.aabb(m.id), Some(last.aabb));
                    assert!(self.tree.fat_aabb(m.id).unwrap().contains(&last.aabb));
                }
            }
            Op::Destroy { pick } => {
                if self.live.is_empty() {
                    return;
                }
                let (id, _) = self.live.swap_remove(pick % self.live.len());
                self.tree.destroy_proxy(id).unwrap();
                self.brute.destroy_proxy(id).unwrap();
                assert_eq!(self.tree.destroy_proxy(id), Err(ProxyError::UnknownProxy(id.0)));
                assert_eq!(self.tree.user_data(id), None);
            }
            Op::Pairs => {
                let mut ours = vec![];
                self.tree.update_pairs(&mut |a, b| ours.push((a, b)));
                let mut want = vec![];
                self.brute.update_pairs(&mut |a, b| want.push((a, b)));
                // Static–static pairs are never reported by design.
                want.retain(|&(a, b)| {
                    self.kind(a) == ProxyKind::Dynamic || self.kind(b) == ProxyKind::Dynamic
                });
                assert_eq!(ours, want);
            }
            Op::Query { b } => {
                let mut ours = vec![];
                self.tree.query_aabb(b, &mut |id| {
                    ours.push(id);
                    true
                });
                let mut want = vec![];
                self.brute.query_aabb(b, &mut |id| {
                    want.push(id);
                    true
                });
                ours.sort();
                assert_eq!(ours, want);
                let p = b.center();
                let mut ours = vec![];
                self.tree.query_point(&p, &mut |id| {
                    ours.push(id);
                    true
                });
                ours.sort();
                let mut want: Vec<ProxyId> = self
                    .live
                    .iter()
                    .map(|l| l.0)
                    .filter(|&id| {
                        let a = self.tree.aabb(id).unwrap();
                        (0..3).all(|k| a.mins[k] <= p[k] && p[k] <= a.maxs[k])
                    })
                    .collect();
                want.sort();
                assert_eq!(ours, want);
            }
            Op::Ray { origin, dir } => {
                let ray = Ray::new(Point3::from(*origin), Vector3::from(*dir));
                // All hits: the callback keeps the limit.
                let mut ours = vec![];
                self.tree.cast_ray(&ray, 50.0, &mut |id, _, l| {
                    ours.push(id);
                    l
                });
                let mut want = vec![];
                self.brute.cast_ray(&ray, 50.0, &mut |id, _, l| {
                    want.push(id);
                    l
                });
                ours.sort();
                assert_eq!(ours, want);
                // Closest entry: the callback clips to each box's entry distance.
                let closest = |bp: &dyn Broadphase, boxes: &dyn Fn(ProxyId) -> Aabb| {
                    let mut best = f32::INFINITY;
                    bp.cast_ray(&ray, 50.0, &mut |id, r, l| {
                        let t = boxes(id).clip_ray(r, l).unwrap().0;
                        best = best.min(t);
                        if t > 0.0 { t } else { 0.0 }
                    });
                    best
                };
                let tree = &self.tree;
                let ours = closest(tree, &|id| tree.aabb(id).unwrap());
                let want = closest(&self.brute, &|id| tree.aabb(id).unwrap());
                assert_eq!(ours, want);
            }
        }
        self.tree.validate().unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn matches_brute_force(ops in prop::collection::vec(op(), 1..160), margin in 0.0f32..0.5) {
        let mut p = Pair::new(TreeConfig { margin, displacement_factor: 2.0, ..TreeConfig::default() });
        for op in &ops {
            p.apply(op);
        }
        p.apply(&Op::Pairs);
        // A full rebuild keeps every proxy and gives the same answers.
        p.tree.rebuild();
        p.tree.validate().unwrap();
        p.apply(&Op::Query { b: Aabb::new(Point3::new(5.0, 5.0, 5.0), Point3::new(15.0, 15.0, 15.0)) });
    }

    #[test]
    fn parallel_pairs_equal_sequential(ops in prop::collection::vec(op(), 1..200)) {
        // Every update splits, however few moved.
        let mut seq = Pair::new(TreeConfig { parallel_min_moved: 0, ..TreeConfig::default() });
        for op in ops.iter().filter(|o| !matches!(o, Op::Pairs)) {
            seq.apply(op);
        }
        let mut par = seq.tree.clone();
        let mut a = vec![];
        seq.tree.update_pairs(&mut |x, y| a.push((x, y)));
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let mut b = vec![];
        pool.install(|| par.update_pairs_parallel(&mut |x, y| b.push((x, y))));
        prop_assert_eq!(a, b);
    }
}

/// A ray component: an axis-parallel or signed-zero direction half the time.
fn dir_component() -> impl Strategy<Value = f32> {
    prop_oneof![1 => Just(0.0f32), 1 => Just(-0.0f32), 1 => Just(1.0f32), 1 => Just(-1.0f32), 4 => -1.0f32..1.0]
}

/// An origin component: often on the integer planes that snapped boxes' faces lie in, sometimes
/// not finite.
fn origin_component() -> impl Strategy<Value = f32> {
    prop_oneof![
        4 => (-2i32..27).prop_map(|v| v as f32),
        4 => -5.0f32..30.0,
        1 => prop_oneof![Just(f32::NAN), Just(f32::INFINITY), Just(f32::NEG_INFINITY)],
    ]
}

/// The proxies a callback sees, sorted.
fn sorted(mut v: Vec<ProxyId>) -> Vec<ProxyId> {
    v.sort();
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Rays along axes, in box faces' planes, with signed zeros and non-finite origins, against a
    /// tree deep enough for every node test to matter: the same boxes as brute force, all hits and
    /// closest.
    #[test]
    fn awkward_rays_match_brute_force(
        boxes in prop::collection::vec((aabb(), any::<bool>()), 1..300),
        rays in prop::collection::vec(([origin_component(), origin_component(), origin_component()],
            [dir_component(), dir_component(), dir_component()]), 1..16),
    ) {
        // No margin: node boxes then have faces in the integer planes too.
        let mut tree = DynamicAabbTree::with_config(TreeConfig { margin: 0.0, ..TreeConfig::default() });
        let mut brute = BruteForceBroadphase::new();
        for (i, &(b, still)) in boxes.iter().enumerate() {
            let kind = if still { ProxyKind::Static } else { ProxyKind::Dynamic };
            prop_assert_eq!(tree.create_proxy_of_kind(b, i as u64, kind).unwrap(), brute.create_proxy(b, i as u64).unwrap());
        }
        for (origin, dir) in rays {
            let ray = Ray::new(Point3::from(origin), Vector3::from(dir));
            let all = |bp: &dyn Broadphase| {
                let mut v = vec![];
                bp.cast_ray(&ray, 40.0, &mut |id, _, l| {
                    v.push(id);
                    l
                });
                sorted(v)
            };
            prop_assert_eq!(all(&tree), all(&brute), "all hits of {:?}", ray);
            let closest = |bp: &dyn Broadphase| {
                let mut best = (f32::INFINITY, None);
                bp.cast_ray(&ray, 40.0, &mut |id, r, l| {
                    let t = boxes[id.0 as usize].0.clip_ray(r, l).unwrap().0;
                    if t < best.0 || (t == best.0 && Some(id) < best.1) {
                        best = (t, Some(id));
                    }
                    if t > 0.0 { t } else { 0.0 }
                });
                best.0
            };
            prop_assert_eq!(closest(&tree).to_bits(), closest(&brute).to_bits(), "closest hit of {:?}", ray);
        }
    }

    /// Box queries from points to the whole world on up to 3000 proxies: wide enough that the
    /// breadth-first ring overflows into its depth-first fallback. The same set as brute force,
    /// and a visitor that stops after `k` results is called exactly `min(k, all)` times.
    #[test]
    fn big_queries_match_brute_force(
        n in 1usize..3000,
        seed in any::<u64>(),
        queries in prop::collection::vec(([0.0f32..60.0, 0.0f32..60.0, 0.0f32..60.0], 0.0f32..70.0, 0usize..50), 1..8),
    ) {
        let mut tree = DynamicAabbTree::new();
        let mut brute = BruteForceBroadphase::new();
        let mut rng = seed | 1;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng >> 40) as f32 / (1u64 << 24) as f32
        };
        for i in 0..n {
            let c = Point3::new(next() * 60.0, next() * 60.0, next() * 60.0);
            let b = Aabb::new(c, c + Vector3::new(next(), next(), next()) * 2.0);
            let kind = if i % 5 == 0 { ProxyKind::Static } else { ProxyKind::Dynamic };
            tree.create_proxy_of_kind(b, i as u64, kind).unwrap();
            brute.create_proxy(b, i as u64).unwrap();
        }
        for (corner, size, k) in queries {
            let q = Aabb::new(Point3::from(corner), Point3::from(corner) + Vector3::repeat(size));
            let found = |bp: &dyn Broadphase| {
                let mut v = vec![];
                bp.query_aabb(&q, &mut |id| {
                    v.push(id);
                    true
                });
                v
            };
            let all = found(&tree);
            prop_assert_eq!(sorted(all.clone()), found(&brute));
            let mut seen = vec![];
            tree.query_aabb(&q, &mut |id| {
                seen.push(id);
                seen.len() < k
            });
            prop_assert_eq!(&seen[..], &all[..k.clamp(1, all.len().max(1)).min(all.len())]);
        }
    }
}

/// A bigger scene of bodies bouncing in a box, as the benchmark runs it: identical pair lists to
/// brute force every frame, with 1 and 2 threads, under some churn, and a tree that keeps its
/// quality.
#[test]
fn bouncing_scene_matches_brute_force_and_threads() {
    let n = 600;
    let side = (4.0 * n as f32).cbrt();
    let mut rng = 0x1234_5678_u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 40) as f32 / (1u64 << 24) as f32
    };
    let mut bodies: Vec<(Point3<f32>, Vector3<f32>, f32)> = (0..n)
        .map(|_| {
            let p = Point3::new(next() * side, next() * side, next() * side);
            let v = Vector3::new(next() - 0.5, next() - 0.5, next() - 0.5) * 6.0;
            (p, v, 0.25 + next() * 0.5)
        })
        .collect();
    let boxof = |p: &Point3<f32>, h: f32| Aabb::new(p - Vector3::repeat(h), p + Vector3::repeat(h));
    // The parallel path splits every update here, however few moved.
    let mut tree =
        DynamicAabbTree::with_config(TreeConfig { parallel_min_moved: 0, ..TreeConfig::default() });
    let mut brute = BruteForceBroadphase::new();
    let mut ids = vec![];
    for (i, (p, _, h)) in bodies.iter().enumerate() {
        let kind = if i % 10 == 0 { ProxyKind::Static } else { ProxyKind::Dynamic };
        ids.push(tree.create_proxy_of_kind(boxof(p, *h), i as u64, kind).unwrap());
        brute.create_proxy(boxof(p, *h), i as u64).unwrap();
    }
    let dt = 1.0 / 60.0;
    for frame in 0..120 {
        // Some churn: a body leaves and comes back, which cancels rebuilds under way.
        let j = (frame * 37 + 1) % n;
        if frame % 4 == 1 && j % 10 != 0 {
            let (p, _, h) = bodies[j];
            tree.destroy_proxy(ids[j]).unwrap();
            brute.destroy_proxy(ids[j]).unwrap();
            ids[j] = tree.create_proxy_of_kind(boxof(&p, h), j as u64, ProxyKind::Dynamic).unwrap();
            assert_eq!(brute.create_proxy(boxof(&p, h), j as u64).unwrap(), ids[j]);
        }
        for (i, (p, v, h)) in bodies.iter_mut().enumerate() {
            // A tenth stays still; of the rest, a third rests every other frame.
            if i % 10 == 0 || (i % 3 == 0 && frame % 2 == 0) {
                continue;
            }
            *p += *v * dt;
            for k in 0..3 {
                if p[k] < 0.0 || p[k] > side {
                    v[k] = -v[k];
                }
            }
            tree.move_proxy(ids[i], boxof(p, *h), *v * dt).unwrap();
            brute.move_proxy(ids[i], boxof(p, *h), *v * dt).unwrap();
        }
        let mut want = vec![];
        brute.update_pairs(&mut |a, b| {
            if a.0 % 10 != 0 || b.0 % 10 != 0 {
                want.push((a, b));
            }
        });
        let mut other = tree.clone();
        let mut ours = vec![];
        tree.update_pairs(&mut |a, b| ours.push((a, b)));
        assert_eq!(ours, want, "frame {frame}");
        for threads in [1, 2] {
            let mut t = other.clone();
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let mut par = vec![];
            pool.install(|| t.update_pairs_parallel(&mut |a, b| par.push((a, b))));
            assert_eq!(par, want, "frame {frame}, {threads} threads");
        }
        other.flush();
        other.validate().unwrap();
    }
    tree.validate().unwrap();
    let ratio = tree.area_ratio();
    assert!(ratio < 1.2, "SAH cost {ratio} times a fresh rebuild's");
}

#[test]
fn bad_boxes_are_rejected() {
    let mut tree = DynamicAabbTree::new();
    let nan = Aabb::new(Point3::new(f32::NAN, 0.0, 0.0), Point3::new(1.0, 1.0, 1.0));
    let inverted = Aabb::new(Point3::new(2.0, 0.0, 0.0), Point3::new(1.0, 1.0, 1.0));
    let huge = Aabb::new(Point3::new(-1e10, 0.0, 0.0), Point3::new(1.0, 1.0, 1.0));
    let inf = Aabb::new(Point3::new(0.0, 0.0, 0.0), Point3::new(f32::INFINITY, 1.0, 1.0));
    for b in [nan, inverted, inf] {
        assert!(matches!(tree.create_proxy(b, 0), Err(ProxyError::InvalidAabb { .. })), "{b:?}");
    }
    assert!(matches!(tree.create_proxy(huge, 0), Err(ProxyError::OutOfRange { limit: MAX_COORD, .. })));
    let ok = Aabb::new(Point3::origin(), Point3::new(1.0, 1.0, 1.0));
    let id = tree.create_proxy(ok, 0).unwrap();
    for b in [nan, inverted, inf] {
        assert!(matches!(tree.move_proxy(id, b, Vector3::zeros()), Err(ProxyError::InvalidAabb { .. })));
    }
    assert!(matches!(tree.move_proxy(id, huge, Vector3::zeros()), Err(ProxyError::OutOfRange { .. })));
    // A non-finite motion hint is ignored (documented clamp), not an error.
    tree.move_proxy(id, ok, Vector3::new(f32::NAN, f32::INFINITY, 0.0)).unwrap();
    assert_eq!(tree.move_proxy(ProxyId(9), ok, Vector3::zeros()), Err(ProxyError::UnknownProxy(9)));
    // Rays with NaN or zero directions find nothing and do not panic.
    for dir in [Vector3::zeros(), Vector3::new(f32::NAN, 0.0, 0.0)] {
        tree.cast_ray(&Ray::new(Point3::new(0.5, 0.5, -1.0), dir), 10.0, &mut |_, _, l| l);
    }
    tree.validate().unwrap();
    let bad = TreeConfig { margin: f32::NAN, displacement_factor: -1.0, parallel_min_moved: 7 };
    let clamped = DynamicAabbTree::with_config(bad);
    assert_eq!(clamped.config(), TreeConfig { margin: 0.0, displacement_factor: 0.0, parallel_min_moved: 7 });
}

#[test]
fn moves_inside_the_fat_box_touch_no_node() {
    let mut tree = DynamicAabbTree::with_config(TreeConfig {
        margin: 0.5,
        displacement_factor: 0.0,
        ..TreeConfig::default()
    });
    let cube = |x: f32| Aabb::new(Point3::new(x, 0.0, 0.0), Point3::new(x + 1.0, 1.0, 1.0));
    let ids: Vec<_> = (0..50).map(|i| tree.create_proxy(cube(i as f32 * 3.0), i).unwrap()).collect();
    tree.update_pairs(&mut |_, _| {});
    let fat = tree.fat_aabb(ids[7]).unwrap();
    tree.move_proxy(ids[7], cube(21.3), Vector3::zeros()).unwrap();
    assert_eq!(tree.fat_aabb(ids[7]).unwrap(), fat, "still inside: the fat box is kept");
    tree.move_proxy(ids[7], cube(22.0), Vector3::new(1.0, 0.0, 0.0)).unwrap();
    let moved = tree.fat_aabb(ids[7]).unwrap();
    assert!(moved.maxs.x >= 23.0 + 0.5 + 0.0 && moved.contains(&cube(22.0)));
    let mut pairs = vec![];
    tree.update_pairs(&mut |a, b| pairs.push((a, b)));
    assert!(pairs.is_empty());
    // A static proxy starts with no margin; moved, it is fattened as any other.
    let wall = tree.create_static_proxy(cube(200.0), 99).unwrap();
    assert_eq!(tree.fat_aabb(wall), Some(cube(200.0)));
    tree.move_proxy(wall, cube(200.2), Vector3::zeros()).unwrap();
    assert_eq!(tree.fat_aabb(wall), Some(cube(200.2).loosened(0.5)));
    tree.validate().unwrap();
}

#[test]
fn empty_and_single() {
    let mut tree = DynamicAabbTree::new();
    tree.update_pairs(&mut |_, _| panic!("no pairs"));
    tree.update_pairs_parallel(&mut |_, _| panic!("no pairs"));
    tree.query_aabb(&Aabb::new(Point3::origin(), Point3::new(1.0, 1.0, 1.0)), &mut |_| panic!("none"));
    tree.rebuild();
    assert_eq!(tree.area_ratio(), 1.0);
    let a = tree.create_static_proxy(Aabb::new(Point3::origin(), Point3::new(1.0, 1.0, 1.0)), 3).unwrap();
    tree.update_pairs(&mut |_, _| panic!("no pairs"));
    let s = tree.stats();
    assert_eq!((s.proxies, s.statics.leaves, s.dynamic.leaves), (1, 1, 0));
    tree.destroy_proxy(a).unwrap();
    assert!(tree.is_empty());
    tree.validate().unwrap();
}

proptest! {
    /// A batch created at once gives the ids, pairs and query results of creating each in turn,
    /// whether the tree takes it by insertion or by a bulk rebuild (small and large batches on
    /// trees with free slots).
    #[test]
    fn create_many_equals_creating_each(
        before in prop::collection::vec(aabb(), 0..40),
        destroy in prop::collection::vec(any::<bool>(), 40),
        batch in prop::collection::vec(aabb(), 0..80),
        statics in any::<bool>(),
        q in aabb(),
    ) {
        let kind = if statics { ProxyKind::Static } else { ProxyKind::Dynamic };
        let (mut bulk, mut each) = (DynamicAabbTree::new(), DynamicAabbTree::new());
        for tree in [&mut bulk, &mut each] {
            let ids: Vec<_> = before.iter().enumerate().map(|(i, b)| tree.create_proxy(*b, i as u64).unwrap()).collect();
            for (id, _) in ids.iter().zip(&destroy).filter(|(_, d)| **d) {
                tree.destroy_proxy(*id).unwrap();
            }
            tree.update_pairs(&mut |_, _| {});
        }
        let proxies: Vec<(Aabb, u64)> = batch.iter().enumerate().map(|(i, b)| (*b, 1000 + i as u64)).collect();
        let got = bulk.create_proxies(&proxies, kind).unwrap();
        let want: Vec<_> = proxies.iter().map(|&(b, u)| each.create_proxy_of_kind(b, u, kind).unwrap()).collect();
        prop_assert_eq!(&got, &want);
        for id in &got {
            prop_assert_eq!(bulk.user_data(*id), each.user_data(*id));
            prop_assert_eq!(bulk.fat_aabb(*id), each.fat_aabb(*id));
        }
        bulk.validate().unwrap();
        let pairs = |t: &mut DynamicAabbTree| {
            let mut v = vec![];
            t.update_pairs(&mut |a, b| v.push((a, b)));
            v
        };
        prop_assert_eq!(pairs(&mut bulk), pairs(&mut each));
        let found = |t: &DynamicAabbTree| {
            let mut v = vec![];
            t.query_aabb(&q, &mut |id| {
                v.push(id);
                true
            });
            v.sort_unstable_by_key(|id| id.0);
            v
        };
        prop_assert_eq!(found(&bulk), found(&each));
        bulk.validate().unwrap();
    }
}

#[test]
fn create_many_is_all_or_nothing() {
    let mut tree = DynamicAabbTree::new();
    let cube = |x: f32| Aabb::new(Point3::new(x, 0.0, 0.0), Point3::new(x + 1.0, 1.0, 1.0));
    tree.create_proxy(cube(0.0), 0).unwrap();
    let nan = Aabb::new(Point3::new(f32::NAN, 0.0, 0.0), Point3::new(1.0, 1.0, 1.0));
    let batch: Vec<(Aabb, u64)> =
        (0..10).map(|i| (if i == 6 { nan } else { cube(i as f32 * 0.5) }, i)).collect();
    match tree.create_proxies(&batch, ProxyKind::Dynamic) {
        Err(ProxyError::InBatch { index, source }) => {
            assert_eq!(index, 6);
            assert!(matches!(*source, ProxyError::InvalidAabb { .. }), "{source}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(tree.stats().proxies, 1);
    assert_eq!(tree.user_data(ProxyId(1)), None);
    tree.validate().unwrap();
    let ids = tree.create_proxies(&batch[..6], ProxyKind::Dynamic).unwrap();
    assert_eq!(ids, (1..7).map(ProxyId).collect::<Vec<_>>());
    let mut pairs = vec![];
    tree.update_pairs(&mut |a, b| pairs.push((a.0, b.0)));
    // Cubes at x = 0, 0, 0.5, …, 2.5: each touches those within 1.
    let xs = [0.0f32, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5];
    let want: Vec<(u32, u32)> = (0..7u32)
        .flat_map(|a| (a + 1..7).map(move |b| (a, b)))
        .filter(|&(a, b)| (xs[a as usize] - xs[b as usize]).abs() <= 1.0)
        .collect();
    assert_eq!(pairs, want);
    tree.validate().unwrap();
}

#[test]
fn rebuild_partial_restores_quality_after_a_teleport() {
    let mut tree = DynamicAabbTree::new();
    let cube =
        |x: f32, y: f32, z: f32| Aabb::new(Point3::new(x, y, z), Point3::new(x + 1.0, y + 1.0, z + 1.0));
    let boxes: Vec<(Aabb, u64)> = (0..1000)
        .map(|i| (cube((i % 10) as f32 * 0.9, (i / 10 % 10) as f32 * 0.9, (i / 100) as f32 * 0.9), i))
        .collect();
    let ids = tree.create_proxies(&boxes, ProxyKind::Dynamic).unwrap();
    tree.update_pairs(&mut |_, _| {});
    let before = tree.area_ratio();
    // Three boxes jump to the far corners.
    for (k, &id) in ids[..3].iter().enumerate() {
        let far = cube(30.0 + k as f32 * 0.5, 30.0, 30.0);
        tree.move_proxy(id, far, Vector3::zeros()).unwrap();
    }
    let stretched = tree.area_ratio();
    tree.rebuild_partial();
    tree.validate().unwrap();
    let after = tree.area_ratio();
    assert!(stretched > before * 1.1, "the jumps stretched the tree: {stretched} against {before}");
    assert!(after < stretched && after < 1.1, "after the partial rebuild {after}, stretched {stretched}");
    // The pairs are the brute force's.
    let mut brute = BruteForceBroadphase::new();
    for &(b, d) in &boxes {
        brute.create_proxy(b, d).unwrap();
    }
    brute.update_pairs(&mut |_, _| {});
    for (k, &id) in ids[..3].iter().enumerate() {
        brute.move_proxy(id, cube(30.0 + k as f32 * 0.5, 30.0, 30.0), Vector3::zeros()).unwrap();
    }
    let (mut got, mut want) = (vec![], vec![]);
    tree.update_pairs(&mut |a, b| got.push((a, b)));
    brute.update_pairs(&mut |a, b| want.push((a.min(b), a.max(b))));
    want.sort_unstable();
    got.sort_unstable();
    // The three movers touch each other (and nothing else).
    assert_eq!(got.len(), 3);
    assert_eq!(got, want);
}

/// The trait's pair rule, as documented: proxies made through `create_proxy` follow it; static
/// proxies (this crate's own API) never pair with each other, moved or not, and pair with any
/// dynamic proxy as the rule says.
#[test]
fn static_proxies_never_pair_with_each_other() {
    let cube = |x: f32| Aabb::new(Point3::new(x, 0.0, 0.0), Point3::new(x + 1.0, 1.0, 1.0));
    let mut tree = DynamicAabbTree::new();
    let a = tree.create_static_proxy(cube(0.0), 0).unwrap();
    let b = tree.create_static_proxy(cube(0.5), 1).unwrap();
    let c = tree.create_proxy(cube(0.25), 2).unwrap();
    let mut pairs = vec![];
    tree.update_pairs(&mut |x, y| pairs.push((x, y)));
    assert_eq!(pairs, vec![(a, c), (b, c)]);
    // A static proxy that moves over another static one still pairs only with the dynamic one.
    pairs.clear();
    tree.move_proxy(b, cube(0.1), Vector3::zeros()).unwrap();
    tree.update_pairs(&mut |x, y| pairs.push((x, y)));
    assert_eq!(pairs, vec![(b, c)]);
    // The brute force, given the same boxes as dynamic proxies, reports the static pair too.
    let mut brute = BruteForceBroadphase::new();
    for bx in [cube(0.0), cube(0.1), cube(0.25)] {
        brute.create_proxy(bx, 0).unwrap();
    }
    let mut all = vec![];
    brute.update_pairs(&mut |x, y| all.push((x, y)));
    assert_eq!(all.len(), 3);
    tree.validate().unwrap();
}

/// An inverted query box overlaps nothing, as core's `Aabb` documents.
#[test]
fn inverted_query_boxes_find_nothing() {
    let mut tree = DynamicAabbTree::new();
    let mut brute = BruteForceBroadphase::new();
    for i in 0..20 {
        let b = Aabb::new(Point3::new(i as f32, 0.0, 0.0), Point3::new(i as f32 + 1.0, 1.0, 1.0));
        tree.create_proxy(b, i).unwrap();
        brute.create_proxy(b, i).unwrap();
    }
    let inverted = Aabb::new(Point3::new(5.0, 0.0, 0.0), Point3::new(3.0, 1.0, 1.0));
    for bp in [&tree as &dyn Broadphase, &brute] {
        let mut found = 0;
        bp.query_aabb(&inverted, &mut |_| {
            found += 1;
            true
        });
        assert_eq!(found, 0);
    }
}
