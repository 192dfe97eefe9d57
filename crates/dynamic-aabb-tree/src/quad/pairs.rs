//! The pair traversal, within the moving tree and against the static one: 4 × 4 child tests a
//! visit, tasks through a prefetch ring, candidates written branch-free into a [`Sink`].

use super::node::*;
use super::tree::*;
use crate::sah::{ITEM_MASK, LEAF, NULL};
use crate::sink::Sink;
use voxterra_core::Aabb;

/// Tasks taken off the stack ahead of their visit, each prefetched as it enters (as the binary
/// tree's traversal).
pub(super) const AHEAD: usize = 32;

/// A unit of the pair traversal: `(x in a, y in a or b, cross)`. Either a node against itself
/// (`x == y`, not cross), or two references whose boxes overlap, one of which moved; never two
/// leaves (those are candidates on the spot).
pub(crate) type Task = (u32, u32, bool);

/// Collects into `out` the pair keys `(low << 32) | high` of leaves whose boxes (as their nodes
/// bound them; a leaf met against a node, its tight box) overlap, at least one of them moved:
/// within `a`, and between `a` and `b` when given. Candidates only: the caller tests tight boxes.
#[cfg(test)]
pub(crate) fn candidate_pairs(a: &QuadTree, b: Option<&QuadTree>, tight: &[Aabb], out: &mut Vec<u64>) {
    let mut found = Sink::from(std::mem::take(out));
    let mut stack = Sink::default();
    root_tasks(a, b, &mut found, &mut stack);
    run(a, b, tight, &mut stack, &mut found);
    *out = found.into_vec();
}

/// The traversal's first tasks, onto `stack`: `a`'s root against itself and against `b`'s (a
/// pair of leaf roots goes to `found` instead).
pub(crate) fn root_tasks(a: &QuadTree, b: Option<&QuadTree>, found: &mut Sink<u64>, stack: &mut Sink<Task>) {
    stack.room(2);
    found.room(1);
    if a.root != NULL && a.root & LEAF == 0 && a.root & MOVED != 0 {
        stack.put((a.root, a.root, false), true);
    }
    if let Some(b) = b
        && a.root != NULL
        && b.root != NULL
        && (a.root | b.root) & MOVED != 0
        && crate::sah::overlap(&a.box_of(a.root), &b.box_of(b.root))
    {
        let leaves = a.root & b.root & LEAF != 0;
        found.put(pair_key(a.root, b.root), leaves);
        stack.put((a.root, b.root, true), !leaves);
    }
}

/// Runs the tasks on `stack` and all they lead to, candidates into `found`. Tasks leave the stack
/// into a ring of [`AHEAD`] and are visited from its far end, each prefetched as it enters.
pub(crate) fn run(
    a: &QuadTree,
    b: Option<&QuadTree>,
    tight: &[Aabb],
    stack: &mut Sink<Task>,
    out: &mut Sink<u64>,
) {
    // Locals for the loop, so the sinks' fields stay in registers.
    let (mut stack_, mut found) = (std::mem::take(stack), std::mem::take(out));
    let fetch = |t: &QuadTree, r: u32| {
        if r & LEAF == 0 {
            prefetch_node(&t.nodes, index(r));
        } else {
            prefetch_index::prefetch_index(tight, index(r));
        }
    };
    let mut ring = [(0u32, 0u32, false); AHEAD];
    let (mut head, mut queued) = (0usize, 0usize);
    loop {
        while queued < AHEAD
            && let Some(t) = stack_.pop()
        {
            fetch(a, t.0);
            fetch(if t.2 { b.unwrap_or(a) } else { a }, t.1);
            ring[(head + queued) % AHEAD] = t;
            queued += 1;
        }
        if queued == 0 {
            break;
        }
        let t = ring[head];
        head = (head + 1) % AHEAD;
        queued -= 1;
        visit(a, b, tight, t, &mut stack_, &mut found);
    }
    (*stack, *out) = (stack_, found);
}

/// Visits one task: its child pairs that pass their tests become candidates (two leaves) or
/// tasks.
#[inline(always)]
pub(crate) fn visit(
    a: &QuadTree,
    b: Option<&QuadTree>,
    tight: &[Aabb],
    (x, y, cross): Task,
    stack: &mut Sink<Task>,
    found: &mut Sink<u64>,
) {
    let bt = if cross { b.unwrap_or(a) } else { a };
    stack.room(WIDTH * WIDTH + WIDTH);
    found.room(WIDTH * WIDTH);
    // The child pairs of `ci` with the slots `m` of `n` passed: leaf pairs are candidates,
    // the rest tasks. Only the set bits are visited (most node pairs pass few).
    if !cross && x == y {
        let n = &a.nodes[index(x)];
        let (l, moved, present) = (lanes(n), moved_mask(n), n.present());
        for i in 0..n.len() {
            let ci = n.child[i];
            if ci & LEAF == 0 && ci & MOVED != 0 {
                stack.put((ci, ci, false), true);
            }
            // Later slots only, each pair once; at least one of the two moved.
            let with = if ci & MOVED != 0 { present } else { moved };
            emit(found, stack, ci, n, touch(&l, &spread(n, i)) & with & !((2 << i) - 1), cross);
        }
        return;
    }
    match (x & LEAF != 0, y & LEAF != 0) {
        (true, true) => found.put(pair_key(x, y), true),
        (true, false) => {
            let ny = &bt.nodes[index(y)];
            let with = if x & MOVED != 0 { ny.present() } else { moved_mask(ny) };
            emit(found, stack, x, ny, touch(&lanes(ny), &spread_box(&tight[index(x)])) & with, cross);
        }
        (false, true) => {
            // Node against leaf: the same with the sides' roles swapped (`emit` orders the
            // key; the task keeps `x` in `a`).
            let nx = &a.nodes[index(x)];
            let with = if y & MOVED != 0 { nx.present() } else { moved_mask(nx) };
            let mut m = touch(&lanes(nx), &spread_box(&tight[index(y)])) & with;
            while m != 0 {
                let i = m.trailing_zeros() as usize;
                m &= m - 1;
                let ci = nx.child[i];
                if ci & LEAF != 0 {
                    found.put(pair_key(ci, y), true);
                } else {
                    stack.put((ci, y, cross), true);
                }
            }
        }
        (false, false) => {
            let (nx, ny) = (&a.nodes[index(x)], &bt.nodes[index(y)]);
            let (ly, my, py) = (lanes(ny), moved_mask(ny), ny.present());
            for i in 0..nx.len() {
                let ci = nx.child[i];
                let with = if ci & MOVED != 0 { py } else { my };
                emit(found, stack, ci, ny, touch(&ly, &spread(nx, i)) & with, cross);
            }
        }
    }
}

/// The pair key `(low << 32) | high` of two leaf references.
#[inline(always)]
pub(super) fn pair_key(x: u32, y: u32) -> u64 {
    let (x, y) = (x & ITEM_MASK, y & ITEM_MASK);
    u64::from(x.min(y)) << 32 | u64::from(x.max(y))
}

/// The child pairs of `ci` with the slots `m` of node `n` that passed their tests: leaf pairs go
/// to `found` as candidates, the rest to `stack` as tasks. Only the set bits are visited (most
/// node pairs pass few).
#[inline(always)]
pub(super) fn emit(
    found: &mut Sink<u64>,
    stack: &mut Sink<(u32, u32, bool)>,
    ci: u32,
    n: &QNode,
    m: u32,
    cross: bool,
) {
    let leaves = if ci & LEAF != 0 { leaf_mask(n) } else { 0 };
    let (mut c, mut t) = (m & leaves, m & !leaves);
    while c != 0 {
        let j = c.trailing_zeros() as usize;
        c &= c - 1;
        found.put(pair_key(ci, n.child[j]), true);
    }
    while t != 0 {
        let j = t.trailing_zeros() as usize;
        t &= t - 1;
        stack.put((ci, n.child[j], cross), true);
    }
}
