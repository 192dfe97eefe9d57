//! The mesher's level-of-detail calls: a node meshed whole or from its chunks' clusters, a
//! border stitched to its neighbors' levels, and the chunk clusters made.

use crate::clusters::cell_mesh::CellMesh;
use crate::clusters::contour::{Builder, contour, fresh};
use crate::clusters::node::{
    CHUNK, CellVertex, ClusterKey, ClusterNode, ClusterPart, ClusterVertex, LevelMap, MAX_CLUSTER_LEVEL, Map,
    SIGN_WORDS, bit, check_node, chunk_of, chunk_pieces, chunk_region, grow, reach, shrink,
};
use crate::clusters::store::{BorderSummary, ChunkClusters, LevelClusters, PackedVertex, Signs, finish};
use crate::clusters::vertex::{Cluster, cube_corners, place, sheet_sums, sheets};
use crate::config::{MeshError, Mesher};
use crate::output::{MeshOutput, RenderMesh};
use crate::workspace::MeshWorkspace;
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Region, VoxelPos, VoxelRead};

impl Mesher {
    /// The render mesh (`part` of it) of `node` (voxels aligned to `2^level`) at its level,
    /// seamless with its neighbors at the levels `levels` gives (any levels up to
    /// [`MAX_CLUSTER_LEVEL`]): vertex positions in voxel units like [`Mesher::mesh`]'s. Reads
    /// full-resolution voxels of the node and of the neighbors' clusters along its border
    /// through `src`.
    pub fn mesh_clustered<R: VoxelRead + ?Sized>(
        &self,
        src: &R,
        node: ClusterNode,
        levels: &dyn LevelMap,
        part: ClusterPart,
        ws: &mut MeshWorkspace,
        out: &mut RenderMesh,
    ) -> Result<(), MeshError> {
        out.clear();
        check_node(&node)?;
        let clusters = self.cluster_sums(src, &node, levels, part, ws)?;
        let mut lookup = |k: ClusterKey| fresh(&clusters, k);
        let signs = self.sign_grid(src, &node)?;
        let mut one = [Builder::new(out, &node)];
        contour(&node, levels, part, &signs, &mut lookup, &mut one);
        Ok(())
    }

    /// A node's interior and border meshes at once (one pass over its voxels), and the summary its
    /// neighbors stitch against when a level changes around it.
    pub fn mesh_cluster_node<R: VoxelRead + ?Sized>(
        &self,
        src: &R,
        node: ClusterNode,
        levels: &dyn LevelMap,
        ws: &mut MeshWorkspace,
        interior: &mut RenderMesh,
        border: &mut RenderMesh,
    ) -> Result<BorderSummary, MeshError> {
        interior.clear();
        border.clear();
        check_node(&node)?;
        let clusters = self.cluster_sums(src, &node, levels, ClusterPart::Whole, ws)?;
        let signs = self.sign_grid(src, &node)?;
        let (lo, hi) = (node.region.min(), node.region.max());
        let l = node.level;
        let on_face = |c: &[i32; 3]| (0..3).any(|a| c[a] == lo[a] >> l || c[a] == (hi[a] >> l) - 1);
        let own: Map<ClusterKey, ClusterVertex> = clusters
            .iter()
            .filter(|(k, _)| {
                k.0 == l
                    && k.2 == 0
                    && on_face(&k.1)
                    && node.region.contains(Point3::from(k.1).map(|v| v << l))
            })
            .map(|(k, c)| (*k, finish(k, c)))
            .collect();
        let mut lookup = |k: ClusterKey| fresh(&clusters, k);
        Ok(self.node_meshes(node, levels, signs, &mut lookup, own, interior, border))
    }

    /// Re-makes `own`'s node's border mesh for the levels `levels` gives now, from summaries alone:
    /// `own` for its signs and its clusters, `others` for the clusters of the nodes around it
    /// (their [`BorderSummary::vertex`]). Equal, bit for bit, to
    /// [`Mesher::mesh_clustered`]`(…, ClusterPart::Border, …)`, without reading a voxel.
    pub fn stitch_border(
        &self,
        own: &BorderSummary,
        levels: &dyn LevelMap,
        others: &dyn Fn((u32, [i32; 3])) -> Option<ClusterVertex>,
        out: &mut RenderMesh,
    ) {
        out.clear();
        let node = own.node;
        let l = node.level;
        // A border's polygons draw clusters whole (sheets are drawn only clear of the faces).
        let mut lookup = |k: ClusterKey| {
            let mine = k.0 == l && node.region.contains(Point3::from(k.1).map(|v| v << l));
            if k.2 != 0 {
                None
            } else if mine {
                own.clusters.get(&k).copied()
            } else {
                others((k.0, k.1))
            }
        };
        let mut one = [Builder::new(out, &node)];
        contour(&node, levels, ClusterPart::Border, &own.signs, &mut lookup, &mut one);
    }

    /// The sign ([`Mesher::is_inside`]) of every point of `node`'s grid (`n + 1` a side, x
    /// fastest, then z, then y), a bit each. PERF: read a row of voxels at a time and subsampled;
    /// the contour's point reads, up to four a grid point, were two thirds of a level-1 node.
    pub(crate) fn sign_grid<R: VoxelRead + ?Sized>(
        &self,
        src: &R,
        node: &ClusterNode,
    ) -> Result<Vec<u64>, MeshError> {
        let (lo, hi) = (node.region.min(), node.region.max());
        let s = 1i32 << node.level;
        let w = ((hi.x - lo.x) / s) as usize + 1;
        let mut signs = vec![0u64; (w * w * w).div_ceil(64)];
        // The row from `lo.x` to `hi.x` inclusive (a node ends below i32::MAX: it is aligned).
        let len = (hi.x - lo.x) as u32 + 1;
        let mut row = vec![voxterra_core::Voxel::AIR; len as usize];
        for yi in 0..w {
            for zi in 0..w {
                let (y, z) = (lo.y + yi as i32 * s, lo.z + zi as i32 * s);
                let r =
                    Region::from_min_size(Point3::new(lo.x, y, z), [len, 1, 1]).map_err(MeshError::Read)?;
                src.read_box(&r, &mut row)?;
                let base = w * (zi + w * yi);
                for xi in 0..w {
                    if self.is_inside(row[xi * s as usize]) {
                        let i = base + xi;
                        signs[i / 64] |= 1 << (i % 64);
                    }
                }
            }
        }
        Ok(signs)
    }

    /// Every full-resolution cell with a vertex that `part` of `node`'s polygons can reach,
    /// summed into clusters at its node's level.
    pub(crate) fn cluster_sums<R: VoxelRead + ?Sized>(
        &self,
        src: &R,
        node: &ClusterNode,
        levels: &dyn LevelMap,
        part: ClusterPart,
        ws: &mut MeshWorkspace,
    ) -> Result<Map<ClusterKey, Cluster>, MeshError> {
        let region = &node.region;
        let s = 1i32 << node.level;
        let need = reach(node, levels, part)?;
        // The border's polygons use only the clusters along the node's faces: the cells deeper
        // than one cluster are not read.
        let core = (part == ClusterPart::Border).then(|| shrink(region, s + 1)).flatten();
        // A voxel more on each side makes the pieces below own every edge of their cells, so
        // each cell gets its vertex whichever node asks (a cluster's vertex is the same in every
        // node that draws it).
        let work = grow(&need, 1)?;
        let mut cells: Vec<CellVertex> = Vec::new();
        let mut mesh = CellMesh::default();
        for piece in chunk_pieces(&work)? {
            if core.is_some_and(|c| c.contains_region(&piece)) {
                continue;
            }
            self.mesh(src, &piece, ws, &mut mesh)?;
            cells.extend(mesh.cells_in(&need));
        }
        cells.sort_unstable_by_key(|c| (c.0.y, c.0.z, c.0.x));
        cells.dedup_by_key(|c| c.0);
        let mut clusters: Map<ClusterKey, Cluster> = Map::default();
        for c in &cells {
            let l = levels.level_at(c.0).min(MAX_CLUSTER_LEVEL);
            clusters.entry((l, [c.0.x >> l, c.0.y >> l, c.0.z >> l], 0)).or_default().add(c);
        }
        // Coarser than full resolution, a vertex per sheet where sheets cross a cluster apart
        // (drawn only by clusters of the node's level clear of its faces).
        let (lo, hi) = (node.region.min(), node.region.max());
        let clear = |k: &ClusterKey| {
            let (side, l) = (1i64 << k.0, k.0);
            k.0 == node.level
                && (0..3).all(|a| {
                    (lo[a] as i64) < (k.1[a] as i64) << l && ((k.1[a] as i64) << l) + side < hi[a] as i64
                })
        };
        let mut split: Map<ClusterKey, (u8, Vec<&CellVertex>)> = Map::default();
        for k in clusters.keys().filter(|k| k.0 > 0 && clear(k)) {
            let corners = cube_corners(k.0, k.1, |p| self.is_inside(src.voxel(p)));
            if sheets(corners).count > 1 {
                split.insert(*k, (corners, Vec::new()));
            }
        }
        if !split.is_empty() {
            for c in &cells {
                let l = levels.level_at(c.0).min(MAX_CLUSTER_LEVEL);
                if let Some((_, members)) = split.get_mut(&(l, [c.0.x >> l, c.0.y >> l, c.0.z >> l], 0)) {
                    members.push(c);
                }
            }
            for (k, (corners, members)) in split {
                for (s, sum) in sheet_sums(k.0, k.1, corners, members.into_iter()).into_iter().enumerate() {
                    clusters.insert((k.0, k.1, 1 + s as u8), sum);
                }
            }
        }
        Ok(clusters)
    }

    /// Storage chunk `chunk`'s clusters at levels 1 to [`MAX_CLUSTER_LEVEL`] and the signs of its
    /// even voxels: all [`Mesher::mesh_cluster_node_from`] reads of the chunk, made once and
    /// kept until an edit within a voxel of the chunk. Each cluster's vertex is bit for bit the
    /// one [`Mesher::mesh_cluster_node`] computes from the voxels.
    pub fn chunk_clusters<R: VoxelRead + ?Sized>(
        &self,
        src: &R,
        chunk: [i32; 3],
        ws: &mut MeshWorkspace,
    ) -> Result<ChunkClusters, MeshError> {
        let region = chunk_region(chunk)?;
        let work = grow(&region, 1)?;
        // A chunk uniform a voxel beyond its box has no cell with a vertex and one sign.
        if let Some(v) = grow(&work, 1).ok().and_then(|padded| src.uniform(&padded)) {
            return Ok(ChunkClusters::uniform(self.is_inside(v)));
        }
        let mut mesh = CellMesh::default();
        self.mesh(src, &work, ws, &mut mesh)?;
        let mut cells: Vec<CellVertex> = mesh.cells_in(&region).collect();
        cells.sort_unstable_by_key(|c| (c.0.y, c.0.z, c.0.x));
        // Signs: the even voxels of the chunk, read a row at a time.
        let mut signs = Box::new([0u64; SIGN_WORDS]);
        let half = (CHUNK / 2) as usize;
        let mut row = [voxterra_core::Voxel::AIR; CHUNK as usize];
        let lo = region.min();
        for yi in 0..half {
            for zi in 0..half {
                let r = Region::from_min_size(
                    Point3::new(lo.x, lo.y + 2 * yi as i32, lo.z + 2 * zi as i32),
                    [CHUNK as u32, 1, 1],
                )
                .map_err(MeshError::Read)?;
                src.read_box(&r, &mut row)?;
                for xi in 0..half {
                    if self.is_inside(row[2 * xi]) {
                        let i = xi + half * (zi + half * yi);
                        signs[i / 64] |= 1 << (i % 64);
                    }
                }
            }
        }
        let mut levels: [LevelClusters; MAX_CLUSTER_LEVEL as usize] = Default::default();
        // PERF: each level's clusters found through a dense grid of slots, not a map.
        let mut slot = vec![u16::MAX; ((CHUNK / 2) * (CHUNK / 2) * (CHUNK / 2)) as usize];
        let mut sums: Vec<(u16, Cluster)> = Vec::new();
        let mut out = Vec::new();
        let mut extra = Vec::new();
        for l in 1..=MAX_CLUSTER_LEVEL {
            let n = CHUNK >> l;
            slot[..(n * n * n) as usize].fill(u16::MAX);
            sums.clear();
            for c in &cells {
                let q = (c.0 - lo).map(|v| v >> l);
                let i = (q.x + n * (q.z + n * q.y)) as usize;
                if slot[i] == u16::MAX {
                    slot[i] = sums.len() as u16;
                    sums.push((i as u16, Cluster::default()));
                }
                sums[slot[i] as usize].1.add(c);
            }
            // Each cube's corners (even voxels: the chunk's signs, or past its far faces the
            // voxels), and a vertex per sheet where sheets cross it apart.
            let inside_at = |p: VoxelPos| {
                if (0..3).all(|a| p[a] < lo[a] + CHUNK) {
                    let q = (p - lo).map(|v| (v >> 1) as usize);
                    let i = q.x + half * (q.z + half * q.y);
                    signs[i / 64] >> (i % 64) & 1 != 0
                } else {
                    self.is_inside(src.voxel(p))
                }
            };
            let key_of = |i: u16| {
                let (i, n) = (i as i32, n);
                (l, [(lo.x >> l) + i % n, (lo.y >> l) + i / (n * n), (lo.z >> l) + (i / n) % n], 0u8)
            };
            let mut split = Vec::new();
            for (j, (i, _)) in sums.iter().enumerate() {
                let corners = cube_corners(l, key_of(*i).1, inside_at);
                if sheets(corners).count > 1 {
                    split.push((j, corners, Vec::new()));
                }
            }
            if !split.is_empty() {
                for c in &cells {
                    let q = (c.0 - lo).map(|v| v >> l);
                    let j = slot[(q.x + n * (q.z + n * q.y)) as usize] as usize;
                    if let Ok(at) = split.binary_search_by_key(&j, |e| e.0) {
                        split[at].2.push(c);
                    }
                }
            }
            out.clear();
            extra.clear();
            let mut next = split.iter().peekable();
            for (j, (i, c)) in sums.iter().enumerate() {
                let key = key_of(*i);
                out.push((*i, PackedVertex::pack(&key, &place(&key, c))));
                if let Some((_, corners, members)) = next.next_if(|e| e.0 == j) {
                    let parts = sheet_sums(l, key.1, *corners, members.iter().copied());
                    for (s, part) in parts.iter().enumerate() {
                        let which = 1 + s as u8;
                        let v = PackedVertex::pack(&(l, key.1, which), &place(&(l, key.1, which), part));
                        extra.push((*i, which, v));
                    }
                }
            }
            out.sort_unstable_by_key(|e| e.0);
            extra.sort_unstable_by_key(|e| (e.0, e.1));
            levels[l as usize - 1] = LevelClusters::new(&out, &extra, (n * n * n) as usize);
        }
        let all = if signs.iter().all(|&w| w == 0) {
            Some(false)
        } else if signs.iter().all(|&w| w == !0) {
            Some(true)
        } else {
            None
        };
        match all {
            Some(inside) if cells.is_empty() => Ok(ChunkClusters::uniform(inside)),
            _ => Ok(ChunkClusters { from: 1, signs: Signs::Mixed(signs), levels }),
        }
    }

    /// [`Mesher::mesh_cluster_node`] from chunk clusters instead of voxels: `chunks` gives each
    /// storage chunk's [`ChunkClusters`] (the chunks of [`cluster_chunks`], each holding the level
    /// drawn there). The same meshes and summary, bit for bit, for nodes of level 1 and coarser;
    /// a level-0 node reads voxels at odd coordinates, which chunk clusters do not keep. A chunk
    /// missing, or lacking a level it is read at, is [`MeshError::MissingClusters`].
    pub fn mesh_cluster_node_from<'c>(
        &self,
        chunks: &dyn Fn([i32; 3]) -> Option<&'c ChunkClusters>,
        node: ClusterNode,
        levels: &dyn LevelMap,
        interior: &mut RenderMesh,
        border: &mut RenderMesh,
    ) -> Result<BorderSummary, MeshError> {
        interior.clear();
        border.clear();
        check_node(&node)?;
        if node.level == 0 {
            return Err(MeshError::MissingClusters { chunk: chunk_of(node.region.min()), level: 0 });
        }
        let (lo, hi) = (node.region.min(), node.region.max());
        let s = 1i32 << node.level;
        let w = ((hi.x - lo.x) / s) as usize + 1;
        let mut signs = vec![0u64; (w * w * w).div_ceil(64)];
        let l = node.level;
        let on_face = |c: &[i32; 3]| (0..3).any(|a| c[a] == lo[a] >> l || c[a] == (hi[a] >> l) - 1);
        // The node's own clusters on its faces, for its summary.
        let mut own: Map<ClusterKey, ClusterVertex> = Map::default();
        // Chunk by chunk (PERF: one table lookup a chunk, not one a grid point): the grid points
        // in it (the grid reaches the node's upper faces, in the chunks past it), and the node's
        // own clusters in the node's chunks.
        let (clo, chi) = (chunk_of(lo), chunk_of(hi));
        let inner_hi = chunk_of(hi.map(|v| v - 1));
        // Grid indices whose points lie in chunk `c` along axis `a`.
        let span = |c: i32, a: usize| {
            let first = ((c as i64) << MAX_CLUSTER_LEVEL).max(lo[a] as i64);
            let last = (((c as i64 + 1) << MAX_CLUSTER_LEVEL) - 1).min(hi[a] as i64);
            let from = (first - lo[a] as i64 + s as i64 - 1) >> l;
            let to = (last - lo[a] as i64) >> l;
            from as usize..(to + 1).max(from) as usize
        };
        for cy in clo[1]..=chi[1] {
            for cz in clo[2]..=chi[2] {
                for cx in clo[0]..=chi[0] {
                    let c = [cx, cy, cz];
                    let Some(t) = chunks(c) else {
                        return Err(MeshError::MissingClusters { chunk: c, level: l });
                    };
                    let (xs, ys, zs) = (span(cx, 0), span(cy, 1), span(cz, 2));
                    let all = t.uniform_side();
                    for yi in ys {
                        for zi in zs.clone() {
                            for xi in xs.clone() {
                                let p = Point3::new(
                                    lo.x + xi as i32 * s,
                                    lo.y + yi as i32 * s,
                                    lo.z + zi as i32 * s,
                                );
                                if all.unwrap_or_else(|| t.sign(p)) {
                                    let i = xi + w * (zi + w * yi);
                                    signs[i / 64] |= 1 << (i % 64);
                                }
                            }
                        }
                    }
                    if (0..3).all(|a| c[a] <= inner_hi[a]) && all.is_none() {
                        if !t.holds(l) {
                            return Err(MeshError::MissingClusters { chunk: c, level: l });
                        }
                        // Only chunks on the node's faces hold face clusters.
                        if (0..3).any(|a| c[a] == clo[a] || c[a] == inner_hi[a]) {
                            own.extend(
                                t.level(c, l)
                                    .filter(|(key, _)| key.2 == 0 && on_face(&key.1))
                                    .map(|(key, v)| (key, v.unpack(&key))),
                            );
                        }
                    }
                }
            }
        }
        // A level map that changes inside a storage chunk can ask a chunk for a level it does
        // not hold: an error, not a hole.
        let mut missing = None;
        let mut last: Option<([i32; 3], Option<&ChunkClusters>)> = None;
        let mut lookup = |k: ClusterKey| {
            let cell = Point3::from(k.1).map(|v| v << k.0);
            let chunk = chunk_of(cell);
            // Clusters come in grid order: mostly from the chunk the last one came from.
            let t = match last {
                Some((c, t)) if c == chunk => t,
                _ => {
                    let t = chunks(chunk);
                    last = Some((chunk, t));
                    t
                }
            };
            let t = t.filter(|t| t.holds(k.0));
            if t.is_none() {
                missing.get_or_insert(chunk);
            }
            t.and_then(|t| t.vertex(k))
        };
        let summary = self.node_meshes(node, levels, signs, &mut lookup, own, interior, border);
        match missing {
            Some(chunk) => Err(MeshError::MissingClusters { chunk, level: node.level }),
            None => Ok(summary),
        }
    }

    /// A node's interior and border meshes from its grid's signs and its clusters, and its summary.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn node_meshes<L: FnMut(ClusterKey) -> Option<ClusterVertex>>(
        &self,
        node: ClusterNode,
        levels: &dyn LevelMap,
        signs: Vec<u64>,
        lookup: &mut L,
        own: Map<ClusterKey, ClusterVertex>,
        interior: &mut RenderMesh,
        border: &mut RenderMesh,
    ) -> BorderSummary {
        {
            let mut both = [Builder::new(interior, &node), Builder::new(border, &node)];
            contour(&node, levels, ClusterPart::Whole, &signs, lookup, &mut both);
        }
        let n = (node.region.size()[0] >> node.level) as usize;
        let mut summary =
            BorderSummary { node, clusters: own, signs: vec![0; ((n + 1).pow(3)).div_ceil(64)] };
        // The face points only: whole rows on the y and z faces, the row ends elsewhere.
        for qy in 0..=n {
            for qz in 0..=n {
                let whole_row = qy == 0 || qy == n || qz == 0 || qz == n;
                let step = if whole_row { 1 } else { n.max(1) };
                for qx in (0..=n).step_by(step) {
                    let i = qx + (n + 1) * (qz + (n + 1) * qy);
                    if bit(&signs, i) {
                        summary.signs[i / 64] |= 1 << (i % 64);
                    }
                }
            }
        }
        summary
    }

    /// Whether `v` is inside the surface this mesher extracts (matter, occupancy over one half): the
    /// sign the mesher gives a cell corner.
    pub fn is_inside(&self, v: voxterra_core::Voxel) -> bool {
        self.matter >> v.material().id() & 1 != 0 && v.occupancy_byte() >= 128
    }
}
