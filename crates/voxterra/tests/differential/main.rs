//! The differential harness: every collision capability against an independent f64 reference,
//! on random ground the tests own (ridges and crests of 20–90°, creases, bowls, 30–60° slopes,
//! overhangs, thin walls and necks, edits across chunk seams), at voxel sizes 0.5, 1 and 2, up to
//! 50 000 voxels from the origin, for balls, capsules, boxes and hulls resting, touching,
//! penetrating and just apart, with cold and warm caches.
//!
//! CI runs a few cases of each capability (proptest over the case seeds). `cargo xtask soak
//! [SECONDS]` runs each capability for that long (the ignored `soak_*` tests, reading
//! `VOXTERRA_SOAK_SECONDS`) and prints the cases run and the disagreements, each with the seed
//! that rebuilds its scene.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, unreachable_pub)]

mod contacts;
mod lod_views;
mod motion;
mod paging;
mod pieces;
mod rays;
mod regressions;
mod replicas;
mod scene;

use proptest::prelude::*;
use scene::Scene;
use std::time::{Duration, Instant};
use voxterra_test_support::Rng;

/// Cases and disagreements of one capability, per kind of case (a shape kind, say).
#[derive(Default)]
pub struct Tally {
    /// Per kind: cases run, cases that disagreed.
    kinds: std::collections::BTreeMap<&'static str, (u64, u64)>,
    skipped: u64,
    rules: std::collections::BTreeMap<&'static str, u64>,
    reports: Vec<String>,
}

impl Tally {
    /// Counts one case of `kind` and its disagreements (none when it agreed).
    pub fn record(&mut self, kind: &'static str, fails: impl Iterator<Item = (&'static str, String)>) {
        let mut any = false;
        for (rule, f) in fails {
            any = true;
            *self.rules.entry(rule).or_default() += 1;
            if self.reports.len() < 40 {
                self.reports.push(format!("{rule}: {f}"));
            }
        }
        let e = self.kinds.entry(kind).or_default();
        e.0 += 1;
        e.1 += u64::from(any);
    }

    /// Counts a case with no reference answer (no triangle near its shape).
    pub fn skip(&mut self) {
        self.skipped += 1;
    }

    fn disagreements(&self) -> u64 {
        self.kinds.values().map(|k| k.1).sum()
    }

    fn summary(&self, capability: &str) -> String {
        let per = self.kinds.iter().map(|(k, (n, f))| format!("{k} {f}/{n}")).collect::<Vec<_>>().join(", ");
        format!(
            "{capability}: {} cases, {} disagreements ({per}; disagreeing/run), {} without a reference; by rule {:?}",
            self.kinds.values().map(|k| k.0).sum::<u64>(),
            self.disagreements(),
            self.skipped,
            self.rules
        )
    }

    pub(crate) fn assert_clean(&self, capability: &str) {
        assert!(self.disagreements() == 0, "{}\n{}", self.summary(capability), self.reports.join("\n"));
    }
}

/// Runs `capability` over scenes of fresh seeds until the soak's time is up, `probes` probes per
/// kind a scene.
fn soak(capability: &str, probes: usize, run: fn(&Scene, &mut Rng, usize, &mut Tally)) {
    soak_seeds(capability, |seed, tally| run(&Scene::new(seed), &mut Rng::new(seed), probes, tally));
}

fn brief(
    capability: &str,
    seed: u64,
    probes: usize,
    run: fn(&Scene, &mut Rng, usize, &mut Tally),
) -> Result<(), TestCaseError> {
    brief_seed(capability, seed, |seed, tally| run(&Scene::new(seed), &mut Rng::new(seed), probes, tally))
}

/// One case of `seed`, asserting agreement.
fn brief_seed(capability: &str, seed: u64, run: impl FnOnce(u64, &mut Tally)) -> Result<(), TestCaseError> {
    let mut tally = Tally::default();
    run(seed, &mut tally);
    prop_assert!(tally.disagreements() == 0, "{}\n{}", tally.summary(capability), tally.reports.join("\n"));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn contacts_agree_with_the_exact_answer(seed in any::<u64>()) {
        brief("contacts", seed, 12, contacts::run)?;
    }

    #[test]
    fn rays_agree_with_the_exact_answer(seed in any::<u64>()) {
        brief("rays", seed, 60, rays::run)?;
    }

    #[test]
    fn intersection_tests_agree_with_the_exact_answer(seed in any::<u64>()) {
        brief("intersects", seed, 10, motion::run_intersects)?;
    }

    #[test]
    fn casts_agree_with_the_exact_answer(seed in any::<u64>()) {
        brief("casts", seed, 4, motion::run_casts)?;
    }

    #[test]
    fn sweeps_agree_with_the_exact_answer(seed in any::<u64>()) {
        brief("sweeps", seed, 4, motion::run_sweeps)?;
    }

    #[test]
    fn lod_views_agree_with_fresh_meshes(seed in any::<u64>()) {
        brief_seed("lod", seed, |seed, tally| lod_views::run(seed, 5, tally))?;
    }

    #[test]
    fn pieces_agree_with_a_flood_fill(seed in any::<u64>()) {
        brief_seed("pieces", seed, |seed, tally| pieces::run(seed, 6, tally))?;
    }

    #[test]
    fn paged_terrains_agree_with_the_whole(seed in any::<u64>()) {
        brief_seed("paging", seed, |seed, tally| paging::run(seed, 8, tally))?;
    }

    #[test]
    fn replicas_agree_with_the_server(seed in any::<u64>()) {
        brief_seed("replicas", seed, |seed, tally| replicas::run(seed, 60, tally))?;
    }
}

/// Runs `run(seed, tally)` over fresh seeds until the soak's time is up.
fn soak_seeds(capability: &str, run: impl Fn(u64, &mut Tally)) {
    let seconds: u64 = std::env::var("VOXTERRA_SOAK_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let start = Instant::now();
    let mut tally = Tally::default();
    let mut seed =
        std::env::var("VOXTERRA_SOAK_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    let mut cases = 0;
    while start.elapsed() < Duration::from_secs(seconds) {
        let before = tally.disagreements();
        run(seed, &mut tally);
        if tally.disagreements() > before && tally.reports.len() < 40 {
            tally.reports.push(format!("  seed {seed}"));
        }
        cases += 1;
        seed = Rng::new(seed).next_u64();
    }
    println!("soak {} ({cases} cases, {:.0} s)", tally.summary(capability), start.elapsed().as_secs_f64());
    for r in &tally.reports {
        println!("  {r}");
    }
    tally.assert_clean(capability);
}

#[test]
#[ignore = "long: `cargo xtask soak`"]
fn soak_lod() {
    soak_seeds("lod", |seed, tally| lod_views::run(seed, 12, tally));
}

#[test]
#[ignore = "long: `cargo xtask soak`"]
fn soak_pieces() {
    soak_seeds("pieces", |seed, tally| pieces::run(seed, 12, tally));
}

#[test]
#[ignore = "long: `cargo xtask soak`"]
fn soak_paging() {
    soak_seeds("paging", |seed, tally| paging::run(seed, 24, tally));
}

#[test]
#[ignore = "long: `cargo xtask soak`"]
fn soak_replicas() {
    soak_seeds("replicas", |seed, tally| replicas::run(seed, 200, tally));
}

#[test]
#[ignore = "long: `cargo xtask soak`"]
fn soak_contacts() {
    soak("contacts", 40, contacts::run);
}

#[test]
#[ignore = "long: `cargo xtask soak`"]
fn soak_rays() {
    soak("rays", 200, rays::run);
}

#[test]
#[ignore = "long: `cargo xtask soak`"]
fn soak_intersects() {
    soak("intersects", 40, motion::run_intersects);
}

#[test]
#[ignore = "long: `cargo xtask soak`"]
fn soak_casts() {
    soak("casts", 15, motion::run_casts);
}

#[test]
#[ignore = "long: `cargo xtask soak`"]
fn soak_sweeps() {
    soak("sweeps", 15, motion::run_sweeps);
}
