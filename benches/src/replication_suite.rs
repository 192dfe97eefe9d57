//! Suite `replication`: the codec's bit-packed network packets against what other engines put on
//! the wire, each box compressed alone (stateless, as a packet is): byte RLE + LZ4 (the project's
//! disk blocks), LZ4 alone and deflate on the raw 2-byte voxels (Veloren deflates its chunks), and
//! Minecraft's section format (a palette, indices bit-packed at ⌈log₂ palette⌉ bits, at least 4, then
//! deflate). A range coder over the same runs (adaptive binary models, LZMA's coder) is measured as
//! the article's "more valuable option", entropy coding. Cases: the whole default world in 16³
//! boxes (initial replication), the 4³ boxes a radius-4 brush touches (edit updates), and decoding
//! every 16³ box on one core.

use crate::harness::{Budget, Metric, Report, compare};
use crate::world::{Rng, bench_world};
use std::io::{Read, Write};
use voxterra::{Brush, BrushOp, BrushShape, Terrain, TerrainConfig};
use voxterra_codec::block::{BlockScratch, decode_block, encode_voxels};
use voxterra_codec::{Compression, decode_packet, encode_packet};
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Material, MaterialTable, Ray, Region, Voxel, VoxelRead};

/// One way to put a box on the wire.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Coder {
    Packet,
    RangeCoded,
    RleLz4,
    Lz4,
    Deflate,
    Minecraft,
}

const CODERS: [Coder; 6] =
    [Coder::Packet, Coder::RangeCoded, Coder::RleLz4, Coder::Lz4, Coder::Deflate, Coder::Minecraft];

impl Coder {
    fn name(self) -> &'static str {
        match self {
            Coder::Packet => "bit-packed packet (ours)",
            Coder::RangeCoded => "range-coded runs (candidate)",
            Coder::RleLz4 => "byte RLE + LZ4",
            Coder::Lz4 => "LZ4 of raw voxels",
            Coder::Deflate => "deflate of raw voxels",
            Coder::Minecraft => "palette + bit-packed indices + deflate",
        }
    }

    fn encode(self, v: &[Voxel], size: [usize; 3]) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Coder::Packet => encode_packet(v, size, &mut out),
            Coder::RangeCoded => range::encode(v, &mut out),
            Coder::RleLz4 => encode_voxels(v, Compression::Lz4, &mut BlockScratch::default(), &mut out),
            Coder::Lz4 => out = lz4_flex::block::compress(&raw(v)),
            Coder::Deflate => out = deflate(&raw(v)),
            Coder::Minecraft => out = deflate(&palette_packed(v)),
        }
        out
    }

    /// Decodes into `out` (the box's voxels); `scratch` is any reusable buffer.
    fn decode(self, bytes: &[u8], size: [usize; 3], out: &mut [Voxel], scratch: &mut Vec<u8>) {
        match self {
            Coder::Packet => decode_packet(bytes, size, u64::MAX, out).expect("own packet"),
            Coder::RangeCoded => range::decode(bytes, out),
            Coder::RleLz4 => {
                decode_block(bytes, out, u64::MAX, &mut BlockScratch::default()).expect("own block")
            }
            Coder::Lz4 => {
                scratch.resize(out.len() * 2, 0);
                lz4_flex::block::decompress_into(bytes, scratch).expect("own block");
                from_raw(scratch, out);
            }
            Coder::Deflate => {
                inflate(bytes, scratch);
                from_raw(scratch, out);
            }
            Coder::Minecraft => {
                inflate(bytes, scratch);
                palette_unpack(scratch, out);
            }
        }
    }
}

fn raw(v: &[Voxel]) -> Vec<u8> {
    v.iter().flat_map(|v| [v.material().id(), v.occupancy_byte()]).collect()
}

fn from_raw(bytes: &[u8], out: &mut [Voxel]) {
    for (o, p) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        *o = Voxel::new(Material::from_low_bits(p[0] & 63), p[1]);
    }
}

fn deflate(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).expect("in memory");
    e.finish().expect("in memory")
}

fn inflate(bytes: &[u8], out: &mut Vec<u8>) {
    out.clear();
    flate2::read::DeflateDecoder::new(bytes).read_to_end(out).expect("own stream");
}

/// Minecraft's section: the palette length (u16, 0 for none), the palette (2 bytes a voxel value),
/// then each voxel's palette index at ⌈log₂ palette⌉ bits (at least 4), packed into little-endian
/// u64 words without spanning words. Past 8 bits an index, as Minecraft switches to its global
/// palette, the voxels go direct at 16 bits.
fn palette_packed(v: &[Voxel]) -> Vec<u8> {
    let mut palette: Vec<u16> = Vec::new();
    let mut seen = std::collections::HashMap::new();
    let idx: Vec<u64> = v
        .iter()
        .map(|x| {
            *seen.entry(x.to_bits()).or_insert_with(|| {
                palette.push(x.to_bits());
                palette.len() as u64 - 1
            })
        })
        .collect();
    let bits = index_bits(palette.len());
    let (values, bits) = if bits > 8 {
        palette.clear();
        (v.iter().map(|x| x.to_bits() as u64).collect(), 16)
    } else {
        (idx, bits)
    };
    let mut out = (palette.len() as u16).to_le_bytes().to_vec();
    for p in &palette {
        out.extend_from_slice(&p.to_le_bytes());
    }
    for chunk in values.chunks(64 / bits) {
        let word = chunk.iter().enumerate().fold(0u64, |w, (k, &i)| w | i << (k * bits));
        out.extend_from_slice(&word.to_le_bytes());
    }
    out
}

fn index_bits(len: usize) -> usize {
    (usize::BITS - len.saturating_sub(1).leading_zeros()).max(4) as usize
}

fn palette_unpack(bytes: &[u8], out: &mut [Voxel]) {
    let len = u16::from_le_bytes([bytes[0], bytes[1]]) as usize;
    let palette: Vec<Voxel> = (0..len)
        .map(|i| {
            Voxel::from_bits(u16::from_le_bytes([bytes[2 + 2 * i], bytes[3 + 2 * i]])).expect("own palette")
        })
        .collect();
    let bits = if len == 0 { 16 } else { index_bits(len) };
    let mask = (1u64 << bits) - 1;
    for (w, chunk) in bytes[2 + 2 * len..].chunks_exact(8).zip(out.chunks_mut(64 / bits)) {
        let word = u64::from_le_bytes(w.try_into().expect("eight bytes"));
        for (k, o) in chunk.iter_mut().enumerate() {
            let i = (word >> (k * bits) & mask) as usize;
            *o = if len == 0 { Voxel::from_bits(i as u16).expect("own voxel") } else { palette[i] };
        }
    }
}

/// The candidate: the box's maximal runs through LZMA's binary range coder, with adaptive models
/// for the material (by the previous run's), the occupancy and the length's bit count and bits.
mod range {
    use voxterra_core::{Material, Voxel};

    const BITS: u32 = 11;
    const ONE: u16 = 1 << BITS;
    const MOVE: u32 = 5;

    struct Models {
        /// Material bit tree, by the previous run's material.
        material: Vec<u16>,
        /// Whether the occupancy is the default, by material.
        default: [u16; 64],
        occupancy: [u16; 256],
        /// Length bit count (a 5-bit tree), by whether the run is air.
        count: [[u16; 32]; 2],
        /// Length bits, by bit count and position.
        bits: [[u16; 16]; 17],
    }

    impl Models {
        fn new() -> Self {
            Models {
                material: vec![ONE / 2; 64 * 64],
                default: [ONE / 2; 64],
                occupancy: [ONE / 2; 256],
                count: [[ONE / 2; 32]; 2],
                bits: [[ONE / 2; 16]; 17],
            }
        }
    }

    struct Encoder<'a> {
        low: u64,
        range: u32,
        cache: u8,
        pending: u64,
        out: &'a mut Vec<u8>,
    }

    impl Encoder<'_> {
        fn bit(&mut self, p: &mut u16, b: u32) {
            let bound = (self.range >> BITS) * *p as u32;
            if b == 0 {
                self.range = bound;
                *p += (ONE - *p) >> MOVE;
            } else {
                self.low += bound as u64;
                self.range -= bound;
                *p -= *p >> MOVE;
            }
            while self.range < 1 << 24 {
                self.range <<= 8;
                self.shift();
            }
        }

        fn shift(&mut self) {
            if (self.low as u32) < 0xff00_0000 || self.low >> 32 != 0 {
                let carry = (self.low >> 32) as u8;
                let mut byte = self.cache;
                loop {
                    self.out.push(byte.wrapping_add(carry));
                    byte = 0xff;
                    self.pending -= 1;
                    if self.pending == 0 {
                        break;
                    }
                }
                self.cache = (self.low >> 24) as u8;
            }
            self.pending += 1;
            self.low = (self.low & 0x00ff_ffff) << 8;
        }

        fn tree(&mut self, probs: &mut [u16], bits: u32, value: u32) {
            let mut node = 1usize;
            for i in (0..bits).rev() {
                let b = value >> i & 1;
                self.bit(&mut probs[node], b);
                node = node * 2 + b as usize;
            }
        }
    }

    struct Decoder<'a> {
        code: u32,
        range: u32,
        data: &'a [u8],
        at: usize,
    }

    impl Decoder<'_> {
        fn byte(&mut self) -> u32 {
            let b = self.data.get(self.at).copied().unwrap_or(0);
            self.at += 1;
            b as u32
        }

        #[inline]
        fn bit(&mut self, p: &mut u16) -> u32 {
            let bound = (self.range >> BITS) * *p as u32;
            let b = if self.code < bound {
                self.range = bound;
                *p += (ONE - *p) >> MOVE;
                0
            } else {
                self.code -= bound;
                self.range -= bound;
                *p -= *p >> MOVE;
                1
            };
            if self.range < 1 << 24 {
                self.range <<= 8;
                self.code = self.code << 8 | self.byte();
            }
            b
        }

        fn tree(&mut self, probs: &mut [u16], bits: u32) -> u32 {
            let mut node = 1usize;
            for _ in 0..bits {
                node = node * 2 + self.bit(&mut probs[node]) as usize;
            }
            (node - (1 << bits)) as u32
        }
    }

    fn width(x: usize) -> u32 {
        usize::BITS - x.leading_zeros()
    }

    pub(super) fn encode(v: &[Voxel], out: &mut Vec<u8>) {
        let mut m = Models::new();
        let mut e = Encoder { low: 0, range: u32::MAX, cache: 0, pending: 1, out };
        let mut prev = 0usize;
        let mut i = 0;
        while i < v.len() {
            let x = v[i];
            let n = v[i..].iter().take_while(|&&y| y == x).count();
            let id = x.material().id() as usize;
            e.tree(&mut m.material[prev * 64..prev * 64 + 64], 6, id as u32);
            if id != 0 {
                let o = x.occupancy_byte();
                e.bit(&mut m.default[id], (o != 255) as u32);
                if o != 255 {
                    e.tree(&mut m.occupancy, 8, o as u32);
                }
            }
            let len = n - 1;
            let w = width(len);
            e.tree(&mut m.count[(id == 0) as usize], 5, w);
            for k in (0..w.saturating_sub(1)).rev() {
                e.bit(&mut m.bits[w as usize][k as usize], (len >> k & 1) as u32);
            }
            prev = id;
            i += n;
        }
        for _ in 0..5 {
            e.shift();
        }
    }

    pub(super) fn decode(bytes: &[u8], out: &mut [Voxel]) {
        let mut m = Models::new();
        let mut d = Decoder { code: 0, range: u32::MAX, data: bytes, at: 0 };
        for _ in 0..5 {
            d.code = d.code << 8 | d.byte();
        }
        let mut prev = 0usize;
        let mut at = 0;
        while at < out.len() {
            let id = d.tree(&mut m.material[prev * 64..prev * 64 + 64], 6) as usize;
            let mut o = 0u8;
            if id != 0 {
                o = if d.bit(&mut m.default[id]) == 1 { d.tree(&mut m.occupancy, 8) as u8 } else { 255 };
            }
            let w = d.tree(&mut m.count[(id == 0) as usize], 5);
            let mut len = if w == 0 { 0 } else { 1usize << (w - 1) };
            for k in (0..w.saturating_sub(1)).rev() {
                len |= (d.bit(&mut m.bits[w as usize][k as usize]) as usize) << k;
            }
            let n = (len + 1).min(out.len() - at);
            out[at..at + n].fill(Voxel::new(Material::from_low_bits(id as u8), o));
            at += n;
            prev = id;
        }
    }
}

/// Every 16³ box of the stored chunks, in key order: its voxels.
fn boxes_16(store: &voxterra_voxel_store::VoxelStore) -> Vec<Vec<Voxel>> {
    let mut out = Vec::new();
    for key in store.chunk_keys() {
        let r = key.region().expect("stored chunk");
        for (dy, dz, dx) in (0..8).map(|i| (i >> 2 & 1, i >> 1 & 1, i & 1)) {
            let min = r.min() + Vector3::new(dx, dy, dz) * 16;
            let b = Region::from_min_size(min, [16; 3]).expect("box");
            let mut v = vec![Voxel::AIR; 4096];
            store.read_box(&b, &mut v).expect("sized");
            out.push(v);
        }
    }
    out
}

/// The 4³ boxes (on the 4³ grid) a region touches, after the edit: their voxels.
fn boxes_4(t: &Terrain, dirty: &Region) -> Vec<Vec<Voxel>> {
    let lo = dirty.min().map(|c| c.div_euclid(4));
    let hi = (dirty.max() - Vector3::repeat(1)).map(|c| c.div_euclid(4));
    let mut out = Vec::new();
    for y in lo.y..=hi.y {
        for z in lo.z..=hi.z {
            for x in lo.x..=hi.x {
                let b = Region::from_min_size(Point3::new(x, y, z) * 4, [4; 3]).expect("box");
                let mut v = vec![Voxel::AIR; 64];
                t.store().read_box(&b, &mut v).expect("sized");
                out.push(v);
            }
        }
    }
    out
}

/// Runs the suite (`quick`: a smaller world, fewer repetitions).
pub fn run(quick: bool) -> Report {
    let budget = Budget::new(quick);
    let w = bench_world(quick);
    let boxes = boxes_16(&w.store);
    let non_empty = w.store.stats().non_empty_voxels as f64;
    let [sx, sy, sz] = w.params.size;
    let mut report = Report {
        suite: "replication".into(),
        setup: format!(
            "default world {sx}x{sy}x{sz}, seed {}: {} boxes of 16³, each compressed alone; one core",
            w.params.seed,
            boxes.len()
        ),
        ..Report::default()
    };

    // Initial replication: every box through every coder, checked to decode back exactly.
    let mut encoded: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut scratch = Vec::new();
    let mut back = vec![Voxel::AIR; 4096];
    for c in CODERS {
        let e: Vec<Vec<u8>> = boxes.iter().map(|b| c.encode(b, [16; 3])).collect();
        for (b, bytes) in boxes.iter().zip(&e) {
            c.decode(bytes, [16; 3], &mut back, &mut scratch);
            assert!(&back == b, "{} round trip", c.name());
        }
        encoded.push(e);
    }
    let total = |e: &[Vec<u8>]| e.iter().map(Vec::len).sum::<usize>() as f64;
    let ours = total(&encoded[0]);
    for (c, e) in CODERS.iter().zip(&encoded).skip(1) {
        report.metrics.push(Metric {
            name: "initial replication: bytes per non-empty voxel".into(),
            voxterra: ours / non_empty,
            peer: total(e) / non_empty,
            peer_name: c.name().into(),
            goal: "smaller than every peer (Roblox ≈ 0.06)".into(),
        });
    }

    // Edit updates: the 4³ boxes of radius-4 brushes (carves and hills) at the surface.
    let mut t = Terrain::from_store(w.store.clone(), MaterialTable::default(), TerrainConfig::default())
        .expect("terrain");
    let mut rng = Rng::new(5);
    let mut per_edit = vec![0usize; CODERS.len()];
    let mut edits = 0usize;
    for k in 0..if quick { 16 } else { 64 } {
        let (x, z) = (rng.range(8.0, sx as f32 - 8.0), rng.range(8.0, sz as f32 - 8.0));
        let down = Ray::new(Point3::new(x, sy as f32 + 4.0, z), -Vector3::y());
        let Some(hit) = t.cast_ray(&down, 1e4).ok().flatten() else { continue };
        let op = if k % 2 == 0 { BrushOp::Subtract } else { BrushOp::Add(voxterra_core::materials::ROCK) };
        let brush = Brush { shape: BrushShape::Sphere { center: hit.point, radius: 4.0 }, op };
        let Some(dirty) = t.apply_brush(&brush).ok().and_then(|r| r.dirty) else { continue };
        edits += 1;
        let small = boxes_4(&t, &dirty);
        for (i, c) in CODERS.iter().enumerate() {
            for b in &small {
                let bytes = c.encode(b, [4; 3]);
                let mut back = vec![Voxel::AIR; 64];
                c.decode(&bytes, [4; 3], &mut back, &mut scratch);
                assert!(&back == b, "{} 4³ round trip", c.name());
                per_edit[i] += bytes.len();
            }
        }
    }
    let edits_f = edits.max(1) as f64;
    for (i, c) in CODERS.iter().enumerate().skip(1) {
        report.metrics.push(Metric {
            name: format!("radius-4 brush as 4³ updates: bytes per edit ({edits} edits)"),
            voxterra: per_edit[0] as f64 / edits_f,
            peer: per_edit[i] as f64 / edits_f,
            peer_name: c.name().into(),
            goal: "smaller than every peer".into(),
        });
    }

    // Decode speed, one core: every 16³ box.
    let voxels = (boxes.len() * 4096) as u64;
    let checksum = |c: Coder, e: &[Vec<u8>]| {
        let mut out = vec![Voxel::AIR; 4096];
        let mut scratch = Vec::new();
        let mut sum = 0u64;
        for bytes in e {
            c.decode(bytes, [16; 3], &mut out, &mut scratch);
            sum = sum.wrapping_add(out[4095].to_bits() as u64 + out[0].to_bits() as u64);
        }
        sum
    };
    for (i, c) in CODERS.iter().enumerate().skip(1) {
        report.cases.push(compare(
            budget,
            "decode every 16³ box of the world",
            "voxel",
            voxels,
            c.name(),
            "≥ 1 G voxels/s (≤ 1 ns) and faster than every peer",
            || checksum(Coder::Packet, &encoded[0]),
            || checksum(*c, &encoded[i]),
        ));
    }
    faulty_network(&w.store, quick, &mut report);
    report
}

/// A client streaming a live world over a network that loses `loss` of the messages (and
/// duplicates 7%, damages 7%, reorders every tick's): the bytes sent again for what was lost, as a
/// share of the bytes sent once. Ours asks for exactly the missing messages; the peer is go-back-N
/// (a gap refuses everything after it until a resend from the gap), modelled on the same messages
/// with the same losses.
fn faulty_network(store: &voxterra_voxel_store::VoxelStore, quick: bool, report: &mut Report) {
    use voxterra::replication::{ReplicaClient, ReplicationConfig, ReplicationServer, client_terrain};
    let table = MaterialTable::default();
    let ticks = if quick { 150 } else { 600 };
    for loss in [0.01f32, 0.05, 0.12] {
        let mut t =
            Terrain::from_store(store.clone(), table.clone(), TerrainConfig::default()).expect("terrain");
        let mut server = ReplicationServer::new(ReplicationConfig::default());
        let id = server.add_client(&t);
        let mut client = ReplicaClient::new(client_terrain(table.clone(), 1.0).expect("a client terrain"));
        let mut rng = Rng::new(11);
        let (mut first, mut ours_again) = (0u64, 0u64);
        // Go-back-N: the next number it takes, and the sizes of everything sent so far.
        let (mut gbn_next, mut gbn_again, mut sizes) = (0u64, 0u64, Vec::<u64>::new());
        let deliver = |msgs: &[Vec<u8>], rng: &mut Rng, client: &mut ReplicaClient| -> Vec<u64> {
            let mut wire = Vec::new();
            for m in msgs {
                let r = rng.range(0.0, 1.0);
                let number = u64::from_le_bytes(m[4..12].try_into().expect("a header"));
                if r < loss {
                } else if r < loss + 0.07 {
                    wire.extend([(m.clone(), number), (m.clone(), number)]);
                } else if r < loss + 0.14 {
                    let mut bad = m.clone();
                    let at = rng.below(bad.len() as u64) as usize;
                    bad[at] ^= 1;
                    wire.push((bad, u64::MAX));
                } else {
                    wire.push((m.clone(), number));
                }
            }
            for i in (1..wire.len()).rev() {
                wire.swap(i, rng.below(i as u64 + 1) as usize);
            }
            let mut arrived = Vec::new();
            for (m, number) in wire {
                let _ = client.apply(&m);
                arrived.push(number);
            }
            arrived
        };
        let (sx, sz) = (512.0f32, 512.0f32);
        for k in 0..ticks {
            let viewer = Point3::new(100.0 + k as f32 * 0.5, 70.0, 256.0);
            server.set_viewers(id, &[viewer]).expect("a client");
            if k % 5 == 4 {
                let (x, z) = (viewer.x + rng.range(-20.0, 20.0), viewer.z + rng.range(-20.0, 20.0));
                let down = Ray::new(Point3::new(x.min(sx - 1.0), 126.0, z.min(sz - 1.0)), -Vector3::y());
                if let Some(hit) = t.cast_ray(&down, 1e3).ok().flatten() {
                    let brush = Brush {
                        shape: BrushShape::Sphere { center: hit.point, radius: 4.0 },
                        op: BrushOp::Subtract,
                    };
                    let _ = t.apply_brush(&brush);
                }
            }
            let msgs = server.tick(&t, id, 32 << 10).expect("a tick");
            first += msgs.iter().map(|m| m.len() as u64).sum::<u64>();
            sizes.extend(msgs.iter().map(|m| m.len() as u64));
            let arrived = deliver(&msgs, &mut rng, &mut client);
            // Go-back-N on the same arrivals: in order only; then everything from its gap again.
            let mut got: Vec<u64> = arrived.into_iter().filter(|&n| n != u64::MAX).collect();
            got.sort_unstable();
            for n in got {
                if n == gbn_next {
                    gbn_next += 1;
                }
            }
            gbn_again += sizes[gbn_next as usize..].iter().sum::<u64>();
            gbn_next = sizes.len() as u64; // the resend is assumed delivered whole
            let again = server.resend(id, &client.resend_request()).expect("kept for resends");
            ours_again += again.iter().map(|m| m.len() as u64).sum::<u64>();
            deliver(&again, &mut rng, &mut client);
        }
        report.metrics.push(Metric {
            name: format!(
                "bytes sent again at {:.0}% loss (7% duplicated, 7% damaged, reordered), % of first sends",
                loss * 100.0
            ),
            voxterra: 100.0 * ours_again as f64 / first.max(1) as f64,
            peer: 100.0 * gbn_again as f64 / first.max(1) as f64,
            peer_name: "go-back-N (resend from the gap)".into(),
            goal: "near the loss and damage rate; below go-back-N".into(),
        });
    }
}
