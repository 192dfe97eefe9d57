//! The owner's side of the viewers: a [`LodView`] per page, moved with its camera each tick, its
//! meshes sent nearest first as binary frames, re-made where edits land, and its statistics.

use super::physics::Physics;
use super::wire::{
    DropShape, LIQUID, ViewHello, ViewMaterial, ViewStats, ViewText, encode_drop, encode_mesh,
};
use crate::config::ViewConfig;
use crate::hosted::{Hosted, edit};
use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use voxterra::core::nalgebra::{Point3, Vector3};
use voxterra::core::{Aabb, MaterialKind, Region};
use voxterra::lod::LodUpdate;
use voxterra::lod::{LodMeshKey, LodView};
use voxterra::mesher::{Mesher, Surface};
use voxterra::{Brush, Terrain};

/// What a viewer's connection asks of the owner.
pub(crate) enum ViewCmd {
    Join { reply: oneshot::Sender<(u64, String)>, frames: mpsc::Sender<ViewOut> },
    Camera { id: u64, at: Point3<f32> },
    Edit { id: u64, brush: Brush },
    Drop { id: u64, at: Point3<f32>, shape: DropShape },
    Refused { id: u64, why: String },
    Leave { id: u64 },
}

/// A message for a viewer's page.
#[derive(Debug)]
pub(crate) enum ViewOut {
    Binary(Vec<u8>),
    Text(String),
}

impl ViewOut {
    fn len(&self) -> usize {
        match self {
            ViewOut::Binary(b) => b.len(),
            ViewOut::Text(t) => t.len(),
        }
    }
}

/// A page the owner serves.
struct Viewer {
    lod: LodView,
    camera: Option<Point3<f32>>,
    frames: mpsc::Sender<ViewOut>,
    /// Frames made but not yet queued (the queue was full or the tick's bytes spent), in order.
    pending: VecDeque<ViewOut>,
    /// Bytes queued since `since`, for the rate the overlay shows.
    sent: usize,
    since: Instant,
    last_edit: Option<Result<(), String>>,
    last_drop: Option<Result<(), String>>,
    /// The water's levels of detail, beside the ground's.
    water: LodView,
    /// Triangles of each ground mesh drawn, by key, for the overlay.
    drawn: BTreeMap<LodMeshKey, usize>,
}

/// Frames a viewer may have waiting before it is dropped as too far behind.
const PENDING_MAX: usize = 512 << 20;
/// How often the overlay's figures go out.
const STATS_EVERY: Duration = Duration::from_millis(500);

/// Every viewer of one server.
pub(crate) struct Views {
    config: ViewConfig,
    mesher: Mesher,
    /// Meshes the water surface.
    water: Mesher,
    hello: String,
    viewers: BTreeMap<u64, Viewer>,
    next: u64,
    /// The dropped bodies; `None` on a paged terrain.
    physics: Option<Physics>,
    stepped: Instant,
    /// The longest tick since the figures last went out.
    worst_tick: Duration,
    /// Bodies were sent last tick (so an empty list goes out once when the last one leaves).
    had_bodies: bool,
    voxel: f32,
}

impl Views {
    pub(crate) fn new(config: ViewConfig, terrain: &Terrain, max_brush: f32) -> Self {
        let materials = terrain
            .materials()
            .iter()
            .map(|(m, info)| ViewMaterial {
                id: m.id(),
                name: info.name.clone(),
                color: info.color,
                liquid: info.kind == MaterialKind::Liquid,
            })
            .collect();
        let scale = terrain.scale();
        let world = terrain.extent().map(|e| {
            let b = scale.region_to_world(&e, 0.0);
            [b.mins.into(), b.maxs.into()]
        });
        let hello = ViewHello { voxel_size: terrain.voxel_size(), world, materials, max_brush };
        let hello = serde_json::to_string(&ViewText::Hello(hello)).expect("the hello serializes");
        Views {
            config,
            mesher: Mesher::new(terrain.materials()),
            water: Mesher::new(terrain.materials()).with_surface(Surface::Liquid),
            hello,
            viewers: BTreeMap::new(),
            next: 1,
            physics: Physics::new(terrain),
            stepped: Instant::now(),
            worst_tick: Duration::ZERO,
            had_bodies: false,
            voxel: terrain.voxel_size(),
        }
    }

    pub(crate) fn handle(&mut self, cmd: ViewCmd, host: &mut Hosted, world: Option<&Aabb>, max_brush: f32) {
        match cmd {
            ViewCmd::Join { reply, frames } => {
                let (Ok(lod), Ok(water)) =
                    (LodView::new(self.config.lod.clone()), LodView::new(self.config.lod.clone()))
                else {
                    return;
                };
                let id = self.next;
                self.next += 1;
                let now = Instant::now();
                self.viewers.insert(
                    id,
                    Viewer {
                        lod,
                        camera: None,
                        frames,
                        pending: VecDeque::new(),
                        sent: 0,
                        since: now,
                        last_edit: None,
                        last_drop: None,
                        water,
                        drawn: BTreeMap::new(),
                    },
                );
                if let (Some(p), Some(v)) = (self.physics.as_ref(), self.viewers.get_mut(&id)) {
                    v.pending.extend(p.piece_frames().cloned().map(ViewOut::Binary));
                }
                let _ = reply.send((id, self.hello.clone()));
            }
            ViewCmd::Camera { id, at } => {
                if let Some(v) = self.viewers.get_mut(&id) {
                    v.camera = Some(at);
                }
            }
            ViewCmd::Edit { id, brush } => {
                let result = edit(host, world, max_brush, &brush);
                if result.is_ok() && host.is_durable() && !host.flush() {
                    log::error!("a viewer's edit was applied but not committed");
                }
                if let Some(v) = self.viewers.get_mut(&id) {
                    v.last_edit = Some(result.as_ref().map(drop).map_err(|e| format!("{e:?}")));
                }
                if let Ok((_, Some(dirty))) = result {
                    self.edited(&dirty, &brush);
                }
            }
            ViewCmd::Drop { id, at, shape } => {
                let r = match self.physics.as_mut() {
                    Some(p) => p.drop_body(at, shape, self.voxel),
                    None => Err("bodies need the terrain in memory (this one is paged)".into()),
                };
                if let Some(v) = self.viewers.get_mut(&id) {
                    v.last_drop = Some(r);
                }
            }
            ViewCmd::Refused { id, why } => {
                if let Some(v) = self.viewers.get_mut(&id) {
                    v.last_edit = Some(Err(why));
                }
            }
            ViewCmd::Leave { id } => {
                self.viewers.remove(&id);
            }
        }
    }

    /// Marks voxels an edit by anyone changed (`dirty`, by `brush`), for every view to re-mesh
    /// and the bodies' terrain to follow.
    pub(crate) fn edited(&mut self, dirty: &Region, brush: &Brush) {
        for v in self.viewers.values_mut() {
            v.lod.mark_edited(dirty);
            v.water.mark_edited(dirty);
        }
        if let Some(p) = self.physics.as_mut() {
            p.edit(brush);
            let fresh = p.take_new_pieces();
            for v in self.viewers.values_mut() {
                v.pending.extend(fresh.iter().cloned().map(ViewOut::Binary));
            }
        }
    }

    /// Moves each view to its camera, queues its new meshes nearest first and its drops, and
    /// sends what fits; the overlay's figures twice a second. `tick` is the server's last tick.
    pub(crate) fn tick(&mut self, terrain: &Terrain, tick: Duration) {
        self.worst_tick = self.worst_tick.max(tick);
        let mut figures_sent = false;
        let scale = terrain.scale();
        let mut gone = Vec::new();
        let dt = std::mem::replace(&mut self.stepped, Instant::now()).elapsed().as_secs_f32();
        let (mut poses, mut counts) = (None, (0, 0, 0));
        if let Some(p) = self.physics.as_mut() {
            p.step(dt);
            counts = p.counts();
            if counts.1 > 0 || self.had_bodies {
                poses = Some(p.poses());
            }
            self.had_bodies = counts.1 > 0;
        }
        for (&id, v) in self.viewers.iter_mut() {
            if let Some(camera) = v.camera {
                let eye = scale.point_to_voxels(&camera);
                for liquid in [false, true] {
                    let (lod, mesher) =
                        if liquid { (&mut v.water, &self.water) } else { (&mut v.lod, &self.mesher) };
                    match lod.update(terrain, mesher, &[eye]) {
                        Ok(update) => {
                            queue(&mut v.pending, &mut v.drawn, update, eye, terrain.voxel_size(), liquid)
                        }
                        Err(e) => log::warn!("viewer {id}: {e}"),
                    }
                }
            }
            if let Some(p) = &poses {
                v.pending.push_back(ViewOut::Binary(p.clone()));
            }
            if v.since.elapsed() >= STATS_EVERY {
                let secs = v.since.elapsed().as_secs_f32();
                let top = v.lod.top_level() as usize;
                let mut stats = ViewStats {
                    triangles: vec![0; top + 1],
                    nodes: vec![0; top + 1],
                    tick_ms: tick.as_secs_f32() * 1e3,
                    worst_tick_ms: self.worst_tick.as_secs_f32() * 1e3,
                    bytes_per_second: v.sent as f32 / secs,
                    last_edit: v.last_edit.clone(),
                    last_drop: v.last_drop.clone(),
                    awake: counts.0,
                    bodies: counts.1,
                    contacts: counts.2,
                };
                for (k, t) in &v.drawn {
                    let l = (k.node.level as usize).min(top);
                    stats.triangles[l] += t;
                }
                for n in v.lod.nodes() {
                    stats.nodes[(n.level as usize).min(top)] += 1;
                }
                let text = serde_json::to_string(&ViewText::Stats(stats)).expect("the figures serialize");
                v.pending.push_back(ViewOut::Text(text));
                (v.sent, v.since) = (0, Instant::now());
                figures_sent = true;
            }
            let mut budget = self.config.budget;
            while let Some(out) = v.pending.front() {
                let n = out.len();
                if v.frames.capacity() == 0 || (budget < n && budget < self.config.budget) {
                    break;
                }
                let Some(out) = v.pending.pop_front() else { break };
                if v.frames.try_send(out).is_err() {
                    gone.push(id);
                    break;
                }
                budget = budget.saturating_sub(n);
                v.sent += n;
            }
            if v.pending.iter().map(ViewOut::len).sum::<usize>() > PENDING_MAX {
                log::warn!("viewer {id} is too far behind");
                gone.push(id);
            }
        }
        if figures_sent {
            self.worst_tick = Duration::ZERO;
        }
        for id in gone {
            self.viewers.remove(&id);
        }
    }
}

/// The next viewer command, or never when there are no viewers.
pub(crate) async fn next_view_cmd(rx: &mut Option<mpsc::Receiver<ViewCmd>>) -> Option<ViewCmd> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// Queues an update's meshes nearest `eye` (voxels) first, then its drops; water's with the
/// part byte's liquid bit. Counts the ground's triangles drawn.
fn queue(
    pending: &mut VecDeque<ViewOut>,
    drawn: &mut BTreeMap<LodMeshKey, usize>,
    mut update: LodUpdate,
    eye: Point3<f32>,
    voxel: f32,
    liquid: bool,
) {
    let distance = |k: &LodMeshKey| {
        k.node.region().map_or(f32::INFINITY, |r| {
            let half: Vector3<f32> = Vector3::from(r.size().map(|s| s as f32 / 2.0));
            let c: Point3<f32> = r.min().map(|c| c as f32) + half;
            (c - eye).norm_squared()
        })
    };
    update.meshes.sort_by(|a, b| distance(&a.0).total_cmp(&distance(&b.0)).then(a.0.cmp(&b.0)));
    let flag = if liquid { LIQUID } else { 0 };
    for (key, mesh) in &update.meshes {
        let mut out = Vec::new();
        encode_mesh(key, mesh, voxel, &mut out);
        out[2] |= flag;
        if !liquid {
            drawn.insert(*key, mesh.indices.len());
        }
        pending.push_back(ViewOut::Binary(out));
    }
    for key in &update.dropped {
        let mut out = Vec::new();
        encode_drop(key, &mut out);
        out[2] |= flag;
        if !liquid {
            drawn.remove(key);
        }
        pending.push_back(ViewOut::Binary(out));
    }
}
