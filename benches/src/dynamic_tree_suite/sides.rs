//! The scene of moving boxes and the three sides that keep their pairs: voxterra's dynamic tree,
//! parry's BVH as rapier drives it, and obvhs.

use crate::world::Rng;
use obvhs::bvh2::Bvh2;
use parry3d::bounding_volume::Aabb as PAabb;
use parry3d::partitioning::{Bvh, BvhWorkspace};
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Aabb, Broadphase, ProxyId, ProxyMove};
use voxterra_dynamic_aabb_tree::{DynamicAabbTree, ProxyKind};
use voxterra_narrowphase::convert::ToParry;

pub(crate) const DT: f32 = 1.0 / 60.0;

/// The bouncing boxes.
pub struct Scene {
    /// Centers.
    pub pos: Vec<Point3<f32>>,
    /// Velocities (zero for still boxes).
    pub vel: Vec<Vector3<f32>>,
    /// Half sizes.
    pub half: Vec<Vector3<f32>>,
    /// Which boxes move.
    pub moving: Vec<bool>,
    /// The moving boxes' indices, ascending: every side's frame walks these, as an engine walks
    /// its awake bodies, rather than scanning all N boxes for them (a scan that at 1% moving
    /// cost every side more than some of their updates).
    pub movers: Vec<usize>,
    /// Side of the cube.
    pub side: f32,
}

impl Scene {
    /// `n` boxes, a `share` of them moving, from `seed`.
    pub fn new(n: usize, share: f64, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let mut unit = || (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        let side = (4.0 * n as f32).cbrt();
        let mut s = Scene { pos: vec![], vel: vec![], half: vec![], moving: vec![], movers: vec![], side };
        for _ in 0..n {
            let size = Vector3::new(0.5 + unit(), 0.5 + unit(), 0.5 + unit());
            s.half.push(size / 2.0);
            s.pos.push(Point3::new(unit() * side, unit() * side, unit() * side));
            // A random direction (normalized Gaussian-ish by rejection) times U[0, 3].
            let dir = loop {
                let d = Vector3::new(unit() * 2.0 - 1.0, unit() * 2.0 - 1.0, unit() * 2.0 - 1.0);
                let l = d.norm();
                if l > 0.05 && l <= 1.0 {
                    break d / l;
                }
            };
            let moving = f64::from(unit()) < share;
            s.moving.push(moving);
            if moving {
                s.movers.push(s.pos.len() - 1);
            }
            s.vel.push(if moving { dir * (3.0 * unit()) } else { Vector3::zeros() });
        }
        s
    }

    /// Box `i`.
    #[inline]
    pub fn aabb(&self, i: usize) -> Aabb {
        Aabb::new(self.pos[i] - self.half[i], self.pos[i] + self.half[i])
    }

    /// One 60 Hz step of the movers.
    pub fn step(&mut self) {
        let side = self.side;
        for &i in &self.movers {
            let (p, v) = (&mut self.pos[i], &mut self.vel[i]);
            *p += *v * DT;
            for k in 0..3 {
                if (p[k] < 0.0 && v[k] < 0.0) || (p[k] > side && v[k] > 0.0) {
                    v[k] = -v[k];
                }
            }
        }
    }
}

pub(crate) fn paabb(b: &Aabb) -> PAabb {
    b.to_parry()
}

pub(crate) fn oaabb(b: &Aabb) -> obvhs::aabb::Aabb {
    obvhs::aabb::Aabb::new(glam::Vec3A::from(b.mins.to_parry()), glam::Vec3A::from(b.maxs.to_parry()))
}

/// voxterra's side of the scene.
pub struct Ours {
    /// The broadphase.
    pub tree: DynamicAabbTree,
    pub(crate) ids: Vec<ProxyId>,
    pub(crate) moves: Vec<ProxyMove>,
}

impl Ours {
    /// Creates every box (still ones as static proxies).
    pub fn new(s: &Scene) -> Self {
        let mut tree = DynamicAabbTree::new();
        let ids = (0..s.pos.len())
            .map(|i| {
                let kind = if s.moving[i] { ProxyKind::Dynamic } else { ProxyKind::Static };
                tree.create_proxy_of_kind(s.aabb(i), i as u64, kind).expect("valid box")
            })
            .collect();
        Ours { tree, ids, moves: Vec::new() }
    }

    /// Moves the movers (one batch, as a physics step would) and counts the pairs.
    pub fn frame(&mut self, s: &Scene, parallel: bool) -> u64 {
        self.moves.clear();
        for &i in &s.movers {
            self.moves.push(ProxyMove { id: self.ids[i], aabb: s.aabb(i), displacement: s.vel[i] * DT });
        }
        self.tree.move_proxies(&self.moves).expect("valid boxes");
        let mut n = 0u64;
        if parallel {
            self.tree.update_pairs_parallel(&mut |_, _| n += 1);
        } else {
            self.tree.update_pairs(&mut |_, _| n += 1);
        }
        n
    }
}

/// parry's `Bvh` as rapier 0.30 drives it.
pub struct Parry {
    pub(crate) bvh: Bvh,
    pub(crate) ws: BvhWorkspace,
    pub(crate) tight: Vec<Aabb>,
}

/// rapier's `CHANGE_DETECTION_FACTOR` × the default length unit.
pub(crate) const RAPIER_SKIN: f32 = 0.04;

impl Parry {
    /// Inserts every box.
    pub fn new(s: &Scene) -> Self {
        let mut p = Parry { bvh: Bvh::new(), ws: BvhWorkspace::default(), tight: vec![] };
        for i in 0..s.pos.len() {
            p.tight.push(s.aabb(i));
            p.bvh.insert_or_update_partially(paabb(&s.aabb(i)), i as u32, RAPIER_SKIN);
        }
        p
    }

    /// rapier's broad-phase update; counts the tight pairs the traversal reports.
    pub fn frame(&mut self, s: &Scene) -> u64 {
        for &i in &s.movers {
            let b = s.aabb(i);
            self.tight[i] = b;
            self.bvh.insert_or_update_partially(paabb(&b), i as u32, RAPIER_SKIN);
        }
        self.bvh.optimize_incremental(&mut self.ws);
        self.bvh.refit(&mut self.ws);
        let mut n = 0u64;
        let tight = &self.tight;
        self.bvh.traverse_bvtt_single_tree::<true>(&mut self.ws, &mut |a, b| {
            if tight[a as usize].intersects(&tight[b as usize]) {
                n += 1;
            }
        });
        n
    }
}

/// obvhs's `Bvh2`: leaves moved when they leave their fat box, pairs by one AABB traversal per
/// mover.
pub struct Obvhs {
    /// The tree.
    pub bvh: Bvh2,
    pub(crate) fat: Vec<Aabb>,
    pub(crate) tight: Vec<Aabb>,
    pub(crate) moving: Vec<bool>,
}

/// obvhs's fat-box margin: 0.1. obvhs runs faster with it than with 0.04 (voxterra's default,
/// rapier's skin) in every cell where it is the stronger peer (our speed against it at 0.1 and
/// at 0.04: 10k/10% 2.26–2.36× and 3.02–3.03×, 10k/1% 2.57–2.59× and 2.83×, 100k/1% 5.93–5.94×
/// and 6.12–6.20×), so the suite gives it 0.1.
pub(crate) const OBVHS_MARGIN: f32 = 0.1;

impl Obvhs {
    /// Inserts every box.
    pub fn new(s: &Scene) -> Self {
        let mut o = Obvhs { bvh: Bvh2::default(), fat: vec![], tight: vec![], moving: s.moving.clone() };
        for i in 0..s.pos.len() {
            let b = s.aabb(i);
            let fat = b.loosened(OBVHS_MARGIN);
            o.bvh.insert_primitive(oaabb(&fat), i as u32);
            o.fat.push(fat);
            o.tight.push(b);
        }
        o
    }

    /// Moves leaves that left their fat boxes, then queries every mover.
    pub fn frame(&mut self, s: &Scene) -> u64 {
        for &i in &s.movers {
            let b = s.aabb(i);
            self.tight[i] = b;
            if !self.fat[i].contains(&b) {
                self.fat[i] = b.loosened(OBVHS_MARGIN);
                self.bvh.move_primitive(oaabb(&self.fat[i]), i as u32);
            }
        }
        let mut n = 0u64;
        for &i in &s.movers {
            let b = self.tight[i];
            let (tight, moving) = (&self.tight, &self.moving);
            self.bvh.aabb_traverse(oaabb(&b), |bvh, node| {
                let prim = bvh.primitive_indices[bvh.nodes[node as usize].first_index as usize] as usize;
                if prim != i && (!moving[prim] || prim > i) && tight[prim].intersects(&b) {
                    n += 1;
                }
                true
            });
        }
        n
    }
}
