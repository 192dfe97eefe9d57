//! Bodies the viewers drop, simulated by rapier on the terrain (through `voxterra-rapier`) and
//! streamed back as poses. rapier needs the terrain shared with its collider, while the server
//! owns its own: the simulation runs on a mirror made from the server's voxels and kept equal to
//! them by replaying every edit the server applies (edits are deterministic), so pieces an edit
//! cuts loose come out of the mirror's edit as bodies too.
//!
//! This is the one module of the crate that speaks rapier's types (glam).

use super::wire::{DropShape, POSES, encode_piece};
use rapier3d::prelude::*;
use voxterra::core::nalgebra::Point3;
use voxterra::{Brush, Terrain};
use voxterra_rapier::{RapierTerrain, SharedTerrain, dispatcher};

/// Bodies at most; a drop past it is refused.
pub(crate) const MAX_BODIES: usize = 256;
/// rapier steps a server tick at most (each 1/60 s).
const MAX_SUBSTEPS: u32 = 6;

/// The 12 corners of a unit icosahedron (three.js's `IcosahedronGeometry(1, 0)`), a rock's hull
/// before its scale, so the page draws exactly the shape simulated.
fn icosahedron() -> [[f32; 3]; 12] {
    let t = (1.0 + 5f32.sqrt()) / 2.0;
    let raw = [
        [-1.0, t, 0.0],
        [1.0, t, 0.0],
        [-1.0, -t, 0.0],
        [1.0, -t, 0.0],
        [0.0, -1.0, t],
        [0.0, 1.0, t],
        [0.0, -1.0, -t],
        [0.0, 1.0, -t],
        [t, 0.0, -1.0],
        [t, 0.0, 1.0],
        [-t, 0.0, -1.0],
        [-t, 0.0, 1.0],
    ];
    let n = (1.0 + t * t).sqrt();
    raw.map(|p| p.map(|c| c / n))
}

struct Dropped {
    id: u32,
    shape: u8,
    half: [f32; 3],
    body: RigidBodyHandle,
}

/// The viewers' bodies and the terrain mirror they rest on.
pub(crate) struct Physics {
    world: PhysicsWorld,
    terrain: RapierTerrain,
    bodies: Vec<Dropped>,
    next: u32,
    /// Seconds of simulation owed to the server's clock.
    owed: f32,
    /// Below this height a body has fallen out of the world and is removed.
    floor: f32,
    /// The piece frames of the pieces alive, by body id (sent to every page before their poses).
    pieces: std::collections::BTreeMap<u32, Vec<u8>>,
    /// Piece frames made since the last [`Physics::take_new_pieces`].
    new_pieces: Vec<Vec<u8>>,
}

impl Physics {
    /// A mirror of `terrain`'s voxels with a rapier world on it; `None` for a paged terrain (its
    /// voxels are not all in memory to mirror).
    pub(crate) fn new(terrain: &Terrain) -> Option<Self> {
        if terrain.is_paged() {
            return None;
        }
        let mirror =
            Terrain::from_store(terrain.store().clone(), terrain.materials().clone(), terrain.config())
                .ok()?;
        let floor =
            terrain.extent().map_or(-100.0, |e| terrain.scale().region_to_world(&e, 0.0).mins.y - 50.0);
        let mut world = PhysicsWorld {
            narrow_phase: NarrowPhase::with_query_dispatcher(dispatcher()),
            ..Default::default()
        };
        let ground = RapierTerrain::insert(SharedTerrain::new(mirror), &mut world.colliders);
        Some(Physics {
            world,
            terrain: ground,
            bodies: Vec::new(),
            next: 1,
            owed: 0.0,
            floor,
            pieces: Default::default(),
            new_pieces: Vec::new(),
        })
    }

    /// Drops a body of `shape` at `at` (world units), sized by the voxel.
    pub(crate) fn drop_body(&mut self, at: Point3<f32>, shape: DropShape, voxel: f32) -> Result<(), String> {
        if self.bodies.len() >= MAX_BODIES {
            return Err(format!("at most {MAX_BODIES} bodies"));
        }
        if !at.iter().all(|c| c.is_finite()) {
            return Err("a position that is not finite".into());
        }
        let id = self.next;
        self.next += 1;
        // A little variety, the same for the same id.
        let k = 0.8 + 0.4 * ((id.wrapping_mul(2_654_435_761) >> 16) & 0xff) as f32 / 255.0;
        let (code, half, collider) = match shape {
            DropShape::Ball => {
                let r = voxel * k;
                (0, [r; 3], ColliderBuilder::ball(r))
            }
            DropShape::Box => {
                let h = [0.5 * voxel * k, 0.9 * voxel * k, 0.7 * voxel];
                (1, h, ColliderBuilder::cuboid(h[0], h[1], h[2]))
            }
            DropShape::Rock => {
                let h = [1.2 * voxel * k, 0.8 * voxel, voxel * k];
                let points: Vec<Vector> = icosahedron()
                    .iter()
                    .map(|p| Vector::new(p[0] * h[0], p[1] * h[1], p[2] * h[2]))
                    .collect();
                let Some(hull) = ColliderBuilder::convex_hull(&points) else {
                    return Err("a degenerate rock".into());
                };
                (2, h, hull)
            }
        };
        let body = RigidBodyBuilder::dynamic().translation(Vector::new(at.x, at.y, at.z));
        let (handle, _) = self.world.insert(body, collider.density(1000.0));
        self.bodies.push(Dropped { id, shape: code, half, body: handle });
        Ok(())
    }

    /// Replays an edit the server applied; wakes the bodies on the changed ground; pieces it cut
    /// loose become bodies too, their meshes sent once as piece frames.
    pub(crate) fn edit(&mut self, brush: &Brush) {
        let w = &mut self.world;
        match self.terrain.apply_brush(brush, &mut w.bodies, &mut w.colliders) {
            Ok(edit) => {
                for piece in edit.pieces {
                    let id = self.next;
                    self.next += 1;
                    if self.bodies.len() >= MAX_BODIES {
                        w.remove_body_with_colliders(piece.body, true);
                        continue;
                    }
                    let mut frame = Vec::new();
                    encode_piece(id, &piece.piece.mesh, &mut frame);
                    self.new_pieces.push(frame.clone());
                    self.pieces.insert(id, frame);
                    self.bodies.push(Dropped { id, shape: 3, half: [1.0; 3], body: piece.body });
                }
            }
            Err(e) => log::warn!("the viewers' terrain mirror refused an edit the server applied: {e}"),
        }
    }

    /// Simulates `dt` seconds in steps of 1/60 s (at most a few a tick); removes bodies that fell
    /// out of the world.
    pub(crate) fn step(&mut self, dt: f32) {
        if self.bodies.is_empty() {
            return;
        }
        self.owed = (self.owed + dt).min(MAX_SUBSTEPS as f32 / 60.0);
        while self.owed >= 1.0 / 60.0 {
            self.owed -= 1.0 / 60.0;
            let w = &mut self.world;
            if let Err(e) = self.terrain.prepare(&w.bodies, &w.colliders, &w.integration_parameters) {
                log::warn!("preparing the viewers' bodies: {e}");
            }
            self.world.step();
        }
        let floor = self.floor;
        let (world, bodies, pieces) = (&mut self.world, &mut self.bodies, &mut self.pieces);
        bodies.retain(|d| {
            let gone = world.bodies.get(d.body).is_none_or(|b| b.translation().y < floor);
            if gone {
                world.remove_body_with_colliders(d.body, true);
                pieces.remove(&d.id);
            }
            !gone
        });
    }

    /// The piece frames made since the last call (for the pages already there).
    pub(crate) fn take_new_pieces(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.new_pieces)
    }

    /// The piece frames of every piece alive (for a page that just came).
    pub(crate) fn piece_frames(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.pieces.values()
    }

    /// Bodies awake, bodies in all, and contact pairs touching.
    pub(crate) fn counts(&self) -> (usize, usize, usize) {
        let awake = self
            .bodies
            .iter()
            .filter(|d| self.world.bodies.get(d.body).is_some_and(|b| !b.is_sleeping()))
            .count();
        let contacts = self.world.narrow_phase.contact_pairs().filter(|p| p.has_any_active_contact()).count();
        (awake, self.bodies.len(), contacts)
    }

    /// The poses frame (see [`super::wire`]).
    pub(crate) fn poses(&self) -> Vec<u8> {
        let mut out = vec![POSES, 0, 0, 0];
        out.extend_from_slice(&(self.bodies.len() as u32).to_le_bytes());
        for d in &self.bodies {
            let Some(b) = self.world.bodies.get(d.body) else { continue };
            let (p, r) = (b.translation(), b.rotation());
            out.extend_from_slice(&d.id.to_le_bytes());
            out.extend_from_slice(&[d.shape, 0, 0, 0]);
            for c in d.half.iter().chain(&[p.x, p.y, p.z]).chain(&[r.x, r.y, r.z, r.w]) {
                out.extend_from_slice(&c.to_le_bytes());
            }
        }
        out
    }
}
