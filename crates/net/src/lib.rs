//! # voxterra-net
//!
//! voxterra over real sockets. A server owns the authoritative [`voxterra::Terrain`] and streams
//! it to clients over TCP (tokio): each client proves itself with a secret token, states where
//! its viewers are, gets full detail near them and coarser mips far away, sees every edit, and
//! edits through the server, which validates each request. Use it for a game server and its
//! players; the facade's [`voxterra::replication`] is the same stream without sockets.
//!
//! Main types: [`serve`] and its [`ServerConfig`] and [`ServerHandle`]; [`Client`]; the wire
//! [`protocol`]. Plaintext TCP serves and reaches loopback only; any other address takes TLS
//! ([`TlsServer`] in [`ServerConfig::tls`], [`Client::connect_tls`] with a [`TlsClient`]: rustls,
//! certificates and keys as PEM). A whole server and a whole player, each a page:
//! `examples/server.rs`, `examples/client.rs`. Browsers look on through [`ServerConfig::view`]
//! ([`ViewConfig`], the [`view`] module): an HTTP listener serving the page `web/` bundles and a
//! WebSocket streaming levels-of-detail meshes for each page's camera, its edits and the bodies
//! it drops (simulated with rapier through `voxterra-rapier`).
//!
//! ```
//! use std::time::Duration;
//! use voxterra::prelude::*;
//! use voxterra::worldgen::GenParams;
//! use voxterra_net::{serve, Client, ServerConfig};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let world = Terrain::generate(&GenParams::new(1, [96, 48, 96]), TerrainConfig::default())?;
//! let config = ServerConfig { token: b"secret".to_vec(), ..ServerConfig::default() };
//! let server = serve(world, "127.0.0.1:0".parse()?, config).await?;
//!
//! let mut player = Client::connect(server.local_addr(), b"secret", Duration::from_secs(5)).await?;
//! player.set_viewers(&[Point3::new(48.0, 30.0, 48.0)]).await?;
//! player.pump(Duration::from_millis(500)).await?; // the world streams in
//! let dig = BrushShape::Sphere { center: Point3::new(48.0, 20.0, 48.0), radius: 3.0 };
//! player.edit(&Brush { shape: dig, op: BrushOp::Subtract }).await?;
//! let replies = player.pump(Duration::from_millis(300)).await?;
//! assert!(matches!(replies.as_slice(), [(0, Ok(_))]));
//! let check = player.check(Duration::from_secs(5)).await?;
//! assert!(check.compared > 0 && check.differ == 0);
//! server.shutdown().await;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

#![forbid(unsafe_code)]

mod client;
mod config;
mod error;
mod frames;
#[cfg(feature = "fuzzing")]
pub mod fuzz;
mod hosted;
pub mod protocol;
mod rate;
mod server;
mod tls;
pub mod view;

pub use client::{Client, RegionCheck};
pub use config::{ServerConfig, ServerEvent, ViewConfig};
pub use error::NetError;
pub use hosted::Hosted;
pub use server::{ServerHandle, serve};
pub use tls::{TlsClient, TlsServer};
