//! The browser viewer over real sockets: the HTTP side refuses what is not its page, the
//! WebSocket refuses a page without the token and drops one that misbehaves, meshes stream for a
//! camera and follow edits; and the page itself in a real headless Chromium (Debian's, driven
//! over the DevTools protocol): it draws terrain, a click digs, and its console stays clean.
//!
//! Needs the page's bundle (`cargo xtask web`) and Chromium (`.ci/browser-deps`); CI has both.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use voxterra::core::Ray;
use voxterra::prelude::*;
use voxterra::worldgen::GenParams;
use voxterra_net::view::wire::{DROP, MESH, PIECE, POSES, ViewText, decode_mesh};
use voxterra_net::{ServerConfig, ServerHandle, ViewConfig, serve};

const TOKEN: &str = "viewer-test-token";

fn bundle() -> PathBuf {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../web/dist"));
    assert!(dir.join("index.html").is_file(), "the viewer's page is not built: run `cargo xtask web`");
    dir
}

async fn server(size: [u32; 3]) -> ServerHandle {
    let terrain = Terrain::generate(&GenParams::new(7, size), TerrainConfig::default()).unwrap();
    let view = ViewConfig::new("127.0.0.1:0".parse().unwrap(), bundle());
    let config = ServerConfig { token: TOKEN.into(), view: Some(view), ..ServerConfig::default() };
    serve(terrain, "127.0.0.1:0".parse().unwrap(), config).await.unwrap()
}

/// One raw HTTP request; the status code answered.
async fn status(addr: SocketAddr, target: &str) -> u16 {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tcp.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8_lossy(&out);
    text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

type Ws = tokio_tungstenite::WebSocketStream<TcpStream>;

async fn socket(addr: SocketAddr) -> Ws {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let req = format!("ws://{addr}/ws").into_client_request().unwrap();
    tokio_tungstenite::client_async(req, tcp).await.unwrap().0
}

/// The next data message within `limit` (`None`: closed or nothing came).
async fn next_data(ws: &mut Ws, limit: Duration) -> Option<Message> {
    let end = Instant::now() + limit;
    loop {
        let left = end.checked_duration_since(Instant::now())?;
        match tokio::time::timeout(left, ws.next()).await {
            Ok(Some(Ok(m @ (Message::Text(_) | Message::Binary(_))))) => return Some(m),
            Ok(Some(Ok(Message::Close(_)) | Err(_)) | None) | Err(_) => return None,
            Ok(Some(Ok(_))) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_side_serves_only_its_page() {
    let s = server([64, 48, 64]).await;
    let http = s.http_addr().unwrap();
    assert_eq!(status(http, "/").await, 200);
    assert_eq!(status(http, "/app.js").await, 200);
    assert_eq!(status(http, "/index.html?x=1").await, 200);
    assert_eq!(status(http, "/missing.js").await, 404);
    for bad in [
        "/../Cargo.toml",
        "/..%2F..%2FCargo.toml",
        "/%2e%2e/%2e%2e/Cargo.toml",
        "/..\\Cargo.toml",
        "//etc/passwd",
    ] {
        assert_eq!(status(http, bad).await, 400, "{bad}");
    }
    assert_eq!(status(http, "http://127.0.0.1/index.html").await, 400);
    // A head past its cap is refused without waiting for its end.
    let mut tcp = TcpStream::connect(http).await.unwrap();
    let long = format!("GET / HTTP/1.1\r\nX: {}\r\n", "a".repeat(20_000));
    let _ = tcp.write_all(long.as_bytes()).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut out)).await.unwrap();
    assert!(String::from_utf8_lossy(&out).starts_with("HTTP/1.1 431"));
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_without_the_token_get_nothing_and_a_bad_page_costs_only_itself() {
    let s = server([96, 48, 96]).await;
    let http = s.http_addr().unwrap();
    // No token, a wrong one, a token that is not first: closed with nothing sent.
    let mut none = socket(http).await;
    none.send(Message::text(json!({"camera": [1.0, 2.0, 3.0]}).to_string())).await.unwrap();
    assert!(next_data(&mut none, Duration::from_secs(3)).await.is_none());
    let mut wrong = socket(http).await;
    wrong.send(Message::text(json!({"token": "nope"}).to_string())).await.unwrap();
    assert!(next_data(&mut wrong, Duration::from_secs(3)).await.is_none());
    let mut binary = socket(http).await;
    binary.send(Message::binary(TOKEN.as_bytes().to_vec())).await.unwrap();
    assert!(next_data(&mut binary, Duration::from_secs(3)).await.is_none());

    // A good page gets its hello, then meshes for its camera.
    let mut good = socket(http).await;
    good.send(Message::text(json!({"token": TOKEN}).to_string())).await.unwrap();
    let Some(Message::Text(hello)) = next_data(&mut good, Duration::from_secs(5)).await else {
        panic!("no hello")
    };
    let ViewText::Hello(hello) = serde_json::from_str(&hello).unwrap() else { panic!("not a hello") };
    assert!(hello.world.is_some() && !hello.materials.is_empty());
    good.send(Message::text(json!({"camera": [48.0, 40.0, 48.0]}).to_string())).await.unwrap();

    // A misbehaving page: a message past the cap, then one that does not parse: each is closed.
    let mut big = socket(http).await;
    big.send(Message::text(json!({"token": TOKEN}).to_string())).await.unwrap();
    assert!(matches!(next_data(&mut big, Duration::from_secs(5)).await, Some(Message::Text(_))));
    let _ = big.send(Message::text("x".repeat(1 << 20))).await;
    let mut junk = socket(http).await;
    junk.send(Message::text(json!({"token": TOKEN}).to_string())).await.unwrap();
    assert!(matches!(next_data(&mut junk, Duration::from_secs(5)).await, Some(Message::Text(_))));
    junk.send(Message::text("{\"camera\": [1, 2]}")).await.unwrap();
    for ws in [&mut big, &mut junk] {
        let end = Instant::now() + Duration::from_secs(10);
        while next_data(ws, Duration::from_secs(10)).await.is_some() {
            assert!(Instant::now() < end, "a misbehaving page was not closed");
        }
    }

    // The good page still gets its meshes: they decode, and an edit near the camera re-makes some.
    let mut triangles = 0;
    let end = Instant::now() + Duration::from_secs(20);
    while triangles == 0 && Instant::now() < end {
        if let Some(Message::Binary(b)) = next_data(&mut good, Duration::from_secs(5)).await
            && b[0] == MESH
        {
            let m = decode_mesh(&b).unwrap();
            assert_eq!((m.positions.len(), m.normals.len()), (m.materials.len(), m.materials.len()));
            assert!(m.indices.iter().all(|&i| (i as usize) < m.positions.len()));
            triangles += m.indices.len() / 3;
        }
    }
    assert!(triangles > 0, "no mesh came");
    // Drain what the first view sends, then dig.
    while next_data(&mut good, Duration::from_millis(500)).await.is_some() {}
    let dig = json!({"edit": {"at": [48.0, 24.0, 48.0], "radius": 4.0, "raise": false}});
    good.send(Message::text(dig.to_string())).await.unwrap();
    let (mut meshes, mut drops, mut answered) = (0, 0, false);
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end && !(meshes > 0 && answered) {
        match next_data(&mut good, Duration::from_secs(2)).await {
            Some(Message::Binary(b)) if b[0] == MESH => meshes += 1,
            Some(Message::Binary(b)) if b[0] == DROP => drops += 1,
            Some(Message::Text(t)) => {
                if let Ok(ViewText::Stats(s)) = serde_json::from_str(&t) {
                    answered |= s.last_edit == Some(Ok(()));
                }
            }
            _ => {}
        }
    }
    assert!(answered, "the edit was not answered");
    assert!(meshes > 0, "the edit re-made no mesh ({drops} drops)");
    s.shutdown().await;
}

/// A poses frame's first body: its half extents and position.
fn first_body(b: &[u8]) -> Option<([f32; 3], [f32; 3])> {
    let f = |o: usize| f32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    (b[0] == POSES && u32::from_le_bytes([b[4], b[5], b[6], b[7]]) > 0 && b.len() >= 56)
        .then(|| ([f(16), f(20), f(24)], [f(28), f(32), f(36)]))
}

/// A box dropped from a page falls and comes to rest on the ground where the terrain's own ray
/// finds it (a ball would roll: rapier has no rolling resistance); a player's edit over the game port reaches the page as new meshes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_bodies_rest_on_the_ground_and_players_edits_reach_pages() {
    let params = GenParams::new(7, [96, 48, 96]);
    let s = server([96, 48, 96]).await;
    let mut page = socket(s.http_addr().unwrap()).await;
    page.send(Message::text(json!({"token": TOKEN}).to_string())).await.unwrap();
    assert!(matches!(next_data(&mut page, Duration::from_secs(5)).await, Some(Message::Text(_))));
    page.send(Message::text(json!({"camera": [48.0, 40.0, 48.0]}).to_string())).await.unwrap();
    page.send(Message::text(json!({"drop": {"at": [40.0, 46.0, 52.0], "shape": "box"}}).to_string()))
        .await
        .unwrap();
    let (mut last, mut still_since) = (None::<[f32; 3]>, Instant::now());
    let start = Instant::now();
    let (half, rest) = loop {
        assert!(start.elapsed() < Duration::from_secs(30), "the box did not come to rest: {last:?}");
        let Some(Message::Binary(b)) = next_data(&mut page, Duration::from_secs(5)).await else { continue };
        let Some((half, p)) = first_body(&b) else { continue };
        if last.is_some_and(|l| (0..3).all(|a| (l[a] - p[a]).abs() < 1e-3)) {
            if still_since.elapsed() > Duration::from_secs(1) {
                break (half, p);
            }
        } else {
            still_since = Instant::now();
        }
        last = Some(p);
    };
    let terrain = Terrain::generate(&params, TerrainConfig::default()).unwrap();
    let down = Ray::new(Point3::new(rest[0], 100.0, rest[2]), Vector3::new(0.0, -1.0, 0.0));
    let ground = terrain.cast_ray(&down, 200.0).unwrap().expect("ground under the box").point.y;
    // However it lies, its center is no farther above the ground than half its diagonal.
    let (above, reach) = (rest[1] - ground, Vector3::from(half).norm());
    assert!(
        above > 0.0 && above <= reach + 0.05,
        "the box rests {above} over the ground (half diagonal {reach})"
    );

    // A player digs next to the camera: the page gets meshes of the crater made after it.
    let mut player = voxterra_net::Client::connect(s.local_addr(), TOKEN.as_bytes(), Duration::from_secs(5))
        .await
        .unwrap();
    let center = Point3::new(56.0, 22.0, 44.0);
    let dig = BrushShape::Sphere { center, radius: 4.0 };
    player.edit(&Brush { shape: dig, op: BrushOp::Subtract }).await.unwrap();
    let replies = player.pump(Duration::from_millis(500)).await.unwrap();
    assert!(matches!(replies.as_slice(), [(0, Ok(_))]), "{replies:?}");
    let mut meshes = 0;
    let end = Instant::now() + Duration::from_secs(10);
    while meshes == 0 && Instant::now() < end {
        if let Some(Message::Binary(b)) = next_data(&mut page, Duration::from_secs(2)).await
            && let Some(m) = decode_mesh(&b)
        {
            meshes += m.positions.iter().any(|p| (p - center).norm() < 4.5) as usize;
        }
    }
    assert!(meshes > 0, "the player's edit did not reach the page");
    s.shutdown().await;
}

/// A pillar whose base a page digs through: its top falls as a body, its mesh sent first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pieces_an_edit_cuts_loose_fall_as_bodies() {
    use voxterra::core::{MaterialTable, Region, Voxel, VoxelPos, materials};
    let mut store = voxterra::store::VoxelStore::new();
    let mut fill = |min: [i32; 3], size: [u32; 3]| {
        let r = Region::from_min_size(VoxelPos::new(min[0], min[1], min[2]), size).unwrap();
        store.write_box(&r, &vec![Voxel::full(materials::ROCK); r.len().unwrap()]).unwrap();
    };
    fill([0, 0, 0], [48, 8, 48]);
    fill([20, 8, 20], [4, 14, 4]);
    fill([18, 22, 18], [8, 3, 8]);
    let config =
        TerrainConfig { detach: Some(voxterra::DetachConfig::default()), ..TerrainConfig::default() };
    let terrain = Terrain::from_store(store, MaterialTable::default(), config).unwrap();
    let view = ViewConfig::new("127.0.0.1:0".parse().unwrap(), bundle());
    let server_config = ServerConfig { token: TOKEN.into(), view: Some(view), ..ServerConfig::default() };
    let s = serve(terrain, "127.0.0.1:0".parse().unwrap(), server_config).await.unwrap();
    let mut page = socket(s.http_addr().unwrap()).await;
    page.send(Message::text(json!({"token": TOKEN}).to_string())).await.unwrap();
    assert!(matches!(next_data(&mut page, Duration::from_secs(5)).await, Some(Message::Text(_))));
    let dig = json!({"edit": {"at": [22.0, 12.0, 22.0], "radius": 3.5, "raise": false}});
    page.send(Message::text(dig.to_string())).await.unwrap();
    let (mut piece, mut heights) = (None, Vec::new());
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end && heights.len() < 10 {
        let Some(Message::Binary(b)) = next_data(&mut page, Duration::from_secs(5)).await else { continue };
        if b[0] == PIECE {
            let m = decode_mesh(&b[8..]).expect("a piece carries a mesh");
            assert!(!m.indices.is_empty() && m.positions.iter().all(|p| p.coords.norm() < 16.0));
            piece = Some(u32::from_le_bytes([b[4], b[5], b[6], b[7]]));
        } else if b[0] == POSES {
            assert!(piece.is_some(), "a pose before its piece's mesh");
            assert_eq!(b[12], 3, "the body is a piece");
            heights.push(f32::from_le_bytes([b[32], b[33], b[34], b[35]]));
        }
    }
    assert!(heights.len() >= 10 && heights[0] > heights[9], "the piece did not fall: {heights:?}");
    s.shutdown().await;
}

/// The DevTools protocol over a WebSocket, on one page's session.
struct Cdp {
    ws: Ws,
    next: u64,
    session: Option<String>,
    events: Vec<Value>,
}

impl Cdp {
    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = &self.session {
            msg["sessionId"] = json!(s);
        }
        self.ws.send(Message::text(msg.to_string())).await.unwrap();
        loop {
            let m = tokio::time::timeout(Duration::from_secs(30), self.ws.next()).await;
            let Ok(Some(Ok(Message::Text(t)))) = m else { panic!("the browser went away during {method}") };
            let v: Value = serde_json::from_str(&t).unwrap();
            if v["id"] == json!(id) {
                assert!(v.get("error").is_none(), "{method}: {}", v["error"]);
                return v["result"].clone();
            }
            self.events.push(v);
        }
    }

    async fn eval(&mut self, expr: &str) -> Value {
        self.call("Runtime.evaluate", json!({"expression": expr, "returnByValue": true})).await["result"]["value"]
            .clone()
    }

    async fn screenshot(&mut self) -> (u32, u32, Vec<u8>) {
        let r = self.call("Page.captureScreenshot", json!({"format": "png"})).await;
        use base64::Engine as _;
        let png = base64::engine::general_purpose::STANDARD.decode(r["data"].as_str().unwrap()).unwrap();
        let mut reader = png::Decoder::new(std::io::Cursor::new(png)).read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        let channels = info.color_type.samples();
        let rgb = buf[..info.buffer_size()].chunks(channels).flat_map(|p| [p[0], p[1], p[2]]).collect();
        (info.width, info.height, rgb)
    }

    async fn click(&mut self, x: f64, y: f64) {
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            let p = json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1});
            self.call("Input.dispatchMouseEvent", p).await;
        }
    }

    /// Errors the page reported: exceptions, `console.error`, failed loads.
    fn errors(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| {
                let m = e["method"].as_str().unwrap_or("");
                m == "Runtime.exceptionThrown"
                    || (m == "Runtime.consoleAPICalled" && e["params"]["type"] == "error")
                    || (m == "Log.entryAdded" && e["params"]["entry"]["level"] == "error")
            })
            .map(|e| e["params"].to_string())
            .collect()
    }
}

/// A browser process, killed and reaped when dropped (a failed test leaves none behind).
struct Browser(std::process::Child);

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Headless Chromium with WebGL2 on the software rasterizer, its DevTools endpoint.
fn chromium(profile: &std::path::Path) -> (Browser, String) {
    use std::io::BufRead as _;
    let mut child = std::process::Command::new("chromium")
        .args([
            "--headless=new",
            "--no-sandbox",
            "--use-angle=swiftshader",
            "--enable-unsafe-swiftshader",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-quic",
            "--remote-debugging-port=0",
            "--window-size=960,640",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("about:blank")
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("Chromium is not installed: run `.ci/browser-deps`");
    let stderr = child.stderr.take();
    let browser = Browser(child);
    for line in std::io::BufReader::new(stderr.unwrap()).lines() {
        let line = line.unwrap();
        if let Some(url) = line.strip_prefix("DevTools listening on ") {
            return (browser, url.trim().to_owned());
        }
    }
    panic!("Chromium did not open its DevTools endpoint");
}

/// The share of pixels of a box that differ from `bg` (or between two shots) by more than `by`.
fn differing(a: &[u8], b: Option<&[u8]>, w: u32, area: (u32, u32, u32, u32), bg: [u8; 3], by: i32) -> f64 {
    let (x0, y0, x1, y1) = area;
    let mut n = 0;
    for y in y0..y1 {
        for x in x0..x1 {
            let i = 3 * (y * w + x) as usize;
            let other = b.map_or(bg, |b| [b[i], b[i + 1], b[i + 2]]);
            let d: i32 = (0..3).map(|c| (a[i + c] as i32 - other[c] as i32).abs()).sum();
            n += (d > by) as usize;
        }
    }
    n as f64 / ((x1 - x0) * (y1 - y0)) as f64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_draws_the_terrain_digs_drops_a_ball_and_logs_no_error() {
    let s = server([160, 64, 160]).await;
    let url = format!("http://{}/#token={TOKEN}", s.http_addr().unwrap());
    let profile = tempfile::tempdir().unwrap();
    let (browser, endpoint) = chromium(profile.path());
    let host = endpoint.trim_start_matches("ws://").split('/').next().unwrap().to_owned();
    let tcp = TcpStream::connect(host.as_str()).await.unwrap();
    let (ws, _) = tokio_tungstenite::client_async(endpoint.as_str(), tcp).await.unwrap();
    let mut cdp = Cdp { ws, next: 0, session: None, events: Vec::new() };
    let target = cdp.call("Target.createTarget", json!({"url": "about:blank"})).await;
    let attached =
        cdp.call("Target.attachToTarget", json!({"targetId": target["targetId"], "flatten": true})).await;
    cdp.session = Some(attached["sessionId"].as_str().unwrap().to_owned());
    for domain in ["Runtime.enable", "Log.enable", "Page.enable"] {
        cdp.call(domain, json!({})).await;
    }
    let (w, h) = (800u32, 600u32);
    let metrics = json!({"width": w, "height": h, "deviceScaleFactor": 1, "mobile": false});
    cdp.call("Emulation.setDeviceMetricsOverride", metrics).await;
    cdp.call("Page.navigate", json!({"url": url})).await;

    // The first frame with terrain, within 20 s (a timeout, not a goal).
    let start = Instant::now();
    let state = "JSON.stringify(window.voxterraView || null)";
    loop {
        let v: Value = serde_json::from_str(cdp.eval(state).await.as_str().unwrap_or("null")).unwrap();
        if v["triangles"].as_f64().is_some_and(|t| t > 1000.0) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no terrain drawn in 20 s: {v}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Let the first view finish arriving and a few frames draw.
    let mut frames = -1.0;
    loop {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let now = cdp.eval("window.voxterraView.frames").await.as_f64().unwrap();
        if now == frames || start.elapsed() > Duration::from_secs(30) {
            break;
        }
        frames = now;
    }
    let (sw, sh, before) = cdp.screenshot().await;
    assert_eq!((sw, sh), (w, h));
    let sky = [0xb9, 0xd3, 0xee];
    let drawn = differing(&before, None, w, (0, 0, w, h), sky, 24);
    assert!(drawn > 0.2, "only {:.0}% of the picture is not background", drawn * 100.0);
    let shot = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/viewer.png"));
    let file = std::fs::File::create(&shot).unwrap();
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.write_header().unwrap().write_image_data(&before).unwrap();

    // A click at the picture's center digs there: the server answers, meshes change, and the
    // picture around the click differs.
    let frames_before = cdp.eval("window.voxterraView.frames").await.as_f64().unwrap();
    let (cx, cy) = (w / 2, h / 2);
    cdp.click(cx as f64, cy as f64).await;
    let start = Instant::now();
    loop {
        let v: Value = serde_json::from_str(cdp.eval(state).await.as_str().unwrap()).unwrap();
        let ok = v["stats"]["last_edit"] == json!({"Ok": null});
        if ok && v["edits"] == json!(1) && v["frames"].as_f64().unwrap() > frames_before {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "the click dug nothing: {v}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (_, _, after) = cdp.screenshot().await;
    let around = (cx - 80, cy - 80, cx + 80, cy + 80);
    let changed = differing(&after, Some(&before), w, around, sky, 24);
    assert!(changed > 0.01, "the picture around the click did not change ({:.2}%)", changed * 100.0);

    // Key 1 drops a ball over the terrain under the pointer: it appears and falls.
    for kind in ["keyDown", "keyUp"] {
        let key = json!({"type": kind, "key": "1", "code": "Digit1", "text": if kind == "keyDown" { "1" } else { "" }});
        cdp.call("Input.dispatchKeyEvent", key).await;
    }
    let start = Instant::now();
    let mut heights = Vec::new();
    while heights.len() < 2 || heights[0] <= *heights.last().unwrap() {
        let v: Value = serde_json::from_str(cdp.eval(state).await.as_str().unwrap()).unwrap();
        if let Some(y) = v["firstBody"][1].as_f64() {
            heights.push(y);
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no body fell: {v}");
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    // The ball lands in the crater, where nothing else moves (the overlay's figures are elsewhere).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (_, _, with_ball) = cdp.screenshot().await;
    assert!(differing(&with_ball, Some(&after), w, around, sky, 24) > 0.0, "the ball is not drawn");

    let errors = cdp.errors();
    assert!(errors.is_empty(), "the page logged errors: {errors:#?}");
    drop(browser);
    s.shutdown().await;
}
