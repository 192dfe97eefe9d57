//! `cargo xtask netem [SECONDS]`: the network figures under loss and delay. A server in one
//! network namespace and 16 load-test clients in another, joined by a veth pair whose both ends
//! drop packets at random (an nftables rule) and delay them (`tc netem`, where the kernel has it:
//! cases with delay are skipped, and said so, where it does not); over TLS, as any address but
//! loopback must be. Needs root; installs iproute2, nftables and openssl with apt-get when missing.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

const SERVER_NS: &str = "vxt-server";
const CLIENT_NS: &str = "vxt-clients";
const SERVER_IP: &str = "10.77.0.1";

/// Delay each way (ms) and loss each way (%).
const CASES: &[(u32, f32)] = &[(0, 0.0), (0, 1.0), (0, 5.0), (25, 0.0), (25, 1.0), (25, 5.0)];

fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let status = Command::new(program).args(args).status().map_err(|e| format!("{program}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("`{program} {}` failed", args.join(" "))) }
}

fn ensure_tools() -> Result<(), String> {
    let missing = |p: &str| Command::new(p).arg("-V").output().is_err();
    if missing("ip") || missing("tc") || missing("openssl") || missing("nft") {
        run("apt-get", &["update", "-qq"])?;
        run("apt-get", &["install", "-y", "-qq", "iproute2", "openssl", "nftables"])?;
    }
    Ok(())
}

/// The two namespaces and the veth pair between them (made again from scratch).
fn make_network() -> Result<(), String> {
    drop_network();
    for ns in [SERVER_NS, CLIENT_NS] {
        run("ip", &["netns", "add", ns])?;
        run("ip", &["-n", ns, "link", "set", "lo", "up"])?;
    }
    run("ip", &["link", "add", "vxt-s", "type", "veth", "peer", "name", "vxt-c"])?;
    run("ip", &["link", "set", "vxt-s", "netns", SERVER_NS])?;
    run("ip", &["link", "set", "vxt-c", "netns", CLIENT_NS])?;
    run("ip", &["-n", SERVER_NS, "addr", "add", &format!("{SERVER_IP}/24"), "dev", "vxt-s"])?;
    run("ip", &["-n", CLIENT_NS, "addr", "add", "10.77.0.2/24", "dev", "vxt-c"])?;
    run("ip", &["-n", SERVER_NS, "link", "set", "vxt-s", "up"])?;
    run("ip", &["-n", CLIENT_NS, "link", "set", "vxt-c", "up"])
}

fn drop_network() {
    for ns in [SERVER_NS, CLIENT_NS] {
        let _ = Command::new("ip").args(["netns", "del", ns]).stderr(Stdio::null()).status();
    }
}

/// Both ends drop `loss` percent of the packets they receive and, where the kernel has netem,
/// delay what they send by `delay_ms`. `Ok(false)` when a delay is asked and netem is missing.
fn impair(delay_ms: u32, loss: f32) -> Result<bool, String> {
    for (ns, dev) in [(SERVER_NS, "vxt-s"), (CLIENT_NS, "vxt-c")] {
        let _ = Command::new("ip")
            .args(["netns", "exec", ns, "nft", "delete", "table", "inet", "vxt"])
            .stderr(Stdio::null())
            .status();
        let per_mille = ((loss * 10.0).round() as u32).to_string();
        run("ip", &["netns", "exec", ns, "nft", "add", "table", "inet", "vxt"])?;
        let chain = "{ type filter hook input priority 0; policy accept; }";
        run("ip", &["netns", "exec", ns, "nft", "add", "chain", "inet", "vxt", "input", chain])?;
        let mut args = vec!["netns", "exec", ns, "nft", "add", "rule", "inet", "vxt", "input"];
        args.extend(["iifname", dev, "numgen", "random", "mod", "1000", "<", &per_mille, "drop"]);
        run("ip", &args)?;
        let _ = Command::new("ip")
            .args(["netns", "exec", ns, "tc", "qdisc", "del", "dev", dev, "root"])
            .stderr(Stdio::null())
            .status();
        if delay_ms > 0 {
            let delay = format!("{delay_ms}ms");
            let ok = Command::new("ip")
                .args([
                    "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "netem", "delay", &delay,
                ])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

fn serve(bin: &Path, dir: &Path) -> Result<Child, String> {
    let mut child = Command::new("ip")
        .args(["netns", "exec", SERVER_NS])
        .arg(bin)
        .args(["serve", "--listen", &format!("{SERVER_IP}:7878")])
        .arg("--tls-cert")
        .arg(dir.join("cert.pem"))
        .arg("--tls-key")
        .arg(dir.join("key.pem"))
        .env("VOXTERRA_TOKEN", "netem")
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("voxterra serve: {e}"))?;
    let mut line = String::new();
    let out = child.stdout.take().ok_or("the server's output")?;
    let mut out = BufReader::new(out);
    out.read_line(&mut line).map_err(|e| e.to_string())?;
    if !line.starts_with("listening on") {
        let _ = child.kill();
        return Err(format!("the server said {line:?}"));
    }
    // Drain its log so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in out.lines() {});
    Ok(child)
}

pub(crate) fn netem(args: &[String]) -> Result<(), String> {
    let seconds: u32 =
        args.first().map_or(Ok(30), |s| s.parse()).map_err(|_| "usage: cargo xtask netem [SECONDS]")?;
    ensure_tools()?;
    crate::cargo(&["build", "--release", "-p", "voxterra-cli"], "See the build error above.")?;
    let root = crate::root();
    let bin = root.join("target/release/voxterra");
    let dir = root.join("target/netem");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (key, cert) = (dir.join("key.pem"), dir.join("cert.pem"));
    run(
        "openssl",
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=voxterra-netem",
            "-addext",
            &format!("subjectAltName=IP:{SERVER_IP}"),
            // An end entity, not a CA: webpki refuses a CA certificate as a server's own.
            "-addext",
            "basicConstraints=critical,CA:FALSE",
            "-addext",
            "keyUsage=digitalSignature",
            "-addext",
            "extendedKeyUsage=serverAuth",
            "-keyout",
            &key.to_string_lossy(),
            "-out",
            &cert.to_string_lossy(),
        ],
    )?;
    make_network()?;
    let mut rows = Vec::new();
    let result = (|| {
        for &(delay, loss) in CASES {
            if !impair(delay, loss)? {
                eprintln!("delay {delay} ms: skipped, this kernel has no netem qdisc");
                continue;
            }
            let mut server = serve(&bin, &dir)?;
            let out = Command::new("ip")
                .args(["netns", "exec", CLIENT_NS])
                .arg(&bin)
                .args(["loadtest", "--server", &format!("{SERVER_IP}:7878"), "--tls-name", SERVER_IP])
                .arg("--tls-ca")
                .arg(&cert)
                .args(["--clients", "16", "--seconds", &seconds.to_string(), "--json"])
                .env("VOXTERRA_TOKEN", "netem")
                .output()
                .map_err(|e| format!("voxterra loadtest: {e}"))?;
            let _ = Command::new("kill").args(["-TERM", &server.id().to_string()]).status();
            let _ = server.wait();
            if !out.status.success() {
                return Err(format!("the load test failed: {}", String::from_utf8_lossy(&out.stderr)));
            }
            let report = String::from_utf8_lossy(&out.stdout).to_string();
            eprintln!("delay {delay} ms, loss {loss}% each way:\n{report}");
            rows.push((delay, loss, report));
        }
        Ok(())
    })();
    drop_network();
    result?;
    println!(
        "| delay each way | loss each way | full detail p50 / p99 (s) | edit visible p50 / p99 (ms) | bytes/client/s | regions differ |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    for (delay, loss, report) in rows {
        let field = |name: &str| {
            report
                .lines()
                .find_map(|l| l.trim().strip_prefix(&format!("\"{name}\": ")))
                .map_or("-".to_string(), |v| v.trim_end_matches(',').to_string())
        };
        println!(
            "| {delay} ms | {loss}% | {} / {} | {} / {} | {} | {} |",
            field("full_detail_p50_s"),
            field("full_detail_p99_s"),
            field("edit_visible_p50_ms"),
            field("edit_visible_p99_ms"),
            field("bytes_per_client_per_second"),
            field("regions_differ"),
        );
    }
    Ok(())
}
