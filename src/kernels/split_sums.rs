//! Sums of partials that wait for one dispatch: a split-K weight gradient or a row-chunked
//! norm-weight gradient writes its partial sums into a `PendingSums` arena instead of the
//! shared scratch, and `flush` adds every waiting sum into its destination with one
//! `matmul_split_reduce` over a table of them. A Llama block's six gradient sums (four weight
//! matrices, two norm weights) are then one dispatch instead of six.
//!
//! Why an arena and not the shared scratch: sums wait there while other products (which use
//! the scratch) run, so each needs its own range until the flush.

use super::matmul::{reduce_op, ReduceEntry, REDUCE_MAX_ENTRIES};
use crate::error::Result;
use crate::gpu::{Gpu, Op, Tensor};

/// Partial sums waiting to be added, and the buffer they wait in.
pub struct PendingSums {
    /// (capacity) the partials of every waiting sum, back to back
    arena: Tensor,
    /// The whole buffer the waiting sums go into (they must share one: the gradients).
    out: Option<Tensor>,
    entries: Vec<ReduceEntry>,
    used: usize,
    /// The device's storage-offset alignment, in floats: where each partials range starts.
    align: usize,
}

impl PendingSums {
    /// An arena for `capacity` floats of partials (plus the alignment of each range; at most
    /// one binding's worth: sums that do not fit are summed by their producers as before).
    pub fn new(gpu: &Gpu, capacity: usize) -> Result<PendingSums> {
        let limits = gpu.limits();
        let align = (limits.min_storage_buffer_offset_alignment as usize / 4).max(1);
        let most = (limits.max_storage_buffer_binding_size.min(limits.max_buffer_size) / 4) as usize;
        let capacity = (capacity + REDUCE_MAX_ENTRIES * align).min(most);
        Ok(PendingSums { arena: gpu.tensor("pending split sums", &[capacity])?, out: None, entries: vec![], used: 0, align })
    }

    /// A view of `splits` partial arrays of `out`'s length, which the next `flush` sums into
    /// `out` (added to its contents with `accumulate`); None when they do not fit (the arena
    /// is full, the table is, or `out` lies in another buffer than the sums already waiting),
    /// and the caller sums them itself.
    pub fn defer(&mut self, out: &Tensor, splits: usize, accumulate: bool) -> Option<Tensor> {
        let len = out.len();
        let fits = self.used + splits * len <= self.arena.len() && self.entries.len() < REDUCE_MAX_ENTRIES;
        if !fits || self.out.as_ref().is_some_and(|o| !o.same_buffer(out)) {
            return None;
        }
        self.out.get_or_insert_with(|| out.whole("split sums destination"));
        let src = self.used;
        self.entries.push(ReduceEntry { src, len, splits, dst: out.start(), accumulate });
        // A storage binding starts at the device's offset alignment: so does the next range.
        self.used = (src + splits * len).next_multiple_of(self.align);
        Some(self.arena.view(&format!("{} partials", out.name()), src, vec![splits * len]))
    }

    /// The dispatch that adds every waiting sum (None when none waits); the arena is free again.
    pub fn flush(&mut self, gpu: &Gpu) -> Result<Option<Op>> {
        let Some(out) = self.out.take() else { return Ok(None) };
        let entries = std::mem::take(&mut self.entries);
        self.used = 0;
        Ok(Some(reduce_op(gpu, &self.arena, &out, &entries)?))
    }
}
