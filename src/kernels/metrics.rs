//! `record_metrics` (`shaders/metrics.wgsl`): one dispatch per step (two when some tensor is
//! longer than two `PART`s) writes the loss, the gradient norm and every tensor's update/weight
//! ratio into a GPU ring buffer, with its f64 reference.

use super::{expect_len, Kernel, METRICS as F, R, RW, U};
use crate::error::{ensure, Result};
use crate::gpu::Tensor;
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};
use crate::kernels::optimizer::UniformOp;

pub const METRICS_PARTIALS: Kernel = Kernel { entry: "metrics_partials", family: F, bindings: BINDINGS };
pub const RECORD_METRICS: Kernel = Kernel { entry: "record_metrics", family: F, bindings: BINDINGS };
pub const KERNELS: &[&Kernel] = &[&METRICS_PARTIALS, &RECORD_METRICS];
const BINDINGS: &[super::Access] = &[R, R, R, R, R, RW, U, RW];

/// Floats in a part of a large tensor; a tensor longer than two parts is summed part by part
/// (one workgroup each) before `record_metrics` adds them up. 16,384 floats (64 a thread) give
/// llama-small's 4.2M parameters about 250 workgroups: enough to fill a large GPU.
pub const PART: usize = 1 << 14;

/// Mirrors `MetricsParams`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct MetricsParams {
    pub tensors: u32,
    pub row: u32,
    pub stride: u32,
    pub parts: u32,
}

impl crate::kernels::optimizer::Validate for MetricsParams {
    fn validate(&self) -> Result<()> {
        ensure(self.stride == 2 + self.tensors, "stride", || format!("must be 2 + tensors = {}, got {}", 2 + self.tensors, self.stride))
    }
}

/// Tensors that `record_metrics` reads and writes.
pub struct MetricsBuffers<'a> {
    /// (P) flat weights after the update, and (P) before it
    pub weights: &'a Tensor,
    pub prev: &'a Tensor,
    /// (1) loss and (1) squared gradient norm
    pub loss: &'a Tensor,
    pub norm_sq: &'a Tensor,
    /// (slots, 2 + tensors)
    pub ring: &'a Tensor,
}

/// The metrics record's dispatches: the parts of large tensors (if any), then the ring row.
pub struct MetricsRecord {
    partials: Option<Op>,
    record: UniformOp<MetricsParams>,
    params: MetricsParams,
}

impl MetricsRecord {
    pub fn ops(&self) -> impl Iterator<Item = &Op> {
        self.partials.iter().chain([&self.record.op])
    }

    /// Makes the next run write ring row `row`.
    pub fn set_row(&self, gpu: &Gpu, row: usize) -> Result<()> {
        self.record.set(gpu, &MetricsParams { row: row as u32, ..self.params })
    }
}

/// The table (tensors + parts, 4) `record_metrics` reads, and the number of parts.
fn table(ranges: &[(usize, usize)]) -> (Vec<u32>, usize) {
    let mut tensors = vec![];
    let mut parts = vec![];
    for &(off, len) in ranges {
        let first = parts.len() / 4;
        if len > 2 * PART {
            for start in (0..len).step_by(PART) {
                parts.extend([(off + start) as u32, PART.min(len - start) as u32, 0, 0]);
            }
        }
        tensors.extend([off as u32, len as u32, first as u32, (parts.len() / 4 - first) as u32]);
    }
    let n = parts.len() / 4;
    tensors.extend(parts);
    (tensors, n)
}

/// The record of each step: the loss, gradient norm and the update/weight ratio of each
/// [offset, offset + len) range of the flat weights into ring row `row` (change it each step
/// with `MetricsRecord::set_row`).
pub fn record_metrics(gpu: &Gpu, b: &MetricsBuffers<'_>, ranges: &[(usize, usize)], row: usize) -> Result<MetricsRecord> {
    let tensors = ranges.len();
    ensure(tensors >= 1, "tensors", || "at least one parameter tensor".into())?;
    expect_len(b.prev, b.weights.len(), "previous weights")?;
    ensure(ranges.iter().all(|&(off, len)| off + len <= b.weights.len()), "tensors", || "a range lies outside the flat weights".into())?;
    expect_len(b.loss, 1, "loss")?;
    expect_len(b.norm_sq, 1, "norm_sq")?;
    let stride = 2 + tensors;
    ensure(b.ring.len().is_multiple_of(stride) && row < b.ring.len() / stride, "row", || {
        format!("the ring holds {} rows of {stride}; row {row} is outside it", b.ring.len() / stride)
    })?;
    let (flat, parts) = table(ranges);
    let table = gpu.tensor_from("metrics table", &[flat.len() / 4, 4], &flat)?;
    let sums = gpu.tensor("metrics part sums", &[parts.max(1), 2])?;
    let params = MetricsParams { tensors: tensors as u32, row: row as u32, stride: stride as u32, parts: parts as u32 };
    let p = gpu.uniform("metrics params", &params);
    let args = [T(b.weights), T(b.prev), T(&table), T(b.loss), T(b.norm_sq), T(b.ring), Uni(&p), T(&sums)];
    let partials = if parts > 0 { Some(gpu.op(&METRICS_PARTIALS, &args, gpu.grid(parts as u32))?) } else { None };
    let op = gpu.op(&RECORD_METRICS, &args, gpu.grid(tensors as u32))?;
    Ok(MetricsRecord { partials, record: UniformOp::new(op, p), params })
}

pub mod reference {
    /// ||w − prev|| / ||w|| over each [offset, offset + len) range; 0 where w is all zero.
    pub fn update_ratios(weights: &[f64], prev: &[f64], table: &[(usize, usize)]) -> Vec<f64> {
        table
            .iter()
            .map(|&(off, len)| {
                let (mut dd, mut ww) = (0.0, 0.0);
                for i in off..off + len {
                    dd += (weights[i] - prev[i]).powi(2);
                    ww += weights[i].powi(2);
                }
                if ww > 0.0 {
                    (dd / ww).sqrt()
                } else {
                    0.0
                }
            })
            .collect()
    }
}
