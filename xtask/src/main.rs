//! `cargo xtask <task>`: the project's own tasks, in Rust so they run wherever cargo does.
//!
//! - `ci`: what CI runs — format check, clippy with warnings denied, every test (all targets,
//!   doctests), in that order, stopping at the first failure.
//! - `bench [SUITE…] [--quick]`: the side-by-side `compare` suites (all by default), release build.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const SUITES: &[&str] = &["store"];

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

fn ci() -> Result<(), String> {
    cargo(&["fmt", "--all", "--check"], "Run `cargo fmt --all` to fix the formatting.")?;
    cargo(
        &["clippy", "--workspace", "--all-targets", "--all-features", "--", "-D", "warnings"],
        "Fix the clippy findings above (`cargo clippy --workspace --all-targets --all-features`).",
    )?;
    // --all-targets builds and runs benches in test mode too, so they cannot rot; doctests run apart.
    cargo(&["test", "--workspace", "--all-targets", "--all-features"], "See the failing tests above.")?;
    cargo(&["test", "--workspace", "--doc", "--all-features"], "See the failing doctests above.")?;
    eprintln!("\nci: all checks passed");
    Ok(())
}

fn bench(args: &[String]) -> Result<(), String> {
    let quick = args.iter().any(|a| a == "--quick");
    let named: Vec<&str> = args.iter().filter(|a| !a.starts_with("--")).map(String::as_str).collect();
    let suites = if named.is_empty() { SUITES.to_vec() } else { named };
    for suite in suites {
        let mut a = vec!["run", "--release", "-p", "voxterra-benches", "--bin", "compare", "--", suite];
        if quick {
            a.push("--quick");
        }
        cargo(&a, "See the error above.")?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("bench") => bench(&args[1..]),
        _ => Err("usage: cargo xtask ci | bench [SUITE…] [--quick]".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}
