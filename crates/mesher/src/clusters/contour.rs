//! Polygons from the clusters: each edge of the finest grid around it whose end voxels are one
//! inside and one outside joins the clusters holding the cells around it, each at its own node's
//! level ([`contour`]), written into a render mesh ([`Builder`]).

use crate::clusters::node::{
    ClusterKey, ClusterNode, ClusterPart, ClusterVertex, LevelMap, MAX_CLUSTER_LEVEL, Map, bit,
};
use crate::clusters::store::finish;
use crate::clusters::vertex::{Cluster, sheet_table};
use crate::output::RenderMesh;
use voxterra_core::nalgebra::Point3;

/// An output mesh and the index each cluster got in it.
pub(crate) struct Builder<'a> {
    pub(crate) mesh: &'a mut RenderMesh,
    /// PERF: the node's own clusters' indices in a dense grid (`u32::MAX`: none yet), the others
    /// in a map; a hash probe per corner was a tenth of a node.
    pub(crate) dense: Vec<u32>,
    /// The dense grid's level, first cluster and side.
    pub(crate) grid: (u32, [i32; 3], usize),
    pub(crate) index: Map<ClusterKey, u32>,
}

impl<'a> Builder<'a> {
    /// Largest side of a node whose own clusters are indexed densely.
    pub(crate) const DENSE_SIDE: usize = 32;

    pub(crate) fn new(mesh: &'a mut RenderMesh, node: &ClusterNode) -> Self {
        let l = node.level;
        let n = (node.region.size()[0] >> l) as usize;
        let base = [node.region.min().x >> l, node.region.min().y >> l, node.region.min().z >> l];
        let dense = if n <= Self::DENSE_SIDE { vec![u32::MAX; n * n * n] } else { Vec::new() };
        Builder { mesh, dense, grid: (l, base, n), index: Map::default() }
    }

    /// `key`'s slot in the dense grid, if it has one.
    pub(crate) fn slot(&self, key: &ClusterKey) -> Option<usize> {
        let (l, base, n) = self.grid;
        if key.0 != l || key.2 != 0 || self.dense.is_empty() {
            return None;
        }
        let q = [0, 1, 2].map(|a| key.1[a].wrapping_sub(base[a]) as u32 as usize);
        q.iter().all(|&v| v < n).then(|| q[0] + n * (q[2] + n * q[1]))
    }
}

/// The polygons of `node`'s edges (those of `part`): each edge of its level's grid with a cell in
/// the node, contoured when this level is the finest around it and this node the first of that
/// level in a fixed order, its cells replaced by their clusters. With two outputs, polygons of the
/// node's own clusters go to the first and the others to the second. `signs` holds a bit per grid
/// point (`n + 1` a side, x fastest, then z, then y): all of them, or for the border alone those
/// on the node's faces.
///
/// A cluster crossed by separate sheets of surface (see [`sheets`]) away from the node's faces
/// draws each sheet with its own vertex (1 and up), the sheet each edge crosses; every other
/// cluster, and every cluster of a polygon that reaches past the node, draws one vertex (0). So
/// nodes meet as they always do, and within a node each sheet's polygons close up on their own.
pub(crate) fn contour<L>(
    node: &ClusterNode,
    levels: &dyn LevelMap,
    part: ClusterPart,
    signs: &[u64],
    lookup: &mut L,
    outs: &mut [Builder<'_>],
) where
    L: FnMut(ClusterKey) -> Option<ClusterVertex>,
{
    let (region, level) = (&node.region, node.level);
    let s = 1i32 << level;
    let (lo, hi) = (region.min(), region.max());
    let w = ((hi.x - lo.x) / s) as usize + 1;
    // PERF: a grid row's signs as words, so that the crossing edges of a row along each axis are
    // an exclusive or of two rows; only those edges are visited (a node's surface crosses a few
    // percent of its grid's edges).
    let words = w.div_ceil(64);
    let mut rows = vec![0u64; w * w * words];
    for (r, row) in rows.chunks_exact_mut(words).enumerate() {
        for (k, word) in row.iter_mut().enumerate() {
            for j in 0..64.min(w - 64 * k) {
                if bit(signs, r * w + 64 * k + j) {
                    *word |= 1 << j;
                }
            }
        }
    }
    let row = |yi: usize, zi: usize| &rows[(zi + w * yi) * words..][..words];
    let table = sheet_table();
    // Each cluster's corners where it has more than one sheet (never all inside or all outside);
    // or one sheet, or not seen yet.
    const UNSEEN: u8 = 0;
    const ONE_SHEET: u8 = u8::MAX;
    let mut seen = vec![UNSEEN; if level > 0 { (w - 1).pow(3) } else { 0 }];
    // Grid points strictly inside the node's faces along x, and all of them along x but the last.
    let mask = |k: usize, from: usize, to: usize| -> u64 {
        let (a, b) = ((64 * k).max(from), (64 * k + 64).min(to));
        if a >= b { 0 } else { (u64::MAX >> (64 - (b - a))) << (a - 64 * k) }
    };
    let inner = |i: usize| 0 < i && i + 1 < w;
    let mut edges = [vec![0u64; words], vec![0u64; words], vec![0u64; words]];
    for yi in 0..w {
        for zi in 0..w {
            let here_row = row(yi, zi);
            for k in 0..words {
                // Along x: the point and the next one differ (no edge leaves the last point).
                let next = here_row[k] >> 1 | here_row.get(k + 1).map_or(0, |v| v << 63);
                let mut ex = (here_row[k] ^ next) & mask(k, 0, w - 1);
                let mut ey = if yi + 1 < w { here_row[k] ^ row(yi + 1, zi)[k] } else { 0 };
                let mut ez = if zi + 1 < w { here_row[k] ^ row(yi, zi + 1)[k] } else { 0 };
                // An edge is the node's own when its cells are: the point strictly inside the
                // node's faces on the other two axes.
                let own_x = if inner(yi) && inner(zi) { u64::MAX } else { 0 };
                let own_y = if inner(zi) { mask(k, 1, w - 1) } else { 0 };
                let own_z = if inner(yi) { mask(k, 1, w - 1) } else { 0 };
                match part {
                    ClusterPart::Whole => {}
                    ClusterPart::Interior => {
                        ex &= own_x;
                        ey &= own_y;
                        ez &= own_z;
                    }
                    ClusterPart::Border => {
                        ex &= !own_x;
                        ey &= !own_y;
                        ez &= !own_z;
                    }
                }
                let owned = [own_x, own_y, own_z];
                edges[0][k] = ex;
                edges[1][k] = ey;
                edges[2][k] = ez;
                let mut any = ex | ey | ez;
                while any != 0 {
                    let j = any.trailing_zeros() as usize;
                    any &= any - 1;
                    let xi = 64 * k + j;
                    let p = Point3::new(lo.x + xi as i32 * s, lo.y + yi as i32 * s, lo.z + zi as i32 * s);
                    let here = here_row[k] >> j & 1 != 0;
                    for axis in 0..3 {
                        if edges[axis][k] >> j & 1 == 0 {
                            continue;
                        }
                        let own = owned[axis] >> j & 1 != 0;
                        let (b, c) = ((axis + 1) % 3, (axis + 2) % 3);
                        // The cells around the edge, counter-clockwise seen from its positive
                        // direction, as the mesher orders them: offsets (1, 1), (0, 1), (0, 0),
                        // (1, 0) cells down along b and c. PERF: written out, not mapped over
                        // arrays of points (those went through the stack).
                        let mut around = [[p.x, p.y, p.z]; 4];
                        around[0][b] -= s;
                        around[0][c] -= s;
                        around[1][c] -= s;
                        around[3][b] -= s;
                        let mut keys = [(0u32, [0i32; 3], 0u8); 4];
                        let mut finer = false;
                        for (k, q) in keys.iter_mut().zip(&around) {
                            let inside = (0..3).all(|a| lo[a] <= q[a] && q[a] < hi[a]);
                            let l = if inside {
                                level
                            } else {
                                levels.level_at(Point3::from(*q)).min(MAX_CLUSTER_LEVEL)
                            };
                            finer |= l < level;
                            *k = (l, [q[0] >> l, q[1] >> l, q[2] >> l], 0);
                        }
                        if finer {
                            continue; // a finer node contours it at its level
                        }
                        let emitter = [2usize, 3, 1, 0].into_iter().find(|&i| keys[i].0 == level);
                        if emitter.is_none_or(|i| !(0..3).all(|a| around[i][a] < hi[a])) {
                            continue;
                        }
                        for (k, q) in keys.iter_mut().zip(&around) {
                            // Only clusters of this node's level clear of its faces (so only
                            // polygons within the node), above full resolution (a vertex a cell).
                            let clear = (0..3).all(|a| lo[a] < q[a] && q[a] + s < hi[a]);
                            if level == 0 || k.0 != level || !clear {
                                continue;
                            }
                            let g = [0, 1, 2].map(|a| ((q[a] - lo[a]) >> level) as usize);
                            // PERF: each cluster's corners once a node (they were a sixth of it
                            // worked out for every edge), two at a time from the grid's rows.
                            let slot = &mut seen[g[0] + (w - 1) * (g[2] + (w - 1) * g[1])];
                            if *slot == UNSEEN {
                                let pair = |yi: usize, zi: usize| -> u8 {
                                    let (r, word, at) = (row(yi, zi), g[0] / 64, g[0] % 64);
                                    let next =
                                        if at == 63 { r.get(word + 1).map_or(0, |v| v & 1) << 1 } else { 0 };
                                    ((r[word] >> at & if at == 63 { 1 } else { 3 }) | next) as u8
                                };
                                let corners = pair(g[1], g[2])
                                    | pair(g[1] + 1, g[2]) << 2
                                    | pair(g[1], g[2] + 1) << 4
                                    | pair(g[1] + 1, g[2] + 1) << 6;
                                *slot = if table[corners as usize].count > 1 { corners } else { ONE_SHEET };
                            }
                            if *slot != ONE_SHEET {
                                let low =
                                    (0..3).fold(0u8, |acc, a| acc | u8::from(a != axis && q[a] < p[a]) << a);
                                k.2 = 1 + table[*slot as usize].on_edge(axis, low);
                            }
                        }
                        let flip = if here { 0 } else { 3 };
                        let quad: [ClusterKey; 4] =
                            [keys[flip], keys[1 ^ flip], keys[2 ^ flip], keys[3 ^ flip]];
                        let to = if outs.len() > 1 && !own { 1 } else { 0 };
                        emit(&mut outs[to], lookup, quad);
                    }
                }
            }
        }
    }
}

/// The vertex of cluster `k` from sums made from the voxels: every cluster around a crossing edge
/// has a cell with a vertex.
pub(crate) fn fresh(clusters: &Map<ClusterKey, Cluster>, k: ClusterKey) -> Option<ClusterVertex> {
    let v = clusters.get(&k).map(|c| finish(&k, c));
    debug_assert!(v.is_some(), "a cluster around a crossing edge has no cell with a vertex");
    v
}

/// The index of cluster `key` in `out`, added on first use.
pub(crate) fn vertex<L: FnMut(ClusterKey) -> Option<ClusterVertex>>(
    out: &mut Builder<'_>,
    lookup: &mut L,
    key: ClusterKey,
) -> Option<u32> {
    let slot = out.slot(&key);
    let held = match slot {
        Some(i) => Some(out.dense[i]).filter(|&v| v != u32::MAX),
        None => out.index.get(&key).copied(),
    };
    if held.is_some() {
        return held;
    }
    let v = lookup(key)?;
    let index = out.mesh.positions.len() as u32;
    out.mesh.positions.push(v.position);
    out.mesh.normals.push(v.normal);
    out.mesh.materials.push(v.material);
    match slot {
        Some(i) => out.dense[i] = index,
        None => {
            out.index.insert(key, index);
        }
    }
    Some(index)
}

/// The polygon of the four clusters around an edge: a quad split along its shorter diagonal (as
/// the mesher splits), a triangle when two neighbors coincide, nothing when fewer than three
/// differ.
pub(crate) fn emit<L: FnMut(ClusterKey) -> Option<ClusterVertex>>(
    out: &mut Builder<'_>,
    lookup: &mut L,
    quad: [ClusterKey; 4],
) {
    // The ring of distinct neighbors, in order (a fixed array: this runs once per crossing edge).
    let mut ring = [quad[0]; 4];
    let mut len = 0usize;
    for k in quad {
        if len == 0 || ring[len - 1] != k {
            ring[len] = k;
            len += 1;
        }
    }
    while len > 1 && ring[0] == ring[len - 1] {
        len -= 1;
    }
    if len < 3 {
        return;
    }
    let mut v = [0u32; 4];
    for i in 0..len {
        // A lookup that fails drops the polygon; the callers whose lookups cannot fail check
        // it (`fresh`), the others report it.
        let Some(index) = vertex(out, lookup, ring[i]) else { return };
        v[i] = index;
    }
    let m = &mut *out.mesh;
    let coarse = ring[..len].iter().any(|k| k.0 > 0);
    if coarse {
        // Coarser than full resolution, neighbouring clusters can be placed on one point (both
        // kept to a shared corner of their cubes): such neighbours are one corner of the polygon,
        // which leaves the surface as it was without its zero-area triangles. Every node sees a
        // cluster's vertex at the same place, so all make the same choice.
        let mut kept = 0;
        for i in 0..len {
            let p = m.positions[v[i] as usize];
            if kept == 0 || m.positions[v[kept - 1] as usize] != p {
                v[kept] = v[i];
                kept += 1;
            }
        }
        while kept > 1 && m.positions[v[0] as usize] == m.positions[v[kept - 1] as usize] {
            kept -= 1;
        }
        if kept < 3 {
            return;
        }
        len = kept;
    }
    if len == 3 {
        m.indices.push([v[0], v[1], v[2]]);
        return;
    }
    let p = v.map(|i| m.positions[i as usize]);
    let mut across = (p[2] - p[0]).norm_squared() > (p[3] - p[1]).norm_squared();
    if coarse {
        // A coarse quad can be far from flat: split it where neither triangle turns its back on
        // the normals of its corners (the other split folds over the crest it spans).
        let n = v.map(|i| m.normals[i as usize]);
        // PERF: signs first (written out: closures here were most of the check's cost); the
        // cosines only where the shorter diagonal's split may fold.
        let (d02, d13) = (p[2] - p[0], p[3] - p[1]);
        let facing = if across {
            // Triangles (0, 1, 3) and (1, 2, 3), on the diagonal 1–3.
            (p[1] - p[0]).cross(&(p[3] - p[0])).dot(&(n[0] + n[1] + n[3])) > 0.0
                && (p[2] - p[1]).cross(&d13).dot(&(n[1] + n[2] + n[3])) > 0.0
        } else {
            (p[1] - p[0]).cross(&d02).dot(&(n[0] + n[1] + n[2])) > 0.0
                && d02.cross(&(p[3] - p[0])).dot(&(n[0] + n[2] + n[3])) > 0.0
        };
        if !facing {
            let agree = |a: usize, b: usize, c: usize| {
                let f = (p[b] - p[a]).cross(&(p[c] - p[a]));
                f.dot(&(n[a] + n[b] + n[c])) / f.norm().max(f32::MIN_POSITIVE)
            };
            let with13 = agree(0, 1, 3).min(agree(1, 2, 3));
            let with02 = agree(0, 1, 2).min(agree(0, 2, 3));
            let (chosen, other) = if across { (with13, with02) } else { (with02, with13) };
            if chosen <= 0.0 && other > chosen {
                across = !across;
            }
        }
    }
    if across {
        m.indices.push([v[0], v[1], v[3]]);
        m.indices.push([v[1], v[2], v[3]]);
    } else {
        m.indices.push([v[0], v[1], v[2]]);
        m.indices.push([v[0], v[2], v[3]]);
    }
}
