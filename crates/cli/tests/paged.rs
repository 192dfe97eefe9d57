//! Lazily generated worlds, end to end: `gen --db --lazy` makes a world of any size at once;
//! `info` and `verify` read it without materializing it; `fly` pages across it under a budget;
//! `demo` runs on it paged, losing no body; the same demo held whole and paged state the same
//! figures of what fell through; `mesh --lod-from` and `render --lod` draw a lazy world page by
//! page as the whole world draws.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::process::Command;

fn voxterra(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_voxterra")).args(args).output().unwrap()
}

fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_lazy_world_is_made_at_once_and_read_without_materializing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.redb");
    let db = db.to_str().unwrap();
    // 2^34 voxels: only the generator's parameters are written.
    let made = json(&voxterra(&["gen", "--size", "8192x256x8192", "--db", db, "--lazy", "--json"]));
    assert_eq!(made["lazy"], true);
    assert!(made["db"]["bytes"].as_u64().unwrap() < 1 << 20);
    let info = json(&voxterra(&["info", db, "--json"]));
    assert_eq!(info["chunks"], 0);
    assert_eq!(info["generator"]["size"], serde_json::json!([8192, 256, 8192]));
    let verify = voxterra(&["verify", db]);
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stderr));
    // A second gen onto the same file is refused, and --lazy needs --db.
    assert!(!voxterra(&["gen", "--size", "64x64x64", "--db", db, "--lazy"]).status.success());
    assert!(!voxterra(&["gen", "--size", "64x64x64", "--lazy"]).status.success());
}

#[test]
fn fly_pages_across_a_world_under_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.redb");
    let db = db.to_str().unwrap();
    json(&voxterra(&["gen", "--size", "4096x128x4096", "--db", db, "--lazy", "--json"]));
    let fly = json(&voxterra(&[
        "fly",
        "--db",
        db,
        "--km",
        "0.25",
        "--speed",
        "100",
        "--radius",
        "96",
        "--lod",
        "24,48",
        "--budget-mb",
        "8",
        "--json",
    ]));
    assert_eq!(fly["frames"], 150);
    assert_eq!(fly["ground_not_paged"], 0, "the viewer's surroundings were in memory: {fly}");
    assert!(fly["chunks_evicted"].as_u64().unwrap() > 0, "the budget made room: {fly}");
    // Paging ahead evicts within each frame's time: the budget is passed by at most a few frames'
    // arrivals.
    assert!(fly["resident_mib"].as_f64().unwrap() <= 8.0 * 1.25, "{fly}");
    let touched = fly["world_touched"].as_f64().unwrap();
    assert!(touched > 0.0 && touched < 0.05, "{fly}");
    // The same flight over the generator alone.
    let generated = json(&voxterra(&[
        "fly",
        "--size",
        "4096x128x4096",
        "--km",
        "0.05",
        "--radius",
        "64",
        "--lod",
        "24",
        "--json",
    ]));
    assert!(generated["chunks_loaded"].as_u64().unwrap() > 0);
}

#[test]
fn the_demo_runs_paged_on_a_lazy_world_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.redb");
    let db = db.to_str().unwrap();
    json(&voxterra(&["gen", "--size", "2048x96x2048", "--seed", "3", "--db", db, "--lazy", "--json"]));
    let demo = json(&voxterra(&[
        "demo",
        "--db",
        db,
        "--bodies",
        "60",
        "--frames",
        "120",
        "--seed",
        "3",
        "--no-picture",
        "--json",
    ]));
    let v = &demo["voxterra"];
    assert_eq!(demo["size"], serde_json::json!([2048, 96, 2048]));
    assert_eq!(v["fell_through"], 0, "{v}");
    assert_eq!(v["pieces_fell_through"], 0, "{v}");
    assert_eq!(v["refused_queries"], 0, "{v}");
    // The baseline needs the whole world in memory: refused with a reason.
    let base = voxterra(&["demo", "--db", db, "--baseline", "trimesh", "--no-picture", "--json"]);
    assert!(!base.status.success());
    assert!(String::from_utf8_lossy(&base.stderr).contains("paged"));
}

#[test]
fn far_terrain_of_a_lazy_world_is_drawn_within_its_budget_as_the_whole_world_draws_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.redb");
    let db = db.to_str().unwrap();
    let path = |f: &str| dir.path().join(f).to_str().unwrap().to_owned();
    json(&voxterra(&["gen", "--size", "1024x96x1024", "--seed", "4", "--db", db, "--lazy", "--json"]));
    // The clipmap's file: the same bytes from the paged world as from the world generated whole.
    let paged = voxterra(&["mesh", "--db", db, "--lod-from", "300,80,700", "--out", &path("p.ply")]);
    assert!(paged.status.success(), "{}", String::from_utf8_lossy(&paged.stderr));
    assert!(String::from_utf8_lossy(&paged.stdout).contains("100.0% of the world's"));
    let whole = voxterra(&[
        "mesh",
        "--size",
        "1024x96x1024",
        "--seed",
        "4",
        "--lod-from",
        "300,80,700",
        "--out",
        &path("w.ply"),
    ]);
    assert!(whole.status.success(), "{}", String::from_utf8_lossy(&whole.stderr));
    assert_eq!(std::fs::read(path("p.ply")).unwrap(), std::fs::read(path("w.ply")).unwrap());
    // The picture, under a budget far below the world's voxels: chunks leave and come back.
    let camera = ["--lod", "--eye", "512,120,512", "--target", "1024,30,1024", "--resolution", "160x90"];
    let paged = voxterra(
        &[&["render", "--db", db, "--budget-mb", "4", "--out", &path("p.png")], &camera[..]].concat(),
    );
    assert!(paged.status.success(), "{}", String::from_utf8_lossy(&paged.stderr));
    let whole = voxterra(
        &[&["render", "--size", "1024x96x1024", "--seed", "4", "--out", &path("w.png")], &camera[..]]
            .concat(),
    );
    assert!(whole.status.success(), "{}", String::from_utf8_lossy(&whole.stderr));
    assert_eq!(std::fs::read(path("p.png")).unwrap(), std::fs::read(path("w.png")).unwrap());
}
