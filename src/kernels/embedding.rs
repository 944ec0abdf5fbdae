//! Token embedding kernels (`shaders/embedding.wgsl`): `embedding_forward` looks rows of a
//! (V, C) table up by u32 token, `embedding_backward` adds dout rows back into dtable
//! deterministically, `embedding_rms_norm` looks up and norms a Llama's first rows in one
//! dispatch; f64 references, and `check_tokens` for the host side that uploads tokens.
//!
//! Shapes come from lengths: N = tokens.len(), C = out.len() / N, V = table.len() / C.

use super::{expect_len, groups_1d, Kernel, EMBEDDING as F, R, RW, U};
use crate::error::{KilnError, Result};
use crate::gpu::Tensor;
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};

pub const EMBEDDING_FORWARD: Kernel = Kernel { entry: "embedding_forward", family: F, bindings: &[R, R, RW, U] };
pub const EMBEDDING_BACKWARD: Kernel = Kernel { entry: "embedding_backward", family: F, bindings: &[R, R, RW, U] };

pub const EMBEDDING_RMS_NORM: Kernel = Kernel { entry: "embedding_rms_norm", family: F, bindings: &[R, R, R, RW, RW, RW, U] };

pub const KERNELS: &[&Kernel] = &[&EMBEDDING_FORWARD, &EMBEDDING_BACKWARD, &EMBEDDING_RMS_NORM];

/// Mirrors `EmbNormParams` in embedding.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct EmbNormParams {
    tokens: u32,
    vocab: u32,
    channels: u32,
    eps: f32,
}

/// Mirrors `EmbParams` in embedding.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct EmbParams {
    pub tokens: u32,
    pub vocab: u32,
    pub channels: u32,
    /// embedding_backward: workgroups a row (see `backward_blocks`); the other kernels ignore it.
    pub blocks: u32,
}

/// Fails unless every token is < vocab, naming the first bad position and value. The kernels
/// cannot report bad tokens (they read them as zero rows), so call this before uploading.
pub fn check_tokens(tokens: &[u32], vocab: usize) -> Result<()> {
    match tokens.iter().position(|&t| t as usize >= vocab) {
        None => Ok(()),
        Some(i) => {
            Err(KilnError::invalid("tokens", format!("position {i} holds token {}, but the vocabulary has {vocab} entries (ids 0..{vocab})", tokens[i])))
        }
    }
}

/// (N, C, V) from the tensors' lengths, or an error naming the tensor that does not fit.
fn shape(tokens: &Tensor, rows: &Tensor, table: &Tensor) -> Result<EmbParams> {
    let n = tokens.len();
    if n == 0 || rows.is_empty() || !rows.len().is_multiple_of(n) {
        return Err(KilnError::invalid(rows.name(), format!("{} elements are not {n} rows (one per token) of C channels", rows.len())));
    }
    let c = rows.len() / n;
    if !table.len().is_multiple_of(c) {
        return Err(KilnError::invalid(table.name(), format!("{} elements are not whole rows of C = {c} channels", table.len())));
    }
    Ok(EmbParams { tokens: n as u32, vocab: (table.len() / c) as u32, channels: c as u32, blocks: 1 })
}

/// out (N, C) = table[tokens] with table (V, C); a token >= V gives a zero row.
pub fn embedding_forward(gpu: &Gpu, tokens: &Tensor, table: &Tensor, out: &Tensor) -> Result<Op> {
    let p = shape(tokens, out, table)?;
    let u = gpu.uniform("embedding params", &p);
    gpu.op(&EMBEDDING_FORWARD, &[T(tokens), T(table), T(out), Uni(&u)], gpu.grid(groups_1d(out.len())))
}

/// x (N, C) = table[tokens] and out (N, C) = rmsnorm(x)·weight with rstd (N): a Llama's
/// embedding and first norm in one dispatch, with `embedding_forward` + `rms_norm`'s bits.
pub fn embedding_rms_norm(gpu: &Gpu, tokens: &Tensor, table: &Tensor, weight: &Tensor, (x, out, rstd): (&Tensor, &Tensor, &Tensor), eps: f32) -> Result<Op> {
    let p = shape(tokens, x, table)?;
    expect_len(weight, p.channels as usize, "norm weight")?;
    expect_len(out, x.len(), "normed rows")?;
    expect_len(rstd, p.tokens as usize, "rstd (one per token)")?;
    if !(eps.is_finite() && eps > 0.0) {
        return Err(KilnError::invalid("eps", format!("must be finite and > 0, got {eps}")));
    }
    let params = EmbNormParams { tokens: p.tokens, vocab: p.vocab, channels: p.channels, eps };
    let u = gpu.uniform("embedding_rms_norm params", &params);
    gpu.op(&EMBEDDING_RMS_NORM, &[T(tokens), T(table), T(weight), T(x), T(out), T(rstd), Uni(&u)], gpu.grid(p.tokens))
}

/// dtable (V, C) += Σ over positions n with tokens[n] == v of dout[n, :]; deterministic.
pub fn embedding_backward(gpu: &Gpu, dout: &Tensor, tokens: &Tensor, dtable: &Tensor) -> Result<Op> {
    let mut p = shape(tokens, dout, dtable)?;
    p.blocks = backward_blocks(p.vocab, p.channels);
    let u = gpu.uniform("embedding params", &p);
    gpu.op(&EMBEDDING_BACKWARD, &[T(dout), T(tokens), T(dtable), Uni(&u)], gpu.grid(p.vocab * p.blocks))
}

/// Workgroups for each row of dtable in `embedding_backward`: one per 256 channels while the
/// whole grid stays within about 1,024 workgroups (what a large GPU runs at once), else fewer,
/// down to one a row: every workgroup scans all the tokens, so a big vocabulary (an imported
/// Llama's 32,000) split four ways would scan them four times as often for rows mostly empty.
pub fn backward_blocks(vocab: u32, channels: u32) -> u32 {
    channels.div_ceil(256).min(1024 / vocab.max(1)).max(1)
}

// ---------------------------------------------------------------- f64 references

pub mod reference {
    /// out (N, C) = table[tokens]; a token >= V gives a zero row.
    pub fn embedding_forward(tokens: &[u32], table: &[f64], c: usize) -> Vec<f64> {
        let vocab = table.len() / c;
        let mut out = vec![0.0; tokens.len() * c];
        for (n, &t) in tokens.iter().enumerate() {
            if (t as usize) < vocab {
                out[n * c..(n + 1) * c].copy_from_slice(&table[t as usize * c..(t as usize + 1) * c]);
            }
        }
        out
    }

    /// dtable (V, C), not accumulated: Σ over positions n with tokens[n] == v of dout[n, :].
    pub fn embedding_backward(dout: &[f64], tokens: &[u32], vocab: usize) -> Vec<f64> {
        let c = dout.len() / tokens.len();
        let mut dtable = vec![0.0; vocab * c];
        for (n, &t) in tokens.iter().enumerate() {
            if (t as usize) < vocab {
                for i in 0..c {
                    dtable[t as usize * c + i] += dout[n * c + i];
                }
            }
        }
        dtable
    }
}
