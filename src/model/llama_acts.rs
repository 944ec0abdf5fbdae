//! Where a Llama pass keeps its activations. In fp32 every block has its own tensors. In mixed
//! precision one block's worth of fp32 scratch serves every block, and each block keeps what
//! its backward needs as packed f16 in two stashes, written by the seed's `fp32_to_fp16` (see
//! `Part` for when) and widened back by `fp16_to_fp32` when the backward reaches the block.
//! What is cheap to recompute is not stashed: the two RMSNorm outputs (and their rstd), the
//! short conv and silu(up)·gate come back from one dispatch each.
//!
//! The scratch is two buffers, because one dispatch may not read and write the same buffer
//! (even disjoint ranges of it), in elements (each part starting at a multiple of ALIGN so
//! views and their halves bind at legal offsets):
//!   stream  [x (N·C) | att (N·C)]
//!   block   [qkv (N·3C)], and later in the block [x1 (N·C) | up_gate (N·2F)]
//! The MLP half (x1, up_gate) reuses qkv's place: the forward stashes x, att and qkv before it
//! writes x1, and the backward widens the MLP half before the attention half. x, the block's
//! input, carries the residual stream from block to block.

use crate::error::Result;
use crate::gpu::{Gpu, Op, Tensor};
use crate::kernels::quant::{fp16_to_fp32, fp32_to_fp16};
use crate::model::llama::LlamaConfig;

/// Elements each scratch part is aligned to: 512 bytes of f32, 256 bytes of f16.
const ALIGN: usize = 128;

/// One block's tensors. N = B·T rows.
#[derive(Clone)]
pub struct BlockActs {
    /// (N, C) block input (the residual stream)
    pub x: Tensor,
    /// (N) and (N, C): attention RMSNorm's rstd and output
    pub rstd1: Tensor,
    pub n1: Tensor,
    /// (N, C) what the qkv projection reads: the short conv of n1, or n1 itself
    pub qkv_in: Tensor,
    /// (N, 3C) q, k (rotated) and v
    pub qkv: Tensor,
    /// (N, C) attention output and (B, H, T) its log-sum-exp
    pub att: Tensor,
    pub lse: Tensor,
    /// (N, C) the attention projection; x1 = x + proj
    pub proj: Tensor,
    pub x1: Tensor,
    /// (N) and (N, C): the MLP RMSNorm's rstd and output
    pub rstd2: Tensor,
    pub n2: Tensor,
    /// (N, 2F) rows of [up (F) | gate (F)], from one product; (N, F) silu(up)·gate
    pub up_gate: Tensor,
    pub g: Tensor,
    /// (N, C) the MLP's down projection; the block's output is x1 + down
    pub down: Tensor,
}

/// What is stashed or widened together. The forward stashes qkv (after RoPE) and widens it
/// straight back, so attention runs on the rounded q, k, v whose log-sum-exp the backward then
/// matches exactly; x and att follow after the attention projection, the MLP half after the
/// down projection. The backward widens the MLP half, then the attention half (both parts).
#[derive(Clone, Copy)]
pub enum Part {
    Qkv,
    XAtt,
    Attention,
    Mlp,
}

/// A mixed-precision block's f16 copies of its two scratch regions.
pub struct Stash {
    /// ((x | att) + qkv) / 2 words
    pub attn: Tensor,
    /// (MLP region / 2) words: x1, up_gate
    pub mlp: Tensor,
}

/// The activations of one pass: fresh per block (fp32) or the shared scratch and stashes.
pub struct Activations {
    cfg: LlamaConfig,
    batch: usize,
    mixed: Option<Mixed>,
}

struct Mixed {
    /// Every block's tensors except `lse` (one per block) are these views of the scratch.
    shared: BlockActs,
    /// f32 views of the scratch: [x | att], [qkv] and [x1 | up_gate]
    x_att: Tensor,
    qkv: Tensor,
    mlp_region: Tensor,
}

fn aligned(len: usize) -> usize {
    len.next_multiple_of(ALIGN)
}

impl Activations {
    pub fn new(gpu: &Gpu, cfg: &LlamaConfig, batch: usize) -> Result<Activations> {
        let mixed = if cfg.mixed() { Some(Mixed::new(gpu, cfg, batch)?) } else { None };
        Ok(Activations { cfg: cfg.clone(), batch, mixed })
    }

    pub fn is_mixed(&self) -> bool {
        self.mixed.is_some()
    }

    fn rows(&self) -> usize {
        self.batch * self.cfg.context
    }

    /// The (N, C) residual stream, (N) rstd and (N, C) normed tensors a block writes for the
    /// next one (the first ones: the embedding's).
    pub fn stream(&self, gpu: &Gpu, x_name: &str) -> Result<(Tensor, Tensor, Tensor)> {
        if let Some(m) = &self.mixed {
            return Ok((m.shared.x.clone(), m.shared.rstd1.clone(), m.shared.n1.clone()));
        }
        let (n, c) = (self.rows(), self.cfg.d_model);
        Ok((gpu.tensor(x_name, &[n, c])?, gpu.tensor("rstd", &[n])?, gpu.tensor("n1", &[n, c])?))
    }

    /// Block tensors around the given residual stream (x, rstd1, n1).
    pub fn block(&self, gpu: &Gpu, (x, rstd1, n1): (&Tensor, &Tensor, &Tensor), lse_len: usize) -> Result<BlockActs> {
        let lse = gpu.tensor("lse", &[lse_len])?;
        if let Some(m) = &self.mixed {
            return Ok(BlockActs { lse, ..m.shared.clone() });
        }
        let (n, c, f) = (self.rows(), self.cfg.d_model, self.cfg.hidden);
        let t = |name: &str, shape: &[usize]| gpu.tensor(name, shape);
        Ok(BlockActs {
            x: x.clone(),
            rstd1: rstd1.clone(),
            n1: n1.clone(),
            qkv_in: if self.cfg.short_conv { t("conv", &[n, c])? } else { n1.clone() },
            qkv: t("qkv", &[n, 3 * c])?,
            att: t("att", &[n, c])?,
            lse,
            proj: t("proj", &[n, c])?,
            x1: t("x1", &[n, c])?,
            rstd2: t("rstd2", &[n])?,
            n2: t("n2", &[n, c])?,
            up_gate: t("up_gate", &[n, 2 * f])?,
            g: t("g", &[n, f])?,
            down: t("down", &[n, c])?,
        })
    }

    /// Mixed precision: a block's stashes (None in fp32).
    pub fn stash(&self, gpu: &Gpu) -> Result<Option<Stash>> {
        let Some(m) = &self.mixed else { return Ok(None) };
        let attn = gpu.tensor("attention stash (f16)", &[(m.x_att.len() + m.qkv.len()) / 2])?;
        let mlp = gpu.tensor("MLP stash (f16)", &[m.mlp_region.len() / 2])?;
        Ok(Some(Stash { attn, mlp }))
    }

    /// The f32 regions of the scratch and the stash views they are copied to.
    fn pairs(&self, s: &Stash, part: Part) -> Vec<(Tensor, Tensor)> {
        let m = self.mixed_part();
        let (xa, qkv) = (m.x_att.len() / 2, m.qkv.len() / 2);
        let x_att = (m.x_att.clone(), s.attn.view("x, att (f16)", 0, vec![xa]));
        let qkv = (m.qkv.clone(), s.attn.view("qkv (f16)", xa, vec![qkv]));
        match part {
            Part::Qkv => vec![qkv],
            Part::XAtt => vec![x_att],
            Part::Attention => vec![x_att, qkv],
            Part::Mlp => vec![(m.mlp_region.clone(), s.mlp.clone())],
        }
    }

    /// Copies a part of the scratch into the stash as f16.
    pub fn stash_ops(&self, gpu: &Gpu, s: &Stash, part: Part) -> Result<Vec<Op>> {
        self.pairs(s, part).iter().map(|(wide, half)| fp32_to_fp16(gpu, wide, half)).collect()
    }

    /// Widens a stashed part back into the scratch.
    pub fn widen_ops(&self, gpu: &Gpu, s: &Stash, part: Part) -> Result<Vec<Op>> {
        self.pairs(s, part).iter().map(|(wide, half)| fp16_to_fp32(gpu, half, wide)).collect()
    }

    /// The stash's packed views of the block's input x (N·C / 2 words) and of its qkv
    /// (N·3C / 2 words), for the look-inside views.
    pub fn stashed_x_qkv(&self, s: &Stash) -> (Tensor, Tensor) {
        let (n, c) = (self.rows(), self.cfg.d_model);
        let xa = self.mixed_part().x_att.len() / 2;
        (s.attn.view("x (f16)", 0, vec![n * c / 2]), s.attn.view("qkv (f16)", xa, vec![n * 3 * c / 2]))
    }

    fn mixed_part(&self) -> &Mixed {
        self.mixed.as_ref().expect("stash ops are built only for mixed precision")
    }
}

impl Mixed {
    fn new(gpu: &Gpu, cfg: &LlamaConfig, batch: usize) -> Result<Mixed> {
        let (n, c, f) = (batch * cfg.context, cfg.d_model, cfg.hidden);
        let stream = gpu.tensor("stream scratch", &[2 * aligned(n * c)])?;
        let up_gate_at = aligned(n * c);
        let mlp_len = up_gate_at + aligned(2 * n * f);
        let block = gpu.tensor("block scratch", &[aligned(3 * n * c).max(mlp_len)])?;
        let t = |name: &str, shape: &[usize]| gpu.tensor(name, shape);
        let n1 = t("n1", &[n, c])?;
        let shared = BlockActs {
            x: stream.view("x", 0, vec![n, c]),
            rstd1: t("rstd", &[n])?,
            qkv_in: if cfg.short_conv { t("conv", &[n, c])? } else { n1.clone() },
            n1,
            qkv: block.view("qkv", 0, vec![n, 3 * c]),
            att: stream.view("att", aligned(n * c), vec![n, c]),
            lse: t("lse", &[1])?,
            proj: t("proj", &[n, c])?,
            x1: block.view("x1", 0, vec![n, c]),
            rstd2: t("rstd2", &[n])?,
            n2: t("n2", &[n, c])?,
            up_gate: block.view("up_gate", up_gate_at, vec![n, 2 * f]),
            g: t("g", &[n, f])?,
            down: t("down", &[n, c])?,
        };
        let x_att = stream.view("x, att", 0, vec![2 * aligned(n * c)]);
        let qkv = block.view("qkv region", 0, vec![aligned(3 * n * c)]);
        let mlp_region = block.view("MLP region", 0, vec![mlp_len]);
        Ok(Mixed { shared, x_att, qkv, mlp_region })
    }
}
