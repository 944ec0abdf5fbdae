//! Rotary position embedding kernels (`shaders/rope.wgsl`): `rope` rotates q/k in place and
//! `rope_backward` applies the inverse rotation to their gradient in place, with f64 references.
//! One layout serves a plain (B, T, H, hd) buffer and the q, k parts of a fused (B, T, 3C) qkv
//! buffer; see `RopeConfig`.

use super::{groups_1d, Kernel, ROPE as F, RW, U};
use crate::error::{KilnError, Result};
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};
use crate::gpu::{Tensor, Uniform};

pub const ROPE: Kernel = Kernel { entry: "rope", family: F, bindings: &[RW, U] };
pub const ROPE_BACKWARD: Kernel = Kernel { entry: "rope_backward", family: F, bindings: &[RW, U] };

pub const KERNELS: &[&Kernel] = &[&ROPE, &ROPE_BACKWARD];

/// Where the head vectors are and which positions they have. Tokens are (B, T) flattened and
/// `token_stride` floats apart; the first `heads` head vectors of each token rotate. Token t is
/// at position base_pos + t % seq_len; pair (i, i + head_dim/2) turns by pos·theta^(-2i/head_dim).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RopeConfig {
    pub head_dim: usize,
    pub seq_len: usize,
    pub heads: usize,
    pub token_stride: usize,
    pub base_pos: usize,
    pub theta: f32,
}

impl RopeConfig {
    /// A plain (B, T, heads, head_dim) buffer.
    pub fn plain(head_dim: usize, heads: usize, seq_len: usize, theta: f32) -> RopeConfig {
        RopeConfig { head_dim, seq_len, heads, token_stride: heads * head_dim, base_pos: 0, theta }
    }

    /// The q and k parts of a fused (B, T, 3C) qkv buffer with `n_head` heads (C = n_head·head_dim).
    pub fn qkv(head_dim: usize, n_head: usize, seq_len: usize, theta: f32) -> RopeConfig {
        RopeConfig { head_dim, seq_len, heads: 2 * n_head, token_stride: 3 * n_head * head_dim, base_pos: 0, theta }
    }

    /// Checks the config against a buffer of `len` floats and returns its token count.
    pub fn tokens(&self, len: usize, buffer: &str) -> Result<usize> {
        let bad = |field: &str, msg: String| Err(KilnError::invalid(field, msg));
        if self.head_dim == 0 || !self.head_dim.is_multiple_of(2) {
            return bad("head_dim", format!("must be even and > 0 (pairs i, i + head_dim/2), got {}", self.head_dim));
        }
        if self.heads == 0 {
            return bad("heads", "must be >= 1".into());
        }
        if self.seq_len == 0 {
            return bad("seq_len", "must be >= 1".into());
        }
        if self.token_stride < self.heads * self.head_dim {
            let need = self.heads * self.head_dim;
            return bad("token_stride", format!("{} is less than heads·head_dim = {need}", self.token_stride));
        }
        if !(self.theta.is_finite() && self.theta > 0.0) {
            return bad("theta", format!("must be finite and > 0, got {}", self.theta));
        }
        if !len.is_multiple_of(self.token_stride) || !(len / self.token_stride).is_multiple_of(self.seq_len) {
            return bad(buffer, format!("{len} floats are not whole sequences of seq_len {} tokens × token_stride {}", self.seq_len, self.token_stride));
        }
        Ok(len / self.token_stride)
    }

    fn params(&self, tokens: usize) -> RopeParams {
        RopeParams {
            head_dim: self.head_dim as u32,
            seq_len: self.seq_len as u32,
            heads: self.heads as u32,
            token_stride: self.token_stride as u32,
            base_pos: self.base_pos as u32,
            tokens: tokens as u32,
            theta: self.theta,
            _pad: 0,
        }
    }
}

/// Mirrors `RopeParams` in rope.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RopeParams {
    pub head_dim: u32,
    pub seq_len: u32,
    pub heads: u32,
    pub token_stride: u32,
    pub base_pos: u32,
    pub tokens: u32,
    pub theta: f32,
    pub _pad: u32,
}

/// A rope dispatch and its params buffer, so decoding can move `base_pos` without a rebuild.
pub struct RopeOp {
    pub op: Op,
    pub params: Uniform,
    current: RopeParams,
}

impl RopeOp {
    /// Rewrites the position of each sequence's first token (takes effect at the next run).
    pub fn set_base_pos(&mut self, gpu: &Gpu, base_pos: usize) {
        self.current.base_pos = base_pos as u32;
        gpu.write_uniform(&self.params, &self.current);
    }
}

fn build(gpu: &Gpu, kernel: &'static Kernel, data: &Tensor, cfg: &RopeConfig) -> Result<RopeOp> {
    let tokens = cfg.tokens(data.len(), data.name())?;
    let current = cfg.params(tokens);
    let params = gpu.uniform("rope params", &current);
    // A thread per (token, pair), turning that pair of each of the token's rotated head vectors.
    let threads = tokens * cfg.head_dim / 2;
    let op = gpu.op(kernel, &[T(data), Uni(&params)], gpu.grid(groups_1d(threads)))?;
    Ok(RopeOp { op, params, current })
}

/// Rotates the configured head vectors of `data` in place.
pub fn rope(gpu: &Gpu, data: &Tensor, cfg: &RopeConfig) -> Result<RopeOp> {
    build(gpu, &ROPE, data, cfg)
}

/// Applies the inverse rotation to `grad` (the gradient w.r.t. rope's output) in place,
/// turning it into the gradient w.r.t. rope's input.
pub fn rope_backward(gpu: &Gpu, grad: &Tensor, cfg: &RopeConfig) -> Result<RopeOp> {
    build(gpu, &ROPE_BACKWARD, grad, cfg)
}

// ---------------------------------------------------------------- f64 references

pub mod reference {
    use super::RopeConfig;

    fn rotate(data: &[f64], cfg: &RopeConfig, dir: f64) -> Vec<f64> {
        let mut out = data.to_vec();
        let half = cfg.head_dim / 2;
        let theta = cfg.theta as f64;
        for token in 0..data.len() / cfg.token_stride {
            let pos = (cfg.base_pos + token % cfg.seq_len) as f64;
            for head in 0..cfg.heads {
                let base = token * cfg.token_stride + head * cfg.head_dim;
                for i in 0..half {
                    let angle = pos * theta.powf(-2.0 * i as f64 / cfg.head_dim as f64);
                    let (s, c) = (dir * angle.sin(), angle.cos());
                    let (v1, v2) = (data[base + i], data[base + i + half]);
                    out[base + i] = v1 * c - v2 * s;
                    out[base + i + half] = v1 * s + v2 * c;
                }
            }
        }
        out
    }

    pub fn rope(data: &[f64], cfg: &RopeConfig) -> Vec<f64> {
        rotate(data, cfg, 1.0)
    }

    /// Gradient w.r.t. rope's input from the gradient w.r.t. its output.
    pub fn rope_backward(grad: &[f64], cfg: &RopeConfig) -> Vec<f64> {
        rotate(grad, cfg, -1.0)
    }
}
