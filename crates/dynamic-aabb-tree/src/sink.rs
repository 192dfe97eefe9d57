//! A vector written without branching on what is kept, for the pair traversal's hot loops.

/// A vector the traversal writes without branching on its tests: `put` always writes the slot
/// past the kept entries and keeps it only when asked. PERF: the child-pair tests of a pair
/// traversal are coin flips to a branch predictor; as branches they cost 2.4 mispredictions a
/// visited pair on the suite's 100k boxes, all moving.
#[derive(Debug, Default)]
pub(crate) struct Sink<T> {
    pub(crate) buf: Vec<T>,
    /// Kept entries: `buf[..len]`.
    pub(crate) len: usize,
}

impl<T: Copy + Default> Sink<T> {
    /// Makes room for `k` more `put`s.
    #[inline(always)]
    pub(crate) fn room(&mut self, k: usize) {
        if self.len + k > self.buf.len() {
            // By value: a reference would let the sink's address escape, and keep its fields in
            // memory rather than registers through the traversal loop.
            self.buf = grown(std::mem::take(&mut self.buf), self.len + k);
        }
    }

    /// Writes `v` after the kept entries and keeps it if `keep`. Needs [`Sink::room`] first.
    #[inline(always)]
    pub(crate) fn put(&mut self, v: T, keep: bool) {
        self.buf[self.len] = v;
        self.len += usize::from(keep);
    }

    #[inline(always)]
    pub(crate) fn pop(&mut self) -> Option<T> {
        self.len = self.len.checked_sub(1)?;
        Some(self.buf[self.len])
    }

    pub(crate) fn kept(&self) -> &[T] {
        &self.buf[..self.len]
    }

    pub(crate) fn into_vec(mut self) -> Vec<T> {
        self.buf.truncate(self.len);
        self.buf
    }
}

#[cold]
#[inline(never)]
fn grown<T: Copy + Default>(mut buf: Vec<T>, need: usize) -> Vec<T> {
    buf.resize(need.max(2 * buf.len()), T::default());
    buf
}

impl<T> From<Vec<T>> for Sink<T> {
    /// Reuses the vector's allocation; its contents are dropped.
    fn from(mut buf: Vec<T>) -> Self {
        buf.clear();
        Sink { buf, len: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn sinks_keep_what_they_are_told(puts in prop::collection::vec((any::<u32>(), any::<bool>()), 0..200)) {
            let mut sink = Sink::from(vec![9u32; 3]);
            let mut want = vec![];
            for &(v, keep) in &puts {
                sink.room(1);
                sink.put(v, keep);
                if keep {
                    want.push(v);
                }
            }
            prop_assert_eq!(sink.kept(), &want[..]);
            while let Some(v) = sink.pop() {
                prop_assert_eq!(Some(v), want.pop());
            }
            prop_assert!(want.is_empty());
        }
    }
}
