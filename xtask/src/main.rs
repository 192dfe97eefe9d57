//! `cargo xtask <task>`: the project's own tasks, in Rust so they run wherever cargo does.
//!
//! - `ci`: what CI runs — format check, the viewer's page (`web`), clippy with warnings denied,
//!   every test (all targets, doctests), in that order, stopping at the first failure.
//! - `web`: installs the viewer page's packages (`npm ci`, from `web/package-lock.json`) and
//!   bundles it into `web/dist`, which `voxterra view` serves; needs Node.js and npm (Debian's
//!   `nodejs` and `npm`; `.ci/browser-deps` installs them).
//! - `bench [SUITE…] [--quick]`: the side-by-side `compare` suites (all by default), release build.
//! - `fuzz [SECONDS]`: every cargo-fuzz target for SECONDS each (default 60); installs cargo-fuzz if
//!   missing; uses the nightly toolchain if installed, else `RUSTC_BOOTSTRAP=1` on the pinned one.
//! - `soak [SECONDS]`: the differential harness (every collision capability against its exact f64
//!   reference on random ground, detached pieces against a flood fill, levels-of-detail views against fresh meshes, replicas against their server over a faulty network) for SECONDS
//!   per capability (default 600), two at a time; prints
//!   each capability's cases and disagreements, and fails on any disagreement; then the crash test
//!   (a chunk-database writer killed with SIGKILL, two kills a second of SECONDS).
//! - `netem [SECONDS]`: the network load test under delay and loss (`tc netem` between two
//!   network namespaces, over TLS), 16 clients for SECONDS a case (default 30); needs root.

mod netem;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const FUZZ_TARGETS: &[&str] = &[
    "decode_rle",
    "roundtrip",
    "open_world",
    "decode_delta",
    "apply_delta",
    "decode_packet",
    "apply_message",
    "client_frame",
    "server_frame",
    "chunk_record",
    "view_request",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace root").to_path_buf()
}

/// Runs `cargo args…` in the workspace root; on failure prints `hint` (the command that fixes it).
fn cargo(args: &[&str], hint: &str) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("\n==> cargo {}", args.join(" "));
    let status = Command::new(cargo)
        .args(args)
        .current_dir(root())
        .status()
        .map_err(|e| format!("could not start cargo: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("`cargo {}` failed. {hint}", args.join(" "))) }
}

/// Every optional feature of the workspace.
const FEATURES: &str = "voxterra-core/serde";

fn ci() -> Result<(), String> {
    cargo(&["fmt", "--all", "--check"], "Run `cargo fmt --all` to fix the formatting.")?;
    web()?;
    cargo(
        &["clippy", "--workspace", "--all-targets", "--features", FEATURES, "--", "-D", "warnings"],
        "Fix the clippy findings above (`cargo clippy --workspace --all-targets`).",
    )?;
    // --all-targets builds and runs benches in test mode too, so they cannot rot; doctests run apart.
    cargo(&["test", "--workspace", "--all-targets", "--features", FEATURES], "See the failing tests above.")?;
    cargo(&["test", "--workspace", "--doc", "--features", FEATURES], "See the failing doctests above.")?;
    eprintln!("\nci: all checks passed");
    Ok(())
}

/// Runs `program args…` in `dir`; on failure says which command failed.
fn run_in(dir: &Path, program: &str, args: &[&str]) -> Result<(), String> {
    eprintln!("\n==> {program} {} (in {})", args.join(" "), dir.display());
    let status = Command::new(program).args(args).current_dir(dir).status().map_err(|e| {
        format!("could not start {program}: {e} (install Node.js and npm: `.ci/browser-deps`)")
    })?;
    if status.success() { Ok(()) } else { Err(format!("`{program} {}` failed", args.join(" "))) }
}

/// The viewer's page: its packages as the lock file pins them, then the bundle.
fn web() -> Result<(), String> {
    let dir = root().join("web");
    run_in(&dir, "npm", &["ci", "--no-audit", "--no-fund", "--loglevel=error"])?;
    run_in(&dir, "npm", &["run", "build", "--silent"])
}

fn bench(args: &[String]) -> Result<(), String> {
    let quick = args.iter().any(|a| a == "--quick");
    let named: Vec<&str> = args.iter().filter(|a| !a.starts_with("--")).map(String::as_str).collect();
    // No suite named: `compare all` runs every suite it has.
    let suites = if named.is_empty() { vec!["all"] } else { named };
    for suite in suites {
        let mut a = vec!["run", "--release", "-p", "voxterra-benches", "--bin", "compare", "--", suite];
        if quick {
            a.push("--quick");
        }
        cargo(&a, "See the error above.")?;
    }
    Ok(())
}

/// True when `cmd args…` runs and exits 0 (output discarded).
fn succeeds(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn fuzz(args: &[String]) -> Result<(), String> {
    let seconds: u64 = match args.first() {
        Some(s) => s.parse().map_err(|_| format!("SECONDS must be a whole number, got {s:?}"))?,
        None => 60,
    };
    if !succeeds("cargo", &["fuzz", "--version"]) {
        eprintln!("cargo-fuzz is missing: installing it from crates.io");
        cargo(&["install", "cargo-fuzz", "--locked"], "Install it by hand: `cargo install cargo-fuzz`.")?;
    }
    let nightly = Command::new("rustup")
        .args(["toolchain", "list"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).lines().any(|l| l.starts_with("nightly")));
    for target in FUZZ_TARGETS {
        // New inputs go to fuzz/work/<target> (ignored by git); the committed corpus only seeds.
        let work = root().join("fuzz/work").join(target);
        std::fs::create_dir_all(&work).map_err(|e| format!("creating {}: {e}", work.display()))?;
        let seeds = root().join("fuzz/corpus").join(target);
        let time = format!("-max_total_time={seconds}");
        let (work, seeds) = (work.to_string_lossy().into_owned(), seeds.to_string_lossy().into_owned());
        let mut fuzz_args = vec!["fuzz", "run", target, work.as_str(), seeds.as_str(), "--", time.as_str()];
        let mut cmd = Command::new("cargo");
        if nightly {
            fuzz_args.insert(0, "+nightly");
        } else {
            cmd.env("RUSTC_BOOTSTRAP", "1");
        }
        eprintln!("\n==> cargo {}", fuzz_args.join(" "));
        let status = cmd
            .args(&fuzz_args)
            .current_dir(root())
            .status()
            .map_err(|e| format!("could not start cargo: {e}"))?;
        if !status.success() {
            return Err(format!(
                "fuzz target {target} failed; the crashing input is in fuzz/artifacts/{target}/. \
                 Minimize it with `cargo fuzz tmin {target} <file>` and commit it to fuzz/corpus/{target}/."
            ));
        }
    }
    Ok(())
}

/// The differential harness's capabilities, each an ignored `soak_*` test.
const SOAKS: &[&str] =
    &["contacts", "rays", "intersects", "casts", "sweeps", "pieces", "replicas", "lod", "paging"];

fn soak(args: &[String]) -> Result<(), String> {
    let seconds: u64 = match args.first() {
        Some(s) => s.parse().map_err(|_| format!("SECONDS must be a whole number, got {s:?}"))?,
        None => 600,
    };
    eprintln!("soak: {} capabilities, {seconds} s each, two at a time", SOAKS.len());
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let filters: Vec<String> = SOAKS.iter().map(|c| format!("soak_{c}")).collect();
    let mut a: Vec<&str> = vec!["test", "--release", "-p", "voxterra", "--test", "differential", "--"];
    a.extend(["--ignored", "--nocapture", "--exact", "--test-threads", "2"]);
    a.extend(filters.iter().map(String::as_str));
    eprintln!("\n==> VOXTERRA_SOAK_SECONDS={seconds} cargo {}", a.join(" "));
    let status = Command::new(cargo)
        .args(&a)
        .env("VOXTERRA_SOAK_SECONDS", seconds.to_string())
        .current_dir(root())
        .status()
        .map_err(|e| format!("could not start cargo: {e}"))?;
    if !status.success() {
        return Err(
            "a capability disagreed with its reference: each report above names the seed that rebuilds \
                    its scene (VOXTERRA_SOAK_SEED=<seed> reruns from it)"
                .into(),
        );
    }
    // Crash safety: a writer killed with SIGKILL at random points, about two kills a second.
    let kills = (seconds * 2).max(10).to_string();
    eprintln!("\n==> VOXTERRA_CRASH_KILLS={kills} cargo test --release -p voxterra-cli --test crash");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["test", "--release", "-p", "voxterra-cli", "--test", "crash", "--", "--nocapture"])
        .env("VOXTERRA_CRASH_KILLS", &kills)
        .current_dir(root())
        .status()
        .map_err(|e| format!("could not start cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err("the crash test lost an acknowledged edit or damaged the database".into())
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("bench") => bench(&args[1..]),
        Some("fuzz") => fuzz(&args[1..]),
        Some("soak") => soak(&args[1..]),
        Some("web") => web(),
        Some("netem") => netem::netem(&args[1..]),
        _ => Err("usage: cargo xtask ci | web | bench [SUITE…] [--quick] | fuzz [SECONDS] | soak [SECONDS] | netem [SECONDS]"
            .into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}
