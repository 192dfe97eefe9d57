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

mod frames;
mod queries;
mod sides;

use crate::dynamic_tree_suite::frames::cell;
use crate::dynamic_tree_suite::queries::queries;
use crate::harness::{Budget, Report};
pub use frames::{run_cell, sweep};
pub use queries::run_queries;
pub use sides::{Obvhs, Ours, Parry, Scene};

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
