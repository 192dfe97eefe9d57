//! The edit rate every connection keeps: game clients' edits, viewers' edits and drops.

use std::time::Instant;

/// A token bucket: `rate` a second, bursts of as many (at least one).
pub(crate) struct Rate {
    rate: f32,
    burst: f32,
    allowance: f32,
    last: Instant,
}

impl Rate {
    pub(crate) fn new(rate: f32) -> Self {
        let burst = rate.max(1.0);
        Rate { rate: rate.max(0.0), burst, allowance: burst, last: Instant::now() }
    }

    /// Takes one request's worth; false when the bucket is empty.
    pub(crate) fn take(&mut self) -> bool {
        let now = Instant::now();
        self.allowance =
            (self.allowance + self.rate * now.duration_since(self.last).as_secs_f32()).min(self.burst);
        self.last = now;
        let ok = self.allowance >= 1.0;
        if ok {
            self.allowance -= 1.0;
        }
        ok
    }
}
