//! Side-by-side timing: voxterra and its peer run the same case, repetitions interleaved (and the
//! order alternated) so machine noise hits both alike; medians and their ratio are reported.

use serde::Serialize;
use std::hint::black_box;
use std::time::Instant;

/// One timed case's result.
#[derive(Serialize, Debug, Clone)]
pub struct CaseResult {
    /// Case name.
    pub case: String,
    /// What one operation is ("voxel read", "row", …).
    pub unit: String,
    /// Operations per repetition.
    pub ops: u64,
    /// Median nanoseconds per operation, voxterra.
    pub voxterra_ns: f64,
    /// Median nanoseconds per operation, the peer.
    pub peer_ns: f64,
    /// The peer's name.
    pub peer: String,
    /// `peer_ns / voxterra_ns`: above 1 voxterra is faster (throughput ratio).
    pub speed_ratio: f64,
    /// What the case's goal says, for the reader.
    pub goal: String,
}

/// A number that is measured, not timed (memory, counts), with the peer's beside it.
#[derive(Serialize, Debug, Clone)]
pub struct Metric {
    /// Metric name.
    pub name: String,
    /// voxterra's value.
    pub voxterra: f64,
    /// The peer's value.
    pub peer: f64,
    /// The peer's name.
    pub peer_name: String,
    /// Goal or anchor text.
    pub goal: String,
}

/// A suite's full report.
#[derive(Serialize, Debug, Default)]
pub struct Report {
    /// Suite name.
    pub suite: String,
    /// Setup notes (world size, seed).
    pub setup: String,
    /// Timed cases.
    pub cases: Vec<CaseResult>,
    /// Untimed metrics.
    pub metrics: Vec<Metric>,
}

/// How many repetitions and how long each should be.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Interleaved repetitions per case.
    pub reps: usize,
}

impl Budget {
    /// Full (default) or quick.
    pub fn new(quick: bool) -> Self {
        Budget { reps: if quick { 5 } else { 21 } }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Times `ours` and `peer`, each returning a checksum, `budget.reps` times interleaved.
///
/// Panics if the checksums differ: a fast wrong answer must not win.
#[allow(clippy::too_many_arguments)]
pub fn compare<T: PartialEq + std::fmt::Debug>(
    budget: Budget,
    case: &str,
    unit: &str,
    ops: u64,
    peer_name: &str,
    goal: &str,
    mut ours: impl FnMut() -> T,
    mut peer: impl FnMut() -> T,
) -> CaseResult {
    // Check once, untimed (this also warms both up).
    let (a, b) = (ours(), peer());
    assert_eq!(a, b, "{case}: voxterra and {peer_name} disagree");
    compare_prechecked(budget, case, unit, ops, peer_name, goal, ours, peer)
}

/// Times `ours` and `peer` interleaved, without comparing their results: for peers whose answers
/// may legitimately differ in the last bits (another ray–triangle routine). The caller checks
/// agreement beforehand, within a tolerance it reports.
#[allow(clippy::too_many_arguments)]
pub fn compare_prechecked<T>(
    budget: Budget,
    case: &str,
    unit: &str,
    ops: u64,
    peer_name: &str,
    goal: &str,
    mut ours: impl FnMut() -> T,
    mut peer: impl FnMut() -> T,
) -> CaseResult {
    black_box((ours(), peer())); // warm-up
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed().as_nanos() as f64 / ops as f64
    };
    let mut run_ours = || {
        black_box(ours());
    };
    let mut run_peer = || {
        black_box(peer());
    };
    let mut t_ours = Vec::with_capacity(budget.reps);
    let mut t_peer = Vec::with_capacity(budget.reps);
    for rep in 0..budget.reps {
        if rep % 2 == 0 {
            t_ours.push(time(&mut run_ours));
            t_peer.push(time(&mut run_peer));
        } else {
            t_peer.push(time(&mut run_peer));
            t_ours.push(time(&mut run_ours));
        }
    }
    let (o, p) = (median(t_ours), median(t_peer));
    CaseResult {
        case: case.into(),
        unit: unit.into(),
        ops,
        voxterra_ns: o,
        peer_ns: p,
        peer: peer_name.into(),
        speed_ratio: p / o,
        goal: goal.into(),
    }
}

impl Report {
    /// The report as an aligned text table.
    pub fn to_table(&self) -> String {
        let mut s = format!("suite {}: {}\n\n", self.suite, self.setup);
        s += &format!(
            "{:<28} {:>14} {:>14} {:>8}  {:<14} {}\n",
            "case", "voxterra ns/op", "peer ns/op", "speed", "peer", "goal"
        );
        for c in &self.cases {
            s += &format!(
                "{:<28} {:>14.2} {:>14.2} {:>7.2}x  {:<14} {}\n",
                c.case, c.voxterra_ns, c.peer_ns, c.speed_ratio, c.peer, c.goal
            );
        }
        if !self.metrics.is_empty() {
            s +=
                &format!("\n{:<28} {:>14} {:>14}  {:<14} {}\n", "metric", "voxterra", "peer", "peer", "goal");
            for m in &self.metrics {
                s += &format!(
                    "{:<28} {:>14.3} {:>14.3}  {:<14} {}\n",
                    m.name, m.voxterra, m.peer, m.peer_name, m.goal
                );
            }
        }
        s += "\nspeed = peer time / voxterra time (above 1: voxterra is faster); medians of interleaved repetitions.\n";
        s
    }
}
