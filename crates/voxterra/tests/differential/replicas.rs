//! Replicas against the server: random ground, edits, undos, viewer moves and idle spells (the
//! delta log sometimes too small to reach back), over a network that loses, duplicates, damages
//! and reorders messages. After every message a client applies, every region it calls ready equals
//! the server's voxels at the sequence the client says it is at (the server's store is kept per
//! sequence); once the network is quiet, it holds exactly what the server believes it holds.

use crate::Tally;
use voxterra::core::nalgebra::Point3;
use voxterra::core::{Voxel, VoxelRead};
use voxterra::replication::{
    Applied, ClientId, MIN_TICK_BUDGET, ReplicaClient, ReplicationConfig, ReplicationError,
    ReplicationServer, client_terrain,
};
use voxterra::store::VoxelStore;
use voxterra::{Brush, BrushOp, BrushShape, Terrain, TerrainConfig};
use voxterra_test_support::Rng;
use voxterra_test_support::ground::{GroundOptions, random_ground, table};

/// What a network does to each message.
#[derive(Clone, Copy, Debug)]
pub struct Faults {
    pub loss: f32,
    pub duplicate: f32,
    pub damage: f32,
}

/// Bytes and messages of one run.
#[derive(Default, Debug, Clone, Copy)]
pub struct Traffic {
    pub sent_bytes: u64,
    pub resent_bytes: u64,
    pub messages: u64,
    pub held: u64,
}

struct Run {
    server: Terrain,
    /// The server's store at each sequence number.
    history: std::collections::BTreeMap<u64, VoxelStore>,
    srv: ReplicationServer,
    id: ClientId,
    client: ReplicaClient,
    rng: Rng,
    faults: Faults,
    traffic: Traffic,
    fails: Vec<(&'static str, String)>,
}

impl Run {
    fn record(&mut self) {
        self.history.insert(self.server.sequence(), self.server.store().clone());
    }

    /// Every ready region equals the server's voxels at the client's sequence (or now).
    fn check_ready(&mut self, after: &str, now: bool) {
        let seq = if now { u64::MAX } else { self.client.server_sequence() };
        let Some(at) = self.history.range(..=seq).next_back().map(|(_, s)| s) else {
            return;
        };
        let mut want = Vec::new();
        let mut got = Vec::new();
        for k in self.client.ready_regions() {
            let r = k.region().expect("a region key in range");
            want.resize(r.len().expect("16³"), Voxel::AIR);
            got.resize(want.len(), Voxel::AIR);
            at.read_box(&r, &mut want).expect("a sized buffer");
            self.client.terrain().store().read_box(&r, &mut got).expect("a sized buffer");
            if want != got {
                self.fails.push(("stale ready region", format!("{k:?} at sequence {seq} after {after}")));
                return;
            }
        }
    }

    /// Delivers `msgs` through the faulty network (or a perfect one), checking after each.
    fn deliver(&mut self, msgs: &[Vec<u8>], perfect: bool) {
        let mut wire: Vec<Vec<u8>> = Vec::new();
        for m in msgs {
            let r = self.rng.range(0.0, 1.0);
            let f = self.faults;
            if perfect {
                wire.push(m.clone());
            } else if r < f.loss {
            } else if r < f.loss + f.duplicate {
                wire.extend([m.clone(), m.clone()]);
            } else if r < f.loss + f.duplicate + f.damage {
                let mut bad = m.clone();
                let i = self.rng.below(bad.len() as u64) as usize;
                bad[i] ^= 1 << self.rng.below(8);
                wire.push(bad);
            } else {
                wire.push(m.clone());
            }
        }
        if !perfect {
            for i in (1..wire.len()).rev() {
                wire.swap(i, self.rng.below(i as u64 + 1) as usize);
            }
        }
        for m in wire {
            let before = (self.client.expected(), self.client.terrain().revision());
            match self.client.apply(&m) {
                Ok(Applied::Held(_)) => self.traffic.held += 1,
                Ok(_) => {}
                Err(ReplicationError::Malformed(_) | ReplicationError::Gap { .. }) => {
                    if (self.client.expected(), self.client.terrain().revision()) != before {
                        self.fails.push(("a refused message changed the client", String::new()));
                    }
                }
                Err(e) => self.fails.push(("refused a server message", e.to_string())),
            }
            self.check_ready("a message", false);
        }
    }

    /// One tick: the server's messages, then what the client asks for again.
    fn tick(&mut self, budget: usize, perfect: bool) -> usize {
        let msgs = match self.srv.tick(&self.server, self.id, budget) {
            Ok(m) => m,
            Err(e) => {
                self.fails.push(("tick", e.to_string()));
                return 0;
            }
        };
        self.traffic.sent_bytes += msgs.iter().map(|m| m.len() as u64).sum::<u64>();
        self.traffic.messages += msgs.len() as u64;
        self.deliver(&msgs, perfect);
        let mut n = msgs.len();
        let request = self.client.resend_request();
        match self.srv.resend(self.id, &request) {
            Ok(again) => {
                self.traffic.resent_bytes += again.iter().map(|m| m.len() as u64).sum::<u64>();
                n += again.len();
                self.deliver(&again, perfect);
            }
            Err(e) => self.fails.push(("resend", e.to_string())),
        }
        n
    }
}

/// A crater or a hill at `center`.
fn edit(run: &mut Run, center: Point3<f32>, voxel_size: f32, material: voxterra::core::Material) {
    let radius = run.rng.range(1.5, 6.0) * voxel_size;
    let op = if run.rng.below(2) == 0 { BrushOp::Subtract } else { BrushOp::Add(material) };
    if run.server.apply_brush(&Brush { shape: BrushShape::Sphere { center, radius }, op }).is_ok() {
        run.record();
    }
}

/// One case of `seed` under `faults`: its traffic and disagreements.
pub fn case(seed: u64, faults: Faults, steps: usize) -> (Traffic, Vec<(&'static str, String)>) {
    let mut rng = Rng::new(seed ^ 0x7e91_1ca5);
    let voxel_size = [0.5f32, 1.0, 2.0][rng.below(3) as usize];
    let ground = random_ground(seed, GroundOptions { size: [64, 40, 64], far: 50_000 });
    let mut store = VoxelStore::new();
    store.write_box(&ground.region, &ground.voxels).expect("the window fits");
    let delta_log_bytes = if rng.below(2) == 0 { 8 << 10 } else { 16 << 20 };
    let config = TerrainConfig { delta_log_bytes, ..TerrainConfig::with_voxel_size(voxel_size) };
    let server = Terrain::from_store(store, table(), config).expect("a terrain");
    let radius = rng.range(12.0, 40.0);
    let rc = ReplicationConfig {
        full_radius: radius,
        mip_radii: [radius * 2.0, radius * 3.0, radius * 4.0],
        ..Default::default()
    };
    let mut srv = ReplicationServer::new(rc);
    let id = srv.add_client(&server);
    let client = ReplicaClient::new(client_terrain(table(), voxel_size).expect("a terrain"));
    let mut run = Run {
        server,
        history: Default::default(),
        srv,
        id,
        client,
        rng: Rng::new(seed),
        faults,
        traffic: Traffic::default(),
        fails: Vec::new(),
    };
    run.record();
    let (min, size) = (ground.region.min().cast::<f32>(), ground.region.size().map(|s| s as f32));
    let world = |rng: &mut Rng, a: usize| (min[a] + rng.range(0.0, size[a])) * voxel_size;
    let viewer = |rng: &mut Rng| Point3::new(world(rng, 0), world(rng, 1), world(rng, 2));
    let v = viewer(&mut run.rng);
    let _ = run.srv.set_viewers(id, &[v]);
    for _ in 0..steps {
        match run.rng.below(10) {
            0..=2 => edit(&mut run, viewer(&mut rng), voxel_size, ground.material),
            3 => {
                if run.server.undo().is_ok() {
                    run.record();
                }
            }
            4 => {
                // Near, or far away (then the regions it held stay unattended).
                let mut v = viewer(&mut run.rng);
                if run.rng.below(2) == 0 {
                    v.x += 200.0 * voxel_size;
                }
                let _ = run.srv.set_viewers(id, &[v]);
            }
            5 => {
                // An idle spell: edits pile up past what the log may hold.
                for _ in 0..2 + run.rng.below(12) {
                    edit(&mut run, viewer(&mut rng), voxel_size, ground.material);
                }
            }
            _ => {
                let budget = MIN_TICK_BUDGET + run.rng.below(3 * MIN_TICK_BUDGET as u64) as usize;
                run.tick(budget, false);
            }
        }
    }
    // Quiet: a perfect network until nothing is due.
    for _ in 0..400 {
        if run.tick(usize::MAX, true) == 0 {
            break;
        }
    }
    let held: Vec<_> = run.srv.full_regions(id).unwrap_or_default();
    let ready: Vec<_> = run.client.ready_regions().collect();
    if held != ready {
        run.fails.push((
            "held",
            format!("server believes {} regions, client calls {} ready", held.len(), ready.len()),
        ));
    }
    // Edits in regions the client does not hold send nothing: its sequence may lag, its ready
    // regions may not.
    run.check_ready("the end", true);
    (run.traffic, run.fails)
}

/// The differential entry point: one case per scene seed.
pub fn run(seed: u64, steps: usize, tally: &mut Tally) {
    let mut rng = Rng::new(seed);
    let loss = [0.0f32, 0.01, 0.05, 0.12][rng.below(4) as usize];
    let faults = Faults { loss, duplicate: 0.07, damage: 0.07 };
    let (_, fails) = case(seed, faults, steps);
    tally.record("replica", fails.into_iter());
}
