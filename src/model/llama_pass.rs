//! The dispatches of a tiny Llama for a fixed batch: forward to logits, and backward from
//! dlogits to every parameter gradient (accumulated; the step clears them first). Each residual
//! add is fused with the RMSNorm that follows it (`rms_norm_residual`). With `short_conv`, a
//! causal width-3 convolution (conv.wgsl) sits between each block's first norm and its qkv.
//! In mixed precision the matmuls read the weights' f16 copy and the activations live as
//! `llama_acts.rs` describes: stashed as f16 in the forward, widened back in the backward.

use crate::error::Result;
use crate::gpu::Tensor;
use crate::gpu::{Gpu, Op};
use crate::kernels::attention::{attention_backward, attention_forward, AttentionDims};
use crate::kernels::conv::{conv1d_backward_input, conv1d_backward_weight, conv1d_shaped, ConvShape};
use crate::kernels::elementwise::silu_gate;
use crate::kernels::embedding::{embedding_backward, embedding_rms_norm};
use crate::kernels::matmul::{matmul_ops, matmul_ops_pending, matmul_unreduced, split_partials_len, Adapter, MatmulDesc, Unreduced};
use crate::kernels::matmul_swiglu::SwigluInputGrad;
use crate::kernels::norm::{rms_norm, rms_norm_backward, rms_norm_residual, rms_norm_residual_unreduced, weight_partials_len, NormGrads};
use crate::kernels::quant::fp32_to_fp16;
use crate::kernels::rope::{rope, RopeConfig};
use crate::kernels::split_sums::PendingSums;
use crate::model::llama::LlamaConfig;
use crate::model::llama_acts::{Activations, BlockActs, Part, Stash};
use crate::model::params::{Linear, ParamStore};
use crate::model::{Net, Taps};

/// The weight a pass reads — the packed f16 copy in mixed precision, else the fp32 weight —
/// and `desc` marked accordingly.
fn weight(w: &Linear, desc: MatmulDesc) -> (Tensor, MatmulDesc) {
    match &w.weight16 {
        Some(w16) => (w16.clone(), desc.b_f16()),
        None => (w.weight.clone(), desc),
    }
}

/// Y = X·Wᵀ: one dispatch, or a split-K pair for (tokens, small) outputs with a long k.
fn linear(gpu: &Gpu, w: &Linear, x: &Tensor, y: &Tensor, (rows, out, inp): (usize, usize, usize)) -> Result<Vec<Op>> {
    let (w, desc) = weight(w, MatmulDesc::new(rows, out, inp).trans_b());
    matmul_ops(gpu, x, &w, y, desc)
}

/// The product dx (rows, in) = dy·W.
fn input_grad(rows: usize, out: usize, inp: usize) -> MatmulDesc {
    MatmulDesc::new(rows, inp, out)
}

/// The product dW (out, in) += dyᵀ·x over `rows`.
fn weight_grad(rows: usize, out: usize, inp: usize) -> MatmulDesc {
    MatmulDesc::new(out, inp, rows).trans_a().accumulate()
}

/// dW (out, in) += dyᵀ·x. dW has few output tiles and k = rows: it is split along k when that
/// helps, its partials summed at `pending`'s next flush.
fn weight_grad_ops(gpu: &Gpu, w: &Linear, x: &Tensor, dy: &Tensor, (rows, out, inp): (usize, usize, usize), pending: &mut PendingSums) -> Result<Vec<Op>> {
    matmul_ops_pending(gpu, dy, x, &w.grad, weight_grad(rows, out, inp), pending)
}

/// dW (out, in) += dyᵀ·x and dx (rows, in) = dy·W.
fn linear_backward(gpu: &Gpu, w: &Linear, x: &Tensor, dy: &Tensor, dx: &Tensor, dims: (usize, usize, usize), pending: &mut PendingSums) -> Result<Vec<Op>> {
    let mut ops = weight_grad_ops(gpu, w, x, dy, dims, pending)?;
    let (w, desc) = weight(w, input_grad(dims.0, dims.1, dims.2));
    ops.extend(matmul_ops(gpu, dy, &w, dx, desc)?);
    Ok(ops)
}

/// `linear_backward` with dx left unreduced for `rms_norm_backward`, which must follow it.
fn linear_backward_unreduced(
    gpu: &Gpu,
    w: &Linear,
    x: &Tensor,
    dy: &Tensor,
    dx: &Tensor,
    dims: (usize, usize, usize),
    pending: &mut PendingSums,
) -> Result<(Vec<Op>, Unreduced)> {
    let mut ops = weight_grad_ops(gpu, w, x, dy, dims, pending)?;
    let (w, desc) = weight(w, input_grad(dims.0, dims.1, dims.2));
    let (op, dx) = matmul_unreduced(gpu, dy, &w, dx, desc)?;
    ops.push(op);
    Ok((ops, dx))
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
        let acts = Activations::new(gpu, cfg, batch)?;

        let tokens = gpu.tensor("tokens", &[n])?;
        let mut fwd = vec![];
        if let Some(w16) = &p.weights16 {
            // The f16 weights follow the master weights, whatever changed them since.
            fwd.push(fp32_to_fp16(gpu, &p.weights, w16)?);
        }
        let (mut x, mut rstd1, mut n1) = acts.stream(gpu, "x0")?;
        fwd.push(embedding_rms_norm(gpu, &tokens, &p.weight("wte"), &p.weight("blocks.0.attn_norm"), (&x, &n1, &rstd1), eps)?);
        let mut blocks: Vec<(BlockActs, Option<Stash>)> = vec![];
        let mut taps = Taps::default();
        for l in 0..cfg.layers {
            let name = |s: &str| format!("blocks.{l}.{s}");
            let w = |s: &str| p.weight(&name(s));
            let b = acts.block(gpu, (&x, &rstd1, &n1), dims.lse_len())?;
            let stash = acts.stash(gpu)?;
            if cfg.short_conv {
                fwd.push(conv1d_shaped(gpu, &b.n1, &w("conv"), &w("conv_bias"), &b.qkv_in, ConvShape::causal_tokens(batch, t, c))?);
            }
            fwd.extend(linear(gpu, &p.linear(&name("qkv")), &b.qkv_in, &b.qkv, (n, 3 * c, c))?);
            fwd.push(rope(gpu, &b.qkv, &rope_cfg)?.op);
            if let Some(s) = &stash {
                fwd.extend(acts.stash_ops(gpu, s, Part::Qkv)?);
                fwd.extend(acts.widen_ops(gpu, s, Part::Qkv)?);
            }
            fwd.push(attention_forward(gpu, dims, &b.qkv, &b.att, &b.lse)?);
            fwd.extend(linear(gpu, &p.linear(&name("proj")), &b.att, &b.proj, (n, c, c))?);
            if let Some(s) = &stash {
                fwd.extend(acts.stash_ops(gpu, s, Part::XAtt)?);
            }
            fwd.push(rms_norm_residual(gpu, &b.x, &b.proj, &w("mlp_norm"), &b.x1, &b.n2, &b.rstd2, eps)?);
            // up and gate in one product: their weights lie back to back as a (2F, C) matrix.
            fwd.extend(linear(gpu, &p.joined(&name("up")), &b.n2, &b.up_gate, (n, 2 * f, c))?);
            fwd.push(silu_gate(gpu, &b.up_gate, &b.g, f)?);
            // down's split partials wait in the shared scratch for the residual norm to add.
            let (w_down, desc) = weight(&p.linear(&name("down")), MatmulDesc::new(n, c, f).trans_b());
            let (op, down) = matmul_unreduced(gpu, &b.g, &w_down, &b.down, desc)?;
            fwd.push(op);
            if let Some(s) = &stash {
                fwd.extend(acts.stash_ops(gpu, s, Part::Mlp)?);
            }
            // x2 = x1 + down, fused with the next norm (the next block's, or the final one).
            let next_norm = if l + 1 < cfg.layers { p.weight(&format!("blocks.{}.attn_norm", l + 1)) } else { p.weight("final_norm") };
            (x, rstd1, n1) = acts.stream(gpu, "x2")?;
            fwd.push(rms_norm_residual_unreduced(gpu, &b.x1, &down, &next_norm, &x, &n1, &rstd1, eps)?);
            blocks.push((b, stash));
        }
        // After the loop: x is the final residual stream, n1 its final norm, rstd1 that norm's rstd.
        taps_of(gpu, &acts, &blocks, &x, &mut fwd, &mut taps)?;
        let logits = gpu.tensor("logits", &[n, v])?;
        fwd.extend(linear(gpu, &p.linear("lm_head"), &n1, &logits, (n, v, c))?);
        let d_logits = gpu.tensor("dlogits", &[n, v])?;
        let mut net = Net { input: tokens, output: logits, d_output: d_logits, forward: fwd, backward: vec![], taps };
        if train {
            net.backward = backward(gpu, cfg, p, &net, &acts, &blocks, (&x, &rstd1, &n1), dims, &rope_cfg)?;
        }
        Ok(net)
    }
}

/// The look-inside views' tensors: each block's output (the next block's input) and q, k, v.
/// In mixed precision they are the stashes' f16 views (the final residual stream gets one
/// more dispatch into its own), which `Taps::layers_f32` / `attention_f32` turn back into f32 for a view.
fn taps_of(gpu: &Gpu, acts: &Activations, blocks: &[(BlockActs, Option<Stash>)], x_final: &Tensor, fwd: &mut Vec<Op>, taps: &mut Taps) -> Result<()> {
    taps.packed = acts.is_mixed();
    // Block l's input is block l - 1's output.
    let mut outputs: Vec<Tensor> = vec![];
    for (l, (b, stash)) in blocks.iter().enumerate() {
        let (x, qkv) = match stash {
            Some(s) => acts.stashed_x_qkv(s),
            None => (b.x.clone(), b.qkv.clone()),
        };
        if l > 0 {
            outputs.push(x);
        }
        taps.attention.push((qkv, b.lse.clone()));
    }
    if taps.packed {
        let last = gpu.tensor("final stream (f16)", &[x_final.len() / 2])?;
        fwd.push(fp32_to_fp16(gpu, x_final, &last)?);
        outputs.push(last);
    } else {
        outputs.push(x_final.clone());
    }
    taps.layers = outputs.into_iter().enumerate().map(|(l, t)| (format!("blocks.{l}"), t)).collect();
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn backward(
    gpu: &Gpu,
    cfg: &LlamaConfig,
    p: &ParamStore,
    net: &Net,
    acts: &Activations,
    blocks: &[(BlockActs, Option<Stash>)],
    (x_final, rstd_final, n_final): (&Tensor, &Tensor, &Tensor),
    dims: AttentionDims,
    rope_cfg: &RopeConfig,
) -> Result<Vec<Op>> {
    let (c, f, v) = (cfg.d_model, cfg.hidden, cfg.vocab);
    let n = dims.batch * dims.seq;
    let tensor = |name: &str, shape: &[usize]| gpu.tensor(name, shape);
    // Scratch shared by every block: (N, C) ×3, (N, 2F), (N, 3C), (B, H, T), and (N, F) dg
    // where down's input gradient does not fuse with the SwiGLU backward (SwigluInputGrad).
    let (dx, dn, datt) = (tensor("dx", &[n, c])?, tensor("dn", &[n, c])?, tensor("datt", &[n, c])?);
    let dup_gate = tensor("dup_gate", &[n, 2 * f])?;
    let swiglu_grad = SwigluInputGrad::new(gpu, weight(&p.linear("blocks.0.down"), input_grad(n, c, f)).1)?;
    let (dqkv, delta) = (tensor("dqkv", &[n, 3 * c])?, tensor("delta", &[dims.lse_len()])?);
    // (N, C) d(short conv output), when there is one.
    let dconv = if cfg.short_conv { Some(tensor("dconv", &[n, c])?) } else { None };
    let conv_shape = ConvShape::causal_tokens(dims.batch, dims.seq, c);

    // Each block's gradient sums (and, with the last block's, the head's) are one dispatch.
    let mut pending = PendingSums::new(gpu, pending_partials(cfg, n, Adapter::of(gpu)))?;
    // dn's products leave their split partials (in the shared scratch) for rms_norm_backward to
    // add as it reads them.
    let (mut ops, dn_parts) = linear_backward_unreduced(gpu, &p.linear("lm_head"), n_final, &net.d_output, &dn, (n, v, c), &mut pending)?;
    let dw = p.grad("final_norm");
    let grads = NormGrads { dx: &dx, accumulate: false, dweight: &dw };
    ops.extend(rms_norm_backward(gpu, &dn_parts, x_final, &p.weight("final_norm"), rstd_final, grads, Some(&mut pending))?);
    let eps = cfg.norm_eps;
    for (l, (b, stash)) in blocks.iter().enumerate().rev() {
        let name = |s: &str| format!("blocks.{l}.{s}");
        if let Some(s) = stash {
            // Mixed precision: x1 and up_gate come back from f16; n2 and g are recomputed.
            ops.extend(acts.widen_ops(gpu, s, Part::Mlp)?);
            ops.push(rms_norm(gpu, &b.x1, &p.weight(&name("mlp_norm")), &b.n2, &b.rstd2, eps)?);
            ops.push(silu_gate(gpu, &b.up_gate, &b.g, f)?);
        }
        // MLP: dx holds d(x2) = d(x1 + down).
        let down = p.linear(&name("down"));
        ops.extend(weight_grad_ops(gpu, &down, &b.g, &dx, (n, c, f), &mut pending)?);
        // dg = dx·W_down, turned into d[up; gate] as it is stored (or by silu_gate_backward).
        let (w_down, _) = weight(&down, input_grad(n, c, f));
        ops.extend(swiglu_grad.ops(gpu, &dx, &w_down, &b.up_gate, &dup_gate)?);
        // One product each for d[up; gate] and dn (its k runs over both halves).
        let (step, dn_parts) = linear_backward_unreduced(gpu, &p.joined(&name("up")), &b.n2, &dup_gate, &dn, (n, 2 * f, c), &mut pending)?;
        ops.extend(step);
        let dw = p.grad(&name("mlp_norm"));
        let grads = NormGrads { dx: &dx, accumulate: true, dweight: &dw };
        ops.extend(rms_norm_backward(gpu, &dn_parts, &b.x1, &p.weight(&name("mlp_norm")), &b.rstd2, grads, Some(&mut pending))?);
        if let Some(s) = stash {
            // x, qkv and att come back from f16; n1 (and the short conv) are recomputed.
            ops.extend(acts.widen_ops(gpu, s, Part::Attention)?);
            ops.push(rms_norm(gpu, &b.x, &p.weight(&name("attn_norm")), &b.n1, &b.rstd1, eps)?);
            if cfg.short_conv {
                ops.push(conv1d_shaped(gpu, &b.n1, &p.weight(&name("conv")), &p.weight(&name("conv_bias")), &b.qkv_in, conv_shape)?);
            }
        }
        // Attention: dx now holds d(x1) = d(x + proj).
        ops.extend(linear_backward(gpu, &p.linear(&name("proj")), &b.att, &dx, &datt, (n, c, c), &mut pending)?);
        // dq and dk come out un-rotated: the gradient of the qkv product's output.
        let bw = attention_backward(gpu, dims, Some(rope_cfg), &b.qkv, &b.att, &b.lse, &datt, &delta, &dqkv)?;
        ops.extend(bw.ops().into_iter().cloned());
        let qkv = p.linear(&name("qkv"));
        let dn_parts = if let Some(dconv) = &dconv {
            ops.extend(linear_backward(gpu, &qkv, &b.qkv_in, &dqkv, dconv, (n, 3 * c, c), &mut pending)?);
            ops.push(conv1d_backward_weight(gpu, dconv, &b.n1, &p.grad(&name("conv")), &p.grad(&name("conv_bias")), conv_shape)?);
            ops.push(conv1d_backward_input(gpu, dconv, &p.weight(&name("conv")), &dn, conv_shape)?);
            Unreduced::whole(&dn)
        } else {
            let (step, dn_parts) = linear_backward_unreduced(gpu, &qkv, &b.qkv_in, &dqkv, &dn, (n, 3 * c, c), &mut pending)?;
            ops.extend(step);
            dn_parts
        };
        let dw = p.grad(&name("attn_norm"));
        let grads = NormGrads { dx: &dx, accumulate: true, dweight: &dw };
        ops.extend(rms_norm_backward(gpu, &dn_parts, &b.x, &p.weight(&name("attn_norm")), &b.rstd1, grads, Some(&mut pending))?);
        ops.extend(pending.flush(gpu)?);
    }
    ops.push(embedding_backward(gpu, &dx, &net.input, &p.grad("wte"))?);
    Ok(ops)
}

/// Floats of partials that wait in the backward's `PendingSums` at once (the fit check counts
/// them too): a block's four weight gradients and two norm weights, plus the head's and the
/// final norm's with the last block.
pub fn pending_partials(cfg: &LlamaConfig, n: usize, adapter: Adapter) -> usize {
    let (c, f) = (cfg.d_model, cfg.hidden);
    let dw = |out, inp| split_partials_len(adapter, &weight_grad(n, out, inp));
    let norm = weight_partials_len(c, n);
    dw(3 * c, c) + dw(c, c) + dw(2 * f, c) + dw(c, f) + 2 * norm + dw(cfg.vocab, c) + norm
}
