//! Edit history: before each edit, the box it changes is captured as an RLE snapshot (the storage
//! article's undo); undo writes it back after capturing the present for redo. A byte budget drops
//! the oldest snapshots.

use crate::error::HistoryStep;
use std::collections::VecDeque;
use voxterra_codec::Snapshot;
use voxterra_core::Region;

/// Undo and redo stacks of snapshots, within a byte budget.
#[derive(Debug, Clone)]
pub(crate) struct History {
    undo: VecDeque<Snapshot>,
    redo: Vec<Snapshot>,
    bytes: usize,
    budget: usize,
}

fn cost(s: &Snapshot) -> usize {
    s.encoded_len() + std::mem::size_of::<Snapshot>()
}

impl History {
    pub(crate) fn new(budget: usize) -> Self {
        History { undo: VecDeque::new(), redo: Vec::new(), bytes: 0, budget }
    }

    /// Records the state before a new edit; clears redo.
    pub(crate) fn record(&mut self, before: Snapshot) {
        for s in self.redo.drain(..) {
            self.bytes -= cost(&s);
        }
        self.bytes += cost(&before);
        self.undo.push_back(before);
        self.trim();
    }

    /// Drops the oldest undo snapshots until within budget, then (none left) the redo snapshots
    /// farthest from the present.
    fn trim(&mut self) {
        while self.bytes > self.budget {
            let s = match self.undo.pop_front() {
                Some(s) => s,
                None if !self.redo.is_empty() => self.redo.remove(0),
                None => break,
            };
            self.bytes -= cost(&s);
        }
    }

    /// A new budget, trimmed to as [`History::trim`] does.
    pub(crate) fn set_budget(&mut self, budget: usize) {
        self.budget = budget;
        self.trim();
    }

    /// The region the next undo (`Undo`) or redo writes.
    pub(crate) fn next_region(&self, step: HistoryStep) -> Option<Region> {
        match step {
            HistoryStep::Undo => self.undo.back(),
            HistoryStep::Redo => self.redo.last(),
        }
        .map(|s| *s.region())
    }

    pub(crate) fn pop_undo(&mut self) -> Option<Snapshot> {
        let s = self.undo.pop_back()?;
        self.bytes -= cost(&s);
        Some(s)
    }

    pub(crate) fn pop_redo(&mut self) -> Option<Snapshot> {
        let s = self.redo.pop()?;
        self.bytes -= cost(&s);
        Some(s)
    }

    /// After an undo: the state it replaced, for redo.
    pub(crate) fn push_redo(&mut self, after: Snapshot) {
        self.bytes += cost(&after);
        self.redo.push(after);
    }

    /// After a redo: the state it replaced, for undo (redo stays).
    pub(crate) fn push_undo(&mut self, before: Snapshot) {
        self.bytes += cost(&before);
        self.undo.push_back(before);
        self.trim();
    }

    pub(crate) fn undo_len(&self) -> usize {
        self.undo.len()
    }

    pub(crate) fn redo_len(&self) -> usize {
        self.redo.len()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}
