//! Causal multi-head self-attention (`shaders/attention.wgsl`), forward and backward, in the
//! flash-attention style: no (T, T) matrix is stored; the forward saves a logsumexp per query
//! and the backward recomputes the probabilities from it. f64 references materialize scores.
//!
//! Buffers (row-major, all f32):
//! - `qkv`  (B, T, 3C): per token `[q (H, hd) | k (H, hd) | v (H, hd)]`, C = H·hd
//! - `out`  (B, T, C):  per token the H heads' outputs, contiguous
//! - `lse`  (B, H, T):  logsumexp of each query's scaled scores (forward output, backward input)
//! - `delta` (B, H, T): backward scratch, Σ_d dout·out per query
//! - `dqkv` (B, T, 3C): gradient of qkv, every element written (not accumulated)

use super::{expect_len, groups_1d, Kernel, ATTENTION as F, R, RW, U};
use crate::error::{KilnError, Result};
use crate::gpu::Tensor;
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};

pub const ATTENTION_FORWARD: Kernel = Kernel { entry: "attention_forward", family: F, bindings: &[R, RW, RW, U] };
pub const ATTENTION_BACKWARD_PREP: Kernel = Kernel { entry: "attention_backward_prep", family: F, bindings: &[R, R, RW, U] };
pub const ATTENTION_BACKWARD_DQ: Kernel = Kernel { entry: "attention_backward_dq", family: F, bindings: &[R, R, R, R, RW, U] };
pub const ATTENTION_BACKWARD_DKV: Kernel = Kernel { entry: "attention_backward_dkv", family: F, bindings: &[R, R, R, R, RW, U] };

/// The block kernels specialised for head_dim <= SMALL_HEAD_DIM (head vectors in registers).
pub const ATTENTION_FORWARD_HD32: Kernel = Kernel { entry: "attention_forward_hd32", family: F, bindings: &[R, RW, RW, U] };
pub const ATTENTION_BACKWARD_DQ_HD32: Kernel = Kernel { entry: "attention_backward_dq_hd32", family: F, bindings: &[R, R, R, R, RW, U] };
pub const ATTENTION_BACKWARD_DKV_HD32: Kernel = Kernel { entry: "attention_backward_dkv_hd32", family: F, bindings: &[R, R, R, R, RW, U] };

pub const KERNELS: &[&Kernel] = &[
    &ATTENTION_FORWARD,
    &ATTENTION_BACKWARD_PREP,
    &ATTENTION_BACKWARD_DQ,
    &ATTENTION_BACKWARD_DKV,
    &ATTENTION_FORWARD_HD32,
    &ATTENTION_BACKWARD_DQ_HD32,
    &ATTENTION_BACKWARD_DKV_HD32,
];

/// Largest head dimension of the specialised (`_hd32`) kernels.
pub const SMALL_HEAD_DIM: usize = 32;

/// Largest head dimension: a thread keeps up to four head vectors in registers.
pub const MAX_HEAD_DIM: usize = 128;

/// Tokens per workgroup in the forward, dq and dkv kernels.
const BLOCK: usize = 64;

/// Attention sizes: `batch` sequences of `seq` tokens, `heads` heads of `head_dim` each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttentionDims {
    pub batch: usize,
    pub seq: usize,
    pub heads: usize,
    pub head_dim: usize,
}

impl AttentionDims {
    /// C = heads · head_dim.
    pub fn channels(&self) -> usize {
        self.heads * self.head_dim
    }

    /// Elements of `qkv` and `dqkv`: B·T·3C.
    pub fn qkv_len(&self) -> usize {
        self.batch * self.seq * 3 * self.channels()
    }

    /// Elements of `out` and `dout`: B·T·C.
    pub fn out_len(&self) -> usize {
        self.batch * self.seq * self.channels()
    }

    /// Elements of `lse` and `delta`: B·H·T.
    pub fn lse_len(&self) -> usize {
        self.batch * self.heads * self.seq
    }

    /// 1 / sqrt(head_dim).
    pub fn scale(&self) -> f64 {
        1.0 / (self.head_dim as f64).sqrt()
    }

    pub(crate) fn validate(&self) -> Result<()> {
        for (v, field) in [(self.batch, "batch"), (self.seq, "seq"), (self.heads, "heads"), (self.head_dim, "head_dim")] {
            if v == 0 {
                return Err(KilnError::invalid(field, "attention dimensions must be at least 1"));
            }
        }
        if self.head_dim > MAX_HEAD_DIM {
            return Err(KilnError::invalid("head_dim", format!("at most {MAX_HEAD_DIM} per head, got {}; use more heads", self.head_dim)));
        }
        if self.qkv_len() > u32::MAX as usize {
            return Err(KilnError::invalid("seq", "qkv indices exceed 32 bits"));
        }
        Ok(())
    }

    pub(crate) fn params(&self) -> AttnParams {
        AttnParams {
            batch: self.batch as u32,
            seq: self.seq as u32,
            heads: self.heads as u32,
            head_dim: self.head_dim as u32,
            scale: self.scale() as f32,
            _pad: [0; 3],
        }
    }

    /// Workgroups of the block kernels: one per (b, h, 64 tokens).
    fn blocks(&self) -> u32 {
        (self.batch * self.heads * self.seq.div_ceil(BLOCK)) as u32
    }
}

/// Mirrors `AttnParams` in attention.wgsl (32 bytes), and `AttnProbsParams` in inspect.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct AttnParams {
    batch: u32,
    seq: u32,
    heads: u32,
    head_dim: u32,
    scale: f32,
    _pad: [u32; 3],
}

/// out = softmax(causal(q·kᵀ / sqrt(hd))) · v per head; also writes `lse` for the backward.
pub fn attention_forward(gpu: &Gpu, dims: AttentionDims, qkv: &Tensor, out: &Tensor, lse: &Tensor) -> Result<Op> {
    dims.validate()?;
    expect_len(qkv, dims.qkv_len(), "qkv (B, T, 3C)")?;
    expect_len(out, dims.out_len(), "attention out (B, T, C)")?;
    expect_len(lse, dims.lse_len(), "lse (B, H, T)")?;
    let uniform = gpu.uniform("attention params", &dims.params());
    let kernel = if dims.head_dim <= SMALL_HEAD_DIM { &ATTENTION_FORWARD_HD32 } else { &ATTENTION_FORWARD };
    gpu.op(kernel, &[T(qkv), T(out), T(lse), Uni(&uniform)], gpu.grid(dims.blocks()))
}

/// The backward's three dispatches; run them in order (`gpu.run(&bw.ops())`).
#[derive(Clone)]
pub struct AttentionBackward {
    /// delta = Σ dout·out per query.
    pub prep: Op,
    /// Writes the q slots of dqkv.
    pub dq: Op,
    /// Writes the k and v slots of dqkv.
    pub dkv: Op,
}

impl AttentionBackward {
    pub fn ops(&self) -> [&Op; 3] {
        [&self.prep, &self.dq, &self.dkv]
    }
}

/// dqkv from dout, given the forward's qkv, out and lse; `delta` (B, H, T) is scratch.
#[allow(clippy::too_many_arguments)]
pub fn attention_backward(
    gpu: &Gpu,
    dims: AttentionDims,
    qkv: &Tensor,
    out: &Tensor,
    lse: &Tensor,
    dout: &Tensor,
    delta: &Tensor,
    dqkv: &Tensor,
) -> Result<AttentionBackward> {
    dims.validate()?;
    expect_len(qkv, dims.qkv_len(), "qkv (B, T, 3C)")?;
    expect_len(out, dims.out_len(), "attention out (B, T, C)")?;
    expect_len(lse, dims.lse_len(), "lse (B, H, T)")?;
    expect_len(dout, dims.out_len(), "dout (B, T, C)")?;
    expect_len(delta, dims.lse_len(), "delta (B, H, T)")?;
    expect_len(dqkv, dims.qkv_len(), "dqkv (B, T, 3C)")?;
    let uniform = gpu.uniform("attention params", &dims.params());
    let prep_grid = gpu.grid(groups_1d(dims.lse_len()));
    let prep = gpu.op(&ATTENTION_BACKWARD_PREP, &[T(out), T(dout), T(delta), Uni(&uniform)], prep_grid)?;
    let args = [T(qkv), T(dout), T(lse), T(delta), T(dqkv), Uni(&uniform)];
    let small = dims.head_dim <= SMALL_HEAD_DIM;
    let (dq_kernel, dkv_kernel) =
        if small { (&ATTENTION_BACKWARD_DQ_HD32, &ATTENTION_BACKWARD_DKV_HD32) } else { (&ATTENTION_BACKWARD_DQ, &ATTENTION_BACKWARD_DKV) };
    let dq = gpu.op(dq_kernel, &args, gpu.grid(dims.blocks()))?;
    let dkv = gpu.op(dkv_kernel, &args, gpu.grid(dims.blocks()))?;
    Ok(AttentionBackward { prep, dq, dkv })
}

// ---------------------------------------------------------------- f64 references

pub mod reference {
    use super::AttentionDims;

    /// Index helpers into the layouts above.
    fn qkv_at(d: &AttentionDims, b: usize, t: usize, part: usize, h: usize) -> usize {
        ((b * d.seq + t) * 3 + part) * d.channels() + h * d.head_dim
    }

    /// Causal softmax probabilities (B, H, T, T): row i of each (b, h) is query i's weights.
    pub fn probabilities(d: &AttentionDims, qkv: &[f64]) -> Vec<f64> {
        (0..d.batch).flat_map(|b| (0..d.heads).flat_map(move |h| probs(d, qkv, b, h).0)).collect()
    }

    /// Causal softmax probabilities P (T, T) of one (b, h), row i zero past column i.
    fn probs(d: &AttentionDims, qkv: &[f64], b: usize, h: usize) -> (Vec<f64>, Vec<f64>) {
        let (t_len, hd) = (d.seq, d.head_dim);
        let mut p = vec![0.0; t_len * t_len];
        let mut lse = vec![0.0; t_len];
        for i in 0..t_len {
            let q = &qkv[qkv_at(d, b, i, 0, h)..][..hd];
            let scores: Vec<f64> = (0..=i)
                .map(|j| {
                    let k = &qkv[qkv_at(d, b, j, 1, h)..][..hd];
                    q.iter().zip(k).map(|(x, y)| x * y).sum::<f64>() * d.scale()
                })
                .collect();
            let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = scores.iter().map(|s| (s - max).exp()).sum();
            for (j, s) in scores.iter().enumerate() {
                p[i * t_len + j] = (s - max).exp() / sum;
            }
            lse[i] = max + sum.ln();
        }
        (p, lse)
    }

    /// (out (B, T, C), lse (B, H, T)).
    pub fn forward(d: &AttentionDims, qkv: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let (t_len, hd, c) = (d.seq, d.head_dim, d.channels());
        let mut out = vec![0.0; d.out_len()];
        let mut lse = vec![0.0; d.lse_len()];
        for b in 0..d.batch {
            for h in 0..d.heads {
                let (p, l) = probs(d, qkv, b, h);
                lse[(b * d.heads + h) * t_len..][..t_len].copy_from_slice(&l);
                for i in 0..t_len {
                    for j in 0..=i {
                        let v = &qkv[qkv_at(d, b, j, 2, h)..][..hd];
                        for e in 0..hd {
                            out[(b * t_len + i) * c + h * hd + e] += p[i * t_len + j] * v[e];
                        }
                    }
                }
            }
        }
        (out, lse)
    }

    /// delta (B, H, T) = Σ_d dout·out per query.
    pub fn delta(d: &AttentionDims, out: &[f64], dout: &[f64]) -> Vec<f64> {
        let mut delta = vec![0.0; d.lse_len()];
        for b in 0..d.batch {
            for h in 0..d.heads {
                for t in 0..d.seq {
                    let base = (b * d.seq + t) * d.channels() + h * d.head_dim;
                    delta[(b * d.heads + h) * d.seq + t] = (base..base + d.head_dim).map(|i| out[i] * dout[i]).sum();
                }
            }
        }
        delta
    }

    /// dqkv (B, T, 3C) through the materialized softmax: dS = P ∘ (dP − rowsum(P ∘ dP)).
    pub fn backward(d: &AttentionDims, qkv: &[f64], dout: &[f64]) -> Vec<f64> {
        let (t_len, hd, c) = (d.seq, d.head_dim, d.channels());
        let mut dqkv = vec![0.0; d.qkv_len()];
        for b in 0..d.batch {
            for h in 0..d.heads {
                let (p, _) = probs(d, qkv, b, h);
                for i in 0..t_len {
                    let g = &dout[(b * t_len + i) * c + h * hd..][..hd];
                    let dp: Vec<f64> = (0..=i).map(|j| g.iter().zip(&qkv[qkv_at(d, b, j, 2, h)..][..hd]).map(|(x, y)| x * y).sum()).collect();
                    let row: f64 = (0..=i).map(|j| p[i * t_len + j] * dp[j]).sum();
                    for j in 0..=i {
                        let pij = p[i * t_len + j];
                        let ds = pij * (dp[j] - row) * d.scale();
                        let (qi, kj, vj) = (qkv_at(d, b, i, 0, h), qkv_at(d, b, j, 1, h), qkv_at(d, b, j, 2, h));
                        for (e, ge) in g.iter().enumerate() {
                            dqkv[qi + e] += ds * qkv[kj + e];
                            dqkv[kj + e] += ds * qkv[qi + e];
                            dqkv[vj + e] += pij * ge;
                        }
                    }
                }
            }
        }
        dqkv
    }
}
