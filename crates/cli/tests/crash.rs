//! Crash safety: `voxterra edit-soak` killed with SIGKILL at random points, again and again. Each
//! time, the database reopens, holds every edit it acknowledged (the last sequence it printed, or
//! later), equals the generated world plus exactly the edits it says it holds, and verifies clean.
//! `VOXTERRA_CRASH_KILLS` sets how many kills (default 12; `cargo xtask soak` asks for hundreds).

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

fn voxterra(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_voxterra")).args(args).output().unwrap()
}

#[test]
fn killed_at_random_points_the_database_holds_every_acknowledged_edit() {
    let kills: u64 = std::env::var("VOXTERRA_CRASH_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(12);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.redb");
    let db = db.to_str().unwrap();
    let made = voxterra(&["edit-soak", "--db", db, "--size", "64x32x64", "--seed", "3", "--edits", "0"]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let mut z = 0x2545_f491_4f6c_dd1du64;
    let (mut acknowledged, mut held) = (0u64, 0u64);
    for kill in 0..kills {
        let mut child = Command::new(env!("CARGO_BIN_EXE_voxterra"))
            .args(["edit-soak", "--db", db, "--edits", "100000000"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            BufReader::new(out)
                .lines()
                .map_while(Result::ok)
                .filter_map(|l| l.trim().parse::<u64>().ok())
                .max()
        });
        // Opening the database and loading the world take a while: kill anywhere from before the
        // first edit to well into the edits.
        z ^= z << 13;
        z ^= z >> 7;
        z ^= z << 17;
        std::thread::sleep(Duration::from_millis(30 + z % 400));
        child.kill().unwrap();
        child.wait().unwrap();
        if let Some(last) = reader.join().unwrap() {
            acknowledged = last;
        }
        let check = voxterra(&["edit-soak", "--db", db, "--check"]);
        let said = String::from_utf8_lossy(&check.stdout);
        assert!(check.status.success(), "kill {kill}: {said}{}", String::from_utf8_lossy(&check.stderr));
        let sequence: u64 = said.trim().rsplit(' ').next().unwrap().parse().unwrap();
        assert!(
            sequence >= acknowledged,
            "kill {kill}: sequence {sequence} lost acknowledged {acknowledged}"
        );
        assert!(sequence >= held, "kill {kill}: sequence {sequence} went back from {held}");
        held = sequence;
        let verify = voxterra(&["verify", db]);
        assert!(verify.status.success(), "kill {kill}: {}", String::from_utf8_lossy(&verify.stderr));
    }
    assert!(held > 0, "no edit became durable in {kills} runs");
    eprintln!("{kills} kills: {held} durable, {acknowledged} acknowledged last");
}

#[test]
fn import_export_info_and_verify_take_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("w.vxt");
    let (file, db, back) = (
        file.to_str().unwrap(),
        dir.path().join("w.redb").to_str().unwrap().to_string(),
        dir.path().join("back.vxt").to_str().unwrap().to_string(),
    );
    assert!(voxterra(&["gen", "--size", "128x64x128", "--out", file]).status.success());
    let import = voxterra(&["import", file, "--db", &db]);
    assert!(import.status.success(), "{}", String::from_utf8_lossy(&import.stderr));
    // A second import onto the same database is refused; the database is unharmed.
    assert!(!voxterra(&["import", file, "--db", &db]).status.success());
    let info = voxterra(&["info", &db, "--json"]);
    assert!(info.status.success(), "{}", String::from_utf8_lossy(&info.stderr));
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert!(info["chunks"].as_u64().unwrap() > 0 && info["sequence"] == 0, "{info}");
    assert!(voxterra(&["verify", &db]).status.success());
    assert!(voxterra(&["export", &db, "--out", &back]).status.success());
    let a: serde_json::Value = serde_json::from_slice(&voxterra(&["info", file, "--json"]).stdout).unwrap();
    let b: serde_json::Value = serde_json::from_slice(&voxterra(&["info", &back, "--json"]).stdout).unwrap();
    assert_eq!((&a["materials"], &a["bounds"]), (&b["materials"], &b["bounds"]));
    // The demo and a picture start from it (and leave it as it was).
    let before = voxterra(&["info", &db, "--json"]).stdout;
    let demo = voxterra(&["demo", "--db", &db, "--bodies", "10", "--frames", "30", "--no-picture", "--json"]);
    assert!(demo.status.success(), "{}", String::from_utf8_lossy(&demo.stderr));
    let png = dir.path().join("r.png");
    let render = voxterra(&["render", "--db", &db, "--resolution", "32x18", "--out", png.to_str().unwrap()]);
    assert!(render.status.success(), "{}", String::from_utf8_lossy(&render.stderr));
    assert!(voxterra(&["info", &db, "--json"]).stdout == before, "reading a database changed its world");
    // Damaged databases and foreign files: errors, no panics.
    let bytes = std::fs::read(&db).unwrap();
    let cut = dir.path().join("cut.redb");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    for bad in [cut.to_str().unwrap(), file] {
        let out = voxterra(&["edit-soak", "--db", bad, "--check"]);
        assert!(!out.status.success());
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
}
