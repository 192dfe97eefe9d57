//! `voxterra gen` end to end: the JSON summary is complete and consistent; bad sizes fail cleanly.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::process::Command;

fn voxterra(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_voxterra")).args(args).output().unwrap()
}

#[test]
fn gen_json_summary() {
    let out = voxterra(&["gen", "--size", "96x64x80", "--seed", "5", "--threads", "2", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["voxels"], 96 * 64 * 80);
    assert_eq!(v["size"], serde_json::json!([96, 64, 80]));
    let non_empty = v["non_empty_voxels"].as_u64().unwrap();
    assert!(non_empty > 0 && non_empty < 96 * 64 * 80);
    let bpv = v["bytes_per_non_empty_voxel"].as_f64().unwrap();
    let mem = v["memory_bytes"].as_f64().unwrap();
    assert!((bpv - mem / non_empty as f64).abs() < 1e-9);
    assert!(v["chunks"].as_u64().unwrap() >= 1 && v["seconds"].as_f64().unwrap() >= 0.0);
    // The same world again: identical summary apart from the time.
    let again: serde_json::Value = serde_json::from_slice(
        &voxterra(&["gen", "--size", "96x64x80", "--seed", "5", "--threads", "1", "--json"]).stdout,
    )
    .unwrap();
    assert_eq!(again["non_empty_voxels"], v["non_empty_voxels"]);
    assert_eq!(again["memory_bytes"], v["memory_bytes"]);
}

#[test]
fn gen_rejects_bad_sizes() {
    for bad in ["0x10x10", "10x10", "axbxc", "99999999x99999999x99999999"] {
        let out = voxterra(&["gen", "--size", bad, "--json"]);
        assert!(!out.status.success(), "{bad} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{bad}: {err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn gen_out_then_info() {
    let dir = std::env::temp_dir().join(format!("voxterra-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("w.vxt");
    let out =
        voxterra(&["gen", "--size", "80x48x64", "--seed", "3", "--json", "--out", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let g: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(g["saved"]["bytes"].as_u64().unwrap(), std::fs::metadata(&file).unwrap().len());
    let out = voxterra(&["info", file.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let i: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(i["chunks"], g["chunks"]);
    assert_eq!(i["non_empty_voxels"], g["non_empty_voxels"]);
    let per_material: u64 = i["materials"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["id"] != 0)
        .map(|m| m["voxels"].as_u64().unwrap())
        .sum();
    assert_eq!(per_material, g["non_empty_voxels"].as_u64().unwrap());
    assert!(i["ratio"].as_f64().unwrap() > 10.0);
    // A damaged file is a clean error.
    let mut bytes = std::fs::read(&file).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    std::fs::write(&file, &bytes).unwrap();
    let out = voxterra(&["info", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("checksum") || err.contains("corrupt"), "{err}");
    assert!(!err.contains("panicked"));
    std::fs::remove_dir_all(&dir).unwrap();
}
