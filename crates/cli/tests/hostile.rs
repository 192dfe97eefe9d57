//! Every command driven with hostile values: each either does its job or fails with a message,
//! never a panic.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::process::Command;

fn voxterra(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_voxterra")).args(args).env("RUST_BACKTRACE", "0").output().unwrap()
}

/// Runs `args`, checks it succeeds or fails as `ok` says, and that nothing panicked.
fn check(args: &[&str], ok: bool) {
    let out = voxterra(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert_eq!(out.status.success(), ok, "{args:?}: {err}");
    if !ok {
        assert!(!err.trim().is_empty(), "{args:?} failed without a word");
    }
}

#[test]
fn hostile_values_do_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (png, ply, vxt) = (file("r.png"), file("m.ply"), file("w.vxt"));
    // Worlds one voxel across, one voxel tall, or touching millions of chunks.
    check(&["gen", "--size", "1x1x1", "--json"], true);
    check(&["gen", "--size", "3x1x200", "--json", "--out", &vxt], true);
    check(&["info", &vxt, "--json"], true);
    check(&["gen", "--size", "99999999x1x1", "--json"], false);
    check(&["gen", "--size", "1x99999999x1", "--json"], false);
    check(&["gen", "--size", "4294967295x4294967295x4294967295"], false);
    check(&["gen", "--size", "-1x2x3"], false);
    check(&["gen", "--seed", "18446744073709551615", "--size", "40x20x40", "--json"], true);
    check(&["mesh", "--size", "1x1x1", "--out", &ply, "--json"], true);
    check(&["mesh", "--size", "2x2x2", "--out", &file("m.txt")], false);
    check(&["render", "--size", "1x1x1", "--resolution", "16x8", "--out", &png], true);
    // Files that are not terrain files.
    let empty = file("empty.vxt");
    std::fs::write(&empty, b"").unwrap();
    let noise = file("noise.vxt");
    std::fs::write(
        &noise,
        (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect::<Vec<_>>(),
    )
    .unwrap();
    for bad in [&empty, &noise, &file("missing.vxt"), &dir.path().to_str().unwrap().to_string()] {
        check(&["info", bad], false);
        check(&["mesh", "--in", bad, "--out", &ply], false);
        check(&["render", "--in", bad, "--out", &png], false);
    }
    // Cameras that look nowhere.
    for fov in ["nan", "0", "180", "500", "-5", "inf"] {
        check(&["render", "--size", "32x16x32", "--fov", fov, "--out", &png], false);
    }
    check(&["render", "--size", "32x16x32", "--eye", "5,5,5", "--target", "5,5,5", "--out", &png], false);
    check(&["render", "--size", "32x16x32", "--eye", "inf,5,5", "--out", &png], false);
    check(&["render", "--size", "32x16x32", "--resolution", "99999x99999", "--out", &png], false);
    // A demo world too small for its scene, or no frames at all.
    check(&["demo", "--size", "8x8x8", "--no-picture"], false);
    check(&["demo", "--size", "1x1x1", "--no-picture"], false);
    check(&["demo", "--frames", "0", "--no-picture"], false);
    check(
        &["demo", "--size", "128x64x128", "--bodies", "3", "--frames", "2", "--no-picture", "--json"],
        true,
    );
}

/// Commands refuse what the machine cannot do, and outputs harm nothing but their target: thread
/// counts past the cap, devices and wrong picture formats as outputs, a missing directory named
/// before the work.
#[test]
fn commands_are_bounded_and_outputs_checked_first() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("r.png").to_str().unwrap().to_string();
    for cmd in [&["gen", "--size", "8x8x8"][..], &["render", "--size", "8x8x8", "--out", &png]] {
        let mut args = cmd.to_vec();
        args.extend(["--threads", "10000"]);
        check(&args, false);
    }
    let jpg = dir.path().join("a.jpg").to_str().unwrap().to_string();
    let out = voxterra(&["render", "--size", "8x8x8", "--out", &jpg]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("PNG"));
    assert!(!std::path::Path::new(&jpg).exists());
    // A missing directory is named at once, before the simulation, not after it.
    let start = std::time::Instant::now();
    let out = voxterra(&["demo", "--frames", "100000", "--out", "/nonexistent/dir/a.png"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("/nonexistent/dir") && !err.contains(".tmp"), "{err}");
    assert!(start.elapsed().as_secs() < 20, "checked before the work");
    // `info` says the world's box.
    let vxt = dir.path().join("w.vxt").to_str().unwrap().to_string();
    check(&["gen", "--size", "40x20x30", "--out", &vxt], true);
    let out = voxterra(&["info", &vxt, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["bounds"]["min"][0].as_i64(), v["bounds"]["size"][0].as_u64()), (Some(0), Some(40)), "{v}");
    assert_eq!(v["bounds"]["size"][2].as_u64(), Some(30));
    // Devices are refused and stay devices.
    #[cfg(target_os = "linux")]
    for device in ["/dev/null", "/dev/full"] {
        use std::os::unix::fs::FileTypeExt;
        let out = voxterra(&["gen", "--size", "8x8x8", "--out", device]);
        assert!(!out.status.success(), "{device}");
        assert!(std::fs::metadata(device).unwrap().file_type().is_char_device());
    }
}
