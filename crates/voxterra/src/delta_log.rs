//! The delta log: the newest edits' deltas (each edit's dirty region's new content, RLE and LZ4,
//! under its sequence number) within a byte budget. What [`Terrain::edits_since`] serves.
//!
//! [`Terrain::edits_since`]: crate::Terrain::edits_since

use crate::error::{EditError, InvalidTerrain};
use voxterra_codec::Compression;
use voxterra_codec::block::{BlockScratch, encode_voxels};
use voxterra_codec::delta::{encode_delta, encoded_len};
use voxterra_core::{Region, Voxel, VoxelRead};

/// One logged edit: its sequence number and its dirty region's new content (a codec block).
#[derive(Clone, Debug)]
pub(crate) struct LoggedEdit {
    pub(crate) seq: u64,
    pub(crate) region: Region,
    pub(crate) block: Vec<u8>,
}

impl LoggedEdit {
    /// Captures `region` of `src` as the content of edit `seq`.
    pub(crate) fn capture(seq: u64, src: &impl VoxelRead, region: &Region) -> Result<Self, EditError> {
        let mut voxels = vec![Voxel::AIR; region.len()?];
        src.read_box(region, &mut voxels)?;
        Ok(Self::from_voxels(seq, *region, &voxels))
    }

    /// Its size on the wire.
    pub(crate) fn bytes(&self) -> usize {
        encoded_len(self.block.len())
    }

    /// An edit from its voxels (as decoded from its wire form).
    pub(crate) fn from_voxels(seq: u64, region: Region, voxels: &[Voxel]) -> Self {
        let mut block = Vec::new();
        encode_voxels(voxels, Compression::Lz4, &mut BlockScratch::default(), &mut block);
        LoggedEdit { seq, region, block }
    }

    /// The wire form.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        encode_delta(self.seq, &self.region, &self.block)
    }
}

/// The delta log: the newest edits' deltas, oldest first, within a byte budget, and the sequence
/// number the next edit gets.
#[derive(Debug, Clone)]
pub(crate) struct DeltaLog {
    next: u64,
    entries: std::collections::VecDeque<LoggedEdit>,
    bytes: usize,
    budget: usize,
}

impl DeltaLog {
    pub(crate) fn new(budget: usize) -> Self {
        DeltaLog { next: 0, entries: Default::default(), bytes: 0, budget }
    }

    /// The sequence number the next edit gets.
    pub(crate) fn sequence(&self) -> u64 {
        self.next
    }

    /// Logs `region` of `src` as the next edit.
    pub(crate) fn record(&mut self, src: &impl VoxelRead, region: &Region) -> Result<(), EditError> {
        let e = LoggedEdit::capture(self.next, src, region)?;
        self.next += 1;
        self.bytes += e.bytes();
        self.entries.push_back(e);
        self.trim();
        Ok(())
    }

    fn trim(&mut self) {
        while self.bytes > self.budget {
            let Some(old) = self.entries.pop_front() else { break };
            self.bytes -= old.bytes();
        }
    }

    /// A new budget; the oldest deltas go first.
    pub(crate) fn set_budget(&mut self, budget: usize) {
        self.budget = budget;
        self.trim();
    }

    /// Restarts the numbering at `seq`, emptying the log (its numbers belonged to the old count).
    pub(crate) fn restart(&mut self, seq: u64) {
        self.next = seq;
        self.entries.clear();
        self.bytes = 0;
    }

    /// Restarts the log with `entries` (consecutive, oldest first) as the last edits before
    /// `next`, within the budget (the oldest go first).
    pub(crate) fn restore(&mut self, entries: Vec<LoggedEdit>, next: u64) {
        self.restart(next);
        if entries.last().is_none_or(|e| e.seq + 1 == next)
            && entries.windows(2).all(|w| w[1].seq == w[0].seq + 1)
        {
            for e in entries {
                self.bytes += e.bytes();
                self.entries.push_back(e);
            }
            self.trim();
        }
    }

    /// The oldest logged edit's number (the sequence when the log is empty).
    pub(crate) fn oldest(&self) -> u64 {
        self.entries.front().map_or(self.next, |e| e.seq)
    }

    /// The logged edits numbered `seq` and after, oldest first.
    pub(crate) fn since(&self, seq: u64) -> impl Iterator<Item = &LoggedEdit> {
        self.entries.iter().filter(move |e| e.seq >= seq)
    }

    /// Checks the log: entries numbered consecutively, below the next number, their bytes summed,
    /// within the budget.
    pub(crate) fn validate(&self) -> Result<(), InvalidTerrain> {
        for pair in self.entries.iter().collect::<Vec<_>>().windows(2) {
            if pair[1].seq != pair[0].seq + 1 {
                return Err(InvalidTerrain::DeltaLog("entries are not numbered consecutively"));
            }
        }
        if self.entries.back().is_some_and(|e| e.seq >= self.next) {
            return Err(InvalidTerrain::DeltaLog("an entry is numbered past the next edit"));
        }
        if self.entries.iter().map(LoggedEdit::bytes).sum::<usize>() != self.bytes {
            return Err(InvalidTerrain::DeltaLog("the byte count differs from the entries'"));
        }
        if self.bytes > self.budget {
            return Err(InvalidTerrain::DeltaLog("over the byte budget"));
        }
        Ok(())
    }
}
