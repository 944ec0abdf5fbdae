//! The dispatches of a tiny Llama for a fixed batch: forward to logits, and backward from
//! dlogits to every parameter gradient (accumulated; the step clears them first). Each residual
//! add is fused with the RMSNorm that follows it (`rms_norm_residual`). With `short_conv`, a
//! causal width-3 convolution (conv.wgsl) sits between each block's first norm and its qkv.

use crate::error::Result;
use crate::gpu::Tensor;
use crate::gpu::{Gpu, Op};
use crate::kernels::attention::{attention_backward, attention_forward, AttentionDims};
use crate::kernels::conv::{conv1d_backward_input, conv1d_backward_weight, conv1d_shaped, ConvShape};
use crate::kernels::elementwise::{silu_gate, silu_gate_backward};
use crate::kernels::embedding::{embedding_backward, embedding_forward};
use crate::kernels::matmul::{matmul_ops, MatmulDesc};
use crate::kernels::norm::{rms_norm, rms_norm_backward, rms_norm_backward_weight, rms_norm_residual};
use crate::kernels::rope::{rope, rope_backward, RopeConfig};
use crate::model::llama::LlamaConfig;
use crate::model::params::ParamStore;
use crate::model::{Net, Taps};

/// What one block saves for its backward. N = B·T rows.
struct BlockActs {
    /// (N, C) block input (the residual stream)
    x: Tensor,
    /// (N) and (N, C): attention RMSNorm's rstd and output
    rstd1: Tensor,
    n1: Tensor,
    /// (N, C) what the qkv projection reads: the short conv of n1, or n1 itself
    qkv_in: Tensor,
    /// (N, 3C) q, k (rotated) and v
    qkv: Tensor,
    /// (N, C) attention output and (B, H, T) its log-sum-exp
    att: Tensor,
    lse: Tensor,
    /// (N, C) x + attention projection, and (N) / (N, C) the MLP RMSNorm's rstd and output
    x1: Tensor,
    rstd2: Tensor,
    n2: Tensor,
    /// (N, F) up, gate and silu(up)·gate
    up: Tensor,
    gate: Tensor,
    g: Tensor,
}

/// Y = X·Wᵀ: one dispatch, or a split-K pair for (tokens, small) outputs with a long k.
fn linear(gpu: &Gpu, x: &Tensor, w: &Tensor, y: &Tensor, rows: usize, out: usize, inp: usize) -> Result<Vec<Op>> {
    matmul_ops(gpu, x, w, y, MatmulDesc::new(rows, out, inp).trans_b())
}

/// dW (out, in) += dyᵀ·x and dx (rows, in) = dy·W (or += when `acc`).
fn linear_backward(
    gpu: &Gpu,
    p: &ParamStore,
    name: &str,
    x: &Tensor,
    dy: &Tensor,
    dx: Option<(&Tensor, bool)>,
    dims: (usize, usize, usize),
) -> Result<Vec<Op>> {
    let (rows, out, inp) = dims;
    // dW has few output tiles and k = rows: matmul_ops splits it along k when that helps.
    let mut ops = matmul_ops(gpu, dy, x, &p.grad(name), MatmulDesc::new(out, inp, rows).trans_a().accumulate())?;
    if let Some((dx, acc)) = dx {
        let desc = MatmulDesc::new(rows, inp, out);
        ops.extend(matmul_ops(gpu, dy, &p.weight(name), dx, if acc { desc.accumulate() } else { desc })?);
    }
    Ok(ops)
}

impl LlamaConfig {
    /// The forward dispatches for `batch` sequences (input: (B·T) u32 tokens, output: (B·T, V)
    /// logits), and the backward ones when `train`.
    pub fn build(&self, gpu: &Gpu, p: &ParamStore, batch: usize, train: bool) -> Result<Net> {
        let cfg = self;
        let (c, f, v, t) = (cfg.d_model, cfg.hidden, cfg.vocab, cfg.context);
        let n = batch * t;
        let eps = cfg.norm_eps;
        let dims = AttentionDims { batch, seq: t, heads: cfg.heads, head_dim: cfg.head_dim() };
        let rope_cfg = RopeConfig::qkv(cfg.head_dim(), cfg.heads, t, cfg.rope_theta);
        let tensor = |name: &str, shape: &[usize]| gpu.tensor(name, shape);

        let tokens = tensor("tokens", &[n])?;
        let x0 = tensor("x0", &[n, c])?;
        let mut fwd = vec![embedding_forward(gpu, &tokens, &p.weight("wte"), &x0)?];
        let mut blocks: Vec<BlockActs> = vec![];
        let mut taps = Taps::default();
        let (mut x, mut rstd1, mut n1) = (x0, tensor("rstd", &[n])?, tensor("n1", &[n, c])?);
        fwd.push(rms_norm(gpu, &x, &p.weight("blocks.0.attn_norm"), &n1, &rstd1, eps)?);
        for l in 0..cfg.layers {
            let w = |s: &str| p.weight(&format!("blocks.{l}.{s}"));
            let b = BlockActs {
                x: x.clone(),
                rstd1: rstd1.clone(),
                n1: n1.clone(),
                qkv_in: if cfg.short_conv { tensor("conv", &[n, c])? } else { n1.clone() },
                qkv: tensor("qkv", &[n, 3 * c])?,
                att: tensor("att", &[n, c])?,
                lse: tensor("lse", &[dims.lse_len()])?,
                x1: tensor("x1", &[n, c])?,
                rstd2: tensor("rstd2", &[n])?,
                n2: tensor("n2", &[n, c])?,
                up: tensor("up", &[n, f])?,
                gate: tensor("gate", &[n, f])?,
                g: tensor("g", &[n, f])?,
            };
            let proj = tensor("proj", &[n, c])?;
            let down = tensor("down", &[n, c])?;
            if cfg.short_conv {
                fwd.push(conv1d_shaped(gpu, &b.n1, &w("conv"), &w("conv_bias"), &b.qkv_in, ConvShape::causal_tokens(batch, t, c))?);
            }
            fwd.extend(linear(gpu, &b.qkv_in, &w("qkv"), &b.qkv, n, 3 * c, c)?);
            fwd.push(rope(gpu, &b.qkv, &rope_cfg)?.op);
            fwd.push(attention_forward(gpu, dims, &b.qkv, &b.att, &b.lse)?);
            fwd.extend(linear(gpu, &b.att, &w("proj"), &proj, n, c, c)?);
            fwd.push(rms_norm_residual(gpu, &b.x, &proj, &w("mlp_norm"), &b.x1, &b.n2, &b.rstd2, eps)?);
            fwd.extend(linear(gpu, &b.n2, &w("up"), &b.up, n, f, c)?);
            fwd.extend(linear(gpu, &b.n2, &w("gate"), &b.gate, n, f, c)?);
            fwd.push(silu_gate(gpu, &b.up, &b.gate, &b.g)?);
            fwd.extend(linear(gpu, &b.g, &w("down"), &down, n, c, f)?);
            // x2 = x1 + down, fused with the next norm (the next block's, or the final one).
            let next_norm = if l + 1 < cfg.layers { p.weight(&format!("blocks.{}.attn_norm", l + 1)) } else { p.weight("final_norm") };
            let (x2, r, nx) = (tensor("x2", &[n, c])?, tensor("rstd", &[n])?, tensor("n1", &[n, c])?);
            fwd.push(rms_norm_residual(gpu, &b.x1, &down, &next_norm, &x2, &nx, &r, eps)?);
            taps.layers.push((format!("blocks.{l}"), x2.clone()));
            taps.attention.push((b.qkv.clone(), b.lse.clone()));
            blocks.push(b);
            (x, rstd1, n1) = (x2, r, nx);
        }
        // After the loop: x is the final residual stream, n1 its final norm, rstd1 that norm's rstd.
        let logits = tensor("logits", &[n, v])?;
        fwd.extend(linear(gpu, &n1, &p.weight("lm_head"), &logits, n, v, c)?);
        let d_logits = tensor("dlogits", &[n, v])?;
        let mut net = Net { input: tokens, output: logits, d_output: d_logits, forward: fwd, backward: vec![], taps };
        if train {
            net.backward = backward(gpu, cfg, p, &net, &blocks, (&x, &rstd1, &n1), dims, &rope_cfg)?;
        }
        Ok(net)
    }
}

#[allow(clippy::too_many_arguments)]
fn backward(
    gpu: &Gpu,
    cfg: &LlamaConfig,
    p: &ParamStore,
    net: &Net,
    blocks: &[BlockActs],
    (x_final, rstd_final, n_final): (&Tensor, &Tensor, &Tensor),
    dims: AttentionDims,
    rope_cfg: &RopeConfig,
) -> Result<Vec<Op>> {
    let (c, f, v) = (cfg.d_model, cfg.hidden, cfg.vocab);
    let n = dims.batch * dims.seq;
    let tensor = |name: &str, shape: &[usize]| gpu.tensor(name, shape);
    // Scratch shared by every block: (N, C) ×3, (N, F) ×3, (N, 3C), (B, H, T).
    let (dx, dn, datt) = (tensor("dx", &[n, c])?, tensor("dn", &[n, c])?, tensor("datt", &[n, c])?);
    let (dg, dup, dgate) = (tensor("dg", &[n, f])?, tensor("dup", &[n, f])?, tensor("dgate", &[n, f])?);
    let (dqkv, delta) = (tensor("dqkv", &[n, 3 * c])?, tensor("delta", &[dims.lse_len()])?);
    // (N, C) d(short conv output), when there is one.
    let dconv = if cfg.short_conv { Some(tensor("dconv", &[n, c])?) } else { None };
    let conv_shape = ConvShape::causal_tokens(dims.batch, dims.seq, c);

    let mut ops = linear_backward(gpu, p, "lm_head", n_final, &net.d_output, Some((&dn, false)), (n, v, c))?;
    ops.push(rms_norm_backward(gpu, &dn, x_final, &p.weight("final_norm"), rstd_final, &dx, false)?);
    ops.extend(rms_norm_backward_weight(gpu, &dn, x_final, rstd_final, &p.grad("final_norm"))?);
    for (l, b) in blocks.iter().enumerate().rev() {
        let name = |s: &str| format!("blocks.{l}.{s}");
        // MLP: dx holds d(x2) = d(x1 + down).
        ops.extend(linear_backward(gpu, p, &name("down"), &b.g, &dx, Some((&dg, false)), (n, c, f))?);
        ops.push(silu_gate_backward(gpu, &b.up, &b.gate, &dg, &dup, &dgate)?);
        ops.extend(linear_backward(gpu, p, &name("up"), &b.n2, &dup, Some((&dn, false)), (n, f, c))?);
        ops.extend(linear_backward(gpu, p, &name("gate"), &b.n2, &dgate, Some((&dn, true)), (n, f, c))?);
        ops.push(rms_norm_backward(gpu, &dn, &b.x1, &p.weight(&name("mlp_norm")), &b.rstd2, &dx, true)?);
        ops.extend(rms_norm_backward_weight(gpu, &dn, &b.x1, &b.rstd2, &p.grad(&name("mlp_norm")))?);
        // Attention: dx now holds d(x1) = d(x + proj).
        ops.extend(linear_backward(gpu, p, &name("proj"), &b.att, &dx, Some((&datt, false)), (n, c, c))?);
        let bw = attention_backward(gpu, dims, &b.qkv, &b.att, &b.lse, &datt, &delta, &dqkv)?;
        ops.extend(bw.ops().into_iter().cloned());
        ops.push(rope_backward(gpu, &dqkv, rope_cfg)?.op);
        ops.extend(linear_backward(gpu, p, &name("qkv"), &b.qkv_in, &dqkv, Some((dconv.as_ref().unwrap_or(&dn), false)), (n, 3 * c, c))?);
        if let Some(dconv) = &dconv {
            ops.push(conv1d_backward_weight(gpu, dconv, &b.n1, &p.grad(&name("conv")), &p.grad(&name("conv_bias")), conv_shape)?);
            ops.push(conv1d_backward_input(gpu, dconv, &p.weight(&name("conv")), &dn, conv_shape)?);
        }
        ops.push(rms_norm_backward(gpu, &dn, &b.x, &p.weight(&name("attn_norm")), &b.rstd1, &dx, true)?);
        ops.extend(rms_norm_backward_weight(gpu, &dn, &b.x, &b.rstd1, &p.grad(&name("attn_norm")))?);
    }
    ops.push(embedding_backward(gpu, &dx, &net.input, &p.grad("wte"))?);
    Ok(ops)
}
