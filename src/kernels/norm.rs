//! RMSNorm kernels (`shaders/norm.wgsl`): `rms_norm`, the fused `rms_norm_residual`, and
//! `rms_norm_backward` (dx, per row, and dweight, a deterministic sum over rows, in one
//! dispatch) — with f64 references.
//!
//! Shapes come from lengths: C = weight.len(), rows = x.len() / C.

use super::matmul::Unreduced;
use super::split_sums::{split_reduce, PendingSums};
use super::{expect_len, Kernel, NORM as F, R, RW, U};
use crate::error::{KilnError, Result};
use crate::gpu::Tensor;
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};

pub const RMS_NORM: Kernel = Kernel { entry: "rms_norm", family: F, bindings: &[R, R, RW, RW, U] };
pub const RMS_NORM_RESIDUAL: Kernel = Kernel { entry: "rms_norm_residual", family: F, bindings: &[R, R, R, RW, RW, RW, U] };
/// Binding 6 is dweight (C), or its (chunks, C) partials.
pub const RMS_NORM_BACKWARD: Kernel = Kernel { entry: "rms_norm_backward", family: F, bindings: &[R, R, R, R, RW, U, RW] };

pub const KERNELS: &[&Kernel] = &[&RMS_NORM, &RMS_NORM_RESIDUAL, &RMS_NORM_BACKWARD];

/// Channels per dweight workgroup of `rms_norm_backward` (WB_COLS in the shader).
const WEIGHT_COLS_PER_GROUP: usize = 32;

/// Mirrors `NormParams` in norm.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NormParams {
    pub cols: u32,
    pub rows: u32,
    pub eps: f32,
    pub accumulate: u32,
    pub splits: u32,
    pub weight_chunks: u32,
    pub _pad: [u32; 2],
}

/// (C, rows) of `x` normalized over `weight`'s length, or an error naming the bad tensor.
fn shape(x: &Tensor, weight: &Tensor) -> Result<(usize, usize)> {
    let c = weight.len();
    if c == 0 || !x.len().is_multiple_of(c) {
        return Err(KilnError::invalid(x.name(), format!("{} elements are not whole rows of {c} channels (the weight's length)", x.len())));
    }
    Ok((c, x.len() / c))
}

fn check_eps(eps: f32) -> Result<()> {
    if eps.is_finite() && eps >= 0.0 {
        Ok(())
    } else {
        Err(KilnError::invalid("eps", format!("must be finite and >= 0, got {eps}")))
    }
}

/// The kernels' params for `rows` of C channels, one input array and nothing accumulated.
fn params(c: usize, rows: usize, eps: f32) -> NormParams {
    NormParams { cols: c as u32, rows: rows as u32, eps, accumulate: 0, splits: 1, weight_chunks: 0, _pad: [0; 2] }
}

/// out = x / sqrt(mean(x²) + eps) * weight per row of x (rows, C); saves rstd (rows).
pub fn rms_norm(gpu: &Gpu, x: &Tensor, weight: &Tensor, out: &Tensor, rstd: &Tensor, eps: f32) -> Result<Op> {
    let (c, rows) = shape(x, weight)?;
    check_eps(eps)?;
    expect_len(out, x.len(), "rms_norm output")?;
    expect_len(rstd, rows, "rms_norm rstd (one per row)")?;
    let p = gpu.uniform("norm params", &params(c, rows, eps));
    gpu.op(&RMS_NORM, &[T(x), T(weight), T(out), T(rstd), Uni(&p)], gpu.grid(rows as u32))
}

/// sum = x + residual; out = rmsnorm(sum) * weight; saves rstd (rows). `sum` is the residual
/// stream's next value; it must be a buffer distinct from x and residual.
#[allow(clippy::too_many_arguments)] // one tensor per binding, as the kernel declares them
pub fn rms_norm_residual(gpu: &Gpu, x: &Tensor, residual: &Tensor, weight: &Tensor, sum: &Tensor, out: &Tensor, rstd: &Tensor, eps: f32) -> Result<Op> {
    rms_norm_residual_unreduced(gpu, x, &Unreduced::whole(residual), weight, sum, out, rstd, eps)
}

/// `rms_norm_residual` of a residual a split product left unreduced: the kernel adds its
/// partials as it reads them (`residual.c` is not written: nothing else reads a Llama's down
/// projection).
#[allow(clippy::too_many_arguments)] // one tensor per binding, as the kernel declares them
pub fn rms_norm_residual_unreduced(
    gpu: &Gpu,
    x: &Tensor,
    residual: &Unreduced,
    weight: &Tensor,
    sum: &Tensor,
    out: &Tensor,
    rstd: &Tensor,
    eps: f32,
) -> Result<Op> {
    let (c, rows) = shape(x, weight)?;
    check_eps(eps)?;
    residual.expect_len(x.len(), "rms_norm_residual residual")?;
    expect_len(sum, x.len(), "rms_norm_residual sum")?;
    expect_len(out, x.len(), "rms_norm_residual output")?;
    expect_len(rstd, rows, "rms_norm_residual rstd (one per row)")?;
    let p = gpu.uniform("norm params", &NormParams { splits: residual.splits as u32, ..params(c, rows, eps) });
    let args = [T(x), T(&residual.parts), T(weight), T(sum), T(out), T(rstd), Uni(&p)];
    gpu.op(&RMS_NORM_RESIDUAL, &args, gpu.grid(rows as u32))
}

/// What `rms_norm_backward` writes: dx (rows, C) — `dx += result` with `accumulate` (the
/// residual stream's gradient already holds the skip path), else `dx = result` — and
/// dweight (C) += Σ_rows dout·x·rstd.
pub struct NormGrads<'a> {
    pub dx: &'a Tensor,
    pub accumulate: bool,
    pub dweight: &'a Tensor,
}

/// The backward of rms_norm from dout, the forward input x and its saved rstd: dx and dweight
/// in one dispatch. dout may be a split product's unreduced partials, which the kernel adds as
/// it reads them (in split order, so the bits are those of a reduction first). dweight is
/// summed in a fixed order (deterministic): long batches are cut into row chunks whose
/// partials are then added, so that more than C / 32 workgroups share the work; the chunking
/// depends only on the shapes, so every device adds in the same order. The partials wait in
/// `pending` when given and they fit (dweight then holds the sum after its flush), else a
/// second dispatch returned here adds them.
pub fn rms_norm_backward(
    gpu: &Gpu,
    dout: &Unreduced,
    x: &Tensor,
    weight: &Tensor,
    rstd: &Tensor,
    grads: NormGrads,
    pending: Option<&mut PendingSums>,
) -> Result<Vec<Op>> {
    let (c, rows) = shape(x, weight)?;
    dout.expect_len(x.len(), "rms_norm_backward dout")?;
    expect_len(rstd, rows, "rms_norm_backward rstd (one per row)")?;
    expect_len(grads.dx, x.len(), "rms_norm_backward dx")?;
    expect_len(grads.dweight, c, "rms_norm_backward dweight (one per channel)")?;
    let chunks = weight_row_chunks(c, rows);
    let p = NormParams { accumulate: grads.accumulate as u32, splits: dout.splits as u32, weight_chunks: chunks as u32, ..params(c, rows, 0.0) };
    let p = gpu.uniform("norm params", &p);
    // A workgroup per channel block of each row chunk (dweight), then one per row (dx).
    let groups = rows + c.div_ceil(WEIGHT_COLS_PER_GROUP) * chunks;
    let op =
        |dweight: &Tensor| gpu.op(&RMS_NORM_BACKWARD, &[T(&dout.parts), T(x), T(weight), T(rstd), T(grads.dx), Uni(&p), T(dweight)], gpu.grid(groups as u32));
    if chunks == 1 {
        return Ok(vec![op(grads.dweight)?]);
    }
    if let Some(parts) = pending.and_then(|q| q.defer(grads.dweight, chunks, true)) {
        return Ok(vec![op(&parts)?]);
    }
    // Not the shared scratch: an unreduced dout may lie there.
    let parts = gpu.tensor("rms_norm_backward dweight partials", &[chunks * c])?;
    Ok(vec![op(&parts)?, split_reduce(gpu, &parts, grads.dweight, chunks, true)?])
}

/// Floats of dweight partials `rms_norm_backward` writes for C channels over `rows` (0 when
/// it sums in one pass): what a `PendingSums` needs to hold them.
pub fn weight_partials_len(c: usize, rows: usize) -> usize {
    match weight_row_chunks(c, rows) {
        1 => 0,
        chunks => chunks * c,
    }
}

/// Row chunks of `rms_norm_backward`'s dweight: about 512 workgroups in all, each chunk at
/// least 128 rows (so the partials stay a small fraction of the reads). Its workgroups share
/// a dispatch with the row workgroups and each loops over its chunk: fewer, longer chunks
/// (256 workgroups of 256 rows) trailed the rows and made the dispatch slower than the two
/// it replaced (H200, bench/RESULTS.md session 11).
fn weight_row_chunks(c: usize, rows: usize) -> usize {
    let col_groups = c.div_ceil(WEIGHT_COLS_PER_GROUP);
    (512 / col_groups).min(rows / 128).max(1)
}

// ---------------------------------------------------------------- f64 references

pub mod reference {
    /// (out, rstd) of RMSNorm over rows of `w.len()` channels.
    pub fn rms_norm(x: &[f64], w: &[f64], eps: f64) -> (Vec<f64>, Vec<f64>) {
        let c = w.len();
        let mut out = vec![0.0; x.len()];
        let mut rstd = Vec::with_capacity(x.len() / c);
        for (row, xr) in x.chunks(c).enumerate() {
            let r = 1.0 / (xr.iter().map(|v| v * v).sum::<f64>() / c as f64 + eps).sqrt();
            rstd.push(r);
            for i in 0..c {
                out[row * c + i] = xr[i] * r * w[i];
            }
        }
        (out, rstd)
    }

    /// (sum, out, rstd) of the fused residual add + RMSNorm.
    pub fn rms_norm_residual(x: &[f64], residual: &[f64], w: &[f64], eps: f64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let sum: Vec<f64> = x.iter().zip(residual).map(|(a, b)| a + b).collect();
        let (out, rstd) = rms_norm(&sum, w, eps);
        (sum, out, rstd)
    }

    /// dx of RMSNorm (not accumulated).
    pub fn rms_norm_backward(dout: &[f64], x: &[f64], w: &[f64], rstd: &[f64]) -> Vec<f64> {
        let c = w.len();
        let mut dx = vec![0.0; x.len()];
        for (row, &r) in rstd.iter().enumerate() {
            let off = row * c;
            let d: f64 = (0..c).map(|i| dout[off + i] * w[i] * x[off + i]).sum();
            let k = d * r * r * r / c as f64;
            for i in 0..c {
                dx[off + i] = r * w[i] * dout[off + i] - k * x[off + i];
            }
        }
        dx
    }

    /// dweight of RMSNorm (not accumulated): Σ_rows dout·x·rstd.
    pub fn rms_norm_backward_weight(dout: &[f64], x: &[f64], rstd: &[f64], c: usize) -> Vec<f64> {
        let mut dw = vec![0.0; c];
        for (row, &r) in rstd.iter().enumerate() {
            for i in 0..c {
                dw[i] += dout[row * c + i] * x[row * c + i] * r;
            }
        }
        dw
    }
}
