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

use crate::delta_log::LoggedEdit;
use crate::error::DeltaError;
use crate::terrain::{EditReport, Terrain};
use voxterra_codec::delta::decode_delta;

impl Terrain {
    /// The serialized deltas of every logged edit with a sequence number of at least `seq`, in
    /// order: send them to a client that has applied everything before `seq`. Edits older than the
    /// log's byte budget are gone (a client that far behind needs the terrain file).
    pub fn edits_since(&self, seq: u64) -> Vec<Vec<u8>> {
        self.log.since(seq).map(LoggedEdit::to_bytes).collect()
    }

    /// Replays one delta from [`Terrain::edits_since`] (of a terrain with the same material table)
    /// on this replica: writes its region through the same path as an edit (masks, cache, history,
    /// render updates, the delta log under the same number, so a replica can relay). The delta
    /// must be the one numbered [`Terrain::sequence`]: an earlier one is
    /// [`DeltaError::Stale`], a later one [`DeltaError::Gap`]. Refused bytes change nothing.
    /// Returns the report and the delta's sequence number; [`Terrain::sequence`] is then one more.
    pub fn apply_delta(&mut self, bytes: &[u8]) -> Result<(EditReport, u64), DeltaError> {
        let known =
            if self.materials().len() >= 64 { u64::MAX } else { (1u64 << self.materials().len()) - 1 };
        let d = decode_delta(bytes, self.config().max_edit_voxels, known).map_err(DeltaError::Format)?;
        let expected = self.sequence();
        if d.seq < expected {
            return Err(DeltaError::Stale { delta: d.seq, expected });
        }
        if d.seq > expected {
            return Err(DeltaError::Gap { delta: d.seq, expected });
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
