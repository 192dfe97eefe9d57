//! Suite `dynamic-aabb-tree`: the dynamic AABB tree against parry3d 0.31's `Bvh` driven as rapier
//! 0.30 drives it, and against obvhs 0.4's `Bvh2` (insert, move and AABB traversal per mover).
//!
//! Scenario: N boxes of size U[0.5, 1.5] in a cube of side (4N)^(1/3), speeds
//! U[0, 3] m/s in random directions, bouncing off the walls at 60 Hz; a share of the boxes moves,
//! the rest stay still. Each frame the scene advances once and every side updates its tree and
//! finds its pairs, in a fixed order, each starting with 4 MB read since the side before it
//! (L1 and L2 as cold for every side as a game's physics step finds them). Each cell is played
//! three times from scratch (the same work each time, checked): a frame's time is its median over
//! the three, and the figures are medians and the p99 over the timed frames. The p99 of the worst
//! single round is reported beside it.
//!
//! What each side computes per frame:
//! - voxterra: every pair of overlapping tight boxes with a mover, sorted, exact (the
//!   `Broadphase` contract). Still boxes are static proxies.
//! - obvhs: the same pairs (each mover queries the tree with its tight box; pairs of two movers are
//!   kept from the lower id). Its pair count is checked equal to ours every frame.
//! - parry (rapier's driver): `insert_or_update_partially` with rapier's 0.04 change-detection
//!   skin for movers, `optimize_incremental`, `refit`, `traverse_bvtt_single_tree::<true>`, tight
//!   boxes tested in the callback. With change detection it reports only pairs of leaves whose
//!   skin box changed: *less* than the other two (rapier keeps earlier pairs in a hash map, which
//!   is left out here, in parry's favor).

use crate::harness::{Budget, CaseResult, Metric, Report, compare_prechecked};
use crate::world::Rng;
use obvhs::bvh2::Bvh2;
use parry3d::bounding_volume::Aabb as PAabb;
use parry3d::partitioning::{Bvh, BvhWorkspace};
use std::hint::black_box;
use std::time::Instant;
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Aabb, Broadphase, ProxyId, ProxyMove, Ray};
use voxterra_dynamic_aabb_tree::{DynamicAabbTree, ProxyKind};
use voxterra_narrowphase::convert::ToParry;

const DT: f32 = 1.0 / 60.0;

/// The bouncing boxes.
pub struct Scene {
    /// Centers.
    pub pos: Vec<Point3<f32>>,
    /// Velocities (zero for still boxes).
    pub vel: Vec<Vector3<f32>>,
    /// Half sizes.
    pub half: Vec<Vector3<f32>>,
    /// Which boxes move.
    pub moving: Vec<bool>,
    /// The moving boxes' indices, ascending: every side's frame walks these, as an engine walks
    /// its awake bodies, rather than scanning all N boxes for them (a scan that at 1% moving
    /// cost every side more than some of their updates).
    pub movers: Vec<usize>,
    /// Side of the cube.
    pub side: f32,
}

impl Scene {
    /// `n` boxes, a `share` of them moving, from `seed`.
    pub fn new(n: usize, share: f64, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let mut unit = || (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        let side = (4.0 * n as f32).cbrt();
        let mut s = Scene { pos: vec![], vel: vec![], half: vec![], moving: vec![], movers: vec![], side };
        for _ in 0..n {
            let size = Vector3::new(0.5 + unit(), 0.5 + unit(), 0.5 + unit());
            s.half.push(size / 2.0);
            s.pos.push(Point3::new(unit() * side, unit() * side, unit() * side));
            // A random direction (normalized Gaussian-ish by rejection) times U[0, 3].
            let dir = loop {
                let d = Vector3::new(unit() * 2.0 - 1.0, unit() * 2.0 - 1.0, unit() * 2.0 - 1.0);
                let l = d.norm();
                if l > 0.05 && l <= 1.0 {
                    break d / l;
                }
            };
            let moving = f64::from(unit()) < share;
            s.moving.push(moving);
            if moving {
                s.movers.push(s.pos.len() - 1);
            }
            s.vel.push(if moving { dir * (3.0 * unit()) } else { Vector3::zeros() });
        }
        s
    }

    /// Box `i`.
    #[inline]
    pub fn aabb(&self, i: usize) -> Aabb {
        Aabb::new(self.pos[i] - self.half[i], self.pos[i] + self.half[i])
    }

    /// One 60 Hz step of the movers.
    pub fn step(&mut self) {
        let side = self.side;
        for &i in &self.movers {
            let (p, v) = (&mut self.pos[i], &mut self.vel[i]);
            *p += *v * DT;
            for k in 0..3 {
                if (p[k] < 0.0 && v[k] < 0.0) || (p[k] > side && v[k] > 0.0) {
                    v[k] = -v[k];
                }
            }
        }
    }
}

fn paabb(b: &Aabb) -> PAabb {
    b.to_parry()
}

fn oaabb(b: &Aabb) -> obvhs::aabb::Aabb {
    obvhs::aabb::Aabb::new(glam::Vec3A::from(b.mins.to_parry()), glam::Vec3A::from(b.maxs.to_parry()))
}

/// voxterra's side of the scene.
pub struct Ours {
    /// The broadphase.
    pub tree: DynamicAabbTree,
    ids: Vec<ProxyId>,
    moves: Vec<ProxyMove>,
}

impl Ours {
    /// Creates every box (still ones as static proxies).
    pub fn new(s: &Scene) -> Self {
        let mut tree = DynamicAabbTree::new();
        let ids = (0..s.pos.len())
            .map(|i| {
                let kind = if s.moving[i] { ProxyKind::Dynamic } else { ProxyKind::Static };
                tree.create_proxy_of_kind(s.aabb(i), i as u64, kind).expect("valid box")
            })
            .collect();
        Ours { tree, ids, moves: Vec::new() }
    }

    /// Moves the movers (one batch, as a physics step would) and counts the pairs.
    pub fn frame(&mut self, s: &Scene, parallel: bool) -> u64 {
        self.moves.clear();
        for &i in &s.movers {
            self.moves.push(ProxyMove { id: self.ids[i], aabb: s.aabb(i), displacement: s.vel[i] * DT });
        }
        self.tree.move_proxies(&self.moves).expect("valid boxes");
        let mut n = 0u64;
        if parallel {
            self.tree.update_pairs_parallel(&mut |_, _| n += 1);
        } else {
            self.tree.update_pairs(&mut |_, _| n += 1);
        }
        n
    }
}

/// parry's `Bvh` as rapier 0.30 drives it.
pub struct Parry {
    bvh: Bvh,
    ws: BvhWorkspace,
    tight: Vec<Aabb>,
}

/// rapier's `CHANGE_DETECTION_FACTOR` × the default length unit.
const RAPIER_SKIN: f32 = 0.04;

impl Parry {
    /// Inserts every box.
    pub fn new(s: &Scene) -> Self {
        let mut p = Parry { bvh: Bvh::new(), ws: BvhWorkspace::default(), tight: vec![] };
        for i in 0..s.pos.len() {
            p.tight.push(s.aabb(i));
            p.bvh.insert_or_update_partially(paabb(&s.aabb(i)), i as u32, RAPIER_SKIN);
        }
        p
    }

    /// rapier's broad-phase update; counts the tight pairs the traversal reports.
    pub fn frame(&mut self, s: &Scene) -> u64 {
        for &i in &s.movers {
            let b = s.aabb(i);
            self.tight[i] = b;
            self.bvh.insert_or_update_partially(paabb(&b), i as u32, RAPIER_SKIN);
        }
        self.bvh.optimize_incremental(&mut self.ws);
        self.bvh.refit(&mut self.ws);
        let mut n = 0u64;
        let tight = &self.tight;
        self.bvh.traverse_bvtt_single_tree::<true>(&mut self.ws, &mut |a, b| {
            if tight[a as usize].intersects(&tight[b as usize]) {
                n += 1;
            }
        });
        n
    }
}

/// obvhs's `Bvh2`: leaves moved when they leave their fat box, pairs by one AABB traversal per
/// mover.
pub struct Obvhs {
    /// The tree.
    pub bvh: Bvh2,
    fat: Vec<Aabb>,
    tight: Vec<Aabb>,
    moving: Vec<bool>,
}

/// obvhs's fat-box margin: 0.1. obvhs runs faster with it than with 0.04 (voxterra's default,
/// rapier's skin) in every cell where it is the stronger peer (our speed against it at 0.1 and
/// at 0.04: 10k/10% 2.26–2.36× and 3.02–3.03×, 10k/1% 2.57–2.59× and 2.83×, 100k/1% 5.93–5.94×
/// and 6.12–6.20×), so the suite gives it 0.1.
const OBVHS_MARGIN: f32 = 0.1;

impl Obvhs {
    /// Inserts every box.
    pub fn new(s: &Scene) -> Self {
        let mut o = Obvhs { bvh: Bvh2::default(), fat: vec![], tight: vec![], moving: s.moving.clone() };
        for i in 0..s.pos.len() {
            let b = s.aabb(i);
            let fat = b.loosened(OBVHS_MARGIN);
            o.bvh.insert_primitive(oaabb(&fat), i as u32);
            o.fat.push(fat);
            o.tight.push(b);
        }
        o
    }

    /// Moves leaves that left their fat boxes, then queries every mover.
    pub fn frame(&mut self, s: &Scene) -> u64 {
        for &i in &s.movers {
            let b = s.aabb(i);
            self.tight[i] = b;
            if !self.fat[i].contains(&b) {
                self.fat[i] = b.loosened(OBVHS_MARGIN);
                self.bvh.move_primitive(oaabb(&self.fat[i]), i as u32);
            }
        }
        let mut n = 0u64;
        for &i in &s.movers {
            let b = self.tight[i];
            let (tight, moving) = (&self.tight, &self.moving);
            self.bvh.aabb_traverse(oaabb(&b), |bvh, node| {
                let prim = bvh.primitive_indices[bvh.nodes[node as usize].first_index as usize] as usize;
                if prim != i && (!moving[prim] || prim > i) && tight[prim].intersects(&b) {
                    n += 1;
                }
                true
            });
        }
        n
    }
}

fn percentile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn row(case: String, ours: &[f64], peer: &[f64], peer_name: &str, goal: &str) -> CaseResult {
    let (o, p) = (percentile(ours, 0.5), percentile(peer, 0.5));
    CaseResult {
        case,
        unit: "frame".into(),
        ops: 1,
        voxterra_ns: o,
        peer_ns: p,
        peer: peer_name.into(),
        speed_ratio: p / o,
        goal: goal.into(),
    }
}

/// One replay of a cell's frames: each side's time per timed frame (ours, ours on 2 threads,
/// parry, obvhs), the pairs summed over all frames, and our tree's area ratio at the end.
struct Round {
    times: [Vec<f64>; 4],
    pair_sum: u64,
    area_ratio: f64,
}

/// Bytes read between two sides' timed frames: four times this machine's L2 (1 MB a core), so
/// every side starts its frame with L1 and L2 holding none of its data, as a physics step does in
/// a game, after the frame's rendering and logic. The sides run in one fixed order every frame,
/// so each finds the other three run since its last frame, and L3 as they left it.
///
/// Why a fixed order with a sweep: with sides in alternating order (`0 1 2 3`, then `3 2 1 0`)
/// the first and last run back to back every other frame and find their data in cache, the
/// middle two never do (the 2-thread row of ours, the same sequential code at 10k, measured 5%
/// slower than the first), and a side's frames alternate between two cache states (100k/1%
/// p99/mean 1.60–1.68 that way, against 1.17–1.30 in the fixed order).
const SWEEP_BYTES: usize = 4 << 20;

/// Reads one word of every cache line of `junk` (see [`SWEEP_BYTES`]); the probes sweep with it
/// too.
pub fn sweep(junk: &[u64]) {
    black_box(junk.iter().step_by(8).fold(0u64, |a, &b| a.wrapping_add(b)));
}

/// Plays one (N, share) cell from scratch: warm-up, then timed frames for each side in a fixed
/// order, each after a cache sweep. The scene and every side are deterministic, so each replay
/// does the same work frame by frame.
fn round(n: usize, share: f64, warm: usize, frames: usize) -> Round {
    let mut scene = Scene::new(n, share, 0x00d7_a4b1 ^ n as u64);
    let mut ours = Ours::new(&scene);
    let mut par = Ours::new(&scene);
    let mut parry = Parry::new(&scene);
    let mut obvhs = Obvhs::new(&scene);
    // Frame 0: every proxy is new, so every overlapping pair is reported (parry's single tree
    // also reports pairs of two still boxes, which voxterra's static tree never visits).
    let first = (ours.frame(&scene, false), par.frame(&scene, true), obvhs_all_pairs(&obvhs, false));
    assert!(first.0 == first.1 && first.1 == first.2, "frame 0 pairs differ: {first:?}");
    let (p0, o0) = (parry.frame(&scene), obvhs_all_pairs(&obvhs, true));
    assert_eq!(p0, o0, "frame 0: parry and obvhs disagree on all pairs");
    let mut times = [vec![], vec![], vec![], vec![]];
    let mut pair_sum = 0u64;
    let junk = vec![1u64; SWEEP_BYTES / 8];
    for f in 0..warm + frames {
        scene.step();
        let mut counts = [0u64; 4];
        for side in 0..4 {
            sweep(&junk);
            let t = Instant::now();
            counts[side] = match side {
                0 => ours.frame(&scene, false),
                1 => par.frame(&scene, true),
                2 => parry.frame(&scene),
                _ => obvhs.frame(&scene),
            };
            let ns = t.elapsed().as_nanos() as f64;
            if f >= warm {
                times[side].push(ns);
            }
        }
        assert_eq!(counts[0], counts[1], "frame {f}: parallel pairs differ");
        assert_eq!(counts[0], counts[3], "frame {f}: obvhs pairs differ");
        pair_sum += counts[0];
    }
    Round { times, pair_sum, area_ratio: ours.tree.area_ratio() }
}

/// Runs one (N, share) cell `rounds` times (at least once) and keeps, for each side and frame, the median of
/// that frame's times over the rounds. A frame that is slow because of the work it does is slow
/// in every round and stays; one slowed by the machine (a preempted VM: 1%-moving frames take
/// about 30 µs, so one preemption makes a p99 frame) is slow in one round and drops out.
fn cell(report: &mut Report, n: usize, share: f64, warm: usize, frames: usize, rounds: usize) {
    let played: Vec<Round> = (0..rounds.max(1)).map(|_| round(n, share, warm, frames)).collect();
    for r in &played[1..] {
        assert_eq!(r.pair_sum, played[0].pair_sum, "replays of one cell found different pairs");
        assert_eq!(r.area_ratio.to_bits(), played[0].area_ratio.to_bits(), "replays built different trees");
    }
    let times: [Vec<f64>; 4] = std::array::from_fn(|side| {
        (0..frames)
            .map(|f| percentile(&played.iter().map(|r| r.times[side][f]).collect::<Vec<_>>(), 0.5))
            .collect()
    });
    let label = format!("{}k, {}% moving", n / 1000, (share * 100.0).round());
    let goal = "≥ 2×";
    report.cases.push(row(format!("frame {label}"), &times[0], &times[2], "parry Bvh", goal));
    report.cases.push(row(format!("frame {label}"), &times[0], &times[3], "obvhs Bvh2", goal));
    report.cases.push(row(format!("frame {label}, 2 threads"), &times[1], &times[2], "parry Bvh", goal));
    report.cases.push(row(format!("frame {label}, 2 threads"), &times[1], &times[3], "obvhs Bvh2", goal));
    let p99_over_mean = |v: &[f64]| percentile(v, 0.99) / mean(v);
    report.metrics.push(Metric {
        name: format!("p99/mean {label}"),
        voxterra: p99_over_mean(&times[0]),
        peer: p99_over_mean(&times[2]),
        peer_name: "parry Bvh".into(),
        goal: "≤ 1.5".into(),
    });
    // The same from each round alone, the worst round: what one run with the machine's noise in
    // it gives.
    let worst = |side: usize| played.iter().map(|r| p99_over_mean(&r.times[side])).fold(0.0, f64::max);
    report.metrics.push(Metric {
        name: format!("p99/mean {label}, worst single round"),
        voxterra: worst(0),
        peer: worst(2),
        peer_name: "parry Bvh".into(),
        goal: "-".into(),
    });
    report.metrics.push(Metric {
        name: format!("area ratio {label}"),
        voxterra: played[0].area_ratio,
        peer: f64::NAN,
        peer_name: "-".into(),
        goal: "≤ 1.2 (vs fresh rebuild)".into(),
    });
    report.metrics.push(Metric {
        name: format!("pairs/frame {label}"),
        voxterra: played[0].pair_sum as f64 / (warm + frames) as f64,
        peer: f64::NAN,
        peer_name: "-".into(),
        goal: "= obvhs (checked)".into(),
    });
}

/// obvhs's frame-0 pairs (every proxy new): each box queries the tree once; pairs of two still
/// boxes only `with_static`.
fn obvhs_all_pairs(o: &Obvhs, with_static: bool) -> u64 {
    let mut n = 0u64;
    for i in 0..o.tight.len() {
        let b = o.tight[i];
        o.bvh.aabb_traverse(oaabb(&b), |bvh, node| {
            let prim = bvh.primitive_indices[bvh.nodes[node as usize].first_index as usize] as usize;
            // Static–static pairs are never reported by voxterra.
            if prim > i && (with_static || o.moving[i] || o.moving[prim]) && o.tight[prim].intersects(&b) {
                n += 1;
            }
            true
        });
    }
    n
}

/// Query cases on the 100%-moving scene of `n` boxes after some frames.
/// The suite's queries in a cube of side `side`: 4096 boxes of side 2 m at random places, their
/// centers as points, and 4096 rays from random places in random directions.
pub struct QuerySet {
    /// The query boxes.
    pub boxes: Vec<Aabb>,
    /// The boxes' centers.
    pub points: Vec<Point3<f32>>,
    /// The rays (unit directions).
    pub rays: Vec<Ray>,
}

impl QuerySet {
    /// The suite's set for a cube of side `side` (fixed seed).
    pub fn new(side: f32) -> Self {
        let mut rng = Rng::new(9);
        let mut unit = || (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        let boxes: Vec<Aabb> = (0..4096)
            .map(|_| {
                let c = Point3::new(unit() * side, unit() * side, unit() * side);
                Aabb::new(c - Vector3::repeat(1.0), c + Vector3::repeat(1.0))
            })
            .collect();
        let points = boxes.iter().map(|b| b.center()).collect();
        let rays = (0..4096)
            .map(|_| {
                let o = Point3::new(unit() * side, unit() * side, unit() * side);
                let d = Vector3::new(unit() - 0.5, unit() - 0.5, unit() - 0.5);
                Ray::new(o, if d.norm() > 1e-3 { d.normalize() } else { Vector3::x() })
            })
            .collect();
        QuerySet { boxes, points, rays }
    }
}

/// `r` as obvhs's ray over `[0, max_t]`.
pub fn oray(r: &Ray, max_t: f32) -> obvhs::ray::Ray {
    obvhs::ray::Ray::new(
        glam::Vec3A::from(r.origin.to_parry()),
        glam::Vec3A::from(r.dir.to_parry()),
        0.0,
        max_t,
    )
}

fn queries(report: &mut Report, budget: Budget, n: usize) {
    let mut scene = Scene::new(n, 1.0, 77);
    let mut ours = Ours::new(&scene);
    let mut parry = Parry::new(&scene);
    let mut obvhs = Obvhs::new(&scene);
    for _ in 0..60 {
        scene.step();
        ours.frame(&scene, false);
        parry.frame(&scene);
        obvhs.frame(&scene);
    }
    let QuerySet { boxes, points, rays } = QuerySet::new(scene.side);
    let tight = &scene;
    let ours_aabb = || {
        let mut s = 0u64;
        for b in &boxes {
            ours.tree.query_aabb(b, &mut |id| {
                s += u64::from(id.0) + 1;
                true
            });
        }
        s
    };
    let parry_aabb = || {
        let mut s = 0u64;
        for b in &boxes {
            let pb = paabb(b);
            for leaf in parry.bvh.intersect_aabb(&pb) {
                if tight.aabb(leaf as usize).intersects(b) {
                    s += u64::from(leaf) + 1;
                }
            }
        }
        s
    };
    let obvhs_aabb = || {
        let mut s = 0u64;
        for b in &boxes {
            obvhs.bvh.aabb_traverse(oaabb(b), |bvh, node| {
                let prim = bvh.primitive_indices[bvh.nodes[node as usize].first_index as usize];
                if tight.aabb(prim as usize).intersects(b) {
                    s += u64::from(prim) + 1;
                }
                true
            });
        }
        s
    };
    let k = boxes.len() as u64;
    report.cases.push(crate::harness::compare(
        budget,
        "AABB query",
        "query",
        k,
        "parry Bvh",
        "≥ 1.5×",
        ours_aabb,
        parry_aabb,
    ));
    report.cases.push(crate::harness::compare(
        budget,
        "AABB query",
        "query",
        k,
        "obvhs Bvh2",
        "≥ 1.5×",
        ours_aabb,
        obvhs_aabb,
    ));
    let contains = |b: &Aabb, p: &Point3<f32>| (0..3).all(|i| b.mins[i] <= p[i] && p[i] <= b.maxs[i]);
    let ours_point = || {
        let mut s = 0u64;
        for p in &points {
            ours.tree.query_point(p, &mut |id| {
                s += u64::from(id.0) + 1;
                true
            });
        }
        s
    };
    // parry's side gets its own copies of the points and rays (glam), made before timing.
    let parry_points: Vec<parry3d::math::Vector> = points.iter().map(|p| p.to_parry()).collect();
    let parry_point = || {
        let mut s = 0u64;
        for (p, pp) in points.iter().zip(&parry_points) {
            for leaf in parry.bvh.leaves(|node| node.aabb().contains_local_point(*pp)) {
                if contains(&tight.aabb(leaf as usize), p) {
                    s += u64::from(leaf) + 1;
                }
            }
        }
        s
    };
    let obvhs_point = || {
        let mut s = 0u64;
        for p in &points {
            obvhs.bvh.point_traverse(glam::Vec3A::from(p.to_parry()), |bvh, node| {
                let prim = bvh.primitive_indices[bvh.nodes[node as usize].first_index as usize];
                if contains(&tight.aabb(prim as usize), p) {
                    s += u64::from(prim) + 1;
                }
                true
            });
        }
        s
    };
    report.cases.push(crate::harness::compare(
        budget,
        "point query",
        "query",
        k,
        "parry Bvh",
        "≥ 1.5×",
        ours_point,
        parry_point,
    ));
    report.cases.push(crate::harness::compare(
        budget,
        "point query",
        "query",
        k,
        "obvhs Bvh2",
        "≥ 1.5×",
        ours_point,
        obvhs_point,
    ));
    // Closest box entry along each ray, within 20 m; checksum: hits and the sum of entry
    // distances in millimeters (the three ray-box routines may differ in the last bits).
    let max_t = 20.0f32;
    let ours_ray = || {
        let (mut hits, mut mm) = (0u64, 0u64);
        for r in &rays {
            let mut best = f32::INFINITY;
            ours.tree.cast_ray(r, max_t, &mut |id, ray, limit| match tight
                .aabb(id.0 as usize)
                .clip_ray(ray, limit)
            {
                Some((t, _)) => {
                    best = best.min(t);
                    t
                }
                None => limit,
            });
            if best.is_finite() {
                hits += 1;
                mm += (best * 1000.0).round() as u64;
            }
        }
        (hits, mm)
    };
    let parry_rays: Vec<parry3d::query::Ray> = rays.iter().map(|r| r.to_parry()).collect();
    let parry_ray = || {
        let (mut hits, mut mm) = (0u64, 0u64);
        for (r, pr) in rays.iter().zip(&parry_rays) {
            let found = parry.bvh.cast_ray(pr, max_t, |leaf, best| {
                tight.aabb(leaf as usize).clip_ray(r, best).map(|(t, _)| t)
            });
            if let Some((_, t)) = found {
                hits += 1;
                mm += (t * 1000.0).round() as u64;
            }
        }
        (hits, mm)
    };
    let obvhs_ray = || {
        let (mut hits, mut mm) = (0u64, 0u64);
        for r in &rays {
            let or = oray(r, max_t);
            let mut hit = obvhs::ray::RayHit::none();
            let found = obvhs.bvh.ray_traverse(or, &mut hit, |ray, prim_index| {
                let prim = obvhs.bvh.primitive_indices[prim_index];
                tight.aabb(prim as usize).clip_ray(r, ray.tmax).map_or(f32::INFINITY, |(t, _)| t)
            });
            if found {
                hits += 1;
                mm += (hit.t * 1000.0).round() as u64;
            }
        }
        (hits, mm)
    };
    let agree = |a: (u64, u64), b: (u64, u64)| a.0 == b.0 && a.1.abs_diff(b.1) <= a.0;
    let (o, p, ob) = (ours_ray(), parry_ray(), obvhs_ray());
    assert!(agree(o, p) && agree(o, ob), "closest-hit rays disagree: ours {o:?}, parry {p:?}, obvhs {ob:?}");
    report.cases.push(compare_prechecked(
        budget,
        "closest ray",
        "ray",
        k,
        "parry Bvh",
        "≥ 1.5×",
        ours_ray,
        parry_ray,
    ));
    report.cases.push(compare_prechecked(
        budget,
        "closest ray",
        "ray",
        k,
        "obvhs Bvh2",
        "≥ 1.5×",
        ours_ray,
        obvhs_ray,
    ));
    black_box(&scene);
}

/// One frame cell alone, as the full suite runs it (for probes).
pub fn run_cell(n: usize, share: f64, rounds: usize) -> Report {
    let mut report = Report { suite: "dynamic-aabb-tree cell".into(), ..Report::default() };
    cell(&mut report, n, share, 60, 300, rounds);
    report
}

/// Only the query cases, on `n` boxes (for probes).
pub fn run_queries(quick: bool, n: usize) -> Report {
    let mut report = Report { suite: "dynamic-aabb-tree queries".into(), ..Report::default() };
    queries(&mut report, Budget::new(quick), n);
    report
}

/// Runs the suite. `--quick`: 10k boxes only, fewer frames.
pub fn run(quick: bool) -> Report {
    let budget = Budget::new(quick);
    let (sizes, warm, frames, rounds): (&[usize], usize, usize, usize) =
        if quick { (&[10_000], 10, 40, 1) } else { (&[10_000, 100_000], 60, 300, 3) };
    let mut report = Report {
        suite: "dynamic-aabb-tree".into(),
        setup: format!(
            "boxes U[0.5,1.5] in a cube of side (4N)^(1/3), speeds U[0,3] m/s, 60 Hz, {warm} warm-up + {frames} timed frames, each frame's time the median of {rounds} replays; \
             sides in a fixed order, a 4 MB cache sweep before each side's frame; ours = all tight pairs with a mover (= obvhs, checked each frame); parry = rapier's driver, changed leaves only"
        ),
        ..Report::default()
    };
    for &n in sizes {
        for share in [1.0, 0.1, 0.01] {
            cell(&mut report, n, share, warm, frames, rounds);
        }
    }
    queries(&mut report, budget, if quick { 10_000 } else { 100_000 });
    report
}
