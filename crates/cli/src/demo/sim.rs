//! The simulation: the scene's terrain and bodies in rapier (on voxterra's collider, the
//! per-chunk TriMesh baseline or the voxels baseline), stepped at 60 Hz with craters dug and hills raised under the
//! bodies, the character walking the course, each frame timed and measured.

use crate::demo::report::{Baseline, DemoArgs, RunReport, View, spread};
use crate::demo::scene::{self, Course, Fnv, Overhang, Plaza, Rng};
use crate::demo::timed::Timed;
use anyhow::Context;
use rapier3d::control::KinematicCharacterController;
use rapier3d::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use voxterra::convert::{FromParry, ToParry};
use voxterra::core::VoxelRead;
use voxterra::core::nalgebra::Vector3;
use voxterra::mesher::Mesher;
use voxterra::worldgen::GenParams;
use voxterra::{Brush, Terrain};
use voxterra::{DetachConfig, TerrainConfig};
use voxterra_rapier::{CharacterController, RapierTerrain, SharedTerrain, dispatcher, spawn_piece};

/// The terrain collider of a run.
pub(crate) enum Ground {
    Voxterra(RapierTerrain),
    Trimesh {
        terrain: Box<Terrain>,
        mesher: Mesher,
        colliders: BTreeMap<voxterra::core::StoreChunkKey, (ColliderHandle, usize)>,
    },
    Voxels {
        terrain: Box<Terrain>,
        collider: ColliderHandle,
    },
}

impl Ground {
    /// Reads the terrain (the voxels are the same in both runs; the baseline keeps its own copy).
    pub(crate) fn with_terrain<R>(&self, f: impl FnOnce(&Terrain) -> R) -> R {
        match self {
            Ground::Voxterra(g) => f(&g.terrain().read()),
            Ground::Trimesh { terrain, .. } | Ground::Voxels { terrain, .. } => f(terrain),
        }
    }

    pub(crate) fn is_terrain(&self, h: ColliderHandle) -> bool {
        match self {
            Ground::Voxterra(g) => h == g.collider(),
            Ground::Trimesh { colliders, .. } => colliders.values().any(|c| c.0 == h),
            Ground::Voxels { collider, .. } => h == *collider,
        }
    }

    pub(crate) fn bytes(&self, colliders: &ColliderSet) -> usize {
        match self {
            Ground::Voxterra(g) => {
                let t = g.terrain().read();
                let cache = t.cache_stats();
                cache.bytes + cache.ray_tree_bytes + t.masks().stats().total_bytes()
            }
            Ground::Trimesh { colliders, .. } => colliders.values().map(|c| c.1).sum(),
            Ground::Voxels { collider, .. } => {
                colliders[*collider].shape().as_voxels().map_or(0, |v| v.total_memory_size())
            }
        }
    }
}

/// Whether `v` is solid to the voxels baseline: a solid material at an occupancy byte of 128 or
/// more (the mesher's inside).
fn voxel_solid(table: &voxterra::core::MaterialTable, v: voxterra::core::Voxel) -> bool {
    table.is_solid(v) && v.occupancy_byte() >= 128
}

/// The voxels baseline's collider: a cube of the voxel size per solid voxel of `terrain`.
pub(crate) fn voxels_collider(terrain: &Terrain) -> Collider {
    let mut keys = Vec::new();
    if let Some(extent) = terrain.extent() {
        let table = terrain.materials();
        terrain.store().visit_rows(&extent, &mut |start, row| {
            for (i, v) in row.iter().enumerate() {
                if voxel_solid(table, *v) {
                    keys.push(IVector::new(start.x + i as i32, start.y, start.z));
                }
            }
        });
    }
    ColliderBuilder::voxels(Vector::splat(terrain.config().voxel_size), &keys).build()
}

/// Brings the voxels baseline's collider up to date over `dirty` after an edit: each voxel set
/// or cleared in place.
fn update_voxels(terrain: &Terrain, dirty: &voxterra::core::Region, collider: &mut Collider) {
    let table = terrain.materials();
    let Some(voxels) = collider.shape_mut().as_voxels_mut() else { return };
    terrain.store().visit_rows(dirty, &mut |start, row| {
        for (i, v) in row.iter().enumerate() {
            voxels.set_voxel(IVector::new(start.x + i as i32, start.y, start.z), voxel_solid(table, *v));
        }
    });
}

/// A TriMesh collider for one chunk's render mesh, with its memory; `None` for an empty mesh.
pub(crate) fn chunk_collider(
    mesh: &voxterra::mesher::RenderMesh,
) -> anyhow::Result<Option<(Collider, usize)>> {
    if mesh.indices.is_empty() {
        return Ok(None);
    }
    let positions = mesh.positions.iter().map(|p| p.to_parry()).collect();
    let shape = TriMesh::with_flags(positions, mesh.indices.clone(), TriMeshFlags::FIX_INTERNAL_EDGES)
        .context("building a TriMesh")?;
    let bytes = shape.total_memory_size();
    Ok(Some((ColliderBuilder::new(SharedShape::new(shape)).build(), bytes)))
}

/// The scene's starting terrain: the generated world with its plaza leveled, the character's
/// course built beside it and the overhang on the other side; edits then detach what they cut
/// loose.
pub(crate) fn scene_terrain(args: &DemoArgs) -> anyhow::Result<(Terrain, Plaza, Course, Overhang)> {
    let mut t = match &args.db {
        Some(path) => crate::db_cmd::open_read_terrain(path, TerrainConfig::default())?,
        None => Terrain::generate(&GenParams::new(args.seed, args.size), TerrainConfig::default())
            .context("generating the world")?,
    };
    let plaza = scene::build_plaza(&mut t, args.size)?;
    let course = scene::build_course(&mut t, &plaza)?;
    let overhang = scene::build_overhang(&mut t, &plaza)?;
    t.reconfigure(TerrainConfig { detach: Some(DetachConfig::default()), ..t.config() })?;
    Ok((t, plaza, course, overhang))
}

/// A character walking the course at 4 m/s under gravity, as a game drives rapier's kinematic
/// controller: falling while not grounded, no vertical speed while grounded.
pub(crate) struct Walker {
    pub(crate) body: RigidBodyHandle,
    pub(crate) shape: SharedShape,
    pub(crate) pose: Pose,
    pub(crate) fall: f32,
    pub(crate) next: usize,
    pub(crate) steps: usize,
    pub(crate) grounded: usize,
    /// Steps that moved less than a tenth of the asked horizontal distance.
    pub(crate) stuck: usize,
}

impl Walker {
    pub(crate) const SPEED: f32 = 4.0;

    pub(crate) fn new(course: &Course, bodies: &mut RigidBodySet, colliders: &mut ColliderSet) -> Self {
        let shape = SharedShape::capsule_y(scene::CHARACTER.1, scene::CHARACTER.0);
        let body = bodies.insert(RigidBodyBuilder::kinematic_position_based().translation(course.start));
        colliders.insert_with_parent(ColliderBuilder::new(shape.clone()), body, bodies);
        let pose = Pose::from_translation(course.start);
        Walker { body, shape, pose, fall: 0.0, next: 0, steps: 0, grounded: 0, stuck: 0 }
    }

    /// One step toward the next waypoint; voxterra's side through [`CharacterController`].
    pub(crate) fn step(
        &mut self,
        course: &Course,
        queries: &QueryPipeline<'_>,
        ours: bool,
        dt: f32,
    ) -> Vector {
        let toward = |(x, z): (f32, f32), p: Vector| Vector::new(x - p.x, 0.0, z - p.z);
        if toward(course.route[self.next], self.pose.translation).length() < 0.25 {
            self.next = (self.next + 1) % course.route.len();
        }
        let to = toward(course.route[self.next], self.pose.translation);
        let ahead = to.normalize_or_zero() * Self::SPEED * dt;
        let desired = ahead - Vector::Y * self.fall * dt;
        let controller = CharacterController::new(KinematicCharacterController::default());
        let moved = if ours {
            controller.move_shape(dt, queries, &*self.shape, &self.pose, desired, |_| {})
        } else {
            controller.controller.move_shape(dt, queries, &*self.shape, &self.pose, desired, |_| {})
        };
        self.pose.translation += moved.translation;
        self.fall = if moved.grounded { 0.0 } else { self.fall + 9.81 * dt };
        self.steps += 1;
        self.grounded += usize::from(moved.grounded);
        let horizontal = Vector::new(moved.translation.x, 0.0, moved.translation.z).length();
        self.stuck += usize::from(horizontal < 0.1 * ahead.length());
        self.pose.translation
    }
}

/// Frames at the end without edits, before the bodies are checked.
pub(crate) const SETTLE_FRAMES: usize = 60;

/// What a run leaves for the picture: the terrain and the bodies' shapes and poses.
pub(crate) struct Final {
    pub(crate) terrain: Terrain,
    pub(crate) bodies: Vec<(SharedShape, Pose)>,
    /// Where the picture looks: the bodies of the last crater, or the overhang.
    pub(crate) focus: Vector3<f32>,
}

/// Runs the scene once on `baseline` (or on voxterra when `None`).
pub(crate) fn simulate(
    args: &DemoArgs,
    baseline: Option<Baseline>,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<(RunReport, Final)> {
    let run_start = Instant::now();
    bar.set_message("setting up the world and the bodies");
    let refused_before = voxterra_rapier::refused_queries();
    let (mut terrain, plaza, course, overhang) = scene_terrain(args)?;
    let table = terrain.materials().clone();
    let mut rng = Rng::new(args.seed);
    let specs = scene::bodies(&mut terrain, args.size, &plaza, args.bodies as usize, &mut rng)?;
    let (mut bodies, mut colliders) = (RigidBodySet::new(), ColliderSet::new());
    let (mut islands, mut broad_phase) = (IslandManager::new(), DefaultBroadPhase::new());
    let mut soft_bodies = SoftBodySet::new();
    let contact_nanos = Arc::new(AtomicU64::new(0));
    let (ground, mut narrow_phase) = match baseline {
        None => {
            let g = RapierTerrain::insert(SharedTerrain::new(terrain), &mut colliders);
            let np = NarrowPhase::with_query_dispatcher(Timed {
                inner: dispatcher(),
                nanos: contact_nanos.clone(),
            });
            (Ground::Voxterra(g), np)
        }
        Some(Baseline::Trimesh) => {
            // What users do today to avoid the fall-through: every chunk's TriMesh, up front.
            let mesher = Mesher::new(terrain.materials());
            let keys = terrain.render_chunks();
            let meshes = terrain.render_meshes_of(&mesher, &keys).context("meshing the world")?;
            let mut map = BTreeMap::new();
            for (k, mesh) in meshes {
                if let Some((c, bytes)) = chunk_collider(&mesh)? {
                    map.insert(k, (colliders.insert(c), bytes));
                }
            }
            let np = NarrowPhase::with_query_dispatcher(Timed {
                inner: rapier3d::parry::query::DefaultQueryDispatcher,
                nanos: contact_nanos.clone(),
            });
            (Ground::Trimesh { terrain: Box::new(terrain), mesher, colliders: map }, np)
        }
        Some(Baseline::Voxels) => {
            let collider = colliders.insert(voxels_collider(&terrain));
            let np = NarrowPhase::with_query_dispatcher(Timed {
                inner: rapier3d::parry::query::DefaultQueryDispatcher,
                nanos: contact_nanos.clone(),
            });
            (Ground::Voxels { terrain: Box::new(terrain), collider }, np)
        }
    };
    let mut handles = Vec::with_capacity(specs.len());
    for s in &specs {
        let rb = RigidBodyBuilder::dynamic()
            .translation(s.position)
            .rotation(s.rotation)
            .linvel(s.velocity)
            .ccd_enabled(false);
        let h = bodies.insert(rb);
        colliders.insert_with_parent(ColliderBuilder::new(s.shape.clone()).friction(0.4), h, &mut bodies);
        handles.push(h);
    }
    let mut walker = Walker::new(&course, &mut bodies, &mut colliders);
    let setup_ms = run_start.elapsed().as_secs_f64() * 1e3;
    bar.set_message("");

    let mut pipeline = PhysicsPipeline::new();
    let (mut joints, mut multibody, mut ccd) =
        (ImpulseJointSet::new(), MultibodyJointSet::new(), CCDSolver::new());
    let params = IntegrationParameters::default();
    let gravity = Vector::new(0.0, -9.81, 0.0);
    let n = args.frames as usize;
    let (mut frame_ms, mut step_ms, mut contact_ms, mut edit_ms, mut build_ms) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let mut worst_stall: f64 = 0.0;
    let mut contacts_total = 0usize;
    let (mut ghost_bumps, mut flat_contacts) = (0usize, 0usize);
    let mut fallen = vec![false; handles.len()];
    let mut pieces: Vec<RigidBodyHandle> = Vec::new();
    let mut piece_fallen: Vec<bool> = Vec::new();
    // Each piece's box of centres over the last second.
    let mut piece_span: Vec<Option<(Vector, Vector)>> = Vec::new();
    let last_second = n.saturating_sub((1.0 / params.dt).round() as usize);
    let mut ground = ground;
    let flat = (5.0f32).to_radians().cos();
    for frame in 0..n {
        // Edits.
        let positions: Vec<(usize, Vector)> =
            handles.iter().zip(&specs).map(|(&h, s)| (s.group, bodies[h].translation())).collect();
        // The last second has no edits: the bodies settle, and are then checked.
        let mut brushes: Vec<Brush> = if frame + SETTLE_FRAMES < n {
            ground.with_terrain(|t| scene::edits(frame, t, &positions, &plaza, args.size, &mut rng))
        } else {
            Vec::new()
        };
        if frame == scene::MOUND_FRAME {
            brushes.push(course.mound);
        }
        if frame == scene::OVERHANG_FRAME {
            brushes.push(overhang.cut);
        }
        let start = Instant::now();
        for b in &brushes {
            match &mut ground {
                Ground::Voxterra(g) => {
                    let edit = g.apply_brush(b, &mut bodies, &mut colliders)?;
                    pieces.extend(edit.pieces.iter().map(|p| p.body));
                }
                Ground::Trimesh { terrain, mesher, colliders: map } => {
                    terrain.apply_brush(b)?;
                    for piece in terrain.take_detached() {
                        pieces.push(
                            spawn_piece(piece, &table, Pose::IDENTITY, &mut bodies, &mut colliders).body,
                        );
                    }
                    for (k, mesh) in terrain.take_render_updates(mesher)? {
                        let key = k;
                        if let Some((old, _)) = map.remove(&key) {
                            colliders.remove(old, &mut islands, &mut bodies, &mut soft_bodies, true);
                        }
                        if let Some((c, bytes)) = chunk_collider(&mesh)? {
                            map.insert(key, (colliders.insert(c), bytes));
                        }
                    }
                }
                Ground::Voxels { terrain, collider } => {
                    let edit = terrain.apply_brush(b)?;
                    for piece in terrain.take_detached() {
                        pieces.push(
                            spawn_piece(piece, &table, Pose::IDENTITY, &mut bodies, &mut colliders).body,
                        );
                    }
                    if let Some(d) = edit.dirty {
                        update_voxels(terrain, &d, &mut colliders[*collider]);
                    }
                }
            }
        }
        let edits = start.elapsed().as_secs_f64() * 1e3;
        // Readiness: collision data around every awake body.
        let start = Instant::now();
        if let Ground::Voxterra(g) = &ground {
            g.prepare(&bodies, &colliders, &params)?;
        }
        let builds = start.elapsed().as_secs_f64() * 1e3;
        // The character moves, then the world steps.
        let filter = QueryFilter::default().exclude_rigid_body(walker.body);
        let queries =
            broad_phase.as_query_pipeline(narrow_phase.query_dispatcher(), &bodies, &colliders, filter);
        let to = walker.step(&course, &queries, baseline.is_none(), params.dt);
        bodies[walker.body].set_next_kinematic_translation(to);
        // The step.
        let before = contact_nanos.load(Ordering::Relaxed);
        let start = Instant::now();
        pipeline.step(
            gravity,
            &params,
            &mut islands,
            &mut broad_phase,
            &mut narrow_phase,
            &mut bodies,
            &mut colliders,
            &mut joints,
            &mut multibody,
            &mut soft_bodies,
            &mut ccd,
            &(),
            &(),
        );
        let step = start.elapsed().as_secs_f64() * 1e3;
        let contacts = (contact_nanos.load(Ordering::Relaxed) - before) as f64 * 1e-6;
        if !brushes.is_empty() {
            worst_stall = worst_stall.max(edits + builds);
        }
        frame_ms.push(edits + builds + step);
        step_ms.push(step - contacts);
        contact_ms.push(contacts);
        edit_ms.push(edits);
        build_ms.push(builds);

        // Contacts with the terrain, and ghost bumps on the plaza.
        for pair in narrow_phase.contact_pairs() {
            let (t1, t2) = (ground.is_terrain(pair.collider1), ground.is_terrain(pair.collider2));
            if t1 == t2 {
                continue;
            }
            // What the solver sees: rapier 0.36 merges manifolds of one normal into clusters.
            for m in pair.solver_manifolds() {
                contacts_total += m.data.solver_contacts.len();
                let normal = if t1 { m.data.normal } else { -m.data.normal };
                for c in &m.data.solver_contacts {
                    // The terrain has no body: its side's anchor is in world space.
                    let point = if t1 { c.anchor1 } else { c.anchor2 };
                    if plaza.contains(point.x, point.z, 3.0) && (point.y - plaza.height).abs() < 0.3 {
                        flat_contacts += 1;
                        ghost_bumps += usize::from(normal.y < flat);
                    }
                }
            }
        }
        // Under the world at any time, or under the surface at the end.
        ground.with_terrain(|t| {
            for (i, &h) in handles.iter().enumerate() {
                let p = bodies[h].translation();
                fallen[i] |= p.y < -2.0;
                if frame + 1 == n {
                    let radius =
                        colliders[bodies[h].colliders()[0]].shape().compute_local_bounding_sphere().radius;
                    fallen[i] |= scene::under_surface(t, p, radius);
                }
            }
            piece_fallen.resize(pieces.len(), false);
            piece_span.resize(pieces.len(), None);
            if frame >= last_second {
                for (span, &h) in piece_span.iter_mut().zip(&pieces) {
                    let p = bodies[h].translation();
                    *span = Some(span.map_or((p, p), |(lo, hi)| (lo.min(p), hi.max(p))));
                }
            }
            for (fell, &h) in piece_fallen.iter_mut().zip(&pieces) {
                let p = bodies[h].translation();
                let radius =
                    colliders[bodies[h].colliders()[0]].shape().compute_local_bounding_sphere().radius;
                *fell |= p.y < -2.0 || scene::under_surface(t, p, radius);
            }
        });
        bar.inc(1);
    }

    let at_rest =
        handles.iter().filter(|&&h| bodies[h].is_sleeping() || bodies[h].linvel().length() < 0.1).count();
    let mut hash = Fnv::new();
    let pieces_at_rest = pieces
        .iter()
        .zip(&piece_span)
        .filter(|&(&h, span)| {
            bodies[h].is_sleeping() || span.is_some_and(|(lo, hi)| (hi - lo).max_element() < 1.0)
        })
        .count();
    for &h in handles.iter().chain([&walker.body]).chain(&pieces) {
        let b = &bodies[h];
        let (p, r) = (b.translation(), b.rotation());
        for v in [p.x, p.y, p.z, r.x, r.y, r.z, r.w] {
            hash.bytes(&v.to_bits().to_le_bytes());
        }
    }
    ground.with_terrain(|t| scene::hash_voxels(t, &mut hash))?;
    let bytes = ground.bytes(&colliders);
    let total: f64 = frame_ms.iter().sum();
    let terrain_part: f64 =
        contact_ms.iter().sum::<f64>() + edit_ms.iter().sum::<f64>() + build_ms.iter().sum::<f64>();
    let report = RunReport {
        collider: match baseline {
            None => "voxterra",
            Some(Baseline::Trimesh) => "trimesh per chunk",
            Some(Baseline::Voxels) => "parry voxels",
        },
        frame_ms: spread(&frame_ms),
        rapier_step_ms: spread(&step_ms),
        terrain_contacts_ms: spread(&contact_ms),
        edits_ms: spread(&edit_ms),
        cache_builds_ms: spread(&build_ms),
        terrain_share: terrain_part / total.max(1e-9),
        worst_edit_stall_ms: worst_stall,
        contacts_per_frame: contacts_total as f64 / n as f64,
        terrain_collision_bytes: bytes,
        bodies_at_rest: at_rest,
        detached_pieces: pieces.len(),
        pieces_at_rest,
        pieces_fell_through: piece_fallen.iter().filter(|&&f| f).count(),
        character_grounded: walker.grounded as f64 / walker.steps.max(1) as f64,
        character_stuck_steps: walker.stuck,
        refused_queries: if baseline.is_none() {
            voxterra_rapier::refused_queries() - refused_before
        } else {
            0
        },
        fell_through: fallen.iter().filter(|&&f| f).count(),
        ghost_bumps,
        flat_contacts,
        setup_ms,
        total_seconds: run_start.elapsed().as_secs_f64(),
        state_hash: format!("{:016x}", hash.finish()),
    };
    // The last crater's group: the edit schedule digs under group 1 + (k - 1) mod (groups - 1).
    let groups = specs.iter().map(|s| s.group).max().unwrap_or(0);
    let craters = n.saturating_sub(1) / 30;
    let group = if groups >= 1 && craters >= 1 { 1 + (craters - 1) % groups } else { 0 };
    let members: Vec<Vector3<f32>> = handles
        .iter()
        .zip(&specs)
        .filter(|(_, s)| s.group == group)
        .map(|(&h, _)| Vector3::from_parry(bodies[h].translation()))
        .collect();
    let focus = match args.view {
        View::Crater => members.iter().sum::<Vector3<f32>>() / members.len().max(1) as f32,
        View::Overhang => overhang.focus,
    };
    let shapes: Vec<(SharedShape, Pose)> = handles
        .iter()
        .chain(&pieces)
        .map(|&h| {
            let b = &bodies[h];
            (colliders[b.colliders()[0]].shared_shape().clone(), *b.position())
        })
        .collect();
    // The terrain back: the shape's clone goes with the colliders and the narrow phase.
    drop((colliders, narrow_phase, broad_phase, islands));
    let terrain = match ground {
        Ground::Voxterra(g) => {
            let shared = g.terrain().clone();
            drop(g);
            shared.try_into_inner().map_err(|_| anyhow::anyhow!("the terrain is still shared"))?
        }
        Ground::Trimesh { terrain, .. } | Ground::Voxels { terrain, .. } => *terrain,
    };
    Ok((report, Final { terrain, bodies: shapes, focus }))
}
