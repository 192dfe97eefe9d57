//! `voxterra loadtest`: a server and many clients on sockets, or the clients alone against
//! another process's server.

use crate::net_cmd::token;
use crate::source::WorldSource;
use anyhow::{Context, bail};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use voxterra::core::nalgebra::Point3;
use voxterra::core::{Region, materials};
use voxterra::{Brush, BrushOp, BrushShape};
use voxterra_net::{Client, ServerConfig, TlsClient, serve};

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
    /// Run only the clients, against this server (serving the same world as --in, or --size and
    /// --seed); the token from --token-file or `VOXTERRA_TOKEN`. Without it the load test starts
    /// its own server on loopback.
    #[arg(long, conflicts_with = "hostile")]
    server: Option<SocketAddr>,
    /// With --server: the file holding the secret (else `VOXTERRA_TOKEN`).
    #[arg(long, value_name = "F", requires = "server")]
    token_file: Option<PathBuf>,
    /// With --server: TLS, trusting these certificates (PEM).
    #[arg(long, value_name = "PEM", requires = "server")]
    tls_ca: Option<PathBuf>,
    /// With --tls-ca: the name the server's certificate carries.
    #[arg(long, default_value = "localhost")]
    tls_name: String,
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
    /// The server's tick time (none against another process's server).
    tick_p50_ms: Option<f64>,
    tick_p99_ms: Option<f64>,
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
    let token = if args.server.is_some() { token(&args.token_file)? } else { b"loadtest".to_vec() };
    let tls = match &args.tls_ca {
        Some(ca) => Some(TlsClient::from_pem_file(ca, &args.tls_name)?),
        None => None,
    };
    let config =
        ServerConfig { token: token.clone(), max_clients: args.clients + 8, ..ServerConfig::default() };
    let half = config.replication.full_radius * 0.5;
    let rt = tokio::runtime::Runtime::new().context("starting the runtime")?;
    let report = rt.block_on(async {
        let server = match args.server {
            Some(_) => None,
            None => Some(serve(terrain, "127.0.0.1:0".parse()?, config).await?),
        };
        let addr = match (&server, args.server) {
            (Some(s), _) => s.local_addr(),
            (None, Some(a)) => a,
            (None, None) => unreachable!("a server of our own or another's"),
        };
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
            let tls = tls.clone();
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(join_at).await;
                let joined = Instant::now();
                let wait = Duration::from_secs(10);
                let mut c = match &tls {
                    Some(tls) => Client::connect_tls(addr, tls, &token, wait).await?,
                    None => Client::connect(addr, &token, wait).await?,
                };
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
        let mut ticks: Vec<f64> = Vec::new();
        if let Some(server) = server {
            ticks = server.tick_times().iter().map(|d| d.as_secs_f64() * 1e3).collect();
            server.shutdown().await;
        }
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
            tick_p50_ms: percentile(&mut ticks, 0.5),
            tick_p99_ms: percentile(&mut ticks, 0.99),
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
        let s = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
        println!(
            "tick ms (p50 / p99)     {} / {} over {} ticks",
            s(report.tick_p50_ms),
            s(report.tick_p99_ms),
            report.ticks
        );
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
