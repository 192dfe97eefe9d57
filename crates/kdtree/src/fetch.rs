//! Triangle fetches monomorphised per vertex and index format, and their prefetches.

use voxterra_core::QuantizedPositions;
use voxterra_core::nalgebra::Point3;

/// Vertex positions, for a given vertex format (resolved once per query).
pub(crate) trait Vertices: Copy {
    fn vertex(self, v: u32) -> Point3<f32>;
    /// Prefetches vertex `v`.
    fn ahead(self, v: u32);
}

impl Vertices for &[Point3<f32>] {
    #[inline]
    fn vertex(self, v: u32) -> Point3<f32> {
        self[v as usize]
    }

    #[inline(always)]
    fn ahead(self, v: u32) {
        prefetch_index::prefetch_index(self, v as usize);
    }
}

impl Vertices for QuantizedPositions<'_> {
    #[inline]
    fn vertex(self, v: u32) -> Point3<f32> {
        self.get(v as usize)
    }

    #[inline(always)]
    fn ahead(self, v: u32) {
        prefetch_index::prefetch_index(self.points, v as usize);
    }
}

/// Vertex positions of triangle `t`, for a given index type (resolved once per query).
pub(crate) trait Fetch: Copy {
    fn fetch(self, positions: impl Vertices, t: u32) -> [Point3<f32>; 3];
    /// Reads triangle `t`'s indices and prefetches its vertices.
    fn corners_ahead(self, positions: impl Vertices, t: u32);
}

impl Fetch for &[[u16; 3]] {
    #[inline]
    fn fetch(self, p: impl Vertices, t: u32) -> [Point3<f32>; 3] {
        // PERF: not `map`, which compiled to an out-of-line `try_map` call per triangle.
        let [a, b, c] = self[t as usize];
        [p.vertex(a.into()), p.vertex(b.into()), p.vertex(c.into())]
    }

    #[inline(always)]
    fn corners_ahead(self, p: impl Vertices, t: u32) {
        let [a, b, c] = self[t as usize];
        p.ahead(a.into());
        p.ahead(b.into());
        p.ahead(c.into());
    }
}

impl Fetch for &[u32] {
    // PERF: out of line (`#[inline]` alone), this call was a seventh of a terrain ray's time.
    #[inline(always)]
    fn fetch(self, p: impl Vertices, t: u32) -> [Point3<f32>; 3] {
        let [a, b, c] = voxterra_core::unpack9(self[t as usize]);
        [p.vertex(a), p.vertex(b), p.vertex(c)]
    }

    #[inline(always)]
    fn corners_ahead(self, p: impl Vertices, t: u32) {
        let [a, b, c] = voxterra_core::unpack9(self[t as usize]);
        p.ahead(a);
        p.ahead(b);
        p.ahead(c);
    }
}

impl Fetch for &[[u32; 3]] {
    #[inline]
    fn fetch(self, p: impl Vertices, t: u32) -> [Point3<f32>; 3] {
        let [a, b, c] = self[t as usize];
        [p.vertex(a), p.vertex(b), p.vertex(c)]
    }

    #[inline(always)]
    fn corners_ahead(self, p: impl Vertices, t: u32) {
        let [a, b, c] = self[t as usize];
        p.ahead(a);
        p.ahead(b);
        p.ahead(c);
    }
}

/// Runs `$body` with `$fetch` bound to a closure for this mesh's index type, monomorphised per
/// type (PERF: a `&dyn Fn` fetch cost an indirect call per triangle), `$ahead` to one that
/// prefetches a triangle's indices and `$corners` to one that prefetches its vertices.
macro_rules! with_fetch {
    ($view:expr, $fetch:ident, $ahead:ident, $corners:ident => $body:expr) => {{
        match $view.mesh.positions() {
            voxterra_core::Positions::F32(p) => $crate::fetch::with_fetch!(@indices $view, p, $fetch, $ahead, $corners => $body),
            voxterra_core::Positions::Quantized(p) => $crate::fetch::with_fetch!(@indices $view, p, $fetch, $ahead, $corners => $body),
        }
    }};
    (@indices $view:expr, $p:ident, $fetch:ident, $ahead:ident, $corners:ident => $body:expr) => {{
        match $view.mesh.indices() {
            voxterra_core::TriangleIndices::Packed9(t) => {
                let $fetch = |i: u32| t.fetch($p, i);
                let $ahead = |i: u32| prefetch_index::prefetch_index(t, i as usize);
                let $corners = |i: u32| t.corners_ahead($p, i);
                $body
            }
            voxterra_core::TriangleIndices::U16(t) => {
                let $fetch = |i: u32| t.fetch($p, i);
                let $ahead = |i: u32| prefetch_index::prefetch_index(t, i as usize);
                let $corners = |i: u32| t.corners_ahead($p, i);
                $body
            }
            voxterra_core::TriangleIndices::U32(t) => {
                let $fetch = |i: u32| t.fetch($p, i);
                let $ahead = |i: u32| prefetch_index::prefetch_index(t, i as usize);
                let $corners = |i: u32| t.corners_ahead($p, i);
                $body
            }
        }
    }};
}
pub(crate) use with_fetch;
