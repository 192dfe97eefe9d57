//! [`World`]: bodies over a [`Terrain`] — the collision world a game steps.
//!
//! Body–body candidate pairs come from the dynamic AABB tree (fat boxes, one batch of moves per
//! step). Body–terrain contacts are tracked as the physics article describes: each step queries
//! the terrain's masks with a body's old and new boxes (grown by one voxel: triangles spill one
//! voxel past their chunk) and keeps at most one solid and one water contact per body and physics
//! chunk, reporting those that start and stop. Every step also builds the collision data of each
//! live solid contact, so no body is ever queried against terrain that is not ready.

use crate::brush::Brush;
use crate::error::{EditError, QueryError};
use crate::terrain::{EditReport, Terrain};
use std::collections::BTreeSet;
use std::time::Duration;
use voxterra_bit_broadphase::{BodyContacts, ContactKind};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Aabb, Broadphase, PhysicsChunkKey, ProxyError, ProxyId};
use voxterra_dynamic_aabb_tree::DynamicAabbTree;
use voxterra_narrowphase::convert::FromParry;
use voxterra_narrowphase::parry3d::math::{Pose, Vector};
use voxterra_narrowphase::parry3d::shape::{Shape, SharedShape};

/// A body's handle: an index and a generation, so a handle of a removed body never names the
/// body that reuses its slot.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct BodyHandle {
    pub(crate) index: u32,
    pub(crate) generation: u32,
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
    pub(crate) desc: BodyDesc,
    pub(crate) proxy: ProxyId,
    /// The box of the last step (world units, prediction included); `None` before its first step.
    pub(crate) aabb: Option<Aabb>,
    pub(crate) terrain: BodyContacts,
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
    /// The terrain refused the query.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The terrain refused the edit.
    #[error(transparent)]
    Edit(#[from] EditError),
    /// The chunks around the bodies could not be paged in.
    #[error(transparent)]
    Page(#[from] crate::error::PageError),
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

pub(crate) struct Slot {
    pub(crate) generation: u32,
    pub(crate) body: Option<Body>,
}

/// The collision world: bodies over a terrain. See the module docs.
///
/// ```
/// use voxterra::narrowphase::parry3d::math::Pose;
/// use voxterra::narrowphase::parry3d::shape::SharedShape;
/// use voxterra::worldgen::GenParams;
/// use voxterra::{BodyDesc, Terrain, TerrainConfig, World, WorldEvent};
///
/// let terrain = Terrain::generate(&GenParams::new(3, [64, 48, 64]), TerrainConfig::default())?;
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
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct World {
    pub(crate) terrain: Terrain,
    pub(crate) config: WorldConfig,
    pub(crate) slots: Vec<Slot>,
    free: Vec<u32>,
    pub(crate) tree: DynamicAabbTree,
    /// Live pairs by (low, high) slot index.
    pub(crate) pairs: BTreeSet<(u32, u32)>,
    /// Slots moved or inserted since the last step.
    pub(crate) moved: BTreeSet<u32>,
    /// Edited regions (world units) since the last step: bodies near them re-read the masks.
    pub(crate) edited: Vec<Aabb>,
    pub(crate) events: Vec<WorldEvent>,
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

    pub(crate) fn handle(&self, index: u32) -> BodyHandle {
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
        // Every body whose contacts or cached chunks the change alters lies in its reach.
        self.edited.extend(r.reach);
    }
}
