//! `voxterra serve`, `voxterra view` and `voxterra join`: a server streaming a world to clients
//! over TCP (and to browsers, with a viewer), and a client that joins it, moves, edits, and
//! checks what it holds against the server.

use crate::render_cmd::parse_point;
use crate::source::WorldSource;
use anyhow::{Context, bail};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use voxterra::core::materials;
use voxterra::core::nalgebra::Point3;
use voxterra::{Brush, BrushOp, BrushShape};
use voxterra_net::{Client, ServerConfig, ServerEvent, TlsClient, TlsServer, serve};

/// Where the secret token comes from: a file, else the `VOXTERRA_TOKEN` environment variable
/// (never a flag: flags show in `ps`).
pub(crate) fn token(file: &Option<PathBuf>) -> anyhow::Result<Vec<u8>> {
    let token = match file {
        Some(f) => std::fs::read(f).with_context(|| format!("reading the token file {}", f.display()))?,
        None => std::env::var("VOXTERRA_TOKEN")
            .context("no token: give --token-file F or set VOXTERRA_TOKEN")?
            .into_bytes(),
    };
    let token = token.trim_ascii().to_vec();
    if token.is_empty() {
        bail!("the token is empty");
    }
    if token.len() > voxterra_net::protocol::MAX_TOKEN {
        bail!("the token is over {} bytes", voxterra_net::protocol::MAX_TOKEN);
    }
    Ok(token)
}

/// `voxterra serve`.
#[derive(clap::Args, Debug)]
pub(crate) struct ServeArgs {
    /// The address to listen on; port 0 picks one. Plaintext TCP on loopback only: any other
    /// address needs --tls-cert and --tls-key.
    #[arg(long, default_value = "127.0.0.1:7878")]
    listen: SocketAddr,
    /// TLS: the server's certificate chain (PEM).
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// TLS: the certificate's private key (PEM).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    #[command(flatten)]
    source: WorldSource,
    /// The file holding the secret clients present (else `VOXTERRA_TOKEN`).
    #[arg(long, value_name = "F")]
    token_file: Option<PathBuf>,
    /// Save the world here (atomically) when stopped.
    #[arg(long, value_name = "FILE")]
    save_to: Option<PathBuf>,
    /// Bytes a client is sent per tick at most.
    #[arg(long, default_value_t = 64 * 1024)]
    budget: usize,
    #[command(flatten)]
    web: WebArgs,
}

/// The browser viewer's listener.
#[derive(clap::Args, Debug)]
pub(crate) struct WebArgs {
    /// Serve the browser viewer on this address too (loopback only), with the same token.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// The viewer's page: the bundle `cargo xtask web` makes.
    #[arg(long, value_name = "DIR", default_value = default_bundle())]
    web: PathBuf,
}

/// The bundle `cargo xtask web` makes in this checkout.
fn default_bundle() -> &'static str {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../web/dist")
}

/// `voxterra view`.
#[derive(clap::Args, Debug)]
pub(crate) struct ViewArgs {
    #[command(flatten)]
    source: WorldSource,
    /// The viewer's address (loopback only).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    http: SocketAddr,
    /// The viewer's page: the bundle `cargo xtask web` makes.
    #[arg(long, value_name = "DIR", default_value = default_bundle())]
    web: PathBuf,
    /// Also serve game clients (`voxterra join`) here, with the session's token (`VOXTERRA_TOKEN`,
    /// or the token file, when given; else a fresh one).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// The file holding the session's secret (else `VOXTERRA_TOKEN`, else a fresh random one).
    #[arg(long, value_name = "F")]
    token_file: Option<PathBuf>,
    /// Save the world here (atomically) when stopped.
    #[arg(long, value_name = "FILE")]
    save_to: Option<PathBuf>,
}

/// The world a server hosts: with --db every edit is committed to the database before its reply
/// goes out.
fn hosted(source: &WorldSource) -> anyhow::Result<voxterra_net::Hosted> {
    Ok(match &source.db {
        Some(path) => {
            let db: Box<dyn voxterra::chunk_db::ChunkDb> = Box::new(
                voxterra::chunk_db::RedbChunkDb::open(path)
                    .with_context(|| format!("opening {}", path.display()))?,
            );
            voxterra::DurableTerrain::open(
                db,
                voxterra::TerrainConfig::default(),
                voxterra::chunk_db::Durability::Immediate,
            )?
            .into()
        }
        None => source.terrain(false)?.into(),
    })
}

/// A fresh secret: 128 random bits as hex.
fn fresh_token() -> anyhow::Result<Vec<u8>> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).map_err(|e| anyhow::anyhow!("the operating system's random source: {e}"))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect::<String>().into_bytes())
}

pub(crate) fn view_cmd(args: &ViewArgs) -> anyhow::Result<()> {
    let token = match (&args.token_file, std::env::var_os("VOXTERRA_TOKEN")) {
        (None, None) => fresh_token()?,
        _ => token(&args.token_file)?,
    };
    let view = voxterra_net::ViewConfig::new(args.http, &args.web);
    let config = ServerConfig { token, view: Some(view), ..ServerConfig::default() };
    let hosted = match &args.source.db {
        Some(_) => hosted(&args.source)?,
        None => {
            // What a dig cuts loose falls, as a body the page sees.
            let mut t = args.source.terrain(false)?;
            t.reconfigure(voxterra::TerrainConfig {
                detach: Some(voxterra::DetachConfig::default()),
                ..t.config()
            })?;
            t.into()
        }
    };
    run_server(hosted, args.listen, config, args.save_to.as_deref())
}

/// A line of the server's log on standard output; a closed output does not stop the server.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, $($t)*).and_then(|()| out.flush());
    }};
}

pub(crate) fn serve_cmd(args: &ServeArgs) -> anyhow::Result<()> {
    let token = token(&args.token_file)?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(TlsServer::from_pem_files(cert, key)?),
        _ => None,
    };
    let view = args.web.http.map(|http| voxterra_net::ViewConfig::new(http, &args.web.web));
    let config = ServerConfig { token, budget: args.budget, tls, view, ..ServerConfig::default() };
    run_server(hosted(&args.source)?, args.listen, config, args.save_to.as_deref())
}

/// Runs a server until SIGINT or SIGTERM, logging its events; saves the world to `save_to` after.
/// With a viewer, prints the page's URL once, the token in its fragment (never in a log line).
fn run_server(
    terrain: voxterra_net::Hosted,
    listen: SocketAddr,
    config: ServerConfig,
    save_to: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let rt = tokio::runtime::Runtime::new().context("starting the runtime")?;
    rt.block_on(async {
        let token = String::from_utf8_lossy(&config.token).into_owned();
        let mut server = serve(terrain, listen, config).await?;
        say!("listening on {}", server.local_addr());
        if let Some(http) = server.http_addr() {
            let fragment: String = token
                .bytes()
                .map(
                    |b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") },
                )
                .collect();
            say!("open http://{http}/#token={fragment}");
        }
        let stop = async {
            #[cfg(unix)]
            {
                let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
                tokio::select! {
                    r = tokio::signal::ctrl_c() => r,
                    _ = term.recv() => Ok(()),
                }
            }
            #[cfg(not(unix))]
            tokio::signal::ctrl_c().await
        };
        tokio::pin!(stop);
        loop {
            tokio::select! {
                r = &mut stop => { r.context("waiting for a signal")?; break; }
                e = server.events.recv() => match e {
                    Some(ServerEvent::Joined { session, resumed, addr }) => {
                        say!("{}  {session:016x} from {addr}", if resumed { "resumed" } else { "joined " })
                    }
                    Some(ServerEvent::Refused { addr, why }) => say!("refused {addr}: {why:?}"),
                    Some(ServerEvent::Left { session, why }) => say!("left    {session:016x}: {why}"),
                    Some(ServerEvent::Edit { session, result }) => say!("edit    {session:016x}: {result:?}"),
                    None => break,
                }
            }
        }
        say!("stopping");
        let terrain = server.shutdown().await;
        if let Some(path) = save_to {
            terrain.save(path).with_context(|| format!("saving {}", path.display()))?;
            say!("saved {}", path.display());
        }
        Ok(())
    })
}

/// `voxterra join`.
#[derive(clap::Args, Debug)]
pub(crate) struct JoinArgs {
    /// The server's address.
    addr: SocketAddr,
    /// The file holding the secret (else `VOXTERRA_TOKEN`).
    #[arg(long, value_name = "F")]
    token_file: Option<PathBuf>,
    /// TLS: the certificates to trust (PEM; a self-signed server's own will do). Needed for any
    /// address but loopback.
    #[arg(long, value_name = "PEM")]
    tls_ca: Option<PathBuf>,
    /// TLS: the name the server's certificate carries.
    #[arg(long, default_value = "localhost")]
    tls_name: String,
    /// Where the viewer starts, world units.
    #[arg(long, value_parser = parse_point, allow_hyphen_values = true, default_value = "256,80,256")]
    viewer: [f32; 3],
    /// How the viewer moves: `still`, or a `circle` of 32 units around its start at 8 units/s.
    #[arg(long, default_value = "circle")]
    path: String,
    /// How long to stay, seconds.
    #[arg(long, default_value_t = 10.0)]
    seconds: f32,
    /// Edits a second (small craters and hills near the viewer).
    #[arg(long, default_value_t = 0.0)]
    edit_rate: f32,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(serde::Serialize, Debug)]
struct JoinReport {
    session: String,
    seconds: f64,
    bytes: u64,
    bytes_per_second: f64,
    first_ready_ms: Option<f64>,
    ready_regions: usize,
    edits_made: u32,
    edits_confirmed: u32,
    edits_refused: u32,
    regions_compared: usize,
    regions_differ: usize,
}

pub(crate) fn join_cmd(args: &JoinArgs) -> anyhow::Result<()> {
    let token = token(&args.token_file)?;
    if !(args.seconds.is_finite() && args.seconds > 0.0 && args.seconds <= 86_400.0) {
        bail!("--seconds must be in (0, 86400]");
    }
    if !(args.edit_rate.is_finite() && (0.0..=100.0).contains(&args.edit_rate)) {
        bail!("--edit-rate must be in [0, 100]");
    }
    let circle = match args.path.as_str() {
        "circle" => true,
        "still" => false,
        other => bail!("--path is circle or still, not {other:?}"),
    };
    let rt = tokio::runtime::Runtime::new().context("starting the runtime")?;
    let report = rt.block_on(async {
        let start = Instant::now();
        let wait = Duration::from_secs(10);
        let mut c = match &args.tls_ca {
            Some(ca) => {
                Client::connect_tls(args.addr, &TlsClient::from_pem_file(ca, &args.tls_name)?, &token, wait)
                    .await?
            }
            None => Client::connect(args.addr, &token, wait).await?,
        };
        let [x, y, z] = args.viewer;
        let (mut made, mut confirmed, mut refused) = (0u32, 0u32, 0u32);
        let mut first_ready = None;
        let mut next_edit = 0.0f32;
        let tick = Duration::from_millis(50);
        while start.elapsed().as_secs_f32() < args.seconds {
            let t = start.elapsed().as_secs_f32();
            let a = if circle { t * 8.0 / 32.0 } else { 0.0 };
            let v = Point3::new(x + 32.0 * a.cos() - if circle { 32.0 } else { 0.0 }, y, z + 32.0 * a.sin());
            c.set_viewers(&[v]).await?;
            if args.edit_rate > 0.0 && t >= next_edit {
                next_edit += 1.0 / args.edit_rate;
                let op = if made % 2 == 0 { BrushOp::Subtract } else { BrushOp::Add(materials::ROCK) };
                let center = Point3::new(v.x + 6.0, v.y - 30.0, v.z);
                c.edit(&Brush { shape: BrushShape::Sphere { center, radius: 2.5 }, op }).await?;
                made += 1;
            }
            for (_, r) in c.pump(tick).await? {
                if r.is_ok() { confirmed += 1 } else { refused += 1 }
            }
            if first_ready.is_none() && c.replica().ready_regions().next().is_some() {
                first_ready = Some(start.elapsed().as_secs_f64() * 1e3);
            }
        }
        for (_, r) in c.pump(Duration::from_millis(300)).await? {
            if r.is_ok() { confirmed += 1 } else { refused += 1 }
        }
        let check = c.check(Duration::from_secs(10)).await?;
        let seconds = start.elapsed().as_secs_f64();
        Ok::<_, anyhow::Error>(JoinReport {
            session: format!("{:016x}", c.session()),
            seconds,
            bytes: c.bytes_in(),
            bytes_per_second: c.bytes_in() as f64 / seconds,
            first_ready_ms: first_ready,
            ready_regions: c.replica().ready_regions().count(),
            edits_made: made,
            edits_confirmed: confirmed,
            edits_refused: refused,
            regions_compared: check.compared,
            regions_differ: check.differ,
        })
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("session          {}", report.session);
        println!("time             {:.1} s", report.seconds);
        println!("bytes            {} ({:.0} B/s)", report.bytes, report.bytes_per_second);
        println!(
            "first ready      {}",
            report.first_ready_ms.map_or("never".into(), |m| format!("{m:.0} ms"))
        );
        println!("ready regions    {}", report.ready_regions);
        println!(
            "edits            {} made, {} confirmed, {} refused",
            report.edits_made, report.edits_confirmed, report.edits_refused
        );
        println!("regions compared {}, differ {}", report.regions_compared, report.regions_differ);
    }
    if report.regions_differ > 0 {
        bail!("{} regions differ from the server's", report.regions_differ);
    }
    if report.regions_compared == 0 {
        bail!("the client holds no region ready: nothing came near its viewer");
    }
    Ok(())
}
