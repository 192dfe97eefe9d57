//! `voxterra mesh` end to end: PLY and OBJ files agree with the summary and with each other, are
//! the same for any thread count, and a terrain file meshes like the world it was saved from.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::path::Path;
use std::process::Command;

fn voxterra(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_voxterra")).args(args).output().unwrap()
}

fn summary(args: &[&str]) -> serde_json::Value {
    let out = voxterra(args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Parses a binary PLY's header counts and checks the body's length matches them.
fn ply_counts(path: &Path) -> (u64, u64) {
    let bytes = std::fs::read(path).unwrap();
    let end = bytes.windows(11).position(|w| w == b"end_header\n").unwrap() + 11;
    let header = std::str::from_utf8(&bytes[..end]).unwrap();
    let count = |what: &str| {
        header.lines().find_map(|l| l.strip_prefix(what)).unwrap().trim().parse::<u64>().unwrap()
    };
    let (v, f) = (count("element vertex "), count("element face "));
    assert_eq!(bytes.len() as u64 - end as u64, v * 27 + f * 13, "PLY body length");
    (v, f)
}

#[test]
fn mesh_files_are_consistent_and_deterministic() {
    let dir = std::env::temp_dir().join(format!("voxterra-mesh-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ply1 = dir.join("a.ply");
    let ply2 = dir.join("b.ply");
    let obj = dir.join("c.obj");
    let world = dir.join("w.vxt");
    let gen_flags = ["--size", "80x64x72", "--seed", "4"];
    let p = |path: &Path| path.to_str().unwrap().to_owned();

    let s1 = summary(&[&["mesh", "--json", "--threads", "1", "--out", &p(&ply1)][..], &gen_flags].concat());
    let s2 = summary(&[&["mesh", "--json", "--threads", "2", "--out", &p(&ply2)][..], &gen_flags].concat());
    assert_eq!(std::fs::read(&ply1).unwrap(), std::fs::read(&ply2).unwrap(), "thread count changed the mesh");
    let (v, f) = ply_counts(&ply1);
    assert!(f > 1000);
    assert_eq!((v, f), (s1["vertices"].as_u64().unwrap(), s1["triangles"].as_u64().unwrap()));
    assert_eq!(s1["triangles"], s2["triangles"]);

    let so = summary(&[&["mesh", "--json", "--out", &p(&obj)][..], &gen_flags].concat());
    let text = std::fs::read_to_string(&obj).unwrap();
    assert_eq!(text.lines().filter(|l| l.starts_with("v ")).count() as u64, v);
    assert_eq!(text.lines().filter(|l| l.starts_with("f ")).count() as u64, f);
    assert_eq!(so["format"], "obj");
    // Every face index is in range.
    assert!(text.lines().filter_map(|l| l.strip_prefix("f ")).all(|l| {
        l.split_whitespace().all(|c| (1..=v).contains(&c.split("//").next().unwrap().parse::<u64>().unwrap()))
    }));

    // From a file: the same world saved and meshed gives the same mesh.
    let g = voxterra(&[&["gen", "--out", &p(&world)][..], &gen_flags].concat());
    assert!(g.status.success(), "{}", String::from_utf8_lossy(&g.stderr));
    summary(&["mesh", "--json", "--in", &p(&world), "--out", &p(&ply2)]);
    assert_eq!(
        std::fs::read(&ply1).unwrap(),
        std::fs::read(&ply2).unwrap(),
        "file and generated worlds differ"
    );

    // Water and sharp surfaces are other meshes.
    let w = summary(&[&["mesh", "--json", "--water", "--out", &p(&ply2)][..], &gen_flags].concat());
    assert_ne!(w["triangles"], s1["triangles"]);

    // An unknown extension without --format fails with a message, and writes nothing.
    let bad = voxterra(&[&["mesh", "--out", &p(&dir.join("mesh.stl"))][..], &gen_flags].concat());
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--format"));
    assert!(!dir.join("mesh.stl").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
