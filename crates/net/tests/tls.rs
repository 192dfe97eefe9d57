//! TLS: a server beyond loopback only with it, clients that trust its certificate stream and edit
//! as over loopback, and a plaintext client, an untrusted certificate or a stalled handshake get
//! nothing and cost only themselves.

#![allow(clippy::unwrap_used)] // helpers of the tests below
use std::time::Duration;
use tokio::net::TcpStream;
use voxterra::core::nalgebra::Point3;
use voxterra::worldgen::GenParams;
use voxterra::{Brush, BrushOp, BrushShape, Terrain, TerrainConfig};
use voxterra_net::{Client, NetError, ServerConfig, TlsClient, TlsServer, serve};

const TOKEN: &[u8] = b"a long enough secret";
const WAIT: Duration = Duration::from_secs(5);

fn world() -> Terrain {
    Terrain::generate(&GenParams::new(4, [96, 48, 96]), TerrainConfig::default()).unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// A self-signed certificate for `localhost` and 127.0.0.1: (certificate PEM, key PEM).
fn certificate() -> (String, String) {
    let c = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    (c.cert.pem(), c.key_pair.serialize_pem())
}

fn config(cert: &(String, String)) -> ServerConfig {
    ServerConfig {
        token: TOKEN.to_vec(),
        handshake_timeout: Duration::from_millis(400),
        tls: Some(TlsServer::from_pem(cert.0.as_bytes(), cert.1.as_bytes()).unwrap()),
        ..ServerConfig::default()
    }
}

#[test]
fn a_client_that_trusts_the_certificate_streams_and_edits_over_tls() {
    runtime().block_on(async {
        let cert = certificate();
        let s = serve(world(), "127.0.0.1:0".parse().unwrap(), config(&cert)).await.unwrap();
        // A connection that opens and never starts its TLS handshake, beside it.
        let stalled = TcpStream::connect(s.local_addr()).await.unwrap();
        for name in ["localhost", "127.0.0.1"] {
            let tls = TlsClient::from_pem(cert.0.as_bytes(), name).unwrap();
            let mut c = Client::connect_tls(s.local_addr(), &tls, TOKEN, WAIT).await.unwrap();
            c.set_viewers(&[Point3::new(48.0, 30.0, 48.0)]).await.unwrap();
            c.pump(Duration::from_millis(400)).await.unwrap();
            let dig = BrushShape::Sphere { center: Point3::new(48.0, 20.0, 48.0), radius: 3.0 };
            c.edit(&Brush { shape: dig, op: BrushOp::Subtract }).await.unwrap();
            let replies = c.pump(Duration::from_millis(300)).await.unwrap();
            assert!(matches!(replies.as_slice(), [(0, Ok(_))]), "{replies:?}");
            let check = c.check(WAIT).await.unwrap();
            assert!(check.compared > 0 && check.differ == 0, "{check:?}");
            // Resuming goes over TLS again.
            c.close().await;
            let (_, resumed) = c.reconnect(WAIT).await.unwrap();
            assert!(resumed);
        }
        drop(stalled);
        s.shutdown().await;
    });
}

#[test]
fn plaintext_and_untrusted_clients_get_nothing() {
    runtime().block_on(async {
        let cert = certificate();
        let s = serve(world(), "127.0.0.1:0".parse().unwrap(), config(&cert)).await.unwrap();
        assert!(Client::connect(s.local_addr(), TOKEN, WAIT).await.is_err());
        let other = certificate();
        let tls = TlsClient::from_pem(other.0.as_bytes(), "localhost").unwrap();
        assert!(Client::connect_tls(s.local_addr(), &tls, TOKEN, WAIT).await.is_err());
        // A name the certificate does not carry.
        let tls = TlsClient::from_pem(cert.0.as_bytes(), "example.org").unwrap();
        assert!(Client::connect_tls(s.local_addr(), &tls, TOKEN, WAIT).await.is_err());
        // The right certificate with a wrong token is refused after the handshake.
        let tls = TlsClient::from_pem(cert.0.as_bytes(), "localhost").unwrap();
        let wrong = Client::connect_tls(s.local_addr(), &tls, b"wrong", WAIT).await;
        assert!(matches!(wrong, Err(NetError::Refused { .. })), "{:?}", wrong.err());
        s.shutdown().await;
    });
}

#[test]
fn beyond_loopback_takes_tls() {
    runtime().block_on(async {
        let any = "0.0.0.0:0".parse().unwrap();
        let plain = ServerConfig { token: TOKEN.to_vec(), ..ServerConfig::default() };
        assert!(matches!(serve(world(), any, plain).await, Err(NetError::NotLoopback(_))));
        let far = "192.0.2.1:7878".parse().unwrap();
        assert!(matches!(Client::connect(far, TOKEN, WAIT).await, Err(NetError::NotLoopback(_))));
        let cert = certificate();
        let s = serve(world(), any, config(&cert)).await.unwrap();
        let addr = (std::net::Ipv4Addr::LOCALHOST, s.local_addr().port()).into();
        let tls = TlsClient::from_pem(cert.0.as_bytes(), "localhost").unwrap();
        Client::connect_tls(addr, &tls, TOKEN, WAIT).await.unwrap();
        s.shutdown().await;
    });
}

#[test]
fn bad_pem_is_a_typed_error() {
    assert!(matches!(TlsServer::from_pem(b"not a certificate", b"nor a key"), Err(NetError::Tls { .. })));
    let cert = certificate();
    assert!(matches!(TlsServer::from_pem(cert.0.as_bytes(), b"nor a key"), Err(NetError::Tls { .. })));
    assert!(matches!(TlsClient::from_pem(b"", "localhost"), Err(NetError::Tls { .. })));
    assert!(matches!(TlsClient::from_pem(cert.0.as_bytes(), "not a name!"), Err(NetError::Tls { .. })));
}
