//! Sweeps: continuous collision over a step's motion, translation and rotation together, as
//! rapier computes it against a triangle mesh (after Box2D): each candidate triangle runs parry's
//! conservative-advancement time of impact ([`sweep_time_of_impact`]) to a separation of the
//! linear slop; a shape already that close to a triangle retries with a small core ball around
//! its centroid, so a body resting on the ground is never pinned by it, yet one about to pass
//! through it still stops.

use crate::closest::{feature_of, triangle_normal};
use crate::contact::FeatureId;
use crate::convert::{FromParry, ToParry};
use crate::error::NarrowphaseError;
use crate::part::check_shape;
use crate::triangle_set::TriangleSet;
use parry3d::math::{Pose, Vector};
use parry3d::query::sweep_toi::{
    SimplexCache, Sweep, SweepToiOutput, SweepToiStatus, ToiProxy, proxy_distance, sweep_time_of_impact,
};
use parry3d::shape::Shape;
use voxterra_core::nalgebra::{Point3, Unit, Vector3};
use voxterra_core::{Aabb, TriangleIndex, TriangleSource};

/// Where a sweep stops.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct SweepHit {
    /// The fraction of the sweep at which the shape arrives: a polytope the linear slop from a
    /// triangle, a ball or capsule (a core with a radius) overlapping it by the slop, as rapier's
    /// time of impact places them, so their contacts exist on arrival.
    pub fraction: f32,
    /// The hit point, midway between the shape and the triangle.
    pub point: Point3<f32>,
    /// Unit normal from the triangle toward the shape at the hit.
    pub normal: Unit<Vector3<f32>>,
    /// The triangle hit, the feature nearest the hit point, and the compound part that hit.
    pub id: FeatureId,
}

/// One convex piece of the moving shape with its own sweep.
struct Piece<'s> {
    proxy: ToiProxy<'s>,
    sweep: Sweep,
    index: u32,
    /// Its centroid in its own frame, center of the core ball.
    centroid: Vector,
    /// Radius of the core ball (before the slop): half the piece's thickness.
    core: f32,
}

/// The earliest fraction in `(0, max_fraction)` of `sweep` (the shape's motion over a step:
/// its center of mass on a line, its rotation interpolated) at which `shape` arrives at a triangle
/// of `set` as rapier's time of impact places it: a polytope `linear_slop` from it, a ball or
/// capsule overlapping it by `linear_slop`. A shape already within the slop of a triangle at the
/// start is stopped by that triangle only if a ball of half its thickness (plus the slop) around
/// its centroid would reach it: resting and sliding bodies move on, bodies about to tunnel stop.
/// Each triangle's time of impact is parry's (Box2D's root finder) for a motion without a turn;
/// with one, conservative advancement on the distance, which cannot step past a first touch.
/// For a one-sided set, a triangle is skipped when the shape's centroid starts behind it, or ends
/// in front of it by more than the core having moved less than that toward it (parry's rule for
/// oriented meshes).
///
/// The shape is a ball, cuboid, capsule, triangle, segment, convex polyhedron or their round
/// versions, or a compound of these (other compound parts are skipped, as rapier does); ties go
/// to the lowest triangle index.
pub fn sweep_shape<S: TriangleSource, I: TriangleIndex>(
    shape: &dyn Shape,
    sweep: &Sweep,
    max_fraction: f32,
    linear_slop: f32,
    set: TriangleSet<'_, S, I>,
) -> Result<Option<SweepHit>, NarrowphaseError> {
    let finite = [sweep.c1, sweep.c2, sweep.local_center].iter().all(|v| v.is_finite())
        && sweep.q1.is_finite()
        && sweep.q2.is_finite();
    if !finite {
        return Err(NarrowphaseError::InvalidParameter { what: "sweep", value: sweep.c1.length() });
    }
    if !(max_fraction.is_finite() && (0.0..=1.0).contains(&max_fraction)) {
        return Err(NarrowphaseError::InvalidParameter { what: "max_fraction", value: max_fraction });
    }
    if !(linear_slop.is_finite() && linear_slop > 0.0) {
        return Err(NarrowphaseError::InvalidParameter { what: "linear_slop", value: linear_slop });
    }
    let pieces = pieces(shape, sweep)?;
    let fixed = Sweep::constant(&Pose::IDENTITY, Vector::ZERO);
    // Each piece's candidates (the triangles its motion's box meets, in index order), with the
    // one-sided early-outs applied.
    let mut candidates: Vec<Vec<(u32, [Point3<f32>; 3])>> = Vec::with_capacity(pieces.len());
    for piece in &pieces {
        let (start, end) = (piece.sweep.transform_at(0.0), piece.sweep.transform_at(max_fraction));
        let swept = Aabb::from_parry(&piece.proxy.compute_aabb(&start))
            .merged(&Aabb::from_parry(&piece.proxy.compute_aabb(&end)))
            .loosened(linear_slop + rotation_reach(piece));
        let core = piece.core.max(linear_slop);
        let c1 = Vector3::from_parry(start.transform_point(piece.centroid));
        let c2 = Vector3::from_parry(piece.sweep.final_transform().transform_point(piece.centroid));
        let mut ids = Vec::new();
        set.index.triangles_in_aabb(&swept, &mut |t| ids.push(t));
        ids.sort_unstable();
        let mut kept = Vec::with_capacity(ids.len());
        for t in ids {
            let tri = set.source.triangle(t as usize);
            if !tri.iter().all(|p| p.iter().all(|v| v.is_finite())) {
                continue;
            }
            let Some(n) = triangle_normal(&tri) else { continue };
            if set.one_sided {
                let (o1, o2) = (n.dot(&(c1 - tri[0].coords)), n.dot(&(c2 - tri[0].coords)));
                if o1 < 0.0 || (o1 - o2 < core && o2 > core) {
                    continue;
                }
            }
            kept.push((t, tri));
        }
        candidates.push(kept);
    }
    // The time of impact's root finder may miss a triangle the motion passes close by when it
    // searches the whole step, yet find it in a shorter window: passes repeat with the window cut
    // to the best hit until one finds nothing earlier.
    let mut best: Option<SweepHit> = None;
    for _ in 0..3 {
        let before = best;
        for (piece, kept) in pieces.iter().zip(&candidates) {
            let core = piece.core.max(linear_slop);
            let turns = piece.sweep.q1 != piece.sweep.q2;
            for &(t, tri) in kept {
                let limit = best.map_or(max_fraction, |b| b.fraction);
                let element = ToiProxy::from_array(tri.map(|p| p.coords.to_parry()), 0.0);
                // The root finder may give up (a fast turn takes more than its iterations):
                // then advance on from where it stopped rather than stop the body there, short of
                // the surface.
                let toi = |proxy: &ToiProxy<'_>| {
                    // With a turn, the root finder's separating axes can step past a brief first
                    // touch, or call the pair separated: conservative advancement cannot.
                    if turns {
                        return advance(&element, proxy, &piece.sweep, 0.0, limit, linear_slop);
                    }
                    let out = sweep_time_of_impact(&element, &fixed, proxy, &piece.sweep, limit, linear_slop);
                    if out.status == SweepToiStatus::Failed {
                        advance(&element, proxy, &piece.sweep, out.fraction, limit, linear_slop)
                    } else {
                        Some(out)
                    }
                };
                let Some(mut out) = toi(&piece.proxy) else { continue };
                if out.fraction == 0.0 {
                    let ball = ToiProxy::point(piece.centroid, core + linear_slop);
                    let Some(o) = toi(&ball) else { continue };
                    out = o;
                }
                if !(0.0 < out.fraction && out.fraction < limit) {
                    continue;
                }
                let point = Point3::from(Vector3::from_parry(out.point));
                let face = triangle_normal(&tri).unwrap_or_else(Vector3::y);
                let normal =
                    Unit::try_new(Vector3::from_parry(out.normal), 1e-6).unwrap_or(Unit::new_unchecked(face));
                let id =
                    FeatureId { triangle: t, feature: feature_of(&point, &tri), part: piece.index, sub: 0 };
                best = Some(SweepHit { fraction: out.fraction, point, normal, id });
            }
        }
        if best == before || best.is_none() {
            break;
        }
    }
    Ok(best)
}

/// Conservative advancement on the core distance between the fixed `element` and `proxy` moving
/// along `s`, from fraction `from` to `limit`, to parry's target (the linear slop apart, or a rounded
/// shape overlapping by it) and tolerance (a quarter of the slop): where the time of impact's
/// root finder gave up. Each step advances by the gap over a bound on how fast any of the piece's
/// points moves, so it never passes the first touch. `None`: no touch before `limit`.
fn advance(
    element: &ToiProxy<'_>,
    proxy: &ToiProxy<'_>,
    s: &Sweep,
    from: f32,
    limit: f32,
    slop: f32,
) -> Option<SweepToiOutput> {
    let reach = proxy.points().iter().map(|p| (*p - s.local_center).length()).fold(0.0, f32::max);
    let q1 = if s.q1.dot(s.q2) < 0.0 { -s.q1 } else { s.q1 };
    // A normalized blend of quaternions turns at most twice as fast as their chord grows, and a
    // rotation by angle a moves a point at distance r by at most r·a: twice the chord again.
    let speed = (s.c2 - s.c1).length() + 4.0 * reach * (q1 - s.q2).length() + f32::MIN_POSITIVE;
    let target = slop.max(proxy.radius + element.radius - slop);
    let tolerance = 0.25 * slop;
    let mut cache = SimplexCache::default();
    let mut t = from;
    for _ in 0..512 {
        let pose = s.transform_at(t);
        let d = proxy_distance(&pose, element, proxy, false, &mut cache);
        if d.distance <= 0.0 && t == 0.0 {
            // Overlapping from the start: parry's answer.
            return Some(SweepToiOutput {
                status: SweepToiStatus::Overlapped,
                fraction: 0.0,
                point: Vector::ZERO,
                normal: Vector::ZERO,
            });
        }
        if d.distance <= target + tolerance {
            let normal = d.normal;
            let pa = d.point_a + element.radius * normal;
            let pb = d.point_b - proxy.radius * normal;
            return Some(SweepToiOutput {
                status: SweepToiStatus::Hit,
                fraction: t,
                point: 0.5 * (pa + pb),
                normal,
            });
        }
        t += (d.distance - target) / speed;
        if t >= limit {
            return None;
        }
    }
    // Still short after as many steps (a long graze): stopping here is safe, passing is not.
    let d = proxy_distance(&s.transform_at(t), element, proxy, false, &mut cache);
    Some(SweepToiOutput {
        status: SweepToiStatus::Hit,
        fraction: t,
        point: 0.5 * (d.point_a + element.radius * d.normal + d.point_b - proxy.radius * d.normal),
        normal: d.normal,
    })
}

/// How far a point of the piece can stray from the segment between its endpoint positions as it
/// rotates (its farthest point from the center of mass times the rotation's chord), so the
/// candidate box covers the whole motion.
fn rotation_reach(piece: &Piece<'_>) -> f32 {
    let s = &piece.sweep;
    let r = piece.proxy.points().iter().map(|p| (*p - s.local_center).length()).fold(0.0, f32::max)
        + piece.proxy.radius;
    let q1 = if s.q1.dot(s.q2) < 0.0 { -s.q1 } else { s.q1 };
    r * (q1 - s.q2).length().min(2.0)
}

/// The moving shape's convex pieces, each with its sweep.
fn pieces<'s>(shape: &'s dyn Shape, sweep: &Sweep) -> Result<Vec<Piece<'s>>, NarrowphaseError> {
    let piece = |index: u32, shape: &'s dyn Shape, sweep: Sweep| -> Option<Piece<'s>> {
        Some(Piece {
            proxy: ToiProxy::from_shape(shape)?,
            sweep,
            index,
            centroid: shape.mass_properties(1.0).local_com,
            core: 0.5 * shape.ccd_thickness(),
        })
    };
    if let Some(c) = shape.as_compound() {
        let (start, end) = (sweep.transform_at(0.0), sweep.final_transform());
        let mut parts = Vec::new();
        for (i, (p, s)) in c.shapes().iter().enumerate() {
            let s: &dyn Shape = &**s;
            check_shape(s)?;
            let sub =
                Sweep::from_poses(&(start * *p), &(end * *p), p.inverse_transform_point(sweep.local_center));
            parts.extend(piece(i as u32, s, sub));
        }
        return Ok(parts);
    }
    check_shape(shape)?;
    piece(0, shape, *sweep).map(|p| vec![p]).ok_or(NarrowphaseError::UnsupportedShape(
        "a shape without a point-cloud form (cylinder, cone): cast it with cast_shape",
    ))
}
