//! The server and clients over real sockets on 127.0.0.1: authentication, the hostile cases (each
//! costs only its own connection), edit validation, and mirrors that end equal to the server.

#![allow(clippy::unwrap_used)] // helpers of the tests below
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use voxterra::core::materials;
use voxterra::core::nalgebra::Point3;
use voxterra::worldgen::GenParams;
use voxterra::{Brush, BrushOp, BrushShape, Terrain, TerrainConfig};
use voxterra_net::protocol::{ClientFrame, EditRefused, PROTOCOL_VERSION, RefusedWhy, ServerFrame};
use voxterra_net::{Client, NetError, ServerConfig, ServerHandle, serve};

const TOKEN: &[u8] = b"a long enough secret";
const WAIT: Duration = Duration::from_secs(5);

fn world() -> Terrain {
    Terrain::generate(&GenParams::new(4, [96, 48, 96]), TerrainConfig::default()).unwrap()
}

async fn server(config: ServerConfig) -> ServerHandle {
    let config =
        ServerConfig { token: TOKEN.to_vec(), handshake_timeout: Duration::from_millis(400), ..config };
    serve(world(), "127.0.0.1:0".parse().unwrap(), config).await.unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// What the server answers raw bytes with: its first frame, or `None` when it closes first.
async fn answer(addr: SocketAddr, bytes: &[u8]) -> Option<ServerFrame> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let _ = s.write_all(bytes).await;
    let mut len = [0u8; 4];
    tokio::time::timeout(WAIT, s.read_exact(&mut len)).await.ok()?.ok()?;
    let mut body = vec![0u8; u32::from_le_bytes(len) as usize];
    s.read_exact(&mut body).await.ok()?;
    ServerFrame::decode(&body).ok()
}

/// A client that joins, streams the world near its viewer and finds it equal to the server's.
async fn honest(addr: SocketAddr) {
    let mut c = Client::connect(addr, TOKEN, WAIT).await.unwrap();
    c.set_viewers(&[Point3::new(48.0, 30.0, 48.0)]).await.unwrap();
    c.pump(Duration::from_millis(600)).await.unwrap();
    let check = c.check(WAIT).await.unwrap();
    assert!(check.compared > 0 && check.differ == 0, "{check:?}");
}

#[test]
fn a_wrong_or_missing_token_is_refused_and_the_right_one_streams_the_world() {
    runtime().block_on(async {
        let s = server(ServerConfig::default()).await;
        for bad in [&b"wrong"[..], b"", b"a long enough secreT"] {
            match Client::connect(s.local_addr(), bad, WAIT).await {
                Err(NetError::Refused { why: RefusedWhy::Token, version }) => {
                    assert_eq!(version, PROTOCOL_VERSION)
                }
                other => panic!("expected a refusal, got {:?}", other.map(|c| c.session())),
            }
        }
        honest(s.local_addr()).await;
        s.shutdown().await;
    });
}

#[test]
fn another_protocol_version_is_refused_naming_the_servers() {
    runtime().block_on(async {
        let s = server(ServerConfig::default()).await;
        let mut hello = Vec::new();
        ClientFrame::Hello { version: PROTOCOL_VERSION + 1, token: TOKEN.to_vec(), resume: 0 }
            .encode(&mut hello);
        assert_eq!(
            answer(s.local_addr(), &hello).await,
            Some(ServerFrame::Refused { why: RefusedWhy::Version, version: PROTOCOL_VERSION })
        );
        s.shutdown().await;
    });
}

#[test]
fn garbage_a_huge_prefix_and_a_held_half_frame_cost_only_their_connection() {
    runtime().block_on(async {
        let s = server(ServerConfig::default()).await;
        let addr = s.local_addr();
        let refused = Some(ServerFrame::Refused { why: RefusedWhy::Handshake, version: PROTOCOL_VERSION });
        // Random bytes: a length that reads as a small frame of garbage.
        let mut rng = voxterra_test_support::Rng::new(7);
        let garbage: Vec<u8> = (0..64).map(|_| rng.below(256) as u8).collect();
        let mut framed = vec![20, 0, 0, 0];
        framed.extend_from_slice(&garbage[..20]);
        assert_eq!(answer(addr, &framed).await, refused);
        // A 4 GiB length prefix: refused before anything is allocated.
        assert_eq!(answer(addr, &[0xff, 0xff, 0xff, 0xff, 1]).await, refused);
        // Half a frame held open: the handshake's deadline closes it.
        let start = std::time::Instant::now();
        assert_eq!(answer(addr, &[40, 0, 0, 0, 1, 2]).await, refused);
        assert!(start.elapsed() < Duration::from_secs(3));
        // None of it touched an honest client.
        honest(addr).await;
        s.shutdown().await;
    });
}

#[test]
fn one_client_too_many_is_refused() {
    runtime().block_on(async {
        let s = server(ServerConfig { max_clients: 1, ..ServerConfig::default() }).await;
        let first = Client::connect(s.local_addr(), TOKEN, WAIT).await.unwrap();
        match Client::connect(s.local_addr(), TOKEN, WAIT).await {
            Err(NetError::Refused { why: RefusedWhy::Full, .. }) => {}
            other => panic!("expected a refusal, got {:?}", other.map(|c| c.session())),
        }
        drop(first);
        s.shutdown().await;
    });
}

#[test]
fn edit_requests_are_validated_and_rate_limited() {
    runtime().block_on(async {
        let s = server(ServerConfig { edit_rate: 4.0, max_brush: 8.0, ..ServerConfig::default() }).await;
        let mut c = Client::connect(s.local_addr(), TOKEN, WAIT).await.unwrap();
        let sphere = |x: f32, r: f32| Brush {
            shape: BrushShape::Sphere { center: Point3::new(x, 20.0, 40.0), radius: r },
            op: BrushOp::Add(materials::ROCK),
        };
        let cases = [
            (sphere(40.0, 3.0), None),
            (sphere(f32::NAN, 3.0), Some(EditRefused::Invalid)),
            (sphere(40.0, 30.0), Some(EditRefused::TooLarge)),
            (sphere(4000.0, 3.0), Some(EditRefused::OutsideWorld)),
        ];
        for (brush, want) in &cases {
            let id = c.edit(brush).await.unwrap();
            let replies = c.pump(Duration::from_millis(200)).await.unwrap();
            let got = replies.iter().find(|(i, _)| *i == id).map(|(_, r)| *r).expect("an answer");
            match want {
                None => assert!(got.is_ok(), "{got:?}"),
                Some(w) => assert_eq!(got, Err(*w)),
            }
        }
        // A burst past the rate: the rest are refused.
        for _ in 0..12 {
            c.edit(&sphere(30.0, 2.0)).await.unwrap();
        }
        let replies = c.pump(Duration::from_millis(300)).await.unwrap();
        let limited = replies.iter().filter(|(_, r)| *r == Err(EditRefused::RateLimited)).count();
        let applied = replies.iter().filter(|(_, r)| r.is_ok()).count();
        assert_eq!(limited + applied, 12);
        assert!(limited >= 6, "{limited} of 12 refused");
        s.shutdown().await;
    });
}

#[test]
fn clients_that_edit_and_move_mirror_the_server() {
    runtime().block_on(async {
        let s = server(ServerConfig::default()).await;
        let mut clients = Vec::new();
        for _ in 0..3 {
            clients.push(Client::connect(s.local_addr(), TOKEN, WAIT).await.unwrap());
        }
        let mut rng = voxterra_test_support::Rng::new(11);
        for step in 0..12 {
            for (i, c) in clients.iter_mut().enumerate() {
                let t = step as f32 * 0.3 + i as f32 * 2.0;
                let v = Point3::new(48.0 + 20.0 * t.cos(), 30.0, 48.0 + 20.0 * t.sin());
                c.set_viewers(&[v]).await.unwrap();
                if rng.below(3) == 0 {
                    let center =
                        Point3::new(rng.range(20.0, 76.0), rng.range(10.0, 30.0), rng.range(20.0, 76.0));
                    let op =
                        if rng.below(2) == 0 { BrushOp::Subtract } else { BrushOp::Add(materials::ROCK) };
                    c.edit(&Brush { shape: BrushShape::Sphere { center, radius: rng.range(1.0, 4.0) }, op })
                        .await
                        .unwrap();
                }
                c.pump(Duration::from_millis(40)).await.unwrap();
            }
        }
        for c in &mut clients {
            c.pump(Duration::from_millis(400)).await.unwrap();
            let check = c.check(WAIT).await.unwrap();
            assert!(check.compared > 0 && check.differ == 0, "{check:?}");
        }
        let terrain = s.shutdown().await;
        terrain.validate().unwrap();
    });
}

#[test]
fn a_client_that_reconnects_resumes_and_catches_up_with_edits_made_meanwhile() {
    runtime().block_on(async {
        let s = server(ServerConfig { resume_window: Duration::from_millis(600), ..ServerConfig::default() })
            .await;
        let addr = s.local_addr();
        let viewer = [Point3::new(48.0, 30.0, 48.0)];
        let mut a = Client::connect(addr, TOKEN, WAIT).await.unwrap();
        a.set_viewers(&viewer).await.unwrap();
        a.pump(Duration::from_millis(500)).await.unwrap();
        let held = a.replica().ready_regions().count();
        assert!(held > 0);
        let session = a.session();
        // A second client digs under the first one's viewer while the first is away.
        let mut b = Client::connect(addr, TOKEN, WAIT).await.unwrap();
        let dig = Brush {
            shape: BrushShape::Sphere { center: Point3::new(48.0, 24.0, 48.0), radius: 4.0 },
            op: BrushOp::Subtract,
        };
        let (mut a, resumed) = a.reconnect(WAIT).await.unwrap();
        b.edit(&dig).await.unwrap();
        assert!(b.pump(Duration::from_millis(200)).await.unwrap().iter().all(|(_, r)| r.is_ok()));
        assert!(resumed && a.session() == session, "resumed {resumed}");
        a.set_viewers(&viewer).await.unwrap();
        a.pump(Duration::from_millis(500)).await.unwrap();
        assert!(a.replica().ready_regions().count() >= held);
        let check = a.check(WAIT).await.unwrap();
        assert!(check.compared >= held && check.differ == 0, "{check:?}");
        // Away past the window: a new session, the world sent again.
        drop(b);
        a.close().await;
        tokio::time::sleep(Duration::from_millis(900)).await;
        let (mut a, resumed) = a.reconnect(WAIT).await.unwrap();
        assert!(!resumed && a.session() != session);
        a.set_viewers(&viewer).await.unwrap();
        a.pump(Duration::from_millis(500)).await.unwrap();
        let check = a.check(WAIT).await.unwrap();
        assert!(check.compared > 0 && check.differ == 0, "{check:?}");
        s.shutdown().await;
    });
}

#[test]
fn a_client_that_stops_reading_and_an_edit_flood_cost_only_themselves() {
    runtime().block_on(async {
        let s = server(ServerConfig { edit_rate: 5.0, ..ServerConfig::default() }).await;
        let addr = s.local_addr();
        // One joins, states a viewer and never reads again.
        let mut mute = TcpStream::connect(addr).await.unwrap();
        let mut bytes = Vec::new();
        ClientFrame::Hello { version: PROTOCOL_VERSION, token: TOKEN.to_vec(), resume: 0 }.encode(&mut bytes);
        ClientFrame::Viewers(vec![Point3::new(20.0, 30.0, 20.0)]).encode(&mut bytes);
        mute.write_all(&bytes).await.unwrap();
        // Another floods edit requests as fast as it can write, reading nothing.
        let mut flood = TcpStream::connect(addr).await.unwrap();
        let mut hello = Vec::new();
        ClientFrame::Hello { version: PROTOCOL_VERSION, token: TOKEN.to_vec(), resume: 0 }.encode(&mut hello);
        flood.write_all(&hello).await.unwrap();
        let flooding = tokio::spawn(async move {
            let brush = Brush {
                shape: BrushShape::Sphere { center: Point3::new(70.0, 20.0, 70.0), radius: 2.0 },
                op: BrushOp::Add(materials::ROCK),
            };
            let mut frame = Vec::new();
            for id in 0..2000 {
                ClientFrame::Edit { id, brush }.encode(&mut frame);
            }
            let _ = tokio::time::timeout(Duration::from_secs(2), flood.write_all(&frame)).await;
            flood
        });
        // An honest client meanwhile: its world streams, its edit is applied at once, its regions
        // equal the server's.
        let mut c = Client::connect(addr, TOKEN, WAIT).await.unwrap();
        c.set_viewers(&[Point3::new(48.0, 30.0, 48.0)]).await.unwrap();
        c.pump(Duration::from_millis(300)).await.unwrap();
        let dig = Brush {
            shape: BrushShape::Sphere { center: Point3::new(48.0, 24.0, 48.0), radius: 3.0 },
            op: BrushOp::Subtract,
        };
        let id = c.edit(&dig).await.unwrap();
        let replies = c.pump(Duration::from_millis(400)).await.unwrap();
        assert!(replies.iter().any(|(i, r)| *i == id && r.is_ok()), "{replies:?}");
        let check = c.check(WAIT).await.unwrap();
        assert!(check.compared > 0 && check.differ == 0, "{check:?}");
        drop(flooding.await.unwrap());
        drop(mute);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut s = s;
        let (mut applied, mut limited) = (0, 0);
        while let Ok(e) = s.events.try_recv() {
            if let voxterra_net::ServerEvent::Edit { session, result } = e
                && session != c.session()
            {
                match result {
                    Ok(_) => applied += 1,
                    Err(EditRefused::RateLimited) => limited += 1,
                    Err(other) => panic!("{other:?}"),
                }
            }
        }
        // The flood got a burst and 5 a second; the rest were refused (some unread when it hung up).
        assert!(applied <= 5 + 5 * 4, "{applied} applied");
        assert!(limited > 1000, "{limited} refused");
        s.shutdown().await;
    });
}

/// One client's script: per step a viewer (world units) and maybe an edit there.
type Script = Vec<((f32, f32, f32), Option<(bool, f32)>)>;

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 4, ..Default::default() })]

    /// Random viewer paths and edits from several clients through real connections: at the end
    /// every client's ready regions equal the server's.
    #[test]
    fn random_edits_and_paths_through_real_connections_end_with_equal_regions(
        scripts in proptest::collection::vec(
            proptest::collection::vec(
                ((8.0f32..88.0, 10.0f32..40.0, 8.0f32..88.0),
                 proptest::option::weighted(0.4, (proptest::bool::ANY, 1.0f32..4.0))),
                3..8),
            2..4),
    ) {
        let scripts: Vec<Script> = scripts;
        runtime().block_on(async {
            let s = server(ServerConfig { edit_rate: 100.0, ..ServerConfig::default() }).await;
            let mut clients = Vec::new();
            for _ in &scripts {
                clients.push(Client::connect(s.local_addr(), TOKEN, WAIT).await.unwrap());
            }
            let steps = scripts.iter().map(Vec::len).max().unwrap_or(0);
            for step in 0..steps {
                for (c, script) in clients.iter_mut().zip(&scripts) {
                    let Some(&((x, y, z), edit)) = script.get(step) else { continue };
                    let at = Point3::new(x, y, z);
                    c.set_viewers(&[at]).await.unwrap();
                    if let Some((carve, radius)) = edit {
                        let op = if carve { BrushOp::Subtract } else { BrushOp::Add(materials::ROCK) };
                        let center = Point3::new(x, 20.0, z);
                        c.edit(&Brush { shape: BrushShape::Sphere { center, radius }, op }).await.unwrap();
                    }
                    c.pump(Duration::from_millis(30)).await.unwrap();
                }
            }
            for c in &mut clients {
                c.pump(Duration::from_millis(300)).await.unwrap();
            }
            for c in &mut clients {
                let check = c.check(WAIT).await.unwrap();
                assert!(check.compared > 0 && check.differ == 0, "{check:?}");
            }
            s.shutdown().await.validate().unwrap();
        });
    }
}
