//! Contacts of resting bodies, cold and warm: voxterra's against parry's `contact_manifolds`,
//! checked to agree (the same bodies touch, the same deepest depth) before they are timed.

use crate::harness::{Budget, Metric, Report, compare_prechecked};
use crate::narrowphase_suite::bodies::{
    Body, Chunk, PREDICTION, ParryState, bodies, overlapping, profile_area, shapes,
};
use crate::world::Rng;
use parry3d::query::{DefaultQueryDispatcher, PersistentQueryDispatcher};
use std::collections::HashMap;
use voxterra_core::{Aabb, Region, TriangleSource};
use voxterra_narrowphase::convert::FromParry;
use voxterra_narrowphase::{ContactCache, ContactWorkspace, Manifold, TriangleSet, contacts};

pub(crate) fn ours_frame(
    chunks: &[Chunk],
    bodies: &[Body],
    ws: &mut ContactWorkspace,
    out: &mut Vec<Manifold>,
) -> (usize, Vec<f32>) {
    let all = shapes();
    let mut points = 0;
    let mut deepest = Vec::with_capacity(bodies.len());
    for b in bodies {
        let mut d = f32::INFINITY;
        for &c in &b.chunks {
            let ch = &chunks[c];
            let index = ch.tree.with(&ch.mesh);
            let set = TriangleSet::new(&ch.mesh, &index).with_edge_flags(ch.mesh.edge_flags());
            out.clear();
            contacts(&*all[b.shape].0.0, &b.pose, set, PREDICTION, ws, out).expect("valid query");
            for m in out.iter() {
                points += m.points().len();
                d = d.min(m.min_dist());
            }
        }
        deepest.push(d);
    }
    (points, deepest)
}

/// [`ours_frame`] keeping each body–chunk pair's contact candidates between frames (as parry keeps
/// its pairs' workspaces): replayed while the body moves less than the cache's slack.
pub(crate) fn ours_frame_kept(
    chunks: &[Chunk],
    bodies: &[Body],
    ws: &mut ContactWorkspace,
    caches: &mut HashMap<(usize, usize), ContactCache>,
    out: &mut Vec<Manifold>,
) -> (usize, Vec<f32>) {
    let all = shapes();
    let mut points = 0;
    let mut deepest = Vec::with_capacity(bodies.len());
    for (i, b) in bodies.iter().enumerate() {
        let shape = &*all[b.shape].0.0;
        let mut d = f32::INFINITY;
        for &c in &b.chunks {
            let cache = caches.entry((i, c)).or_insert_with(|| ContactCache::for_shape(shape));
            out.clear();
            ws.begin();
            let kept = ws.collect_kept(shape, &b.pose, PREDICTION, cache).expect("valid query");
            if !kept {
                let ch = &chunks[c];
                let index = ch.tree.with(&ch.mesh);
                let set = TriangleSet::new(&ch.mesh, &index).with_edge_flags(ch.mesh.edge_flags());
                cache.start(shape, &b.pose, PREDICTION).expect("valid query");
                ws.collect_keeping(shape, set, 0, cache).expect("valid query");
            }
            ws.finish(|_, m| out.push(*m));
            for m in out.iter() {
                points += m.points().len();
                d = d.min(m.min_dist());
            }
        }
        deepest.push(d);
    }
    (points, deepest)
}

pub(crate) fn parry_frame(
    chunks: &[Chunk],
    bodies: &[Body],
    state: &mut ParryState,
    warm: bool,
) -> (usize, Vec<f32>) {
    let all = shapes();
    let mut points = 0;
    let mut deepest = Vec::with_capacity(bodies.len());
    for (i, b) in bodies.iter().enumerate() {
        let mut d = f32::INFINITY;
        for &c in &b.chunks {
            let entry = state.entry((i, c)).or_default();
            if !warm {
                *entry = (Vec::new(), None);
            }
            let pos12 = b.pose.inverse();
            DefaultQueryDispatcher
                .contact_manifolds(
                    &pos12,
                    &*all[b.shape].0.0,
                    &chunks[c].peer,
                    PREDICTION,
                    &mut entry.0,
                    &mut entry.1,
                )
                .expect("supported pair");
            for m in &entry.0 {
                points += m.points.len();
                for p in &m.points {
                    d = d.min(p.dist);
                }
            }
        }
        deepest.push(d);
    }
    (points, deepest)
}

/// The same bodies touch on both sides, at the same deepest depth (within 5 mm: parry's EPA and
/// its internal-edge fix move depths a little); returns how many bodies touch.
pub(crate) fn check_contacts(ours: &[f32], theirs: &[f32], what: &str) -> usize {
    let mut touching = 0;
    let mut off = 0;
    for (o, t) in ours.iter().zip(theirs) {
        match (o.is_finite(), t.is_finite()) {
            (true, true) => {
                touching += 1;
                if (o - t).abs() > 5e-3 {
                    off += 1;
                    if std::env::var_os("NP_DEBUG").is_some() {
                        eprintln!("{what}: ours {o}, parry {t}");
                    }
                }
            }
            (false, false) => {}
            _ => {
                off += 1;
                if std::env::var_os("NP_DEBUG").is_some() {
                    eprintln!("{what}: ours {o}, parry {t}");
                }
            }
        }
    }
    assert!(off * 100 <= ours.len(), "{what}: {off} of {} bodies disagree with parry", ours.len());
    touching
}

pub(crate) fn debug_disagreements(chunks: &[Chunk], bodies: &[Body], od: &[f32], pd: &[f32]) {
    let mut ws = ContactWorkspace::new();
    if std::env::var_os("NP_DEBUG").is_some() {
        for (i, b) in bodies.iter().enumerate() {
            if (od[i] - pd[i]).abs() > 5e-3 {
                eprintln!("body {i} shape {} pose {:?}", b.shape, b.pose.translation);
                for &c in &b.chunks {
                    let ch = &chunks[c];
                    let index = ch.tree.with(&ch.mesh);
                    let mut pts = Vec::new();
                    let set = TriangleSet::new(&ch.mesh, &index).with_edge_flags(ch.mesh.edge_flags());
                    voxterra_narrowphase::contact_points(
                        &*shapes()[b.shape].0.0,
                        &b.pose,
                        set,
                        PREDICTION,
                        &mut ws,
                        &mut pts,
                    )
                    .expect("valid query");
                    let mut raw = Vec::new();
                    voxterra_narrowphase::contact_points(
                        &*shapes()[b.shape].0.0,
                        &b.pose,
                        TriangleSet::new(&ch.mesh, &index),
                        PREDICTION,
                        &mut ws,
                        &mut raw,
                    )
                    .expect("valid query");
                    for p in pts.iter().filter(|p| p.dist < -0.02) {
                        let t = ch.mesh.triangle(p.id.triangle as usize);
                        let n = (t[1] - t[0]).cross(&(t[2] - t[0])).normalize();
                        eprintln!(
                            "  flagged {:?} dist {} normal {:?} face {:?} flags {:03b}",
                            p.id,
                            p.dist,
                            p.normal.into_inner(),
                            n,
                            ch.mesh.edge_flags().get(p.id.triangle as usize).unwrap_or(0)
                        );
                    }
                    let rmin = raw.iter().map(|p| p.dist).fold(f32::INFINITY, f32::min);
                    eprintln!("  chunk {c}: unflagged min {rmin}");
                }
            }
        }
    }
}

pub(crate) fn contact_cases(report: &mut Report, budget: Budget, chunks: &[Chunk], area: &Region, n: usize) {
    let mut rng = Rng::new(7);
    let mut resting = bodies(chunks, area, n, &mut rng);
    let mut ws = ContactWorkspace::new();
    let mut out = Vec::new();
    let mut state = HashMap::new();
    let (_, od) = ours_frame(chunks, &resting, &mut ws, &mut out);
    let (_, pd) = parry_frame(chunks, &resting, &mut state, false);
    debug_disagreements(chunks, &resting, &od, &pd);
    let touching = check_contacts(&od, &pd, "resting");
    let goal = "≥ 2× parry";
    report.cases.push(compare_prechecked(
        budget,
        "contacts, resting, cold",
        "body",
        resting.len() as u64,
        "parry TriMesh/chunk",
        goal,
        || ours_frame(chunks, &resting, &mut ws, &mut out).0,
        || parry_frame(chunks, &resting, &mut state, false).0,
    ));
    // Warm: the same bodies sliding 5 voxels/s at 60 Hz, every frame a step on from the last
    // (back and forth between two poses a step apart); parry keeps its manifolds and workspaces
    // from frame to frame, ours each pair's contact candidates.
    let slide = |bodies: &mut [Body], chunks: &[Chunk], dt: f32| {
        for b in bodies.iter_mut() {
            b.pose.translation.x += 5.0 * dt;
            b.chunks = overlapping(chunks, &Aabb::from_parry(&shapes()[b.shape].0.compute_aabb(&b.pose)));
        }
    };
    let mut state = HashMap::new();
    let mut caches = HashMap::new();
    parry_frame(chunks, &resting, &mut state, true);
    ours_frame_kept(chunks, &resting, &mut ws, &mut caches, &mut out);
    slide(&mut resting, chunks, 1.0 / 60.0);
    let (_, od) = ours_frame_kept(chunks, &resting, &mut ws, &mut caches, &mut out);
    // Kept candidates answer as a fresh query does, bit for bit.
    assert_eq!(od, ours_frame(chunks, &resting, &mut ws, &mut out).1, "kept contacts differ from fresh ones");
    let (_, pd) = parry_frame(chunks, &resting, &mut state, true);
    debug_disagreements(chunks, &resting, &od, &pd);
    check_contacts(&od, &pd, "sliding");
    let mut stepped = resting.clone();
    slide(&mut stepped, chunks, 1.0 / 60.0);
    let poses = [&resting, &stepped];
    let (ours_frames, peer_frames) = (std::cell::Cell::new(0usize), std::cell::Cell::new(0usize));
    report.cases.push(compare_prechecked(
        budget,
        "contacts, sliding, warm",
        "body",
        resting.len() as u64,
        "parry TriMesh/chunk",
        goal,
        || {
            ours_frames.set(ours_frames.get() + 1);
            ours_frame_kept(chunks, poses[ours_frames.get() % 2], &mut ws, &mut caches, &mut out).0
        },
        || {
            peer_frames.set(peer_frames.get() + 1);
            parry_frame(chunks, poses[peer_frames.get() % 2], &mut state, true).0
        },
    ));
    // Per shape, cold.
    for (s, (_, name)) in shapes().iter().enumerate() {
        let these: Vec<Body> =
            bodies(chunks, area, n, &mut Rng::new(11)).into_iter().filter(|b| b.shape == s).collect();
        let mut st = HashMap::new();
        report.cases.push(compare_prechecked(
            budget,
            &format!("contacts cold, {name}"),
            "body",
            these.len() as u64,
            "parry TriMesh/chunk",
            goal,
            || ours_frame(chunks, &these, &mut ws, &mut out).0,
            || parry_frame(chunks, &these, &mut st, false).0,
        ));
    }
    report.metrics.push(Metric {
        name: "bodies touching (resting set)".into(),
        voxterra: touching as f64,
        peer: touching as f64,
        peer_name: "parry (checked)".into(),
        goal: format!("{} bodies, deepest depths equal within 5 mm", n),
    });
}

/// The resting-contact case, ours only, `rounds` times over (for profilers); returns the points.
pub fn profile_contacts(rounds: usize) -> usize {
    let (area, chunks) = profile_area();
    let resting = bodies(&chunks, &area, 200, &mut Rng::new(7));
    let (mut ws, mut out) = (ContactWorkspace::new(), Vec::new());
    (0..rounds).map(|_| ours_frame(&chunks, &resting, &mut ws, &mut out).0).sum()
}

/// The suite's warm case for voxterra alone: 200 bodies keeping their contact candidates, back and
/// forth a step, `rounds` frames; returns the contact points.
pub fn profile_warm(rounds: usize) -> usize {
    let (area, chunks) = profile_area();
    let resting = bodies(&chunks, &area, 200, &mut Rng::new(7));
    let mut stepped = resting.clone();
    for b in &mut stepped {
        b.pose.translation.x += 5.0 / 60.0;
        b.chunks = overlapping(&chunks, &Aabb::from_parry(&shapes()[b.shape].0.compute_aabb(&b.pose)));
    }
    let (mut ws, mut out, mut caches) = (ContactWorkspace::new(), Vec::new(), HashMap::new());
    let poses = [&resting, &stepped];
    (0..rounds).map(|r| ours_frame_kept(&chunks, poses[r % 2], &mut ws, &mut caches, &mut out).0).sum()
}
