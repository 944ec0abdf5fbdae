//! Convolution kernels (`shaders/conv.wgsl`): depthwise width-3 conv1d with zero padding —
//! the seed's centred ("same") convolution over channel-major sequences, and the causal
//! token-major one a Llama block's short conv uses — with its input and weight gradients and
//! f64 references of all three.

use super::{expect_len, groups_1d, Kernel, CONV as F, R, RW, U};
use crate::error::{KilnError, Result};
use crate::gpu::Tensor;
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};

pub const CONV1D: Kernel = Kernel { entry: "conv1d", family: F, bindings: &[R, R, R, RW, U] };
pub const CONV1D_BACKWARD_INPUT: Kernel = Kernel { entry: "conv1d_backward_input", family: F, bindings: &[R, R, RW, U] };
pub const CONV1D_BACKWARD_WEIGHT: Kernel = Kernel { entry: "conv1d_backward_weight", family: F, bindings: &[R, R, RW, RW, U] };

pub const KERNELS: &[&Kernel] = &[&CONV1D, &CONV1D_BACKWARD_INPUT, &CONV1D_BACKWARD_WEIGHT];

/// Taps per channel.
pub const WIDTH: usize = 3;

/// What a convolution runs over: `batch` sequences of `seq_len` positions with `dim` channels,
/// laid out channel-major (B, D, T) or token-major (B, T, D); centred taps (s−1, s, s+1) or
/// causal ones (s−2, s−1, s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConvShape {
    pub batch: usize,
    pub dim: usize,
    pub seq_len: usize,
    pub causal: bool,
    pub token_major: bool,
}

impl ConvShape {
    /// The seed's convolution: one channel-major sequence, centred taps.
    pub fn centred(dim: usize, seq_len: usize) -> ConvShape {
        ConvShape { batch: 1, dim, seq_len, causal: false, token_major: false }
    }

    /// A Llama block's short conv: (B, T, D) activations, causal taps.
    pub fn causal_tokens(batch: usize, seq_len: usize, dim: usize) -> ConvShape {
        ConvShape { batch, dim, seq_len, causal: true, token_major: true }
    }

    /// How far before the output position the first tap reads.
    pub fn shift(&self) -> usize {
        if self.causal {
            2
        } else {
            1
        }
    }

    /// Elements of one activation buffer, checked against wgpu's u32 indices.
    fn elements(&self) -> Result<usize> {
        for (field, v) in [("batch", self.batch), ("dim", self.dim), ("seq_len", self.seq_len)] {
            if v == 0 {
                return Err(KilnError::invalid(field, "must be at least 1"));
            }
        }
        let n = self.batch.checked_mul(self.dim).and_then(|n| n.checked_mul(self.seq_len)).filter(|&n| n <= u32::MAX as usize);
        n.ok_or_else(|| KilnError::invalid("seq_len", format!("batch·dim·seq_len = {}·{}·{} exceeds 2^32-1", self.batch, self.dim, self.seq_len)))
    }

    fn uniform(&self, gpu: &Gpu, what: &str) -> crate::gpu::Uniform {
        let flags = self.causal as u32 | (self.token_major as u32) << 1;
        gpu.uniform(what, &ConvParams { dim: self.dim as u32, seq_len: self.seq_len as u32, flags, _pad: 0 })
    }
}

/// Mirrors `ConvParams` in conv.wgsl (padded to 16 bytes).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ConvParams {
    dim: u32,
    seq_len: u32,
    flags: u32,
    _pad: u32,
}

/// The seed's depthwise conv, width 3, zero "same" padding:
/// `out[d, s] = bias[d] + Σ_{k=0..2} input[d, s + k - 1] · weight[d, k]` (out-of-range taps
/// read 0). `input` and `out` are (dim, seq_len) row-major, `weight` (dim, 3), `bias` (dim).
pub fn conv1d(gpu: &Gpu, input: &Tensor, weight: &Tensor, bias: &Tensor, out: &Tensor, dim: usize, seq_len: usize) -> Result<Op> {
    conv1d_shaped(gpu, input, weight, bias, out, ConvShape::centred(dim, seq_len))
}

/// `out[d, s] = bias[d] + Σ_k input[d, s + k − shift] · weight[d, k]` over `shape`'s layout:
/// `input`, `out` (batch·dim·seq_len), `weight` (dim, 3), `bias` (dim).
pub fn conv1d_shaped(gpu: &Gpu, input: &Tensor, weight: &Tensor, bias: &Tensor, out: &Tensor, shape: ConvShape) -> Result<Op> {
    let n = shape.elements()?;
    expect_len(input, n, "conv1d input (batch·dim·seq_len)")?;
    expect_len(weight, shape.dim * WIDTH, "conv1d weight (dim, 3)")?;
    expect_len(bias, shape.dim, "conv1d bias (dim)")?;
    expect_len(out, n, "conv1d output (batch·dim·seq_len)")?;
    let params = shape.uniform(gpu, "conv1d params");
    gpu.op(&CONV1D, &[T(input), T(weight), T(bias), T(out), Uni(&params)], gpu.grid(groups_1d(n)))
}

/// `d_input[d, s] = Σ_k d_out[d, s − k + shift] · weight[d, k]` (overwrites `d_input`).
pub fn conv1d_backward_input(gpu: &Gpu, d_out: &Tensor, weight: &Tensor, d_input: &Tensor, shape: ConvShape) -> Result<Op> {
    let n = shape.elements()?;
    expect_len(d_out, n, "conv1d d_out (batch·dim·seq_len)")?;
    expect_len(weight, shape.dim * WIDTH, "conv1d weight (dim, 3)")?;
    expect_len(d_input, n, "conv1d d_input (batch·dim·seq_len)")?;
    let params = shape.uniform(gpu, "conv1d backward params");
    gpu.op(&CONV1D_BACKWARD_INPUT, &[T(d_out), T(weight), T(d_input), Uni(&params)], gpu.grid(groups_1d(n)))
}

/// `d_weight[d, k] += Σ_{b,s} d_out[b, d, s] · input[b, d, s + k − shift]` and
/// `d_bias[d] += Σ_{b,s} d_out[b, d, s]` (accumulate, as every parameter gradient does).
pub fn conv1d_backward_weight(gpu: &Gpu, d_out: &Tensor, input: &Tensor, d_weight: &Tensor, d_bias: &Tensor, shape: ConvShape) -> Result<Op> {
    let n = shape.elements()?;
    expect_len(d_out, n, "conv1d d_out (batch·dim·seq_len)")?;
    expect_len(input, n, "conv1d input (batch·dim·seq_len)")?;
    expect_len(d_weight, shape.dim * WIDTH, "conv1d d_weight (dim, 3)")?;
    expect_len(d_bias, shape.dim, "conv1d d_bias (dim)")?;
    let params = shape.uniform(gpu, "conv1d weight-gradient params");
    let args = [T(d_out), T(input), T(d_weight), T(d_bias), Uni(&params)];
    gpu.op(&CONV1D_BACKWARD_WEIGHT, &args, gpu.grid(groups_1d(shape.dim * (WIDTH + 1))))
}

// ---------------------------------------------------------------- f64 reference

pub mod reference {
    use super::{ConvShape, WIDTH};

    /// The flat index of channel `d` at position `s` of sequence `b`.
    fn at(sh: &ConvShape, b: usize, d: usize, s: usize) -> usize {
        if sh.token_major {
            (b * sh.seq_len + s) * sh.dim + d
        } else {
            (b * sh.dim + d) * sh.seq_len + s
        }
    }

    /// Input position of tap `k` for output position `s`, if inside the sequence.
    fn tap(sh: &ConvShape, s: usize, k: usize) -> Option<usize> {
        (s + k).checked_sub(sh.shift()).filter(|&p| p < sh.seq_len)
    }

    /// Same semantics as [`super::conv1d`], written as a direct sum over the taps.
    pub fn conv1d(input: &[f64], weight: &[f64], bias: &[f64], dim: usize, seq_len: usize) -> Vec<f64> {
        conv1d_shaped(input, weight, bias, &ConvShape::centred(dim, seq_len))
    }

    /// [`super::conv1d_shaped`]: every output a sum over its taps inside the sequence.
    pub fn conv1d_shaped(input: &[f64], weight: &[f64], bias: &[f64], sh: &ConvShape) -> Vec<f64> {
        let mut out = vec![0.0; input.len()];
        for (b, d, s) in sites(sh) {
            let taps = (0..WIDTH).filter_map(|k| tap(sh, s, k).map(|p| input[at(sh, b, d, p)] * weight[d * WIDTH + k]));
            out[at(sh, b, d, s)] = bias[d] + taps.sum::<f64>();
        }
        out
    }

    /// The gradients of `Σ d_out · conv1d_shaped(input, weight, bias)`: (d_input, d_weight,
    /// d_bias), scattered from each output to the inputs and taps it read.
    pub fn conv1d_backward(input: &[f64], weight: &[f64], d_out: &[f64], sh: &ConvShape) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let (mut d_input, mut d_weight, mut d_bias) = (vec![0.0; input.len()], vec![0.0; sh.dim * WIDTH], vec![0.0; sh.dim]);
        for (b, d, s) in sites(sh) {
            let g = d_out[at(sh, b, d, s)];
            d_bias[d] += g;
            for k in 0..WIDTH {
                if let Some(p) = tap(sh, s, k) {
                    d_input[at(sh, b, d, p)] += g * weight[d * WIDTH + k];
                    d_weight[d * WIDTH + k] += g * input[at(sh, b, d, p)];
                }
            }
        }
        (d_input, d_weight, d_bias)
    }

    fn sites(sh: &ConvShape) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
        (0..sh.batch).flat_map(move |b| (0..sh.dim).flat_map(move |d| (0..sh.seq_len).map(move |s| (b, d, s))))
    }
}
