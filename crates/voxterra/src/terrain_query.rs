//! The terrain's collision queries, all from `&self`: contacts, intersection tests, shape casts,
//! sweeps and mask overlaps, and collision readiness (building the cache ahead of the queries).
//!
//! A query picks the physics chunks its box needs from the masks, takes each chunk's collision data
//! from the cache (building it into the cache when missing), and runs the narrowphase in voxel
//! units. Scratch memory is one workspace per thread, so steady-state queries allocate nothing.

use crate::error::QueryError;
use crate::terrain::Terrain;
use crate::workspace::{QueryWorkspace, with_workspace};
use std::cell::RefCell;
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Aabb, Material, PhysicsChunkKey};
use voxterra_kdtree::KdTreeView;
use voxterra_mesher::{MeshWorkspace, PhysicsMesh};
use voxterra_narrowphase::convert::FromParry;
use voxterra_narrowphase::manifold::{ReduceScratch, reduce};
use voxterra_narrowphase::parry3d::math::{Pose, Vector};
use voxterra_narrowphase::parry3d::query::sweep_toi::Sweep;
use voxterra_narrowphase::parry3d::shape::Shape;
use voxterra_narrowphase::{
    CastOptions, ContactCache, ContactPoint, Correction, Manifold, NarrowphaseError, ShapeCastHit, SweepHit,
    TriangleSet,
};

/// What a shape keeps between its contact queries with a terrain
/// ([`Terrain::contacts_kept`]): the chunks its box reached, the candidate triangles in them, and
/// the terrain revision they hold for. Keep one per shape (a physics engine's contact pair).
#[derive(Clone, Debug)]
pub struct TerrainContactCache {
    /// World units: given, or the shape's own ([`ContactCache::for_shape`]) once it is known.
    slack: Option<f32>,
    revision: Option<u64>,
    keys: Vec<PhysicsChunkKey>,
    /// In voxel units.
    inner: ContactCache,
    /// Where the shape was at its last query (world units), and the terrain's revision then.
    last: Option<(Vector, u64)>,
}

impl Default for TerrainContactCache {
    fn default() -> Self {
        Self::new()
    }
}

impl TerrainContactCache {
    /// An empty cache whose candidates hold while the shape moves less than what parry's triangle
    /// meshes allow their pairs' boxes: a tenth of the shape's size, at most 0.1 (world units).
    pub fn new() -> Self {
        TerrainContactCache {
            slack: None,
            revision: None,
            keys: Vec::new(),
            inner: ContactCache::new(0.0),
            last: None,
        }
    }

    /// An empty cache whose candidates hold while the shape moves less than `slack` (world units;
    /// negative or NaN counts as 0).
    pub fn with_slack(slack: f32) -> Self {
        TerrainContactCache { slack: Some(if slack > 0.0 { slack } else { 0.0 }), ..Self::new() }
    }

    /// Forgets what the cache keeps.
    pub fn clear(&mut self) {
        self.revision = None;
        self.keys.clear();
        self.inner.clear();
        self.last = None;
    }
}

/// One contact manifold against the terrain, in world units, and the physics chunk it is from.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct TerrainManifold {
    /// The physics chunk whose triangles the points are on.
    pub chunk: PhysicsChunkKey,
    /// At most four points sharing a normal (world units).
    pub manifold: Manifold,
}

/// A contact point against the terrain, in world units, and the physics chunk it is from: what
/// [`Terrain::contacts_kept`] hands out beside its manifolds.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct TerrainContactPoint {
    /// The physics chunk whose triangle the point is on.
    pub chunk: PhysicsChunkKey,
    /// The point (world units).
    pub point: ContactPoint,
}

impl TerrainContactPoint {
    /// Reduces `points` as [`Terrain::contacts`] does (each run of one chunk's points to manifolds of
    /// at most four points per normal) and appends the manifolds to `out`: the points of
    /// [`Terrain::contacts_kept`] give its manifolds back. For contacts kept between steps:
    /// the points moved with the shape, then reduced again.
    pub fn reduce(points: &[TerrainContactPoint], out: &mut Vec<TerrainManifold>) {
        thread_local! {
            static SCRATCH: RefCell<(ReduceScratch, Vec<ContactPoint>, Vec<Manifold>)> =
                RefCell::default();
        }
        SCRATCH.with_borrow_mut(|(scratch, run, manifolds)| {
            let mut start = 0;
            while start < points.len() {
                // The contact toward the surface of a shape deep in the solid is a manifold of its own.
                let run_of = |p: &TerrainContactPoint| (p.chunk, p.point.correction == Correction::Interior);
                let (chunk, first) = (points[start].chunk, run_of(&points[start]));
                let len = points[start..].iter().take_while(|p| run_of(p) == first).count();
                run.clear();
                run.extend(points[start..start + len].iter().map(|p| p.point));
                manifolds.clear();
                reduce(run, scratch, manifolds);
                out.extend(manifolds.iter().map(|&manifold| TerrainManifold { chunk, manifold }));
                start += len;
            }
        });
    }
}

impl Terrain {
    /// The contacts of `shape` at `pose` (world units) with the terrain within `prediction`:
    /// the masks pick the physics chunks (only those showing solid near the shape's box), the
    /// cache gives each chunk's mesh, edge flags and kD tree (built into it if missing), and the
    /// narrowphase makes manifolds of at most four points per chunk and normal, ghost-free
    /// across chunk seams, internal contacts dropped. A shape deep in the solid gets one contact
    /// toward the nearest surface. Appended to `out` in chunk order; returns how many.
    pub fn contacts(
        &self,
        shape: &dyn Shape,
        pose: &Pose,
        prediction: f32,
        out: &mut Vec<TerrainManifold>,
    ) -> Result<usize, QueryError> {
        self.contacts_checked(shape, pose, prediction, out, None)
    }

    /// [`Terrain::contacts`] for a shape that keeps what it found between queries, as a physics
    /// engine's contact pair does, and every point its manifolds were reduced from (world units,
    /// grouped by chunk, internal contacts already dropped), replacing `points`' contents: an
    /// integration that keeps contacts between steps moves these points with the shape and hands
    /// them to [`TerrainContactPoint::reduce`], so the manifolds keep every point the
    /// query saw, not only the four a manifold kept. While the terrain is unchanged and no point
    /// of the shape has moved more than the cache's slack, the query replays the candidate
    /// triangles the cache kept instead of picking chunks and searching their trees, and skips
    /// those too far to touch. The manifolds are the same as [`Terrain::contacts`]', bit for bit,
    /// whatever the cache holds (a fresh [`TerrainContactCache`] for a one-off query). A cache
    /// belongs to one shape against one terrain.
    ///
    /// ```
    /// use voxterra::prelude::*;
    /// use voxterra::worldgen::GenParams;
    /// use voxterra::TerrainContactCache;
    ///
    /// let terrain = Terrain::generate(&GenParams::new(3, [64, 48, 64]), TerrainConfig::default())?;
    /// let down = Ray::new(Point3::new(32.0, 60.0, 32.0), -Vector3::y());
    /// let ground = terrain.cast_ray(&down, 100.0)?.expect("ground").point.y;
    /// let ball = SharedShape::ball(1.0);
    /// let mut cache = TerrainContactCache::new();
    /// let (mut kept, mut fresh, mut points) = (Vec::new(), Vec::new(), Vec::new());
    /// for step in 0..4 {
    ///     // A ball rolling a centimetre a step: after the first, the query replays its cache.
    ///     let pose = Pose::translation(32.0 + 0.01 * step as f32, ground + 0.99, 32.0);
    ///     kept.clear();
    ///     fresh.clear();
    ///     terrain.contacts_kept(&*ball, &pose, 0.02, &mut cache, &mut kept, &mut points)?;
    ///     terrain.contacts(&*ball, &pose, 0.02, &mut fresh)?;
    ///     assert_eq!(kept, fresh);
    /// }
    /// # Ok::<(), voxterra::TerrainError>(())
    /// ```
    pub fn contacts_kept(
        &self,
        shape: &dyn Shape,
        pose: &Pose,
        prediction: f32,
        cache: &mut TerrainContactCache,
        out: &mut Vec<TerrainManifold>,
        points: &mut Vec<TerrainContactPoint>,
    ) -> Result<usize, QueryError> {
        points.clear();
        check_pose(pose)?;
        check_distance("prediction", prediction)?;
        voxterra_narrowphase::check_supported(shape)?;
        // The layers below work in voxel units.
        let scale = self.scale();
        let k = scale.length_to_voxels(1.0);
        let scaled = scaled_to_voxels(shape, k)?;
        let local_shape: &dyn Shape = scaled.as_deref().unwrap_or(shape);
        let local_pose = scale.pose_to_voxels(pose);
        let slack = *cache.slack.get_or_insert_with(|| ContactCache::for_shape(shape).slack()) * k;
        if cache.inner.slack() != slack {
            cache.inner = ContactCache::new(slack);
            cache.revision = None;
        }
        let revision = self.revision();
        let before = out.len();
        with_workspace(|ws| {
            let QueryWorkspace { contact, mesh } = ws;
            contact.begin();
            let kept = cache.revision == Some(revision)
                && contact.collect_kept(local_shape, &local_pose, prediction * k, &mut cache.inner)?;
            // A shape that moved past the slack since its last query likely will again, and after
            // an edit every shape's query misses at once (the edit's frame is the one that
            // stalls): keeping candidates then would cost more than it saves, so it queries afresh
            // and keeps them next time.
            let fast =
                cache.last.is_none_or(|(l, r)| r != revision || (pose.translation - l).length() > slack / k);
            let mut fresh_keys = Vec::new();
            if !kept && fast {
                let b = Aabb::from_parry(&shape.compute_aabb(pose));
                fresh_keys = self.contact_chunks(&b.loosened(prediction)).unwrap_or_default();
                self.with_sets(&fresh_keys, mesh, |i, set| {
                    contact.collect(local_shape, &local_pose, set, prediction * k, i)
                })?;
            } else if !kept {
                cache.revision = None;
                let loose = cache.inner.start(local_shape, &local_pose, prediction * k)?;
                // In world units for the masks (which add a voxel's spill, far past rounding).
                let world = scale.box_to_world(&loose);
                cache.keys = self.contact_chunks(&world).unwrap_or_default();
                let inner = &mut cache.inner;
                self.with_sets(&cache.keys, mesh, |i, set| {
                    contact.collect_keeping(local_shape, set, i, inner)
                })?;
                cache.revision = Some(revision);
            }
            cache.last = Some((pose.translation, revision));
            let keys = if !kept && fast { &fresh_keys } else { &cache.keys };
            contact.finish(|i, m| {
                out.push(TerrainManifold { chunk: keys[i as usize], manifold: m.scaled(scale.size()) });
            });
            points.extend(contact.reduced_points().map(|(i, p)| TerrainContactPoint {
                chunk: keys[i as usize],
                point: p.scaled(scale.size()),
            }));
            Ok::<(), QueryError>(())
        })?;
        self.push_interior(shape, pose, before, out, Some((points, 0)))
    }

    /// Runs `f` on each chunk of `keys` (building what the cache lacks) as the one-sided triangle
    /// set contacts read, with its edge flags, and its index in `keys`.
    fn with_sets(
        &self,
        keys: &[PhysicsChunkKey],
        mesh: &mut MeshWorkspace,
        mut f: impl FnMut(
            u32,
            TriangleSet<'_, PhysicsMesh, KdTreeView<'_, PhysicsMesh>>,
        ) -> Result<(), NarrowphaseError>,
    ) -> Result<(), QueryError> {
        let mut reader = self.reader();
        for (i, &key) in keys.iter().enumerate() {
            reader
                .with(key, mesh, |c| {
                    let view = c.tree.with(&c.mesh);
                    f(
                        i as u32,
                        TriangleSet::new(&c.mesh, &view).with_edge_flags(c.mesh.edge_flags()).one_sided(),
                    )
                })
                .transpose()?;
        }
        Ok(())
    }

    /// Checks the query, picks the chunks the shape's box (grown by `prediction`) shows solid in,
    /// and collects their contacts.
    fn contacts_checked(
        &self,
        shape: &dyn Shape,
        pose: &Pose,
        prediction: f32,
        out: &mut Vec<TerrainManifold>,
        points: Option<&mut Vec<TerrainContactPoint>>,
    ) -> Result<usize, QueryError> {
        check_pose(pose)?;
        check_distance("prediction", prediction)?;
        voxterra_narrowphase::check_supported(shape)?;
        let b = Aabb::from_parry(&shape.compute_aabb(pose));
        let Some(keys) = self.contact_chunks(&b.loosened(prediction)) else { return Ok(0) };
        self.contacts_in(shape, pose, prediction, &keys, out, points)
    }

    /// The chunks whose triangles a query over `world` (a box in world units) can meet: those
    /// the masks show solid near it, less those built whose triangles' bounds miss it (PERF: the
    /// masks' pick, grown by a voxel's spill, held about twice the chunks a pick by the
    /// triangles' bounds does). A chunk not built yet stays: its triangles are not known yet.
    /// `None` when the masks show nothing solid there (a shape in the open: no contact at all,
    /// not even toward a surface from inside).
    pub(crate) fn contact_chunks(&self, world: &Aabb) -> Option<Vec<PhysicsChunkKey>> {
        let mut keys = self.solid_chunks(world);
        if keys.is_empty() {
            return None;
        }
        let scale = self.scale();
        let b = Aabb::new(scale.point_to_voxels(&world.mins), scale.point_to_voxels(&world.maxs));
        // A hair wider than the box: rounding never drops a chunk the narrowphase searches.
        let far = b.mins.coords.abs().max().max(b.maxs.coords.abs().max());
        let b = b.loosened(1e-3 + far * 1e-5);
        let mut reader = self.reader();
        keys.retain(|&k| match reader.bounds(k) {
            None => true,
            Some(None) => false,
            Some(Some(t)) => t.intersects(&b),
        });
        Some(keys)
    }

    /// The contacts of `shape` with the triangles of `keys` (world units, pose and prediction
    /// already checked).
    pub(crate) fn contacts_in(
        &self,
        shape: &dyn Shape,
        pose: &Pose,
        prediction: f32,
        keys: &[PhysicsChunkKey],
        out: &mut Vec<TerrainManifold>,
        mut points: Option<&mut Vec<TerrainContactPoint>>,
    ) -> Result<usize, QueryError> {
        // The layers below work in voxel units.
        let scale = self.scale();
        let k = scale.length_to_voxels(1.0);
        let scaled = scaled_to_voxels(shape, k)?;
        let local_shape: &dyn Shape = scaled.as_deref().unwrap_or(shape);
        let local_pose = scale.pose_to_voxels(pose);
        let before = out.len();
        let points_before = points.as_deref().map_or(0, Vec::len);
        with_workspace(|ws| {
            let QueryWorkspace { contact, mesh } = ws;
            contact.begin();
            self.with_sets(keys, mesh, |i, set| {
                contact.collect(local_shape, &local_pose, set, prediction * k, i)
            })?;
            // Internal contacts are dropped across chunks: a seam is a crease like any other.
            contact.finish(|i, m| {
                out.push(TerrainManifold { chunk: keys[i as usize], manifold: m.scaled(scale.size()) });
            });
            if let Some(points) = points.as_deref_mut() {
                points.extend(contact.reduced_points().map(|(i, p)| TerrainContactPoint {
                    chunk: keys[i as usize],
                    point: p.scaled(scale.size()),
                }));
            }
            Ok::<(), QueryError>(())
        })?;
        self.push_interior(shape, pose, before, out, points.map(|p| (p, points_before)))
    }

    /// Ends a contact query that appended from `before` in `out` (and from the given length in
    /// `points`): a shape in the solid that meets no triangle (wholly under the surface, or in
    /// all-solid chunks) is pushed toward the nearest surface all the same. Only a query whose
    /// contacts are all apart asks: a shape that crosses the surface meets a triangle (a negative
    /// distance). Its apart contacts then go: measured from triangles the shape is beside, not
    /// in front of. Returns how many manifolds the query made.
    fn push_interior(
        &self,
        shape: &dyn Shape,
        pose: &Pose,
        before: usize,
        out: &mut Vec<TerrainManifold>,
        points: Option<(&mut Vec<TerrainContactPoint>, usize)>,
    ) -> Result<usize, QueryError> {
        if out[before..].iter().all(|m| m.manifold.min_dist() > 0.0)
            && let Some(m) = self.interior_contact(shape, pose)?
        {
            out.truncate(before);
            if let Some((points, from)) = points {
                points.truncate(from);
                points.extend(
                    m.manifold.points().iter().map(|&point| TerrainContactPoint { chunk: m.chunk, point }),
                );
            }
            out.push(m);
        }
        Ok(out.len() - before)
    }

    /// True when `shape` at `pose` (world units) touches or penetrates the terrain.
    pub fn intersects(&self, shape: &dyn Shape, pose: &Pose) -> Result<bool, QueryError> {
        let mut out = Vec::new();
        self.contacts(shape, pose, 0.0, &mut out)?;
        Ok(out.iter().any(|m| m.manifold.min_dist() <= 0.0))
    }

    /// The first time `shape`, starting at `pose` and moving by `velocity` per unit time (world
    /// units), touches the terrain with time of impact in `[0, max_toi]`, with [`CastOptions`] (a
    /// target distance in world units, and whether a shape already penetrating stops at once);
    /// inactive edges report their face's normal. Returns the hit (world units) and its chunk.
    pub fn cast_shape(
        &self,
        shape: &dyn Shape,
        pose: &Pose,
        velocity: Vector,
        max_toi: f32,
        options: CastOptions,
    ) -> Result<Option<(PhysicsChunkKey, ShapeCastHit)>, QueryError> {
        if !velocity.is_finite() {
            return Err(QueryError::InvalidParameter { what: "velocity", value: velocity.length() });
        }
        if !(max_toi.is_finite() && max_toi >= 0.0) {
            return Err(QueryError::InvalidParameter { what: "max_toi", value: max_toi });
        }
        check_pose(pose)?;
        check_distance("target distance", options.target_distance)?;
        voxterra_narrowphase::check_supported(shape)?;
        let start = Aabb::from_parry(&shape.compute_aabb(pose));
        let d = velocity * max_toi;
        let swept = start.swept(&voxterra_core::nalgebra::Vector3::new(d.x, d.y, d.z));
        let keys = self.solid_chunks(&swept.loosened(options.target_distance));
        let scale = self.scale();
        let k = scale.length_to_voxels(1.0);
        let scaled = scaled_to_voxels(shape, k)?;
        let local_shape: &dyn Shape = scaled.as_deref().unwrap_or(shape);
        let local_pose = scale.pose_to_voxels(pose);
        let local_vel = velocity * k;
        let local_options = CastOptions { target_distance: options.target_distance * k, ..options };
        let mut best: Option<(PhysicsChunkKey, ShapeCastHit)> = None;
        with_workspace(|ws| {
            let mut reader = self.reader();
            for &key in &keys {
                let limit = best.map_or(max_toi, |b| b.1.toi);
                let hit = reader.with(key, &mut ws.mesh, |c| {
                    let view = c.tree.with(&c.mesh);
                    let set = TriangleSet::new(&c.mesh, &view).with_edge_flags(c.mesh.edge_flags());
                    voxterra_narrowphase::cast_shape(
                        local_shape,
                        &local_pose,
                        local_vel,
                        limit,
                        set,
                        local_options,
                    )
                });
                if let Some(h) = hit.transpose()?.flatten()
                    && best.is_none_or(|b| h.toi < b.1.toi)
                {
                    best = Some((key, h));
                }
            }
            Ok::<(), QueryError>(())
        })?;
        Ok(best.map(|(key, h)| {
            let w = ShapeCastHit {
                on_shape: scale.point_to_world(&h.on_shape),
                on_triangle: scale.point_to_world(&h.on_triangle),
                ..h
            };
            (key, w)
        }))
    }

    /// Continuous collision over a step, rotation included, as rapier sweeps a body against a
    /// triangle mesh ([`voxterra_narrowphase::sweep_shape`]): the earliest fraction in
    /// `(0, max_fraction)` of `sweep` (world units, the shape's frame moving from its start to its
    /// end pose) at which `shape` arrives at the surface (a polytope `linear_slop` from it, a ball
    /// or capsule overlapping it by `linear_slop`, as rapier's time of impact). A shape already
    /// resting on the surface is stopped only where its core would pass through it. Returns the
    /// hit (world units) and its chunk.
    pub fn sweep_shape(
        &self,
        shape: &dyn Shape,
        sweep: &Sweep,
        max_fraction: f32,
        linear_slop: f32,
    ) -> Result<Option<(PhysicsChunkKey, SweepHit)>, QueryError> {
        check_pose(&sweep.transform_at(0.0))?;
        check_pose(&sweep.final_transform())?;
        check_distance("linear slop", linear_slop)?;
        if !(0.0..=1.0).contains(&max_fraction) {
            return Err(QueryError::InvalidParameter { what: "max_fraction", value: max_fraction });
        }
        let end = sweep.transform_at(max_fraction.clamp(0.0, 1.0));
        let swept = Aabb::from_parry(&shape.compute_aabb(&sweep.transform_at(0.0)))
            .merged(&Aabb::from_parry(&shape.compute_aabb(&end)));
        // The rotation between the ends may carry a point past both ends' boxes, by less than its
        // distance from the center of mass times the quaternions' chord.
        let sphere = shape.compute_local_bounding_sphere();
        let reach = (sphere.center - sweep.local_center).length() + sphere.radius;
        let chord = (2.0 - 2.0 * sweep.q1.dot(sweep.q2).abs()).max(0.0).sqrt();
        let keys = self.solid_chunks(&swept.loosened(linear_slop + reach * chord));
        let scale = self.scale();
        let k = scale.length_to_voxels(1.0);
        let scaled = scaled_to_voxels(shape, k)?;
        let local_shape: &dyn Shape = scaled.as_deref().unwrap_or(shape);
        let local =
            Sweep { local_center: sweep.local_center * k, c1: sweep.c1 * k, c2: sweep.c2 * k, ..*sweep };
        let mut best: Option<(PhysicsChunkKey, SweepHit)> = None;
        with_workspace(|ws| {
            let mut reader = self.reader();
            for &key in &keys {
                let limit = best.map_or(max_fraction, |b| b.1.fraction);
                let hit = reader.with(key, &mut ws.mesh, |c| {
                    let view = c.tree.with(&c.mesh);
                    let set = TriangleSet::new(&c.mesh, &view).one_sided();
                    voxterra_narrowphase::sweep_shape(local_shape, &local, limit, linear_slop * k, set)
                });
                if let Some(h) = hit.transpose()?.flatten()
                    && best.is_none_or(|b| h.fraction < b.1.fraction)
                {
                    best = Some((key, h));
                }
            }
            Ok::<(), QueryError>(())
        })?;
        Ok(best.map(|(key, h)| (key, SweepHit { point: scale.point_to_world(&h.point), ..h })))
    }

    /// The material of `triangle` in `chunk`'s physics mesh at its vertex nearest `point` (world
    /// units), as ray hits report it; Air when the chunk holds no such triangle.
    pub(crate) fn material_near(
        &self,
        chunk: PhysicsChunkKey,
        triangle: u32,
        point: &Point3<f32>,
    ) -> Material {
        let local = self.scale().point_to_voxels(point);
        with_workspace(|ws| {
            self.reader()
                .with(chunk, &mut ws.mesh, |data| {
                    let corners = data.mesh.triangles().get(triangle as usize)?;
                    let tri = voxterra_core::TriangleSource::triangle(&data.mesh, triangle as usize);
                    let near = (0..3)
                        .min_by(|&i, &j| (tri[i] - local).norm().total_cmp(&(tri[j] - local).norm()))?;
                    data.mesh.materials().get(corners[near] as usize).copied()
                })
                .flatten()
        })
        .unwrap_or(Material::AIR)
    }

    /// Whether the box (world units) may touch solid and water, from the masks alone (no
    /// meshes): for buoyancy and triggers. Conservative by the masks' one-voxel dilation.
    pub fn overlap(&self, aabb: &Aabb) -> (bool, bool) {
        let (mut solid, mut water) = (false, false);
        self.masks.query(aabb, |_, t| {
            solid |= t.solid;
            water |= t.water;
        });
        (solid, water)
    }
}

/// A NaN or infinite pose is an error.
pub(crate) fn check_pose(pose: &Pose) -> Result<(), QueryError> {
    if pose.is_finite() { Ok(()) } else { Err(QueryError::InvalidPose) }
}

/// A distance (`what`) must be finite and non-negative.
fn check_distance(what: &'static str, value: f32) -> Result<(), QueryError> {
    if value.is_finite() && value >= 0.0 { Ok(()) } else { Err(QueryError::InvalidParameter { what, value }) }
}

/// `shape` scaled by `k` (world to voxel units), or `None` when `k` is 1 and it is used as is.
fn scaled_to_voxels(shape: &dyn Shape, k: f32) -> Result<Option<Box<dyn Shape>>, QueryError> {
    if k == 1.0 {
        return Ok(None);
    }
    let s = shape.scale_dyn(Vector::splat(k), 16).ok_or(QueryError::UnscalableShape)?;
    Ok(Some(s))
}
