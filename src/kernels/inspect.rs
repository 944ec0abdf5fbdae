//! The "look inside" kernels (`shaders/inspect.wgsl`): per-tensor range, sum of squares and
//! histogram of values, gradients and updates, and a prompt's attention probabilities, with their
//! f64 references. They read buffers a run already has; only the small results are read back.

use super::attention::AttentionDims;
use super::{expect_len, groups_1d, Kernel, INSPECT as F, R, RW, U};
use crate::error::{ensure, Result};
use crate::gpu::Tensor;
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};

pub const TENSOR_STATS: Kernel = Kernel { entry: "tensor_stats", family: F, bindings: &[R, R, R, R, RW, U] };
pub const TENSOR_HISTOGRAM: Kernel = Kernel { entry: "tensor_histogram", family: F, bindings: &[R, R, R, R, R, RW, U] };
pub const ATTENTION_PROBS: Kernel = Kernel { entry: "attention_probs", family: F, bindings: &[R, R, RW, U] };
pub const KERNELS: &[&Kernel] = &[&TENSOR_STATS, &TENSOR_HISTOGRAM, &ATTENTION_PROBS];

/// Most histogram bins (the workgroup's counters).
pub const MAX_BINS: usize = 64;
/// Floats per (source, tensor) row of the stats: [min, max, Σx², non-finite count].
pub const STATS_WIDTH: usize = 4;

/// Mirrors `StatsParams`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct StatsParams {
    tensors: u32,
    sources: u32,
    bins: u32,
    pad: u32,
}

/// What the statistics are taken of: `values` alone (an activation), or also `grads` and the
/// update `values − prev` (the flat parameters), over the `table`'s ranges.
pub struct StatsInputs<'a> {
    /// (P) values: the flat weights or an activation tensor
    pub values: &'a Tensor,
    /// (P) the values before the last update, and (P) the gradients; `None` for values only
    pub prev_and_grads: Option<(&'a Tensor, &'a Tensor)>,
    /// (tensors, 2) u32 [offset, len] into the buffers
    pub table: &'a Tensor,
}

impl StatsInputs<'_> {
    /// Sources the statistics cover, in this order: values, gradients, updates.
    pub fn sources(&self) -> usize {
        if self.prev_and_grads.is_some() {
            3
        } else {
            1
        }
    }
}

/// The two dispatches: `stats` (sources, tensors, 4) [min, max, Σx², non-finite] of the finite
/// elements, then `counts` (sources, tensors, bins) u32 over equal-width bins of [min, max].
pub fn tensor_distributions(gpu: &Gpu, inputs: &StatsInputs<'_>, bins: usize, stats: &Tensor, counts: &Tensor) -> Result<[Op; 2]> {
    ensure((1..=MAX_BINS).contains(&bins), "bins", || format!("must be 1..={MAX_BINS}, got {bins}"))?;
    let tensors = inputs.table.len() / 2;
    ensure(tensors >= 1 && inputs.table.len() == 2 * tensors, inputs.table.name(), || "the table holds (tensors, 2) [offset, len] rows".into())?;
    let (prev, grads) = inputs.prev_and_grads.unwrap_or((inputs.values, inputs.values));
    expect_len(prev, inputs.values.len(), "previous values")?;
    expect_len(grads, inputs.values.len(), "gradients")?;
    let rows = inputs.sources() * tensors;
    expect_len(stats, rows * STATS_WIDTH, "stats (sources, tensors, 4)")?;
    expect_len(counts, rows * bins, "histogram counts (sources, tensors, bins)")?;
    let params = StatsParams { tensors: tensors as u32, sources: inputs.sources() as u32, bins: bins as u32, pad: 0 };
    let u = gpu.uniform("stats params", &params);
    let read = [T(inputs.values), T(prev), T(grads), T(inputs.table)];
    let grid = gpu.grid(rows as u32);
    let range = gpu.op(&TENSOR_STATS, &[read[0], read[1], read[2], read[3], T(stats), Uni(&u)], grid)?;
    let histogram = gpu.op(&TENSOR_HISTOGRAM, &[read[0], read[1], read[2], read[3], T(stats), T(counts), Uni(&u)], grid)?;
    Ok([range, histogram])
}

/// `probs` (B, H, T, T): each query's causal softmax weights over the keys, recomputed from the
/// forward's `qkv` (B, T, 3C) and `lse` (B, H, T); zero past the diagonal.
pub fn attention_probs(gpu: &Gpu, dims: AttentionDims, qkv: &Tensor, lse: &Tensor, probs: &Tensor) -> Result<Op> {
    dims.validate()?;
    expect_len(qkv, dims.qkv_len(), "qkv (B, T, 3C)")?;
    expect_len(lse, dims.lse_len(), "lse (B, H, T)")?;
    let len = dims.lse_len() * dims.seq;
    ensure(len <= u32::MAX as usize, "seq", || "attention maps exceed 32-bit indices".into())?;
    expect_len(probs, len, "attention probabilities (B, H, T, T)")?;
    let u = gpu.uniform("attention probs params", &dims.params());
    gpu.op(&ATTENTION_PROBS, &[T(qkv), T(lse), T(probs), Uni(&u)], gpu.grid(groups_1d(len)))
}

pub mod reference {
    /// [min, max, Σx², non-finite] of the finite elements of each range (min = +3.4e38 and
    /// max = −3.4e38 when none is finite, as the kernel leaves them).
    pub fn stats(values: &[f64], table: &[(usize, usize)]) -> Vec<[f64; 4]> {
        table
            .iter()
            .map(|&(off, len)| {
                let mut s: [f64; 4] = [3.4e38, -3.4e38, 0.0, 0.0];
                for &x in &values[off..off + len] {
                    if x.is_finite() {
                        s = [s[0].min(x), s[1].max(x), s[2] + x * x, s[3]];
                    } else {
                        s[3] += 1.0;
                    }
                }
                s
            })
            .collect()
    }

    /// Counts of each range's finite elements in `bins` equal-width bins of [min, max] (the
    /// given range, as the GPU computed it), the maximum in the last bin.
    pub fn histogram(values: &[f64], off: usize, len: usize, min: f64, max: f64, bins: usize) -> Vec<u32> {
        let mut counts = vec![0; bins];
        let width = (max - min) / bins as f64;
        for &x in values[off..off + len].iter().filter(|x| x.is_finite()) {
            let b = if width > 0.0 { (((x - min) / width).max(0.0) as usize).min(bins - 1) } else { 0 };
            counts[b] += 1;
        }
        counts
    }
}
