//! Convolution kernels (`shaders/conv.wgsl`): depthwise width-3 conv1d with "same" zero
//! padding, with an f64 reference.

use super::{expect_len, groups_1d, Kernel, CONV as F, R, RW, U};
use crate::error::{KilnError, Result};
use crate::gpu::Tensor;
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};

pub const CONV1D: Kernel = Kernel { entry: "conv1d", family: F, bindings: &[R, R, R, RW, U] };

pub const KERNELS: &[&Kernel] = &[&CONV1D];

/// Taps per channel.
pub const WIDTH: usize = 3;

/// Mirrors `ConvParams` in conv.wgsl (padded to 16 bytes).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ConvParams {
    dim: u32,
    seq_len: u32,
    _pad: [u32; 2],
}

/// Depthwise conv, width 3, zero "same" padding:
/// `out[d, s] = bias[d] + Σ_{k=0..2} input[d, s + k - 1] · weight[d, k]` (out-of-range taps
/// read 0). `input` and `out` are (dim, seq_len) row-major, `weight` (dim, 3), `bias` (dim).
pub fn conv1d(gpu: &Gpu, input: &Tensor, weight: &Tensor, bias: &Tensor, out: &Tensor, dim: usize, seq_len: usize) -> Result<Op> {
    if dim == 0 {
        return Err(KilnError::invalid("dim", "must be at least 1"));
    }
    if seq_len == 0 {
        return Err(KilnError::invalid("seq_len", "must be at least 1"));
    }
    let n = dim.checked_mul(seq_len).filter(|&n| n <= u32::MAX as usize);
    let n = n.ok_or_else(|| KilnError::invalid("seq_len", format!("dim·seq_len = {dim}·{seq_len} exceeds 2^32-1")))?;
    expect_len(input, n, "conv1d input (dim, seq_len)")?;
    expect_len(weight, dim * WIDTH, "conv1d weight (dim, 3)")?;
    expect_len(bias, dim, "conv1d bias (dim)")?;
    expect_len(out, n, "conv1d output (dim, seq_len)")?;
    let params = ConvParams { dim: dim as u32, seq_len: seq_len as u32, _pad: [0; 2] };
    let params = gpu.uniform("conv1d params", &params);
    let args = [T(input), T(weight), T(bias), T(out), Uni(&params)];
    gpu.op(&CONV1D, &args, gpu.grid(groups_1d(n)))
}

// ---------------------------------------------------------------- f64 reference

pub mod reference {
    /// Same semantics as [`super::conv1d`], written as a direct sum over the taps.
    pub fn conv1d(input: &[f64], weight: &[f64], bias: &[f64], dim: usize, seq_len: usize) -> Vec<f64> {
        let mut out = vec![0.0; dim * seq_len];
        for d in 0..dim {
            for s in 0..seq_len {
                let mut acc = bias[d];
                for k in 0..super::WIDTH {
                    // Input position s + k - 1; anything outside [0, seq_len) is padding (0).
                    let pos = s as isize + k as isize - 1;
                    if (0..seq_len as isize).contains(&pos) {
                        acc += input[d * seq_len + pos as usize] * weight[d * super::WIDTH + k];
                    }
                }
                out[d * seq_len + s] = acc;
            }
        }
        out
    }
}
