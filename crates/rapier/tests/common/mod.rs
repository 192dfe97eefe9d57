//! Side-by-side scenes for the rapier tests: the same bodies on a voxterra terrain collider and on
//! what a rapier user builds today, one parry `TriMesh` (with `FIX_INTERNAL_EDGES`) per 8³ physics
//! chunk of the same physics meshes, rebuilt for every chunk an edit touches.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)] // each test file uses part of it

use rapier3d::prelude::*;
use std::collections::BTreeMap;
use voxterra::TerrainConfig;
use voxterra::convert::{FromParry, ToParry};
use voxterra::core::nalgebra::{Point3, Vector3};
use voxterra::core::{PhysicsChunkKey, Ray as VRay, Region};
use voxterra::mesher::{MeshWorkspace, Mesher, PhysicsMesh};
use voxterra::{Brush, Terrain};
use voxterra_rapier::{RapierTerrain, SharedTerrain, dispatcher};

/// What the bodies stand on.
pub enum Ground {
    /// voxterra's terrain collider.
    Voxterra(RapierTerrain),
    /// The peer: the terrain's physics chunks as TriMesh colliders, by chunk key.
    Trimesh { terrain: Box<Terrain>, chunks: BTreeMap<PhysicsChunkKey, ColliderHandle> },
}

/// A rapier world over one of the two grounds.
pub struct Sim {
    pub world: PhysicsWorld,
    pub ground: Ground,
}

/// The TriMesh of one physics chunk in world units, `None` when it has no surface.
fn chunk_trimesh(
    t: &Terrain,
    mesher: &Mesher,
    ws: &mut MeshWorkspace,
    key: PhysicsChunkKey,
) -> Option<Collider> {
    let mut mesh = PhysicsMesh::default();
    mesher.mesh_physics(t.store(), &key.region().ok()?, ws, &mut mesh).ok()?;
    if mesh.triangles().is_empty() {
        return None;
    }
    let vs = t.voxel_size();
    let positions = (0..mesh.vertex_count()).map(|i| (mesh.position(i).coords * vs).to_parry()).collect();
    let indices = mesh.triangles().iter().map(|t| t.map(u32::from)).collect();
    let shape = TriMesh::with_flags(positions, indices, TriMeshFlags::FIX_INTERNAL_EDGES).ok()?;
    Some(ColliderBuilder::new(SharedShape::new(shape)).friction(0.5).build())
}

impl Sim {
    /// The terrain as voxterra's collider.
    pub fn voxterra(terrain: Terrain) -> Self {
        let mut world = PhysicsWorld {
            narrow_phase: NarrowPhase::with_query_dispatcher(dispatcher()),
            ..PhysicsWorld::default()
        };
        let ground = RapierTerrain::insert_with(SharedTerrain::new(terrain), &mut world.colliders, |b| {
            b.friction(0.5)
        });
        Sim { world, ground: Ground::Voxterra(ground) }
    }

    /// The terrain as TriMesh colliders, one per physics chunk with a surface.
    pub fn trimesh(terrain: Terrain) -> Self {
        let mut sim = Sim {
            world: PhysicsWorld::default(),
            ground: Ground::Trimesh { terrain: Box::new(terrain), chunks: BTreeMap::new() },
        };
        let extent = sim.terrain(|t| t.extent()).expect("a terrain with voxels");
        sim.rebuild(&extent);
        sim
    }

    /// Both sides of a scene: voxterra first.
    pub fn both(terrain: &Terrain) -> [Self; 2] {
        let copy = || {
            Terrain::from_store(
                terrain.store().clone(),
                terrain.materials().clone(),
                TerrainConfig::with_voxel_size(terrain.voxel_size()),
            )
            .unwrap()
        };
        [Sim::voxterra(copy()), Sim::trimesh(copy())]
    }

    pub fn name(&self) -> &'static str {
        match self.ground {
            Ground::Voxterra(_) => "voxterra",
            Ground::Trimesh { .. } => "trimesh",
        }
    }

    /// Reads the terrain.
    pub fn terrain<R>(&self, f: impl FnOnce(&Terrain) -> R) -> R {
        match &self.ground {
            Ground::Voxterra(g) => f(&g.terrain().read()),
            Ground::Trimesh { terrain, .. } => f(terrain),
        }
    }

    /// The TriMesh side: the chunks whose meshes read `dirty` (the voxels changed), rebuilt.
    fn rebuild(&mut self, dirty: &Region) {
        let Ground::Trimesh { terrain, chunks } = &mut self.ground else { return };
        let mesher = Mesher::new(terrain.materials());
        let mut ws = MeshWorkspace::new();
        // A physics mesh reads its chunk grown by two voxels (one of padding, one for the flags).
        for key in PhysicsChunkKey::range(&dirty.expanded(2)).unwrap().iter() {
            if let Some(old) = chunks.remove(&key) {
                let w = &mut self.world;
                w.colliders.remove(old, &mut w.islands, &mut w.bodies, &mut w.soft_bodies, true);
            }
            if let Some(c) = chunk_trimesh(terrain, &mesher, &mut ws, key) {
                chunks.insert(key, self.world.colliders.insert(c));
            }
        }
    }

    pub fn add(&mut self, body: RigidBodyBuilder, collider: ColliderBuilder) -> RigidBodyHandle {
        self.world.insert(body, collider.friction(0.5)).0
    }

    /// An edit between steps, on either ground.
    pub fn apply_brush(&mut self, brush: &Brush) {
        let w = &mut self.world;
        match &mut self.ground {
            Ground::Voxterra(g) => {
                g.apply_brush(brush, &mut w.bodies, &mut w.colliders).unwrap();
            }
            Ground::Trimesh { terrain, .. } => {
                let report = terrain.apply_brush(brush).unwrap();
                if let Some(d) = report.dirty {
                    self.rebuild(&d);
                }
            }
        }
    }

    pub fn step(&mut self) {
        if let Ground::Voxterra(g) = &self.ground {
            g.prepare(&self.world.bodies, &self.world.colliders, &self.world.integration_parameters)
                .expect("a terrain held whole pages nothing");
        }
        self.world.step();
    }

    /// The ground's height under `(x, z)` (world units), from above.
    pub fn ground_at(&self, x: f32, z: f32, top: f32) -> f32 {
        self.terrain(|t| {
            let down = VRay::new(Point3::new(x, top, z), -Vector3::y());
            t.cast_ray(&down, 1e4).unwrap().expect("ground").point.y
        })
    }

    /// True when the body with collider `co` lies under the surface: its center inside the solid
    /// deeper than its bounding radius (the whole body below the ground).
    pub fn sunk(&self, h: RigidBodyHandle) -> bool {
        let b = &self.world.bodies[h];
        let radius = self.world.colliders[b.colliders()[0]].shape().compute_local_bounding_sphere().radius;
        let p = Point3::from_parry(b.translation());
        self.terrain(|t| {
            let bottom = t.extent().map_or(0.0, |e| e.min().y as f32 * t.voxel_size());
            p.y < bottom
                || matches!(t.project_point(&p, 1e4), Ok(Some(pr)) if pr.inside && pr.distance > radius * 0.5)
        })
    }
}

/// Fails if the dispatcher refused any query with the terrain (the scenes hold only shapes it
/// collides).
pub fn no_refusals() {
    assert_eq!(voxterra_rapier::refused_queries(), 0, "the dispatcher refused queries");
}

/// A height-field terrain: rock under `origin.y + height(x, z)` over `size` voxels from the voxel
/// `origin` (`x`, `z` and the height in voxels from the origin), the surface between voxel
/// centers by fractional occupancy.
pub fn height_field(
    voxel_size: f32,
    origin: [i32; 3],
    size: [i32; 3],
    height: impl Fn(f32, f32) -> f32,
) -> Terrain {
    use voxterra::core::{MaterialTable, VoxelPos, materials};
    use voxterra::store::VoxelStore;
    let min = VoxelPos::new(origin[0], origin[1], origin[2]);
    let region = Region::from_min_size(min, size.map(|s| s as u32)).unwrap();
    let voxels = voxterra_test_support::height_field(&region, materials::ROCK, height);
    let mut store = VoxelStore::new();
    store.write_box(&region, &voxels).unwrap();
    Terrain::from_store(store, MaterialTable::default(), TerrainConfig::with_voxel_size(voxel_size)).unwrap()
}
