//! The store's error type.

use thiserror::Error;
use voxterra_core::CoreError;

/// What can go wrong with a store operation.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A region, buffer or voxel that core rejects.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// The write could create more chunks than [`StoreLimits::max_chunks`](crate::StoreLimits)
    /// allows; nothing was written.
    #[error("write could need {needed} chunks but the store allows {limit} (now holds {held})")]
    TooManyChunks {
        /// Chunks the store would hold in the worst case after the write.
        needed: u128,
        /// The configured limit.
        limit: usize,
        /// Chunks held now.
        held: usize,
    },
}
