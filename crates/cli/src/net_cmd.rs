//! `voxterra serve` and `voxterra join`: a server streaming a world to clients over TCP, and a
//! client that joins it, moves, edits, and checks what it holds against the server.

use crate::render_cmd::parse_point;
use crate::source::WorldSource;
use anyhow::{Context, bail};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use voxterra::core::nalgebra::Point3;
use voxterra::core::{Region, materials};
use voxterra::{Brush, BrushOp, BrushShape};
use voxterra_net::{Client, ServerConfig, ServerEvent, TlsClient, TlsServer, serve};

/// Where the secret token comes from: a file, else the `VOXTERRA_TOKEN` environment variable
/// (never a flag: flags show in `ps`).
fn token(file: &Option<PathBuf>) -> anyhow::Result<Vec<u8>> {
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
    let terrain = args.source.terrain(false)?;
    let rt = tokio::runtime::Runtime::new().context("starting the runtime")?;
    rt.block_on(async {
        let tls = match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(TlsServer::from_pem_files(cert, key)?),
            _ => None,
        };
        let config = ServerConfig { token, budget: args.budget, tls, ..ServerConfig::default() };
        let mut server = serve(terrain, args.listen, config).await?;
        say!("listening on {}", server.local_addr());
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
        if let Some(path) = &args.save_to {
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

/// `voxterra loadtest`.
#[derive(clap::Args, Debug)]
pub(crate) struct LoadtestArgs {
    /// Clients, joining evenly over the first 5 seconds.
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// How long the run lasts, seconds.
    #[arg(long, default_value_t = 30.0)]
    seconds: f32,
    /// Edits a second per client.
    #[arg(long, default_value_t = 1.0)]
    edit_rate: f32,
    /// Share of the clients whose connection is killed mid-run; each reconnects and resumes.
    #[arg(long, default_value_t = 0.0)]
    kill_share: f32,
    /// Four hostile connections beside the clients: garbage, a 4 GiB length prefix, a half frame
    /// held open (slowloris), an edit flood.
    #[arg(long)]
    hostile: bool,
    #[command(flatten)]
    source: WorldSource,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// An edit the server confirmed, as the load test's clients look for it.
struct Confirmed {
    seq: u64,
    region: voxterra::core::Region,
    at: Point3<f32>,
    when: Instant,
    by: usize,
}

/// One load-test client's figures.
#[derive(Debug, Default)]
struct ClientFigures {
    resumed: bool,
    /// Per edit seen (another client's, near this one's viewer): from its confirmation to its
    /// region ready here with it, seconds.
    visible_s: Vec<f64>,
    full_detail_s: Option<f64>,
    bytes_per_second: f64,
    edits_made: u32,
    edits_confirmed: u32,
    compared: usize,
    differ: usize,
}

#[derive(serde::Serialize, Debug)]
struct LoadReport {
    clients: usize,
    killed: usize,
    resumed: usize,
    hostile: bool,
    seconds: f64,
    tick_p50_ms: f64,
    tick_p99_ms: f64,
    ticks: usize,
    full_detail_p50_s: Option<f64>,
    full_detail_p99_s: Option<f64>,
    edit_visible_p50_ms: Option<f64>,
    edit_visible_p99_ms: Option<f64>,
    edit_sightings: usize,
    never_full: usize,
    bytes_per_client_per_second: f64,
    edits_made: u32,
    edits_confirmed: u32,
    regions_compared: usize,
    regions_differ: usize,
}

fn percentile(v: &mut [f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[((v.len() - 1) as f64 * q).round() as usize])
}

pub(crate) fn loadtest_cmd(args: &LoadtestArgs) -> anyhow::Result<()> {
    if args.clients == 0 || args.clients > 4096 {
        bail!("--clients must be in 1..=4096");
    }
    if !(args.seconds.is_finite() && args.seconds > 0.0 && args.seconds <= 3600.0) {
        bail!("--seconds must be in (0, 3600]");
    }
    if !(args.edit_rate.is_finite() && (0.0..=10.0).contains(&args.edit_rate)) {
        bail!("--edit-rate must be in [0, 10]");
    }
    if !(args.kill_share.is_finite() && (0.0..=1.0).contains(&args.kill_share)) {
        bail!("--kill-share must be in [0, 1]");
    }
    let terrain = args.source.terrain(args.json)?;
    let extent = terrain.extent().context("the world is empty")?;
    let scale = terrain.scale();
    let token = b"loadtest".to_vec();
    let config =
        ServerConfig { token: token.clone(), max_clients: args.clients + 8, ..ServerConfig::default() };
    let half = config.replication.full_radius * 0.5;
    let rt = tokio::runtime::Runtime::new().context("starting the runtime")?;
    let report = rt.block_on(async {
        let server = serve(terrain, "127.0.0.1:0".parse()?, config).await?;
        let addr = server.local_addr();
        let start = Instant::now();
        let mut tasks = Vec::new();
        let hostile =
            if args.hostile { Some(tokio::spawn(hostile_connections(addr, token.clone()))) } else { None };
        let killed = (args.clients as f32 * args.kill_share).round() as usize;
        // Confirmed edits: the sequence they made, their box, where, and when confirmed.
        let edits: Arc<Mutex<Vec<Confirmed>>> = Arc::default();
        let size = extent.size();
        let (lo, hi) = (extent.min(), extent.max());
        for i in 0..args.clients {
            let token = token.clone();
            let join_at = Duration::from_secs_f64(5.0 * i as f64 / args.clients as f64);
            let (seconds, edit_rate) = (args.seconds as f64, args.edit_rate);
            // Each client circles its own center at 4-12 units/s, 60 units above the floor.
            let fi = i as f32;
            let cx = lo.x as f32 + size[0] as f32 * (0.25 + 0.5 * ((fi * 0.618).fract()));
            let cz = lo.z as f32 + size[2] as f32 * (0.25 + 0.5 * ((fi * 0.382).fract()));
            let y = lo.y as f32 + (hi.y - lo.y) as f32 * 0.6;
            let speed = 4.0 + 8.0 * (fi * 0.754).fract();
            // The killed ones lose their connection halfway through the run, and reconnect.
            let kill_at = (i < killed).then_some(args.seconds as f64 * 0.5);
            let edits = edits.clone();
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(join_at).await;
                let joined = Instant::now();
                let mut c = Client::connect(addr, &token, Duration::from_secs(10)).await?;
                let mut f = ClientFigures::default();
                let mut next_edit = 0.0f64;
                let mut kill_at = kill_at;
                let mut asked: Vec<Point3<f32>> = Vec::new();
                let (mut looked, mut pending) = (None::<usize>, Vec::<usize>::new());
                while start.elapsed().as_secs_f64() < seconds {
                    if kill_at.is_some_and(|k| start.elapsed().as_secs_f64() >= k) {
                        kill_at = None;
                        c.close().await;
                        let (again, resumed) = c.reconnect(Duration::from_secs(10)).await?;
                        c = again;
                        f.resumed = resumed;
                    }
                    let t = joined.elapsed().as_secs_f32();
                    let a = t * speed / 24.0;
                    let v = Point3::new(cx + 24.0 * a.cos(), y, cz + 24.0 * a.sin());
                    c.set_viewers(&[v]).await?;
                    if edit_rate > 0.0 && f64::from(t) >= next_edit {
                        next_edit += 1.0 / f64::from(edit_rate);
                        let op = if f.edits_made % 2 == 0 {
                            BrushOp::Subtract
                        } else {
                            BrushOp::Add(materials::ROCK)
                        };
                        let center = Point3::new(v.x, y - 20.0, v.z);
                        c.edit(&Brush { shape: BrushShape::Sphere { center, radius: 2.0 }, op }).await?;
                        asked.push(center);
                        f.edits_made += 1;
                    }
                    for (id, r) in c.pump(Duration::from_millis(50)).await? {
                        f.edits_confirmed += u32::from(r.is_ok());
                        if let (Ok(seq), Some(&at)) = (r, asked.get(id as usize)) {
                            let r = Region::from_min_size(
                                scale.point_to_voxels(&at).map(|c| c.floor() as i32 - 3),
                                [7, 7, 7],
                            );
                            if let (Ok(r), Ok(mut e)) = (r, edits.lock()) {
                                e.push(Confirmed { seq, region: r, at, when: Instant::now(), by: i });
                            }
                        }
                    }
                    // Others' edits near this viewer when first looked at, made after it
                    // reached full detail (so their region is held): visible once that region
                    // is ready here at their sequence or later.
                    if let (Some(_), Ok(e)) = (f.full_detail_s, edits.lock()) {
                        let now = Instant::now();
                        for k in looked.unwrap_or(e.len())..e.len() {
                            let x = &e[k];
                            if x.by != i && (x.at - v).norm() <= half {
                                pending.push(k);
                            }
                        }
                        looked = Some(e.len());
                        pending.retain(|&k| {
                            let x = &e[k];
                            let ready =
                                c.replica().server_sequence() >= x.seq && c.replica().is_ready(&x.region);
                            if ready {
                                f.visible_s.push(now.duration_since(x.when).as_secs_f64());
                            }
                            !ready
                        });
                    }
                    if f.full_detail_s.is_none()
                        && crate::serve_sim::near_in(extent, scale, v, half)
                            .is_some_and(|r| c.replica().is_ready(&r))
                    {
                        f.full_detail_s = Some(joined.elapsed().as_secs_f64());
                    }
                }
                c.pump(Duration::from_millis(300)).await?;
                let check = c.check(Duration::from_secs(20)).await?;
                f.compared = check.compared;
                f.differ = check.differ;
                f.bytes_per_second = c.bytes_in() as f64 / joined.elapsed().as_secs_f64();
                Ok::<_, voxterra_net::NetError>(f)
            }));
        }
        let mut figures = Vec::new();
        for t in tasks {
            figures.push(t.await.context("a client task")??);
        }
        if let Some(h) = hostile {
            h.abort();
        }
        let seconds = start.elapsed().as_secs_f64();
        let mut ticks: Vec<f64> = server.tick_times().iter().map(|d| d.as_secs_f64() * 1e3).collect();
        server.shutdown().await;
        let mut full: Vec<f64> = figures.iter().filter_map(|f| f.full_detail_s).collect();
        let mut visible: Vec<f64> =
            figures.iter().flat_map(|f| f.visible_s.iter().map(|s| s * 1e3)).collect();
        Ok::<_, anyhow::Error>(LoadReport {
            clients: args.clients,
            killed,
            resumed: figures.iter().filter(|f| f.resumed).count(),
            hostile: args.hostile,
            seconds,
            ticks: ticks.len(),
            tick_p50_ms: percentile(&mut ticks, 0.5).unwrap_or(0.0),
            tick_p99_ms: percentile(&mut ticks, 0.99).unwrap_or(0.0),
            never_full: figures.len() - full.len(),
            full_detail_p50_s: percentile(&mut full, 0.5),
            full_detail_p99_s: percentile(&mut full, 0.99),
            edit_sightings: visible.len(),
            edit_visible_p50_ms: percentile(&mut visible, 0.5),
            edit_visible_p99_ms: percentile(&mut visible, 0.99),
            bytes_per_client_per_second: figures.iter().map(|f| f.bytes_per_second).sum::<f64>()
                / figures.len() as f64,
            edits_made: figures.iter().map(|f| f.edits_made).sum(),
            edits_confirmed: figures.iter().map(|f| f.edits_confirmed).sum(),
            regions_compared: figures.iter().map(|f| f.compared).sum(),
            regions_differ: figures.iter().map(|f| f.differ).sum(),
        })
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "clients                 {} ({} killed, {} resumed{})",
            report.clients,
            report.killed,
            report.resumed,
            if report.hostile { ", 4 hostile beside" } else { "" }
        );
        println!(
            "tick ms (p50 / p99)     {:.2} / {:.2} over {} ticks",
            report.tick_p50_ms, report.tick_p99_ms, report.ticks
        );
        let s = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
        println!(
            "full detail s (p50/p99) {} / {} ({} never)",
            s(report.full_detail_p50_s),
            s(report.full_detail_p99_s),
            report.never_full
        );
        println!(
            "edit visible ms (p50/p99) {} / {} ({} sightings)",
            s(report.edit_visible_p50_ms),
            s(report.edit_visible_p99_ms),
            report.edit_sightings
        );
        println!("bytes per client per s  {:.0}", report.bytes_per_client_per_second);
        println!("edits                   {} made, {} confirmed", report.edits_made, report.edits_confirmed);
        println!(
            "regions                 {} compared, {} differ",
            report.regions_compared, report.regions_differ
        );
    }
    if report.regions_differ > 0 {
        bail!("{} regions differ from the server's", report.regions_differ);
    }
    Ok(())
}

/// Four hostile connections, each repeated until aborted: garbage bytes, a 4 GiB length prefix, a
/// half frame held open, and a client flooding edit requests without reading.
async fn hostile_connections(addr: SocketAddr, token: Vec<u8>) {
    use tokio::io::AsyncWriteExt;
    use voxterra_net::protocol::{ClientFrame, PROTOCOL_VERSION};
    let garbage = async {
        loop {
            if let Ok(mut s) = tokio::net::TcpStream::connect(addr).await {
                let _ = s.write_all(&[9, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5]).await;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let huge = async {
        loop {
            if let Ok(mut s) = tokio::net::TcpStream::connect(addr).await {
                let _ = s.write_all(&[0xff, 0xff, 0xff, 0xff, 1]).await;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let slowloris = async {
        loop {
            if let Ok(mut s) = tokio::net::TcpStream::connect(addr).await {
                let _ = s.write_all(&[200, 0, 0, 0, 1]).await;
                tokio::time::sleep(Duration::from_secs(10)).await;
            }
        }
    };
    let flood = async {
        loop {
            if let Ok(mut s) = tokio::net::TcpStream::connect(addr).await {
                let mut bytes = Vec::new();
                ClientFrame::Hello { version: PROTOCOL_VERSION, token: token.clone(), resume: 0 }
                    .encode(&mut bytes);
                let brush = Brush {
                    shape: BrushShape::Sphere { center: Point3::new(64.0, 40.0, 64.0), radius: 2.0 },
                    op: BrushOp::Add(materials::ROCK),
                };
                for id in 0..1000 {
                    ClientFrame::Edit { id, brush }.encode(&mut bytes);
                }
                while s.write_all(&bytes[..]).await.is_ok() {
                    bytes.clear();
                    for id in 0..1000 {
                        ClientFrame::Edit { id, brush }.encode(&mut bytes);
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::join!(garbage, huge, slowloris, flood);
}
