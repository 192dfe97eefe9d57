//! The cases the harness found, kept: the scenes (by seed, probed as the soak probes them) where
//! a capability once disagreed with its reference, the sharp ridges of 30° and 50° where balls
//! got phantom deep contacts, and a check that the judges catch a wrong answer.

use crate::scene::{Kind, Probe, Scene, cold_terrain, random_probe};
use crate::{Tally, contacts, motion, rays};
use voxterra::core::Region;
use voxterra::core::materials as m;
use voxterra::core::nalgebra::{Point3, Vector3};
use voxterra::parry3d::math::{Pose, Vector};
use voxterra_test_support::Rng;
use voxterra_test_support::ground::{Feature, ground_from};
use voxterra_test_support::reference::P;

/// Runs `capability` over the scene of each seed with the soak's probes and asserts agreement.
fn replay(capability: &str, seeds: &[u64], probes: usize, run: fn(&Scene, &mut Rng, usize, &mut Tally)) {
    let mut tally = Tally::default();
    for &seed in seeds {
        run(&Scene::new(seed), &mut Rng::new(seed), probes, &mut tally);
    }
    tally.assert_clean(capability);
}

/// Balls beside a crest, behind one flank's plane, got pushed through it (phantom deep
/// contacts; also beside a folded sliver, whose reversed normal swayed the inside test); a ball
/// with its center in the solid was measured by a face's plane, short of its nearest surface
/// point; a hull within the prediction had every contact judged beside its feature; a capsule
/// beside a fold whose edge's faces nearly cancelled and whose rays tied; a ball's
/// deepest contact was dropped by the corner claims; a hull, box or capsule penetrating across an
/// inactive edge got no contact; a box in the solid got none, one in the open a contact toward a
/// surface it was not under; a box in the solid beside the triangles it was near got only their
/// distances apart; boxes apart got a distance from the best of SAT's axes, short of the
/// Euclidean one, or a stand-in deeper than any axis showed.
#[test]
fn contact_scenes_found_disagreeing() {
    let seeds = [
        1,
        10451216379200822465,
        12793040940332582595,
        3786468572763441381,
        18167412353352935020,
        12101292192808575269,
        12014931145031615522,
        6607302118715816621,
        5485823273100160780,
        16114693552124080525,
        3955666105430599384,
        6899961447582787502,
        17348618349737989652,
        16197686469373037483,
        10832536682648439419,
        17404364497159269187,
        10324910130913235475,
        7216703233449331044,
        7913272048592507771,
        6655508492106798483,
        5115681357909509602,
        1571161070120279531,
        6886871367617515888,
    ];
    replay("contacts", &seeds, 40, contacts::run);
}

/// A hit at exactly `max_t` far from the origin was missed (the kD tree's clip); a hit at `t = 0`
/// was missed when cast again with `max_t = 0` (a limit of 0 read as "stop").
#[test]
fn ray_scenes_found_disagreeing() {
    replay("rays", &[2171963433944777779, 5282866691461198191, 11321616668775936505], 200, rays::run);
}

/// Boxes across an inactive edge: `intersects` said false.
#[test]
fn intersection_scenes_found_disagreeing() {
    replay("intersects", &[3805825610436093651, 8350340424475393105], 40, motion::run_intersects);
}

/// Turning sweeps stopped late (past a brief first touch) or early (where the root finder gave
/// up).
#[test]
fn sweep_scenes_found_disagreeing() {
    replay(
        "sweeps",
        &[2103447715345696808, 7134611160154358618, 12851860080194564863],
        15,
        motion::run_sweeps,
    );
}

/// A ridge of two flanks meeting at `angle` degrees along Z, its crest at x 41, y 24 (voxel
/// size 1): ~300 balls of radius 0.6 touching or penetrating near the crest get their exact depth.
fn ridge(angle: f32) {
    let region = Region::from_min_size(voxterra::core::VoxelPos::new(0, 0, 0), [80, 40, 64]).unwrap();
    let features = vec![
        Feature::Slope { point: Point3::new(40.0, 10.0, 32.0), normal: Vector3::y() },
        Feature::Ridge { apex: Point3::new(41.0, 24.0, 32.0), along: Vector3::z(), angle },
    ];
    let scene = Scene::from_ground(angle as u64, ground_from(region, features, m::ROCK), 1.0, Vec::new());
    let cold = cold_terrain(&scene);
    let mut rng = Rng::new(u64::from(angle.to_bits()));
    let mut tally = Tally::default();
    let ball = random_probe(&mut rng, Kind::Ball, 1.0, &P::origin());
    let ball = Probe { shape: voxterra::parry3d::shape::SharedShape::ball(0.6), reach: 0.6, ..ball };
    let mut touching = 0;
    while touching < 300 {
        let c = Vector::new(41.0 + rng.range(-2.0, 2.0), 24.0 + rng.range(-3.0, 0.8), rng.range(20.0, 44.0));
        let probe = ball.at(Pose::translation(c.x, c.y, c.z));
        let near = scene.near(&probe.center(), 3.0);
        let Some(sd) = scene.signed_distance(&probe.center(), &near) else { continue };
        if !(-0.3..=0.6).contains(&sd) {
            continue;
        }
        touching += 1;
        contacts::check(&scene, &probe, 0.0, &cold, &mut tally);
    }
    tally.assert_clean(&format!("balls at a {angle}° crest"));
}

#[test]
fn balls_at_sharp_crests_get_their_exact_depth() {
    for angle in [30.0, 50.0, 70.0, 90.0] {
        ridge(angle);
    }
}

/// The judges are not vacuous: an answer made wrong on purpose (a contact 0.1 deeper, a lost
/// contact, a ray hit 0.1 farther, a lost hit) disagrees.
#[test]
fn the_judges_catch_wrong_answers() {
    let scene = Scene::new(7);
    let mut rng = Rng::new(7);
    // Trials, and how many of them each wrong answer was caught in.
    let (mut contact_trials, mut ray_trials) = (0, 0);
    let (mut deeper, mut lost, mut farther, mut missed) = (0, 0, 0, 0);
    for _ in 0..200 {
        let (p, n) = scene.surface_point(&mut rng);
        let probe = random_probe(&mut rng, Kind::Ball, scene.voxel_size, &p);
        let c = p + n * (probe.reach - 0.05 * f64::from(scene.voxel_size));
        let probe = probe.at(Pose::translation(c.x as f32, c.y as f32, c.z as f32));
        let mut out = Vec::new();
        scene.terrain.contacts(&*probe.shape, &probe.pose, 0.0, &mut out).unwrap();
        let Some(rep) = out.iter().map(|m| f64::from(m.manifold.min_dist())).reduce(f64::min) else {
            continue;
        };
        let Some(right) = contacts::judge(&scene, &probe, 0.0, Some(rep)) else { continue };
        if !right.is_empty() {
            continue;
        }
        contact_trials += 1;
        deeper +=
            usize::from(contacts::judge(&scene, &probe, 0.0, Some(rep - 0.1)).is_some_and(|f| !f.is_empty()));
        lost += usize::from(contacts::judge(&scene, &probe, 0.0, None).is_some_and(|f| !f.is_empty()));
        let ray = voxterra::core::Ray::new(
            Point3::new((p.x + n.x) as f32, (p.y + n.y) as f32, (p.z + n.z) as f32),
            Vector3::new(-n.x as f32, -n.y as f32, -n.z as f32),
        );
        let Some(h) = scene.terrain.cast_ray(&ray, 10.0).unwrap() else { continue };
        if !rays::judge(&scene, &ray, 10.0, Some(h)).is_empty() {
            continue;
        }
        ray_trials += 1;
        let far = voxterra::TerrainRayHit { t: h.t + 0.1, ..h };
        farther += usize::from(!rays::judge(&scene, &ray, 10.0, Some(far)).is_empty());
        missed += usize::from(!rays::judge(&scene, &ray, 10.0, None).is_empty());
    }
    assert!(contact_trials > 50 && ray_trials > 50, "{contact_trials} contact and {ray_trials} ray trials");
    assert_eq!(
        (deeper, lost),
        (contact_trials, contact_trials),
        "wrong contacts caught, of {contact_trials}"
    );
    assert_eq!((farther, missed), (ray_trials, ray_trials), "wrong hits caught, of {ray_trials}");
}
