//! A game server in a few lines: generate (or load) a world, serve it on loopback with a secret
//! from `VOXTERRA_TOKEN`, print who comes and goes, stop on Ctrl-C and save.
//!
//! `VOXTERRA_TOKEN=secret cargo run --release -p voxterra-net --example server`

use voxterra::worldgen::GenParams;
use voxterra::{Terrain, TerrainConfig};
use voxterra_net::{ServerConfig, ServerEvent, serve};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let token = std::env::var("VOXTERRA_TOKEN").map_err(|_| "set VOXTERRA_TOKEN to the players' secret")?;
    let world = match std::env::args().nth(1) {
        Some(path) => Terrain::load(path, TerrainConfig::default())?,
        None => Terrain::generate(&GenParams::new(1, [256, 96, 256]), TerrainConfig::default())?,
    };
    let config = ServerConfig {
        token: token.into_bytes(),
        edit_rate: 4.0, // brushes a player may apply a second
        max_brush: 8.0, // the largest brush, in world units
        ..ServerConfig::default()
    };
    let mut server = serve(world, "127.0.0.1:7878".parse()?, config).await?;
    println!("listening on {}", server.local_addr());
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            event = server.events.recv() => match event {
                Some(ServerEvent::Joined { session, resumed, addr }) => {
                    println!("{addr} {} as {session:016x}", if resumed { "came back" } else { "joined" });
                }
                Some(ServerEvent::Left { session, why }) => println!("{session:016x} left: {why}"),
                Some(ServerEvent::Refused { addr, why }) => println!("{addr} refused: {why:?}"),
                Some(ServerEvent::Edit { session, result }) => println!("{session:016x} edited: {result:?}"),
                None => break,
            },
        }
    }
    let world = server.shutdown().await;
    world.save("world.vxt")?;
    println!("saved world.vxt");
    Ok(())
}
