//! `voxterra serve`, `join` and `loadtest` end to end on 127.0.0.1: the server prints the address
//! it bound, a player mirrors and edits the world and finds every region equal to the server's,
//! over plaintext and over TLS; SIGTERM stops the server cleanly and saves the world.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

fn voxterra() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_voxterra"));
    c.env("VOXTERRA_TOKEN", "a secret for the tests");
    c
}

/// Starts `voxterra serve` on a small generated world with `extra` flags; the child and the
/// address it printed.
fn serve(extra: &[&str]) -> (Child, String, BufReader<std::process::ChildStdout>) {
    serve_world(&["--size", "96x48x96"], extra)
}

/// Starts `voxterra serve` on the world `world` names (flags) with `extra` flags.
fn serve_world(world: &[&str], extra: &[&str]) -> (Child, String, BufReader<std::process::ChildStdout>) {
    let mut cmd = voxterra();
    cmd.args(["serve", "--listen", "127.0.0.1:0"]).args(world).args(extra);
    listening(cmd)
}

/// Runs a server command; the child, the game address it printed first, and its output after.
fn listening(mut cmd: Command) -> (Child, String, BufReader<std::process::ChildStdout>) {
    let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("{line:?}")).to_string();
    (child, addr, out)
}

fn join(addr: &str, extra: &[&str]) -> serde_json::Value {
    let out = voxterra()
        .args(["join", addr, "--viewer", "60,50,48", "--seconds", "2", "--edit-rate", "2", "--json"])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn stop(mut child: Child, mut out: BufReader<std::process::ChildStdout>) -> String {
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(status.success(), "{status:?}\n{rest}");
    rest
}

#[test]
fn a_player_mirrors_and_edits_a_served_world_and_sigterm_saves_it() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("w.vxt");
    let (child, addr, out) = serve(&["--save-to", saved.to_str().unwrap()]);
    let report = join(&addr, &[]);
    assert!(report["regions_compared"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(report["regions_differ"], 0, "{report}");
    assert!(report["edits_confirmed"].as_u64().unwrap() > 0, "{report}");
    let log = stop(child, out);
    assert!(log.contains("joined") && log.contains("stopping") && log.contains("saved"), "{log}");
    let info = voxterra().args(["info", saved.to_str().unwrap()]).output().unwrap();
    assert!(info.status.success());
}

#[test]
fn over_tls_a_player_that_trusts_the_certificate_mirrors_the_world() {
    let dir = tempfile::tempdir().unwrap();
    let c = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, c.cert.pem()).unwrap();
    std::fs::write(&key, c.key_pair.serialize_pem()).unwrap();
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    // Beyond loopback without TLS is refused before anything listens.
    let plain = voxterra().args(["serve", "--size", "96x48x96", "--listen", "0.0.0.0:0"]).output().unwrap();
    assert!(!plain.status.success());
    assert!(String::from_utf8_lossy(&plain.stderr).contains("loopback"));
    let (child, addr, out) = serve(&["--tls-cert", cert, "--tls-key", key]);
    let report = join(&addr, &["--tls-ca", cert]);
    assert_eq!(report["regions_differ"], 0, "{report}");
    assert!(report["regions_compared"].as_u64().unwrap() > 0, "{report}");
    stop(child, out);
}

#[test]
fn a_short_loadtest_reports_every_region_equal() {
    let out = voxterra()
        .args(["loadtest", "--size", "128x48x128", "--clients", "4", "--seconds", "3", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["regions_differ"], 0, "{report}");
    assert!(report["regions_compared"].as_u64().unwrap() > 0, "{report}");
    assert!(report["tick_p99_ms"].as_f64().is_some(), "{report}");
}

#[test]
fn served_from_a_chunk_database_every_confirmed_edit_is_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.redb");
    let db = db.to_str().unwrap();
    let made = voxterra().args(["gen", "--size", "96x48x96", "--db", db, "--json"]).output().unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let (mut child, addr, _out) = serve_world(&["--db", db], &[]);
    let report = join(&addr, &[]);
    let confirmed = report["edits_confirmed"].as_u64().unwrap();
    assert!(confirmed > 0, "{report}");
    // Killed, not stopped: what was confirmed must be on disk already.
    child.kill().unwrap();
    child.wait().unwrap();
    let info = voxterra().args(["info", db, "--json"]).output().unwrap();
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert!(info["sequence"].as_u64().unwrap() >= confirmed, "{info} after {confirmed} confirmed edits");
    assert!(voxterra().args(["verify", db]).output().unwrap().status.success());
}

/// `voxterra view` without the page's bundle says the one command that builds it; `serve --http`
/// prints the page's URL once, the token only in its fragment, serves the page there and refuses
/// a path out of the bundle; `view` with a fresh token (none in the environment) does the same.
#[test]
fn view_and_serve_http_print_the_url_with_the_token_in_its_fragment() {
    let missing = voxterra()
        .args(["view", "--size", "96x48x96", "--http", "127.0.0.1:0", "--web", "/nonexistent/dist"])
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cargo xtask web"), "{missing:?}");

    let bundle = tempfile::tempdir().unwrap();
    std::fs::write(bundle.path().join("index.html"), b"<!doctype html><title>page</title>").unwrap();
    let web = bundle.path().to_str().unwrap();
    let url_of = |out: &mut BufReader<std::process::ChildStdout>| {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        line.trim().strip_prefix("open ").unwrap_or_else(|| panic!("{line:?}")).to_string()
    };
    let get = |url: &str, path: &str| {
        use std::io::{Read, Write};
        let host = url.trim_start_matches("http://").split('/').next().unwrap();
        let mut tcp = std::net::TcpStream::connect(host).unwrap();
        tcp.write_all(format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes()).unwrap();
        let mut body = String::new();
        tcp.read_to_string(&mut body).unwrap();
        body
    };
    let (child, _addr, mut out) = serve(&["--http", "127.0.0.1:0", "--web", web]);
    let url = url_of(&mut out);
    assert!(url.ends_with("/#token=a%20secret%20for%20the%20tests"), "{url}");
    assert!(!url.contains('?'));
    assert!(get(&url, "/").contains("<title>page</title>"));
    assert!(get(&url, "/../Cargo.toml").starts_with("HTTP/1.1 400"));
    let rest = stop(child, out);
    assert!(!rest.contains("secret"), "the token in a log line: {rest}");

    let mut view = Command::new(env!("CARGO_BIN_EXE_voxterra"));
    view.env_remove("VOXTERRA_TOKEN").args([
        "view",
        "--size",
        "96x48x96",
        "--http",
        "127.0.0.1:0",
        "--web",
        web,
    ]);
    let (child, _addr, mut out) = listening(view);
    let url = url_of(&mut out);
    let token = url.rsplit("#token=").next().unwrap();
    assert!(token.len() == 32 && token.bytes().all(|b| b.is_ascii_hexdigit()), "{url}");
    assert!(get(&url, "/").contains("<title>page</title>"));
    stop(child, out);
}
