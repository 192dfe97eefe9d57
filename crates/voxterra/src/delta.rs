//! Edit deltas: what a server sends its clients. Each edit that changed voxels is logged as its
//! dirty region's new content (RLE, LZ4) under its sequence number; [`Terrain::edits_since`]
//! serializes the log from a sequence number on, and [`Terrain::apply_delta`] replays one delta on
//! a replica with the same result. A delta's sequence number names the state it applies to: the
//! source after that many edits. A replica applies only the delta numbered its own
//! [`Terrain::sequence`], so deltas that come repeated, out of order or after a gap are refused.
//! Delta bytes come from another process: every field is checked and bounded before anything is
//! allocated or written, and a refused delta leaves the terrain unchanged.
//!
//! The layout (`VXDELTA1`, sequence number, region, codec block, CRC-32) is the codec's
//! ([`voxterra_codec::delta`], documented in `docs/format.md`).

use crate::terrain::{EditReport, Terrain, TerrainError};
use voxterra_codec::Compression;
use voxterra_codec::block::{BlockScratch, encode_voxels};
use voxterra_codec::delta::{decode_delta, encode_delta, encoded_len};
use voxterra_core::{Region, Voxel, VoxelRead};

/// Why a delta was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DeltaError {
    /// The bytes are not a well-formed delta for this terrain (truncated, a bad magic or
    /// checksum, a bad region, over the edit limit, voxels that do not decode or name materials
    /// the table lacks).
    #[error(transparent)]
    Format(#[from] voxterra_codec::DeltaError),
    /// The replica is already past this delta: it was applied before (repeated), or comes after a
    /// later one (reordered).
    #[error("delta {delta} is stale: the replica expects delta {expected}")]
    Stale {
        /// The delta's sequence number.
        delta: u64,
        /// The replica's sequence number: the delta it applies next.
        expected: u64,
    },
    /// Deltas before this one are missing: one was skipped, or this one came early.
    #[error("delta {delta} leaves a gap: the replica expects delta {expected}")]
    Gap {
        /// The delta's sequence number.
        delta: u64,
        /// The replica's sequence number: the delta it applies next.
        expected: u64,
    },
}

/// One logged edit: its sequence number and its dirty region's new content (a codec block).
#[derive(Clone, Debug)]
pub(crate) struct LoggedEdit {
    pub(crate) seq: u64,
    pub(crate) region: Region,
    pub(crate) block: Vec<u8>,
}

impl LoggedEdit {
    /// Captures `region` of `src` as the content of edit `seq`.
    pub(crate) fn capture(seq: u64, src: &impl VoxelRead, region: &Region) -> Result<Self, TerrainError> {
        let mut voxels = vec![Voxel::AIR; region.len()?];
        src.read_box(region, &mut voxels)?;
        let mut block = Vec::new();
        encode_voxels(&voxels, Compression::Lz4, &mut BlockScratch::default(), &mut block);
        Ok(LoggedEdit { seq, region: *region, block })
    }

    /// Its size on the wire.
    pub(crate) fn bytes(&self) -> usize {
        encoded_len(self.block.len())
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
    pub(crate) fn record(&mut self, src: &impl VoxelRead, region: &Region) -> Result<(), TerrainError> {
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

    /// The logged edits numbered `seq` and after, oldest first.
    pub(crate) fn since(&self, seq: u64) -> impl Iterator<Item = &LoggedEdit> {
        self.entries.iter().filter(move |e| e.seq >= seq)
    }
}

impl Terrain {
    /// The serialized deltas of every logged edit with a sequence number of at least `seq`, in
    /// order: send them to a client that has applied everything before `seq`. Edits older than the
    /// log's byte budget are gone (a client that far behind needs the world file).
    pub fn edits_since(&self, seq: u64) -> Vec<Vec<u8>> {
        self.log.since(seq).map(LoggedEdit::to_bytes).collect()
    }

    /// Replays one delta from [`Terrain::edits_since`] (of a terrain with the same material table)
    /// on this replica: writes its region through the same path as an edit (masks, cache, history,
    /// render updates, the delta log under the same number, so a replica can relay). The delta
    /// must be the one numbered [`Terrain::sequence`]: an earlier one is
    /// [`DeltaError::Stale`], a later one [`DeltaError::Gap`]. Refused bytes change nothing.
    /// Returns the report and the delta's sequence number; [`Terrain::sequence`] is then one more.
    pub fn apply_delta(&mut self, bytes: &[u8]) -> Result<(EditReport, u64), TerrainError> {
        let known =
            if self.materials().len() >= 64 { u64::MAX } else { (1u64 << self.materials().len()) - 1 };
        let d = decode_delta(bytes, self.max_edit_voxels(), known).map_err(DeltaError::Format)?;
        let expected = self.sequence();
        if d.seq < expected {
            return Err(DeltaError::Stale { delta: d.seq, expected }.into());
        }
        if d.seq > expected {
            return Err(DeltaError::Gap { delta: d.seq, expected }.into());
        }
        let report = self.write_logged(d.region, &d.voxels)?;
        if report.dirty.is_none() {
            // The replica held those voxels already; the source's edit still takes its number.
            self.log_unchanged(&d.region)?;
        }
        debug_assert_eq!(self.sequence(), d.seq + 1);
        Ok((report, d.seq))
    }
}
