//! [`World`]: bodies over a [`Terrain`] — the collision world a game steps.
//!
//! Body–body candidate pairs come from the dynamic AABB tree (fat boxes, one batch of moves per
//! step). Body–terrain contacts are tracked as the physics article describes: each step queries
//! the terrain's masks with a body's old and new boxes (grown by one voxel: triangles spill one
//! voxel past their chunk) and keeps at most one solid and one water contact per body and physics
//! chunk, reporting those that start and stop. Every step also builds the collision data of each
//! live solid contact, so no body is ever queried against terrain that is not ready.

use crate::brush::Brush;
use crate::reach::CONTACT_REACH;
use crate::terrain::{EditReport, Terrain, TerrainError};
use crate::terrain_query::TerrainManifold;
use crate::terrain_ray::TerrainRayHit;
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use voxterra_bit_broadphase::{BodyContacts, ContactEvent, ContactKind};
use voxterra_core::nalgebra::{Point3, Unit, Vector3};
use voxterra_core::{Aabb, Broadphase, Material, PhysicsChunkKey, ProxyError, ProxyId, ProxyMove, Ray};
use voxterra_dynamic_aabb_tree::DynamicAabbTree;
use voxterra_narrowphase::CastOptions;
use voxterra_narrowphase::convert::{FromParry, ToParry};
use voxterra_narrowphase::parry3d::math::{Pose, Vector};
use voxterra_narrowphase::parry3d::query::{
    self, ContactManifold, DefaultQueryDispatcher, PersistentQueryDispatcher, ShapeCastOptions,
};
use voxterra_narrowphase::parry3d::shape::{Shape, SharedShape};

/// A body's handle: an index and a generation, so a handle of a removed body never names the
/// body that reuses its slot.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct BodyHandle {
    index: u32,
    generation: u32,
}

impl BodyHandle {
    /// The slot index (dense: handles of live bodies are below the number of slots ever used).
    pub fn index(&self) -> u32 {
        self.index
    }
}

/// What a body is made of: its shape, where it is, how it moves and what the game attaches to it.
#[derive(Clone)]
pub struct BodyDesc {
    /// The body's shape (world units).
    pub shape: SharedShape,
    /// Its pose (world units).
    pub pose: Pose,
    /// Its velocity (world units per second), if it moves: the step's box covers the motion over
    /// `dt`, so contacts and readiness look one step ahead.
    pub velocity: Option<Vector>,
    /// The game's data.
    pub user_data: u64,
}

impl std::fmt::Debug for BodyDesc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodyDesc")
            .field("shape", &self.shape.shape_type())
            .field("pose", &self.pose)
            .field("velocity", &self.velocity)
            .field("user_data", &self.user_data)
            .finish()
    }
}

/// One body of a [`World`].
pub struct Body {
    desc: BodyDesc,
    proxy: ProxyId,
    /// The box of the last step (world units, prediction included); `None` before its first step.
    aabb: Option<Aabb>,
    terrain: BodyContacts,
}

impl Body {
    /// The body's shape.
    pub fn shape(&self) -> &dyn Shape {
        &*self.desc.shape
    }
    /// The shared shape (cheap to clone).
    pub fn shared_shape(&self) -> &SharedShape {
        &self.desc.shape
    }
    /// Its pose.
    pub fn pose(&self) -> &Pose {
        &self.desc.pose
    }
    /// Its velocity.
    pub fn velocity(&self) -> Option<Vector> {
        self.desc.velocity
    }
    /// The game's data.
    pub fn user_data(&self) -> u64 {
        self.desc.user_data
    }
    /// The box the last step tracked it with (`None` before its first step).
    pub fn aabb(&self) -> Option<Aabb> {
        self.aabb
    }
    /// Its terrain contacts as of the last step: one per physics chunk and kind, sorted by chunk.
    pub fn terrain_contacts(&self) -> &[voxterra_bit_broadphase::Contact] {
        self.terrain.contacts()
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Body").field("desc", &self.desc).field("aabb", &self.aabb).finish_non_exhaustive()
    }
}

/// A change the last steps saw, in a deterministic order: pair events by (low, high) handle,
/// then terrain events by body and contact order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum WorldEvent {
    /// Two bodies' boxes began to overlap (`a < b`).
    PairStarted(BodyHandle, BodyHandle),
    /// Two bodies' boxes stopped overlapping, or one of them was removed (`a < b`).
    PairStopped(BodyHandle, BodyHandle),
    /// A body came within reach of a physics chunk's solid (or water) voxels.
    TerrainStarted {
        /// The body.
        body: BodyHandle,
        /// The physics chunk.
        chunk: PhysicsChunkKey,
        /// Solid or water.
        kind: ContactKind,
    },
    /// A body left a chunk's solid (or water), the voxels under it changed, or it was removed.
    TerrainStopped {
        /// The body.
        body: BodyHandle,
        /// The physics chunk.
        chunk: PhysicsChunkKey,
        /// Solid or water.
        kind: ContactKind,
    },
}

/// Why a world operation was refused. A refused call changes nothing, except
/// [`World::step`], whose body boxes are checked before anything moves.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorldError {
    /// The handle names no live body.
    #[error("no live body {0:?}")]
    UnknownBody(BodyHandle),
    /// A body pose with a NaN or infinite translation or rotation.
    #[error("the body's pose is not finite")]
    InvalidPose,
    /// A body velocity with a NaN or infinite component.
    #[error("the body's velocity is not finite")]
    InvalidVelocity,
    /// A box the broadphase refuses (past its coordinate range), or more bodies than it holds.
    #[error(transparent)]
    Proxy(#[from] ProxyError),
    /// A step length that is not finite and non-negative.
    #[error("invalid step length {0}")]
    InvalidStep(f32),
    /// The terrain refused the query or edit.
    #[error(transparent)]
    Terrain(#[from] TerrainError),
    /// parry cannot handle this pair of shapes.
    #[error("parry has no routine for this pair of shapes")]
    Unsupported,
}

/// Tuning of a [`World`].
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct WorldConfig {
    /// Contact prediction distance (world units): bodies this close count as touching, so
    /// contacts exist a step before impact.
    pub prediction: f32,
    /// Beyond the chunks every step must build (those of live solid contacts), collision data is
    /// prepared this far (world units) around moving bodies, nearest first...
    pub lookahead: f32,
    /// ...at most this many chunks a step...
    pub lookahead_chunks: usize,
    /// ...and for at most this long.
    pub lookahead_time: Duration,
}

impl Default for WorldConfig {
    fn default() -> Self {
        WorldConfig {
            prediction: 0.02,
            lookahead: 2.0,
            lookahead_chunks: 64,
            lookahead_time: Duration::from_micros(500),
        }
    }
}

/// What a step did.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct StepReport {
    /// Bodies whose boxes were moved in the tree.
    pub moved: usize,
    /// Bodies whose terrain contacts were updated (moved, or near an edit).
    pub terrain_updated: usize,
    /// Events this step added.
    pub events: usize,
    /// Live body–body pairs after the step.
    pub pairs: usize,
    /// Collision cache entries built for live solid contacts (required).
    pub chunks_built: usize,
    /// Entries built ahead of moving bodies (within the lookahead budget).
    pub chunks_ahead: usize,
    /// Time spent building cache entries.
    pub build_time: Duration,
    /// The whole step.
    pub elapsed: Duration,
}

/// A manifold between two bodies, in world space.
#[derive(Clone, Debug)]
pub struct BodyManifold {
    /// The first body (`a < b`).
    pub a: BodyHandle,
    /// The second body.
    pub b: BodyHandle,
    /// Unit normal from `a` toward `b`.
    pub normal: Unit<Vector3<f32>>,
    /// Points: (on `a`, on `b`, signed distance; negative when penetrating).
    pub points: Vec<(Point3<f32>, Point3<f32>, f32)>,
}

/// Every manifold of one [`World::contacts`] call.
#[derive(Clone, Debug, Default)]
pub struct WorldContacts {
    /// Body–terrain manifolds, by body then chunk.
    pub terrain: Vec<(BodyHandle, TerrainManifold)>,
    /// Body–body manifolds, by pair.
    pub bodies: Vec<BodyManifold>,
}

impl WorldContacts {
    /// Empties both lists, keeping their buffers.
    pub fn clear(&mut self) {
        self.terrain.clear();
        self.bodies.clear();
    }
}

/// What a ray or shape cast hit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum HitTarget {
    /// A body.
    Body(BodyHandle),
    /// The terrain: the physics chunk, the triangle's index in its physics mesh, and (for rays) the
    /// material of the triangle's nearest vertex.
    Terrain {
        /// The physics chunk.
        chunk: PhysicsChunkKey,
        /// The triangle in its physics mesh.
        triangle: u32,
        /// The material (rays only; [`Material::AIR`] for shape casts).
        material: Material,
    },
}

/// A ray's first hit in a [`World`] (world units).
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct WorldRayHit {
    /// Ray parameter of the hit.
    pub t: f32,
    /// The point hit.
    pub point: Point3<f32>,
    /// The surface normal there, on the side the ray came from.
    pub normal: Unit<Vector3<f32>>,
    /// What was hit.
    pub target: HitTarget,
}

impl From<TerrainRayHit> for WorldRayHit {
    fn from(h: TerrainRayHit) -> Self {
        WorldRayHit {
            t: h.t,
            point: h.point,
            normal: h.normal,
            target: HitTarget::Terrain { chunk: h.chunk, triangle: h.triangle, material: h.material },
        }
    }
}

/// A shape cast's first hit in a [`World`] (world units).
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct WorldShapeHit {
    /// Time of impact, in units of the velocity.
    pub toi: f32,
    /// The cast shape's point of first contact.
    pub on_shape: Point3<f32>,
    /// The point it meets on the target.
    pub on_target: Point3<f32>,
    /// The target's normal at the contact, toward the cast shape.
    pub normal: Unit<Vector3<f32>>,
    /// What was hit.
    pub target: HitTarget,
}

struct Slot {
    generation: u32,
    body: Option<Body>,
}

/// The collision world: bodies over a terrain. See the module docs.
///
/// ```
/// use voxterra::narrowphase::parry3d::math::Pose;
/// use voxterra::narrowphase::parry3d::shape::SharedShape;
/// use voxterra::worldgen::WorldParams;
/// use voxterra::{BodyDesc, Terrain, World, WorldEvent};
///
/// let terrain = Terrain::generate(&WorldParams::new(3, [64, 48, 64]), 1.0, |_, _| {})?;
/// let mut world = World::new(terrain);
/// let ball = world.insert(BodyDesc {
///     shape: SharedShape::ball(0.5),
///     pose: Pose::translation(32.0, 60.0, 32.0),
///     velocity: None,
///     user_data: 7,
/// })?;
/// world.step(1.0 / 60.0)?;
/// // Drop it until it meets the ground: the step reports the terrain contacts that start.
/// let mut touched = false;
/// for _ in 0..60 {
///     let mut pose = *world.body(ball)?.pose();
///     pose.translation.y -= 1.0;
///     world.set_pose(ball, pose)?;
///     world.step(1.0 / 60.0)?;
///     touched |= world.drain_events().any(|e| matches!(e, WorldEvent::TerrainStarted { .. }));
///     if touched { break; }
/// }
/// assert!(touched);
/// # Ok::<(), voxterra::WorldError>(())
/// ```
pub struct World {
    terrain: Terrain,
    config: WorldConfig,
    slots: Vec<Slot>,
    free: Vec<u32>,
    tree: DynamicAabbTree,
    /// Live pairs by (low, high) slot index.
    pairs: BTreeSet<(u32, u32)>,
    /// Slots moved or inserted since the last step.
    moved: BTreeSet<u32>,
    /// Edited regions (world units) since the last step: bodies near them re-read the masks.
    edited: Vec<Aabb>,
    events: Vec<WorldEvent>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("bodies", &self.len())
            .field("pairs", &self.pairs.len())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// A valid pose and velocity: every component finite.
fn check_motion(pose: &Pose, velocity: Option<Vector>) -> Result<(), WorldError> {
    if !pose.is_finite() {
        return Err(WorldError::InvalidPose);
    }
    if !velocity.is_none_or(|v| v.is_finite()) {
        return Err(WorldError::InvalidVelocity);
    }
    Ok(())
}

impl World {
    /// A world over `terrain` with the default [`WorldConfig`].
    pub fn new(terrain: Terrain) -> Self {
        Self::with_config(terrain, WorldConfig::default())
    }

    /// A world over `terrain`. A prediction or lookahead that is not finite and non-negative is
    /// clamped to 0.
    pub fn with_config(terrain: Terrain, mut config: WorldConfig) -> Self {
        let clamp = |v: f32| if v.is_finite() && v > 0.0 { v } else { 0.0 };
        config.prediction = clamp(config.prediction);
        config.lookahead = clamp(config.lookahead);
        World {
            terrain,
            config,
            slots: Vec::new(),
            free: Vec::new(),
            tree: DynamicAabbTree::new(),
            pairs: BTreeSet::new(),
            moved: BTreeSet::new(),
            edited: Vec::new(),
            events: Vec::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> WorldConfig {
        self.config
    }

    /// The terrain.
    pub fn terrain(&self) -> &Terrain {
        &self.terrain
    }

    /// The terrain, to edit it directly. Every body re-reads the masks at the next step, since
    /// the world cannot see what changed; prefer [`World::apply_brush`], [`World::undo`] and
    /// [`World::redo`], which re-check only the bodies near the edit.
    pub fn terrain_mut(&mut self) -> &mut Terrain {
        self.edited.push(Aabb::new(
            Point3::new(f32::MIN, f32::MIN, f32::MIN),
            Point3::new(f32::MAX, f32::MAX, f32::MAX),
        ));
        &mut self.terrain
    }

    /// Gives the terrain back.
    pub fn into_terrain(self) -> Terrain {
        self.terrain
    }

    /// Live bodies.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// True when there is no body.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Live body–body pairs (boxes overlapping as of the last step), by handle.
    pub fn pairs(&self) -> impl Iterator<Item = (BodyHandle, BodyHandle)> + '_ {
        self.pairs.iter().map(|&(a, b)| (self.handle(a), self.handle(b)))
    }

    /// The handles of the live bodies, in slot order.
    pub fn handles(&self) -> impl Iterator<Item = BodyHandle> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.body.is_some())
            .map(|(i, s)| BodyHandle { index: i as u32, generation: s.generation })
    }

    fn handle(&self, index: u32) -> BodyHandle {
        BodyHandle { index, generation: self.slots[index as usize].generation }
    }

    /// A live body.
    pub fn body(&self, h: BodyHandle) -> Result<&Body, WorldError> {
        self.slots
            .get(h.index as usize)
            .filter(|s| s.generation == h.generation)
            .and_then(|s| s.body.as_ref())
            .ok_or(WorldError::UnknownBody(h))
    }

    fn body_mut(&mut self, h: BodyHandle) -> Result<&mut Body, WorldError> {
        self.slots
            .get_mut(h.index as usize)
            .filter(|s| s.generation == h.generation)
            .and_then(|s| s.body.as_mut())
            .ok_or(WorldError::UnknownBody(h))
    }

    /// Adds a body; it is tracked (pairs, terrain contacts) from the next step.
    pub fn insert(&mut self, desc: BodyDesc) -> Result<BodyHandle, WorldError> {
        check_motion(&desc.pose, desc.velocity)?;
        let aabb = desc.shape.compute_aabb(&desc.pose);
        let index = match self.free.last() {
            Some(&i) => i,
            None => u32::try_from(self.slots.len())
                .map_err(|_| ProxyError::CapacityExceeded { limit: u32::MAX as u64 })?,
        };
        let proxy = self.tree.create_proxy(Aabb::from_parry(&aabb), index as u64)?;
        let body = Body { desc, proxy, aabb: None, terrain: BodyContacts::new() };
        if self.free.pop().is_some() {
            self.slots[index as usize].body = Some(body);
        } else {
            self.slots.push(Slot { generation: 0, body: Some(body) });
        }
        self.moved.insert(index);
        Ok(self.handle(index))
    }

    /// Removes a body: its pairs and terrain contacts stop (reported now), and its handle dies.
    pub fn remove(&mut self, h: BodyHandle) -> Result<BodyDesc, WorldError> {
        self.body(h)?;
        let slot = &mut self.slots[h.index as usize];
        let body = slot.body.take().ok_or(WorldError::UnknownBody(h))?;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(h.index);
        self.moved.remove(&h.index);
        self.tree.destroy_proxy(body.proxy)?;
        let gone: Vec<(u32, u32)> =
            self.pairs.iter().copied().filter(|&(a, b)| a == h.index || b == h.index).collect();
        for p in gone {
            self.pairs.remove(&p);
            let (a, b) = if p.0 == h.index { (h, self.handle(p.1)) } else { (self.handle(p.0), h) };
            self.events.push(WorldEvent::PairStopped(a, b));
        }
        for c in body.terrain.contacts() {
            self.events.push(WorldEvent::TerrainStopped { body: h, chunk: c.chunk, kind: c.kind });
        }
        Ok(body.desc)
    }

    /// Moves a body; the step after sees the move.
    pub fn set_pose(&mut self, h: BodyHandle, pose: Pose) -> Result<(), WorldError> {
        check_motion(&pose, None)?;
        self.body_mut(h)?.desc.pose = pose;
        self.moved.insert(h.index);
        Ok(())
    }

    /// Sets a body's velocity (world units per second).
    pub fn set_velocity(&mut self, h: BodyHandle, velocity: Option<Vector>) -> Result<(), WorldError> {
        check_motion(&Pose::IDENTITY, velocity)?;
        self.body_mut(h)?.desc.velocity = velocity;
        self.moved.insert(h.index);
        Ok(())
    }

    /// The events since they were last drained.
    pub fn drain_events(&mut self) -> std::vec::Drain<'_, WorldEvent> {
        self.events.drain(..)
    }

    /// Applies a brush to the terrain; bodies near it re-read the masks at the next step.
    pub fn apply_brush(&mut self, brush: &Brush) -> Result<EditReport, WorldError> {
        let r = self.terrain.apply_brush(brush)?;
        self.note_edit(&r);
        Ok(r)
    }

    /// Undoes the terrain's last edit (see [`Terrain::undo`]).
    pub fn undo(&mut self) -> Result<EditReport, WorldError> {
        let r = self.terrain.undo()?;
        self.note_edit(&r);
        Ok(r)
    }

    /// Redoes the terrain's last undone edit (see [`Terrain::redo`]).
    pub fn redo(&mut self) -> Result<EditReport, WorldError> {
        let r = self.terrain.redo()?;
        self.note_edit(&r);
        Ok(r)
    }

    fn note_edit(&mut self, r: &EditReport) {
        if let Some(d) = r.dirty {
            // Every body whose contacts or cached chunks the change alters lies this close to it.
            let (vs, reach) = (self.terrain.voxel_size(), CONTACT_REACH as f32);
            let lo = d.min().map(|v| (v as f32 - reach) * vs);
            let hi = d.max().map(|v| (v as f32 + reach) * vs);
            self.edited.push(Aabb::new(lo, hi));
        }
    }

    /// The box a body is tracked with over a step of `dt`: the shape at its pose, swept by its
    /// velocity, grown by the prediction distance.
    fn step_box(&self, body: &Body, dt: f32) -> Aabb {
        let d = &body.desc;
        let b = Aabb::from_parry(&d.shape.compute_aabb(&d.pose));
        let motion = d.velocity.map_or(Vector3::zeros(), |v| Vector3::from_parry(v * dt));
        b.swept(&motion).loosened(self.config.prediction)
    }

    /// Settles everything that changed since the last step: moves the moved bodies' boxes in the
    /// tree (one batch), updates the pairs, updates the terrain contacts of moved bodies and of
    /// bodies near edits (old and new boxes), and builds the collision data of every live solid
    /// contact (then some ahead of moving bodies, within the lookahead budget). Events go to
    /// [`World::drain_events`].
    pub fn step(&mut self, dt: f32) -> Result<StepReport, WorldError> {
        if !(dt.is_finite() && dt >= 0.0) {
            return Err(WorldError::InvalidStep(dt));
        }
        let start = Instant::now();
        let events_before = self.events.len();
        let moved: Vec<u32> = std::mem::take(&mut self.moved).into_iter().collect();
        let mut moves = Vec::with_capacity(moved.len());
        let mut boxes = Vec::with_capacity(moved.len());
        for &i in &moved {
            let Some(body) = self.slots[i as usize].body.as_ref() else { continue };
            let b = self.step_box(body, dt);
            let displacement = body.desc.velocity.map_or(Vector3::zeros(), |v| Vector3::from_parry(v * dt));
            moves.push(ProxyMove { id: body.proxy, aabb: b, displacement });
            boxes.push((i, b));
        }
        if let Err(e) = self.tree.move_proxies(&moves) {
            // Nothing else has changed: put the moves back for the next try.
            self.moved.extend(moved);
            return Err(e.into());
        }

        // Pairs: the tree reports every overlapping pair with a moved member.
        let mut reported = Vec::new();
        self.tree.update_pairs_parallel(&mut |a, b| {
            let (a, b) = (a.0, b.0);
            reported.push((a, b));
        });
        let proxy_to_slot = |tree: &DynamicAabbTree, p: u32| tree.user_data(ProxyId(p)).map(|u| u as u32);
        let mut now: BTreeSet<(u32, u32)> = BTreeSet::new();
        for (a, b) in reported {
            if let (Some(a), Some(b)) = (proxy_to_slot(&self.tree, a), proxy_to_slot(&self.tree, b)) {
                now.insert((a.min(b), a.max(b)));
            }
        }
        let moved_set: BTreeSet<u32> = boxes.iter().map(|b| b.0).collect();
        let stopped: Vec<(u32, u32)> = self
            .pairs
            .iter()
            .copied()
            .filter(|p| (moved_set.contains(&p.0) || moved_set.contains(&p.1)) && !now.contains(p))
            .collect();
        let mut pair_events: Vec<(u32, u32, bool)> = Vec::new();
        for p in stopped {
            self.pairs.remove(&p);
            pair_events.push((p.0, p.1, false));
        }
        for p in now {
            if self.pairs.insert(p) {
                pair_events.push((p.0, p.1, true));
            }
        }
        pair_events.sort_unstable();
        for (a, b, started) in pair_events {
            let (a, b) = (self.handle(a), self.handle(b));
            self.events.push(if started {
                WorldEvent::PairStarted(a, b)
            } else {
                WorldEvent::PairStopped(a, b)
            });
        }

        // Terrain contacts: moved bodies sweep old → new; bodies near an edit re-read in place.
        let edited = std::mem::take(&mut self.edited);
        let mut updates: Vec<(u32, Aabb, Aabb)> = Vec::new();
        let mut b_iter = boxes.iter().peekable();
        for (i, slot) in self.slots.iter().enumerate() {
            let Some(body) = slot.body.as_ref() else { continue };
            let i = i as u32;
            if let Some(&&(_, new)) = b_iter.peek().filter(|b| b.0 == i) {
                b_iter.next();
                updates.push((i, body.aabb.unwrap_or(new), new));
            } else if let Some(cur) = body.aabb
                && edited.iter().any(|e| e.intersects(&cur))
            {
                updates.push((i, cur, cur));
            }
        }
        let vs = self.terrain.voxel_size();
        let mut new_events = Vec::new();
        for &(i, old, new) in &updates {
            let h = self.handle(i);
            let body = self.slots[i as usize].body.as_mut().ok_or(WorldError::UnknownBody(h))?;
            self.terrain.masks().update_contacts(
                &mut body.terrain,
                &old.loosened(vs),
                &new.loosened(vs),
                |e| {
                    new_events.push(match e {
                        ContactEvent::Added(c) => {
                            WorldEvent::TerrainStarted { body: h, chunk: c.chunk, kind: c.kind }
                        }
                        ContactEvent::Removed(c) => {
                            WorldEvent::TerrainStopped { body: h, chunk: c.chunk, kind: c.kind }
                        }
                    })
                },
            );
            body.aabb = Some(new);
        }
        self.events.extend(new_events);

        // Readiness: the chunk of every live solid contact is built; then look ahead.
        let before = self.terrain.cache_stats();
        let solid: Vec<PhysicsChunkKey> = self
            .slots
            .iter()
            .filter_map(|s| s.body.as_ref())
            .flat_map(|b| b.terrain.contacts())
            .filter(|c| c.kind == ContactKind::Solid)
            .map(|c| c.chunk)
            .collect();
        let chunks_built = self.terrain.prepare_chunks(solid);
        let mut chunks_ahead = 0;
        if self.config.lookahead > 0.0 && self.config.lookahead_chunks > 0 && !boxes.is_empty() {
            let ahead: Vec<Aabb> = boxes.iter().map(|b| b.1.loosened(self.config.lookahead)).collect();
            chunks_ahead = self
                .terrain
                .prepare_around(&ahead, self.config.lookahead_chunks, self.config.lookahead_time)
                .0;
        }
        let after = self.terrain.cache_stats();
        Ok(StepReport {
            moved: boxes.len(),
            terrain_updated: updates.len(),
            events: self.events.len() - events_before,
            pairs: self.pairs.len(),
            chunks_built,
            chunks_ahead,
            build_time: after.build_time.saturating_sub(before.build_time),
            elapsed: start.elapsed(),
        })
    }

    /// The manifolds of every live contact as of the last step, in parallel (the same result on
    /// any thread count): each body against the chunks of its solid terrain contacts, and each
    /// live pair through parry. Chunks the cache lacks are built as the queries meet them.
    pub fn contacts(&self, out: &mut WorldContacts) -> Result<(), WorldError> {
        out.clear();
        let prediction = self.config.prediction;
        let terrain = &self.terrain;
        let touching: Vec<(u32, &Body)> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.body.as_ref().map(|b| (i as u32, b)))
            .filter(|(_, b)| b.terrain.contacts().iter().any(|c| c.kind == ContactKind::Solid))
            .collect();
        let per_body: Vec<Result<Vec<TerrainManifold>, TerrainError>> = touching
            .par_iter()
            .map_init(Vec::new, |keys, (_, b)| {
                keys.clear();
                keys.extend(
                    b.terrain.contacts().iter().filter(|c| c.kind == ContactKind::Solid).map(|c| c.chunk),
                );
                let mut m = Vec::new();
                terrain.contacts_in(b.shape(), b.pose(), prediction, keys, &mut m)?;
                Ok(m)
            })
            .collect();
        for ((i, _), r) in touching.iter().zip(per_body) {
            let h = self.handle(*i);
            out.terrain.extend(r?.into_iter().map(|m| (h, m)));
        }

        let pairs: Vec<(u32, u32)> = self.pairs.iter().copied().collect();
        let slots = &self.slots;
        let per_pair: Vec<Result<Option<BodyManifold>, WorldError>> = pairs
            .par_iter()
            .map(|&(a, b)| {
                let (Some(ba), Some(bb)) = (slots[a as usize].body.as_ref(), slots[b as usize].body.as_ref())
                else {
                    return Ok(None);
                };
                let ha = BodyHandle { index: a, generation: slots[a as usize].generation };
                let hb = BodyHandle { index: b, generation: slots[b as usize].generation };
                body_manifold(ha, ba, hb, bb, prediction)
            })
            .collect();
        for r in per_pair {
            out.bodies.extend(r?);
        }
        Ok(())
    }

    /// The first hit of `ray` (world units) with `t` in `[0, max_t]` among the bodies and the
    /// terrain; a tie goes to the terrain.
    pub fn cast_ray(&self, ray: &Ray, max_t: f32) -> Result<Option<WorldRayHit>, WorldError> {
        let terrain = self.terrain.cast_ray(ray, max_t)?;
        let limit = terrain.map_or(max_t, |h| h.t);
        Ok(match self.cast_ray_bodies(ray, limit) {
            Some(b) if terrain.is_none_or(|t| b.t < t.t) => Some(b),
            _ => terrain.map(WorldRayHit::from),
        })
    }

    /// [`World::cast_ray`] for many rays, in parallel (the same hits on any thread count).
    pub fn cast_rays(
        &self,
        rays: &[Ray],
        max_t: f32,
        hits: &mut Vec<Option<WorldRayHit>>,
    ) -> Result<(), WorldError> {
        let mut terrain = Vec::new();
        self.terrain.cast_rays(rays, max_t, &mut terrain)?;
        let this = self;
        rays.par_iter()
            .zip(terrain)
            .map(|(r, t)| {
                let limit = t.map_or(max_t, |h| h.t);
                match this.cast_ray_bodies(r, limit) {
                    Some(b) if t.is_none_or(|t| b.t < t.t) => Some(b),
                    _ => t.map(WorldRayHit::from),
                }
            })
            .collect_into_vec(hits);
        Ok(())
    }

    /// The nearest body a ray hits with `t` in `[0, limit]`; ties to the lowest handle.
    fn cast_ray_bodies(&self, ray: &Ray, limit: f32) -> Option<WorldRayHit> {
        let pray = ray.to_parry();
        let mut best: Option<WorldRayHit> = None;
        self.tree.cast_ray(ray, limit, &mut |id, _, lim| {
            let Some(i) = self.tree.user_data(id) else { return lim };
            let h = self.handle(i as u32);
            let Some(body) = self.slots[i as usize].body.as_ref() else { return lim };
            match body.shape().cast_ray_and_get_normal(body.pose(), &pray, lim, true) {
                Some(hit)
                    if best.is_none_or(|b| {
                        hit.time_of_impact < b.t || (hit.time_of_impact == b.t && h < body_of(&b))
                    }) =>
                {
                    let normal = Unit::try_new(Vector3::from_parry(hit.normal), 1e-12)
                        .unwrap_or(-Unit::new_normalize(ray.dir));
                    best = Some(WorldRayHit {
                        t: hit.time_of_impact,
                        point: ray.point_at(hit.time_of_impact),
                        normal,
                        target: HitTarget::Body(h),
                    });
                    hit.time_of_impact
                }
                _ => lim,
            }
        });
        best
    }

    /// The first time `shape`, starting at `pose` and moving by `velocity` per unit time (world
    /// units), touches a body or the terrain with time of impact in `[0, max_toi]`; a tie goes to
    /// the terrain, then the lowest handle. `exclude` names a body to ignore (the caster itself).
    pub fn cast_shape(
        &self,
        shape: &dyn Shape,
        pose: &Pose,
        velocity: Vector,
        max_toi: f32,
        exclude: Option<BodyHandle>,
    ) -> Result<Option<WorldShapeHit>, WorldError> {
        let terrain = self.terrain.cast_shape(shape, pose, velocity, max_toi, CastOptions::default())?;
        let mut best: Option<WorldShapeHit> = terrain.map(|(chunk, h)| WorldShapeHit {
            toi: h.toi,
            on_shape: h.on_shape,
            on_target: h.on_triangle,
            normal: h.normal,
            target: HitTarget::Terrain { chunk, triangle: h.id.triangle, material: Material::AIR },
        });
        let start = Aabb::from_parry(&shape.compute_aabb(pose));
        let swept = start.swept(&Vector3::from_parry(velocity * max_toi));
        let mut candidates = Vec::new();
        self.tree.query_aabb(&swept, &mut |id| {
            candidates.extend(self.tree.user_data(id).map(|u| u as u32));
            true
        });
        candidates.sort_unstable();
        for i in candidates {
            let h = self.handle(i);
            if Some(h) == exclude {
                continue;
            }
            let Some(body) = self.slots[i as usize].body.as_ref() else { continue };
            let limit = best.map_or(max_toi, |b| b.toi);
            let options = ShapeCastOptions { max_time_of_impact: limit, ..ShapeCastOptions::default() };
            let hit =
                query::cast_shapes(pose, velocity, shape, body.pose(), Vector::ZERO, body.shape(), options)
                    .map_err(|_| WorldError::Unsupported)?;
            if let Some(hit) = hit
                && best.is_none_or(|b| hit.time_of_impact < b.toi)
            {
                let cast_pose = pose.append_translation(velocity * hit.time_of_impact);
                let at_body = body.pose();
                best = Some(WorldShapeHit {
                    toi: hit.time_of_impact,
                    on_shape: Point3::from_parry(cast_pose * hit.witness1),
                    on_target: Point3::from_parry(at_body * hit.witness2),
                    normal: Unit::from_parry(at_body.rotation * hit.normal2),
                    target: HitTarget::Body(h),
                });
            }
        }
        Ok(best)
    }
}

fn body_of(hit: &WorldRayHit) -> BodyHandle {
    match hit.target {
        HitTarget::Body(h) => h,
        HitTarget::Terrain { .. } => BodyHandle { index: u32::MAX, generation: u32::MAX },
    }
}

/// The manifold of two bodies through parry's dispatcher (world space), or `None` when they are
/// farther apart than `prediction`.
fn body_manifold(
    ha: BodyHandle,
    a: &Body,
    hb: BodyHandle,
    b: &Body,
    prediction: f32,
) -> Result<Option<BodyManifold>, WorldError> {
    let pos12 = a.pose().inv_mul(b.pose());
    let mut manifolds: Vec<ContactManifold<(), ()>> = Vec::new();
    DefaultQueryDispatcher
        .contact_manifolds(&pos12, a.shape(), b.shape(), prediction, &mut manifolds, &mut None)
        .map_err(|_| WorldError::Unsupported)?;
    let mut points = Vec::new();
    let mut normal = None;
    for m in &manifolds {
        let pa = m.subshape_pos1().map_or(*a.pose(), |p| *a.pose() * *p);
        let pb = m.subshape_pos2().map_or(*b.pose(), |p| *b.pose() * *p);
        for c in &m.points {
            if c.dist <= prediction {
                normal.get_or_insert(pa.rotation * m.local_n1);
                points.push((
                    Point3::from_parry(pa * c.local_p1),
                    Point3::from_parry(pb * c.local_p2),
                    c.dist,
                ));
            }
        }
    }
    let Some(n) = normal.and_then(|n| Unit::try_new(Vector3::from_parry(n), 1e-12)) else { return Ok(None) };
    Ok(Some(BodyManifold { a: ha, b: hb, normal: n, points }))
}
