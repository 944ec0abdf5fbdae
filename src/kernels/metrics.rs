//! `record_metrics` (`shaders/metrics.wgsl`): one dispatch per step writes the loss, the
//! gradient norm and every tensor's update/weight ratio into a GPU ring buffer, with its f64
//! reference.

use super::{expect_len, Kernel, METRICS as F, R, RW, U};
use crate::error::{ensure, Result};
use crate::gpu::Tensor;
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu};
use crate::kernels::optimizer::UniformOp;

pub const RECORD_METRICS: Kernel = Kernel { entry: "record_metrics", family: F, bindings: &[R, R, R, R, R, RW, U] };
pub const KERNELS: &[&Kernel] = &[&RECORD_METRICS];

/// Mirrors `MetricsParams`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct MetricsParams {
    pub tensors: u32,
    pub row: u32,
    pub stride: u32,
    pub pad: u32,
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
    /// (tensors, 2) u32 [offset, len]
    pub table: &'a Tensor,
    /// (1) loss and (1) squared gradient norm
    pub loss: &'a Tensor,
    pub norm_sq: &'a Tensor,
    /// (slots, 2 + tensors)
    pub ring: &'a Tensor,
}

/// Writes ring row `row`; rewrite the row each step with `UniformOp::set`.
pub fn record_metrics(gpu: &Gpu, b: &MetricsBuffers<'_>, tensors: usize, row: usize) -> Result<UniformOp<MetricsParams>> {
    ensure(tensors >= 1, "tensors", || "at least one parameter tensor".into())?;
    expect_len(b.prev, b.weights.len(), "previous weights")?;
    expect_len(b.table, 2 * tensors, "tensor table (tensors, 2)")?;
    expect_len(b.loss, 1, "loss")?;
    expect_len(b.norm_sq, 1, "norm_sq")?;
    let stride = 2 + tensors;
    ensure(b.ring.len().is_multiple_of(stride) && row < b.ring.len() / stride, "row", || {
        format!("the ring holds {} rows of {stride}; row {row} is outside it", b.ring.len() / stride)
    })?;
    let params = MetricsParams { tensors: tensors as u32, row: row as u32, stride: stride as u32, pad: 0 };
    let p = gpu.uniform("metrics params", &params);
    let args = [T(b.weights), T(b.prev), T(b.table), T(b.loss), T(b.norm_sq), T(b.ring), Uni(&p)];
    let op = gpu.op(&RECORD_METRICS, &args, gpu.grid(tensors as u32))?;
    Ok(UniformOp::new(op, p))
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
