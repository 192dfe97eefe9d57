//! Insertion into the dynamic tree, one box at a time, side by side with parry's `Bvh` and obvhs's
//! `Bvh2`: time per insert and our tree's quality after it (SAH cost over a fresh rebuild's,
//! height), for the scene's boxes in random order and sorted along x (a sweep, the order that
//! builds the worst trees without rotations). The last column creates the same boxes in one
//! `create_proxies` batch (a bulk build), ns per box.
//! `cargo run --release -p voxterra-benches --example dynamic_tree_insert -- [N] [REPEATS]`

use std::time::Instant;
use voxterra_benches::dynamic_tree_suite::Scene;
use voxterra_core::Aabb;
use voxterra_dynamic_aabb_tree::{DynamicAabbTree, ProxyKind};
use voxterra_narrowphase::convert::ToParry;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n: usize = a.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let reps: usize = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let scene = Scene::new(n, 1.0, 7);
    let random: Vec<Aabb> = (0..n).map(|i| scene.aabb(i)).collect();
    let mut sorted = random.clone();
    sorted.sort_by(|p, q| p.mins.x.total_cmp(&q.mins.x));
    println!("{n} boxes, {reps} repeats, ns per insert (median)");
    println!(
        "order  | ours ns | parry ns | obvhs ns | ours/parry | ours/obvhs | area ratio | height | batch ns"
    );
    for (name, boxes) in [("random", &random), ("sorted", &sorted)] {
        let (mut ours, mut parry, mut obvhs, mut batch) = (vec![], vec![], vec![], vec![]);
        let proxies: Vec<(Aabb, u64)> = boxes.iter().enumerate().map(|(i, b)| (*b, i as u64)).collect();
        let mut quality = (0.0, 0);
        for _ in 0..reps {
            let t = Instant::now();
            let mut tree = DynamicAabbTree::new();
            for (i, b) in boxes.iter().enumerate() {
                tree.create_proxy_of_kind(*b, i as u64, ProxyKind::Dynamic).expect("valid box");
            }
            ours.push(t.elapsed().as_secs_f64() * 1e9 / n as f64);
            quality = (tree.area_ratio(), tree.stats().dynamic.height);

            let t = Instant::now();
            let mut bvh = parry3d::partitioning::Bvh::new();
            for (i, b) in boxes.iter().enumerate() {
                bvh.insert(b.to_parry(), i as u32);
            }
            parry.push(t.elapsed().as_secs_f64() * 1e9 / n as f64);
            std::hint::black_box(&bvh);

            let t = Instant::now();
            let mut o = obvhs::bvh2::Bvh2::default();
            for (i, b) in boxes.iter().enumerate() {
                let ob = obvhs::aabb::Aabb::new(b.mins.to_parry().into(), b.maxs.to_parry().into());
                o.insert_primitive(ob, i as u32);
            }
            obvhs.push(t.elapsed().as_secs_f64() * 1e9 / n as f64);
            std::hint::black_box(&o);

            let t = Instant::now();
            let mut tree = DynamicAabbTree::new();
            tree.create_proxies(&proxies, ProxyKind::Dynamic).expect("valid boxes");
            batch.push(t.elapsed().as_secs_f64() * 1e9 / n as f64);
            std::hint::black_box(&tree);
        }
        let (o, p, b, m) = (median(ours), median(parry), median(obvhs), median(batch));
        println!(
            "{name} | {o:.0} | {p:.0} | {b:.0} | {:.2} | {:.2} | {:.3} | {} | {m:.0}",
            p / o,
            b / o,
            quality.0,
            quality.1
        );
    }
}
