//! Shape casts of lifted bodies straight down: voxterra's against parry's, times of impact
//! compared.

use crate::harness::{Budget, Metric, Report, compare_prechecked};
use crate::narrowphase_suite::bodies::{Body, Chunk, lifted_bodies, profile_area, shapes};
use parry3d::math::{Pose, Vector};
use parry3d::shape::SharedShape;
use voxterra_core::Region;
use voxterra_narrowphase::{CastOptions, TriangleSet, cast_shape};

pub(crate) fn cast_case(report: &mut Report, budget: Budget, chunks: &[Chunk], area: &Region, n: usize) {
    let lifted = lifted_bodies(chunks, area, n);
    let all = shapes();
    let vel = Vector::new(0.3, -1.0, 0.2);
    let ours = |bodies: &[Body]| ours_casts(chunks, &all, bodies, vel);
    let theirs = |bodies: &[Body]| -> Vec<f32> {
        bodies
            .iter()
            .map(|b| {
                let mut best = f32::INFINITY;
                for &c in &b.chunks {
                    let opts =
                        parry3d::query::ShapeCastOptions { max_time_of_impact: 4.0, ..Default::default() };
                    if let Some(h) = parry3d::query::cast_shapes(
                        &b.pose,
                        vel,
                        &*all[b.shape].0.0,
                        &Pose::IDENTITY,
                        Vector::ZERO,
                        &chunks[c].peer,
                        opts,
                    )
                    .expect("supported cast")
                    {
                        best = best.min(h.time_of_impact);
                    }
                }
                best
            })
            .collect()
    };
    let (o, t) = (ours(&lifted), theirs(&lifted));
    let off = o
        .iter()
        .zip(&t)
        .filter(|(a, b)| !((a.is_infinite() && b.is_infinite()) || (*a - *b).abs() < 1e-3))
        .count();
    assert!(off * 100 <= o.len(), "shape casts: {off} of {} disagree with parry beyond 1e-3", o.len());
    report.metrics.push(Metric {
        name: "shape casts whose time of impact differs from parry's by 1e-3 or more".into(),
        voxterra: off as f64,
        peer: o.len() as f64,
        peer_name: "casts".into(),
        goal: "≤ 1%".into(),
    });
    report.cases.push(compare_prechecked(
        budget,
        "shape casts down onto terrain",
        "cast",
        lifted.len() as u64,
        "parry TriMesh/chunk",
        "≥ 1.5× parry; TOI within 1e-3",
        || ours(&lifted),
        || theirs(&lifted),
    ));
}

/// The suite's shape-cast case for voxterra alone, `rounds` times over 200 bodies; returns the
/// hits. The other profiling target.
pub fn profile_casts(rounds: usize) -> usize {
    let (area, chunks) = profile_area();
    let lifted = lifted_bodies(&chunks, &area, 200);
    let all = shapes();
    let vel = Vector::new(0.3, -1.0, 0.2);
    (0..rounds)
        .map(|_| ours_casts(&chunks, &all, &lifted, vel).iter().filter(|t| t.is_finite()).count())
        .sum()
}

/// Each body's earliest time of impact over its chunks (infinity for none), casting by `vel`.
pub(crate) fn ours_casts(
    chunks: &[Chunk],
    all: &[(SharedShape, &str)],
    bodies: &[Body],
    vel: Vector,
) -> Vec<f32> {
    bodies
        .iter()
        .map(|b| {
            let mut best = f32::INFINITY;
            for &c in &b.chunks {
                let ch = &chunks[c];
                let index = ch.tree.with(&ch.mesh);
                let set = TriangleSet::new(&ch.mesh, &index).with_edge_flags(ch.mesh.edge_flags());
                if let Some(h) =
                    cast_shape(&*all[b.shape].0.0, &b.pose, vel, 4.0, set, CastOptions::default())
                        .expect("valid cast")
                {
                    best = best.min(h.toi);
                }
            }
            best
        })
        .collect()
}
