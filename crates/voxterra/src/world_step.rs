//! [`World::step`] and its phases: move the moved bodies' boxes, update the pairs, update the
//! terrain contacts, make them ready.

use crate::world::{Body, World, WorldError, WorldEvent};
use std::collections::BTreeSet;
use std::time::Instant;
use voxterra_bit_broadphase::{ContactEvent, ContactKind};
use voxterra_core::nalgebra::Vector3;
use voxterra_core::{Aabb, Broadphase, PhysicsChunkKey, ProxyId, ProxyMove};
use voxterra_dynamic_aabb_tree::DynamicAabbTree;
use voxterra_narrowphase::convert::FromParry;

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
    pub build_time: std::time::Duration,
    /// The whole step.
    pub elapsed: std::time::Duration,
}

impl World {
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
        let boxes = self.move_boxes(dt)?;
        if self.terrain.is_paged() {
            // Every body's chunks in memory before its contacts are read (a resting body's too:
            // what this step needs is what eviction spares).
            let grow = self.config.lookahead;
            let around: Vec<Aabb> = (self.slots.iter().filter_map(|s| s.body.as_ref()?.aabb))
                .chain(boxes.iter().map(|b| b.1))
                .map(|b| b.loosened(grow))
                .collect();
            self.terrain.page_in(&around)?;
        }
        self.update_pairs(&boxes);
        let terrain_updated = self.update_terrain_contacts(&boxes)?;
        let before = self.terrain.cache_stats();
        let (chunks_built, chunks_ahead) = self.make_ready(&boxes);
        let after = self.terrain.cache_stats();
        Ok(StepReport {
            moved: boxes.len(),
            terrain_updated,
            events: self.events.len() - events_before,
            pairs: self.pairs.len(),
            chunks_built,
            chunks_ahead,
            build_time: after.build_time.saturating_sub(before.build_time),
            elapsed: start.elapsed(),
        })
    }

    /// The box a body is tracked with over a step of `dt`: the shape at its pose, swept by its
    /// velocity, grown by the prediction distance.
    fn step_box(&self, body: &Body, dt: f32) -> Aabb {
        let d = &body.desc;
        let b = Aabb::from_parry(&d.shape.compute_aabb(&d.pose));
        let motion = d.velocity.map_or(Vector3::zeros(), |v| Vector3::from_parry(v * dt));
        b.swept(&motion).loosened(self.config.prediction)
    }

    /// Phase 1: the moved bodies' new boxes, in slot order, moved in the tree in one batch. On a
    /// refused box nothing has changed, and the moves wait for the next step.
    fn move_boxes(&mut self, dt: f32) -> Result<Vec<(u32, Aabb)>, WorldError> {
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
            self.moved.extend(moved);
            return Err(e.into());
        }
        Ok(boxes)
    }

    /// Phase 2: the pairs. The tree reports every overlapping pair with a moved member; pairs of
    /// moved bodies it no longer reports stopped. Events in (low, high) order.
    fn update_pairs(&mut self, boxes: &[(u32, Aabb)]) {
        let mut reported = Vec::new();
        self.tree.update_pairs_parallel(&mut |a, b| reported.push((a.0, b.0)));
        let slot = |tree: &DynamicAabbTree, p: u32| tree.user_data(ProxyId(p)).map(|u| u as u32);
        let now: BTreeSet<(u32, u32)> = reported
            .into_iter()
            .filter_map(|(a, b)| Some((slot(&self.tree, a)?, slot(&self.tree, b)?)))
            .map(|(a, b)| (a.min(b), a.max(b)))
            .collect();
        let moved: BTreeSet<u32> = boxes.iter().map(|b| b.0).collect();
        let stopped: Vec<(u32, u32)> = self
            .pairs
            .iter()
            .copied()
            .filter(|p| (moved.contains(&p.0) || moved.contains(&p.1)) && !now.contains(p))
            .collect();
        let mut changes: Vec<(u32, u32, bool)> = Vec::new();
        for p in stopped {
            self.pairs.remove(&p);
            changes.push((p.0, p.1, false));
        }
        for p in now {
            if self.pairs.insert(p) {
                changes.push((p.0, p.1, true));
            }
        }
        changes.sort_unstable();
        for (a, b, started) in changes {
            let (a, b) = (self.handle(a), self.handle(b));
            self.events.push(if started {
                WorldEvent::PairStarted(a, b)
            } else {
                WorldEvent::PairStopped(a, b)
            });
        }
    }

    /// Phase 3: terrain contacts. Moved bodies sweep their old box to the new one; bodies near an
    /// edit re-read the masks in place. Returns how many bodies were updated.
    fn update_terrain_contacts(&mut self, boxes: &[(u32, Aabb)]) -> Result<usize, WorldError> {
        let edited = std::mem::take(&mut self.edited);
        let mut updates: Vec<(u32, Aabb, Aabb)> = Vec::new();
        let mut moved = boxes.iter().peekable();
        for (i, slot) in self.slots.iter().enumerate() {
            let Some(body) = slot.body.as_ref() else { continue };
            let i = i as u32;
            if let Some(&&(_, new)) = moved.peek().filter(|b| b.0 == i) {
                moved.next();
                updates.push((i, body.aabb.unwrap_or(new), new));
            } else if let Some(cur) = body.aabb
                && edited.iter().any(|e| e.intersects(&cur))
            {
                updates.push((i, cur, cur));
            }
        }
        let vs = self.terrain.voxel_size();
        let mut events = Vec::new();
        for &(i, old, new) in &updates {
            let h = self.handle(i);
            let body = self.slots[i as usize].body.as_mut().ok_or(WorldError::UnknownBody(h))?;
            self.terrain.masks().update_contacts(
                &mut body.terrain,
                &old.loosened(vs),
                &new.loosened(vs),
                |e| {
                    events.push(match e {
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
        self.events.extend(events);
        Ok(updates.len())
    }

    /// Phase 4: readiness. The chunk of every live solid contact is built; then, within the
    /// lookahead budget, the chunks around moving bodies. Returns (required, ahead) chunks built.
    fn make_ready(&self, boxes: &[(u32, Aabb)]) -> (usize, usize) {
        let solid: Vec<PhysicsChunkKey> = self
            .slots
            .iter()
            .filter_map(|s| s.body.as_ref())
            .flat_map(|b| b.terrain.contacts())
            .filter(|c| c.kind == ContactKind::Solid)
            .map(|c| c.chunk)
            .collect();
        let required = self.terrain.prepare_chunks(solid);
        let c = &self.config;
        let ahead = if c.lookahead > 0.0 && c.lookahead_chunks > 0 && !boxes.is_empty() {
            let around: Vec<Aabb> = boxes.iter().map(|b| b.1.loosened(c.lookahead)).collect();
            let budget = crate::PrepareBudget::new(c.lookahead_chunks, c.lookahead_time);
            self.terrain.prepare(&around, budget).built
        } else {
            0
        };
        (required, ahead)
    }
}
