//! Sums of partials (`matmul_split_reduce`): `split_reduce` adds one split product's, and
//! `PendingSums` lets several wait for one dispatch: a split-K weight gradient or a row-chunked
//! norm-weight gradient writes its partial sums into a `PendingSums` arena instead of the
//! shared scratch, and `flush` adds every waiting sum into its destination with one
//! `matmul_split_reduce` over a table of them. A Llama block's six gradient sums (four weight
//! matrices, two norm weights) are then one dispatch instead of six.
//!
//! `Unreduced` is the other way to skip a reduction: a split product's partials left for the
//! kernel that reads them, which adds them in split order itself.
//!
//! Why an arena and not the shared scratch: sums wait there while other products (which use
//! the scratch) run, so each needs its own range until the flush.

use super::expect_len;
use super::matmul::MATMUL_SPLIT_REDUCE;
use crate::error::{KilnError, Result};
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op, Tensor};

/// Most sums one `matmul_split_reduce` dispatch adds (its table in matmul_reduce.wgsl holds 2 × 16 rows).
const REDUCE_MAX_ENTRIES: usize = 16;

/// Mirrors `MatmulReduceParams` in matmul_reduce.wgsl (528 bytes).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ReduceParams {
    entries: u32,
    total: u32,
    _pad: [u32; 2],
    table: [[u32; 4]; 2 * REDUCE_MAX_ENTRIES],
}

/// One sum of `matmul_split_reduce`: `splits` arrays of `len` floats at element `src` of the
/// partials, added in order into element `dst` onwards of the output (plus its contents with
/// `accumulate`).
#[derive(Debug, Clone, Copy)]
struct ReduceEntry {
    src: usize,
    len: usize,
    splits: usize,
    dst: usize,
    accumulate: bool,
}

/// `out` (len) = Σ_s parts[s · len ..][..len] in order (+ out's contents with `accumulate`):
/// the reduction of split-K products, also used for other sums split into partials.
pub fn split_reduce(gpu: &Gpu, parts: &Tensor, out: &Tensor, splits: usize, accumulate: bool) -> Result<Op> {
    let len = out.len();
    expect_len(parts, splits * len, "split partials (splits, len)")?;
    reduce_op(gpu, parts, out, &[ReduceEntry { src: 0, len, splits, dst: 0, accumulate }])
}

/// One `matmul_split_reduce` dispatch adding every entry's partials (in `parts`) into `out`.
fn reduce_op(gpu: &Gpu, parts: &Tensor, out: &Tensor, entries: &[ReduceEntry]) -> Result<Op> {
    if entries.is_empty() || entries.len() > REDUCE_MAX_ENTRIES {
        return Err(KilnError::invalid("entries", format!("a reduction takes 1 to {REDUCE_MAX_ENTRIES} sums, got {}", entries.len())));
    }
    let mut params = ReduceParams { entries: entries.len() as u32, total: 0, _pad: [0; 2], table: [[0; 4]; 2 * REDUCE_MAX_ENTRIES] };
    for (i, e) in entries.iter().enumerate() {
        if e.src + e.splits * e.len > parts.len() || e.dst + e.len > out.len() {
            return Err(KilnError::invalid("entries", format!("sum {i} ({e:?}) reaches past its partials ({}) or its output ({})", parts.len(), out.len())));
        }
        params.table[2 * i] = [params.total, e.len as u32, e.splits as u32, u32::from(e.accumulate)];
        params.table[2 * i + 1] = [e.src as u32, e.dst as u32, 0, 0];
        // Each entry's threads start at a multiple of 4 elements: a thread's four lie in one entry.
        params.total += e.len.next_multiple_of(4) as u32;
    }
    let uniform = gpu.uniform("split reduce params", &params);
    gpu.op(&MATMUL_SPLIT_REDUCE, &[T(parts), T(out), Uni(&uniform)], gpu.grid(super::groups_1d(params.total as usize / 4)))
}

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

/// A product whose split-K reduction is left to the kernel that reads it: `splits` arrays of
/// C's length in `parts`, added in split order by that kernel. `c` is the product's own
/// tensor (never written by a split product); with `splits` = 1, `parts` is `c`, complete.
pub struct Unreduced {
    pub parts: Tensor,
    pub splits: usize,
    pub c: Tensor,
}

impl Unreduced {
    /// A complete tensor, as a consumer of unreduced products takes it.
    pub fn whole(c: &Tensor) -> Unreduced {
        Unreduced { parts: c.clone(), splits: 1, c: c.clone() }
    }

    /// Checks that the product is `len` floats: its own tensor, and `splits` partial arrays of
    /// that length (what every consumer needs before it binds them).
    pub fn expect_len(&self, len: usize, what: &str) -> Result<()> {
        expect_len(&self.c, len, what)?;
        expect_len(&self.parts, self.splits * len, &format!("{what} ({} partial arrays)", self.splits))
    }
}
