//! A player in a few lines: join the server, walk, dig a little, and find the world it holds equal
//! to the server's.
//!
//! `VOXTERRA_TOKEN=secret cargo run --release -p voxterra-net --example client`

use std::time::Duration;
use voxterra::core::nalgebra::Point3;
use voxterra::{Brush, BrushOp, BrushShape};
use voxterra_net::{Client, NetError};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let token = std::env::var("VOXTERRA_TOKEN").map_err(|_| "set VOXTERRA_TOKEN to the server's secret")?;
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:7878".into()).parse()?;
    let mut me = Client::connect(addr, token.as_bytes(), Duration::from_secs(5)).await?;
    println!("joined as {:016x}", me.session());
    for step in 0..100 {
        // Walk east; the server streams full detail near us, coarser levels farther out.
        let here = Point3::new(64.0 + step as f32, 60.0, 128.0);
        me.set_viewers(&[here]).await?;
        if step % 20 == 10 {
            let hole = BrushShape::Sphere { center: Point3::new(here.x, 40.0, here.z), radius: 3.0 };
            me.edit(&Brush { shape: hole, op: BrushOp::Subtract }).await?;
        }
        // Apply what arrived (the server answers edits here too); reconnect if the line dropped.
        match me.pump(Duration::from_millis(50)).await {
            Ok(replies) => replies.iter().for_each(|(id, r)| println!("edit {id}: {r:?}")),
            Err(NetError::Closed | NetError::Io(_)) => me = me.reconnect(Duration::from_secs(5)).await?.0,
            Err(e) => return Err(e.into()),
        }
    }
    let check = me.check(Duration::from_secs(5)).await?;
    println!("{} regions held, {} differ from the server's", check.compared, check.differ);
    Ok(())
}
