//! The planned due list against a walk over every region in reach and every stored chunk.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use super::*;
use crate::config::TerrainConfig;
use crate::{Brush, BrushOp, BrushShape};
use proptest::prelude::*;
use voxterra_core::materials;
use voxterra_worldgen::GenParams;

/// The reference: every region within the full radius of a viewer over the grown extent, every
/// stored chunk, sorted as [`due`] sorts.
fn walk(c: &ClientState, terrain: &Terrain, config: &ReplicationConfig) -> Vec<Kind> {
    let scale = terrain.scale();
    // Patches are not planned: the reference takes them as the planner does.
    let mut due = patches(c, scale);
    if let Some(extent) = terrain.extent() {
        let grown = Region::new(extent.min(), extent.max() + Vector3::new(0, 16, 0)).unwrap();
        for k in RegionKey::range(&grown).unwrap().iter() {
            let d = distance(&c.viewers, scale, &region_of(k));
            if d <= config.full_radius && !c.full.contains(&k) && !c.stale.contains_key(&k) {
                due.push((d, 1, Kind::Region(k)));
            }
        }
        for k in terrain.store().chunk_keys() {
            let d = distance(&c.viewers, scale, &k.region().unwrap());
            let Some(level) = mip_level(config, d) else { continue };
            if d <= config.full_radius || c.mips.get(&k).is_some_and(|&held| held <= level) {
                continue;
            }
            due.push((d, 2, Kind::Mip(k, level)));
        }
    }
    due.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(key_order(&a.2).cmp(&key_order(&b.2))));
    due.dedup_by(|a, b| a.2 == b.2);
    due.into_iter().map(|(_, _, k)| k).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn the_plan_finds_what_a_walk_over_everything_finds(
        seed in 0u64..1000,
        voxel in prop::sample::select(vec![0.5f32, 1.0, 2.0]),
        steps in prop::collection::vec((-6.0f32..6.0, -2.0f32..2.0, -6.0f32..6.0, 0u8..10, 0u32..4), 30..60),
    ) {
        let config = ReplicationConfig { full_radius: 16.0 * voxel, mip_radii: [32.0 * voxel, 48.0 * voxel, 80.0 * voxel], resend_messages: 64 };
        let mut terrain = Terrain::generate(&GenParams::new(seed, [96, 48, 96]), TerrainConfig { voxel_size: voxel, ..TerrainConfig::default() }).unwrap();
        let mut server = ReplicationServer::new(config);
        let id = server.add_client(&terrain);
        let mut v = Point3::new(40.0, 30.0, 40.0) * voxel;
        for (dx, dy, dz, what, budget) in steps {
            // Mostly small moves, now and then a jump past the slack, an edit or a second viewer.
            v += Vector3::new(dx, dy, dz) * voxel * if what == 0 { 6.0 } else { 1.0 };
            let viewers = if what == 1 { vec![v, v + Vector3::new(30.0, 0.0, 0.0) * voxel] } else { vec![v] };
            server.set_viewers(id, &viewers).unwrap();
            if what >= 8 {
                let op = if what == 8 { BrushOp::Subtract } else { BrushOp::Add(materials::ROCK) };
                let center = Point3::new(v.x, 20.0 * voxel, v.z);
                terrain.apply_brush(&Brush { shape: BrushShape::Sphere { center, radius: 3.0 * voxel }, op }).unwrap();
            }
            let c = server.clients[id.0].as_mut().unwrap();
            catch_up(c, &terrain);
            let expected = walk(c, &terrain, &config);
            let planned = due(c, &terrain, &config);
            prop_assert_eq!(planned, expected);
            // Send part of what is due, so the client holds some and lacks some.
            server.tick(&terrain, id, MIN_TICK_BUDGET * (1 + budget as usize)).unwrap();
        }
    }
}

#[test]
fn ticking_clients_together_sends_what_ticking_each_alone_sends() {
    let config = ReplicationConfig { full_radius: 16.0, mip_radii: [32.0, 48.0, 80.0], resend_messages: 64 };
    let mut terrain = Terrain::generate(&GenParams::new(3, [96, 48, 96]), TerrainConfig::default()).unwrap();
    let (mut alone, mut together) = (ReplicationServer::new(config), ReplicationServer::new(config));
    let ids: Vec<ClientId> = (0..4).map(|_| alone.add_client(&terrain)).collect();
    assert_eq!(ids, (0..4).map(|_| together.add_client(&terrain)).collect::<Vec<_>>());
    for step in 0..40 {
        for (i, &id) in ids.iter().enumerate() {
            // Two pairs of clients at the same places: their boxes are shared.
            let v = Point3::new(30.0 + step as f32, 30.0, 30.0 + 20.0 * (i / 2) as f32);
            alone.set_viewers(id, &[v]).unwrap();
            together.set_viewers(id, &[v]).unwrap();
        }
        if step % 3 == 0 {
            let center = Point3::new(30.0 + step as f32, 20.0, 40.0);
            terrain
                .apply_brush(&Brush {
                    shape: BrushShape::Sphere { center, radius: 3.0 },
                    op: BrushOp::Subtract,
                })
                .unwrap();
        }
        let each: Vec<_> =
            ids.iter().map(|&id| alone.tick(&terrain, id, MIN_TICK_BUDGET * 2).unwrap()).collect();
        let all: Vec<_> = together
            .tick_clients(&terrain, &ids, MIN_TICK_BUDGET * 2)
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(each, all, "step {step}");
    }
}
