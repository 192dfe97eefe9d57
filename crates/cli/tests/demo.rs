//! `voxterra demo` and `voxterra render` end to end, on a small world: nothing falls through, the
//! final state is the same on 1 and 2 threads, the baselines run beside voxterra, the pictures are
//! PNGs of the asked size, bad flags fail cleanly.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::process::Command;

fn voxterra(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_voxterra")).args(args).output().unwrap()
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

fn demo_json(threads: &str, frames: &str, extra: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let out_png = dir.path().join("demo.png");
    let mut args = vec![
        "demo",
        "--size",
        "160x64x160",
        "--bodies",
        "60",
        "--frames",
        frames,
        "--seed",
        "3",
        "--threads",
        threads,
        "--json",
        "--resolution",
        "96x64",
        "--out",
    ];
    let path = out_png.to_str().unwrap().to_string();
    args.push(&path);
    args.extend_from_slice(extra);
    let out = voxterra(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    if !extra.contains(&"--no-picture") {
        assert_eq!(png_size(&std::fs::read(&out_png).unwrap()), (96, 64));
    }
    v
}

#[test]
fn demo_on_one_and_two_threads() {
    let one = demo_json("1", "120", &["--no-picture"]);
    let two = demo_json("2", "120", &["--view", "overhang"]);
    for v in [&one, &two] {
        let r = &v["voxterra"];
        assert_eq!(r["fell_through"], 0);
        assert_eq!(r["refused_queries"], 0);
        assert!(r["contacts_per_frame"].as_f64().unwrap() > 10.0, "bodies land: {r}");
        assert!(r["terrain_collision_bytes"].as_u64().unwrap() > 0);
        assert!(r["frame_ms"]["max"].as_f64().unwrap() >= r["frame_ms"]["p50"].as_f64().unwrap());
    }
    assert_eq!(one["voxterra"]["state_hash"], two["voxterra"]["state_hash"]);
    assert!(two["picture"]["primary_rays_per_second"].as_f64().unwrap() > 0.0);
}

#[test]
fn demo_with_the_trimesh_baseline() {
    let v = demo_json("2", "240", &["--no-picture", "--baseline", "trimesh"]);
    let (ours, base) = (&v["voxterra"], &v["baseline"]);
    assert_eq!(base["collider"], "trimesh per chunk");
    assert!(
        base["terrain_collision_bytes"].as_u64().unwrap() > ours["terrain_collision_bytes"].as_u64().unwrap()
    );
    assert!(base["worst_edit_stall_ms"].as_f64().unwrap() > 0.0, "frames 30 to 150 edit");
    assert_eq!(ours["fell_through"], 0);
    assert!(ours["fell_through"].as_u64() <= base["fell_through"].as_u64());
    // The overhang, cut loose at frame 30, falls as a body on both; on voxterra it has come to
    // rest by the end.
    for r in [ours, base] {
        assert!(r["detached_pieces"].as_u64().unwrap() >= 1, "{r}");
        assert_eq!(r["pieces_fell_through"], 0, "{r}");
    }
    assert!(ours["pieces_at_rest"].as_u64().unwrap() >= 1, "{ours}");
    // The character walks the course's ramps and the raised ground, grounded as on the TriMesh.
    assert_eq!(ours["character_stuck_steps"], 0, "{ours}");
    let grounded = |r: &serde_json::Value| r["character_grounded"].as_f64().unwrap();
    assert!(grounded(ours) > 0.9 && grounded(ours) >= grounded(base) - 0.01, "{ours} vs {base}");
}

#[test]
fn demo_with_the_voxels_baseline() {
    let v = demo_json("2", "240", &["--no-picture", "--baseline", "voxels"]);
    let (ours, base) = (&v["voxterra"], &v["baseline"]);
    assert_eq!(base["collider"], "parry voxels");
    assert!(base["terrain_collision_bytes"].as_u64().unwrap() > 0);
    assert!(base["worst_edit_stall_ms"].as_f64().unwrap() > 0.0, "frames 30 to 150 edit");
    // Bodies land on the cubes and the edits reach them: the overhang, cut loose, falls on both.
    assert!(base["contacts_per_frame"].as_f64().unwrap() > 10.0, "{base}");
    for r in [ours, base] {
        assert!(r["detached_pieces"].as_u64().unwrap() >= 1, "{r}");
    }
    assert_eq!(ours["fell_through"], 0);
}

#[test]
fn render_writes_a_png_and_bad_flags_fail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.png");
    let p = path.to_str().unwrap();
    let out = voxterra(&[
        "render",
        "--size",
        "96x48x96",
        "--resolution",
        "80x60",
        "--out",
        p,
        "--eye",
        "-10,60,-10",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(png_size(&bytes), (80, 60));
    for bad in [
        vec!["render", "--resolution", "0x10"],
        vec!["render", "--eye", "1,2"],
        vec!["render", "--eye", "nan,1,2"],
        vec!["demo", "--bodies", "0"],
        vec!["demo", "--baseline", "heightfield"],
    ] {
        let out = voxterra(&bad);
        assert!(!out.status.success(), "{bad:?} was accepted");
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
}

#[test]
fn serve_sim_clients_match_the_server() {
    let out =
        voxterra(&["serve-sim", "--size", "128x48x128", "--ticks", "80", "--budget", "16384", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["edits"].as_u64().unwrap() > 0);
    for c in v["clients"].as_array().unwrap() {
        assert_eq!(c["matches_server"], true, "{c}");
        assert!(c["bytes"].as_u64().unwrap() > 0 && c["regions_full"].as_u64().unwrap() > 0, "{c}");
        assert!(c["bytes_per_tick_max"].as_u64().unwrap() <= 16384, "within the budget: {c}");
        assert!(c["seconds_to_full_detail"].as_f64().is_some(), "{c}");
        assert_eq!(c["holds_what_it_should"], true, "{c}");
    }
    // A radius past the world holds the whole world, not nothing.
    let out =
        voxterra(&["serve-sim", "--size", "128x48x128", "--ticks", "20", "--full-radius", "1e6", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["clients"][0]["regions_full"].as_u64().unwrap() >= 8 * 3 * 8, "{v}");
    for bad in [["--full-radius", "-1"], ["--full-radius", "1e10"], ["--budget", "64"]] {
        let out = voxterra(&["serve-sim", "--size", "128x48x128", "--ticks", "2", bad[0], bad[1]]);
        assert!(!out.status.success(), "{bad:?}");
        assert!(!out.stderr.is_empty());
    }
}

/// The smallest world the demo accepts holds its whole scene: no body ends under the world or
/// the surface over the default 600 frames (craters keep a floor).
#[test]
fn the_smallest_demo_world_loses_no_body() {
    let out = voxterra(&["demo", "--size", "128x64x128", "--no-picture", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ours = &v["voxterra"];
    assert_eq!(ours["fell_through"], 0, "{ours}");
    assert_eq!(ours["pieces_fell_through"], 0, "{ours}");
    assert!(ours["contacts_per_frame"].as_f64().unwrap() > 10.0, "{ours}");
}
