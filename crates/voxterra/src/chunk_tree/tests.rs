//! The ray tree against the brute force over its boxes.

use super::*;
use proptest::prelude::*;

/// Every chunk whose box a ray enters (no limit), as the brute force over the boxes says.
fn brute(boxes: &std::collections::BTreeMap<PhysicsChunkKey, Aabb>, ray: &Ray) -> Vec<PhysicsChunkKey> {
    let inv = ray.dir.map(|d| 1.0 / d);
    boxes.iter().filter(|(_, b)| b.clip_ray_inv(&ray.origin, &inv, 1e6).is_some()).map(|(k, _)| *k).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// After any sequence of boxes set and removed (rebuilds, refits and the list of new
    /// chunks all taken), a ray visits exactly the chunks whose boxes it enters, each once,
    /// and a closest-hit search (limit clipped at each entry) finds the nearest entry.
    #[test]
    fn casts_visit_exactly_the_boxes_rays_enter(
        ops in prop::collection::vec((0i32..6, 0i32..3, 0i32..6, 0u8..4, any::<[u8; 6]>()), 1..400),
        rays in prop::collection::vec((any::<[u8; 3]>(), any::<[i8; 3]>()), 1..65),
    ) {
        let mut tree = ChunkTree::default();
        let mut boxes = std::collections::BTreeMap::new();
        for (x, y, z, op, q) in ops {
            let key = PhysicsChunkKey::new(x, y, z);
            if op == 0 {
                tree.set_many([(key, None)]);
                boxes.remove(&key);
                continue;
            }
            // A tight box inside the conservative one, or the conservative one itself.
            let c = conservative_box(key);
            let b = if op == 1 {
                c
            } else {
                let f = |v: u8| v as f32 / 255.0 * 4.9;
                Aabb::new(c.mins + Vector3::new(f(q[0]), f(q[1]), f(q[2])), c.maxs - Vector3::new(f(q[3]), f(q[4]), f(q[5])))
            };
            tree.set_many([(key, Some(b))]);
            boxes.insert(key, b);
        }
        prop_assert_eq!(tree.len(), boxes.len());
        for (k, b) in &boxes {
            prop_assert_eq!(tree.get(*k), Some(*b));
        }
        let rays: Vec<Ray> = rays
            .iter()
            .filter_map(|(o, d)| {
                let origin = Point3::new(o[0] as f32 / 4.0 - 8.0, o[1] as f32 / 8.0 - 4.0, o[2] as f32 / 4.0 - 8.0);
                Ray::try_new(origin, Vector3::new(d[0] as f32, d[1] as f32, d[2] as f32)).ok()
            })
            .collect();
        // The rays as one packet: each is handed exactly the chunks it enters, and a
        // closest-hit search (each visit clips the ray's limit to its box's entry) finds each
        // ray's nearest entry; rays stopped (a negative limit) are handed nothing.
        let mut seen = vec![Vec::new(); rays.len()];
        let mut limits = vec![1e6f32; rays.len()];
        tree.cast_packet(&rays, &mut limits, &mut |k, mask, _| {
            for i in bits(mask) {
                seen[i].push(k);
            }
        });
        let mut nearest = vec![1e6f32; rays.len()];
        tree.cast_packet(&rays, &mut nearest, &mut |k, mask, limits| {
            for i in bits(mask) {
                let inv = rays[i].dir.map(|d| 1.0 / d);
                if let Some((t, _)) = boxes[&k].clip_ray_inv(&rays[i].origin, &inv, limits[i]) {
                    limits[i] = limits[i].min(t);
                }
            }
        });
        let mut stopped = vec![-1.0f32; rays.len()];
        tree.cast_packet(&rays, &mut stopped, &mut |k, mask, _| panic!("{k:?} handed to stopped rays {mask:b}"));
        for (i, ray) in rays.iter().enumerate() {
            seen[i].sort_unstable();
            prop_assert_eq!(&seen[i], &brute(&boxes, ray));
            let inv = ray.dir.map(|d| 1.0 / d);
            let want = boxes.values().filter_map(|b| b.clip_ray_inv(&ray.origin, &inv, 1e6)).map(|(t, _)| t).fold(1e6f32, f32::min);
            prop_assert_eq!(nearest[i], want);
        }
        for ray in rays {
            let mut seen = Vec::new();
            tree.cast(&ray, 1e6, &mut |k, limit| {
                seen.push(k);
                limit
            });
            seen.sort_unstable();
            prop_assert_eq!(&seen, &brute(&boxes, &ray));
            // A limit of 0: the boxes holding the origin, still visited.
            let mut at_origin = Vec::new();
            tree.cast(&ray, 0.0, &mut |k, limit| {
                at_origin.push(k);
                limit
            });
            at_origin.sort_unstable();
            let inv = ray.dir.map(|d| 1.0 / d);
            let want: Vec<_> = boxes.iter().filter(|(_, b)| b.clip_ray_inv(&ray.origin, &inv, 0.0).is_some()).map(|(k, _)| *k).collect();
            prop_assert_eq!(at_origin, want);
            // Closest entry: each visit clips the limit to its box's entry.
            let inv = ray.dir.map(|d| 1.0 / d);
            let mut nearest = f32::INFINITY;
            tree.cast(&ray, 1e6, &mut |k, limit| {
                let t = boxes[&k].clip_ray_inv(&ray.origin, &inv, limit).map_or(limit, |(t, _)| t);
                nearest = nearest.min(t);
                limit.min(t)
            });
            let want = boxes.values().filter_map(|b| b.clip_ray_inv(&ray.origin, &inv, 1e6)).map(|(t, _)| t).fold(f32::INFINITY, f32::min);
            prop_assert_eq!(nearest, want);
        }
    }
}

/// The walk's stack is last in, first out past its fixed depth too (the spill's entries first).
#[test]
fn walk_stack_spills_last_in_first_out() {
    let mut s = WalkStack::new(0u32);
    for i in 1..200 {
        s.push(i);
    }
    let popped: Vec<u32> = std::iter::from_fn(|| s.pop()).collect();
    assert_eq!(popped, (0..200).rev().collect::<Vec<_>>());
    s.push(7);
    assert_eq!((s.pop(), s.pop()), (Some(7), None));
}
