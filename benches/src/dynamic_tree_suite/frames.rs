//! Frames: each side's pair update timed frame by frame, three rounds from scratch, each frame's
//! time the median of the three, reported as median, p99 and worst.

use crate::dynamic_tree_suite::sides::{Obvhs, Ours, Parry, Scene, oaabb};
use crate::harness::{CaseResult, Metric, Report};
use std::hint::black_box;
use std::time::Instant;

pub(crate) fn percentile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

pub(crate) fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

pub(crate) fn row(case: String, ours: &[f64], peer: &[f64], peer_name: &str, goal: &str) -> CaseResult {
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
pub(crate) struct Round {
    pub(crate) times: [Vec<f64>; 4],
    pub(crate) pair_sum: u64,
    pub(crate) area_ratio: f64,
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
pub(crate) const SWEEP_BYTES: usize = 4 << 20;

/// Reads one word of every cache line of `junk` (see [`SWEEP_BYTES`]); the probes sweep with it
/// too.
pub fn sweep(junk: &[u64]) {
    black_box(junk.iter().step_by(8).fold(0u64, |a, &b| a.wrapping_add(b)));
}

/// Plays one (N, share) cell from scratch: warm-up, then timed frames for each side in a fixed
/// order, each after a cache sweep. The scene and every side are deterministic, so each replay
/// does the same work frame by frame.
pub(crate) fn round(n: usize, share: f64, warm: usize, frames: usize) -> Round {
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
pub(crate) fn cell(report: &mut Report, n: usize, share: f64, warm: usize, frames: usize, rounds: usize) {
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
pub(crate) fn obvhs_all_pairs(o: &Obvhs, with_static: bool) -> u64 {
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

/// One frame cell alone, as the full suite runs it (for probes).
pub fn run_cell(n: usize, share: f64, rounds: usize) -> Report {
    let mut report = Report { suite: "dynamic-aabb-tree cell".into(), ..Report::default() };
    cell(&mut report, n, share, 60, 300, rounds);
    report
}
