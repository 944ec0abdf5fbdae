//! The training pass a model hands the session: one micro-batch's forward, loss and backward,
//! as the model family builds it — the fused two-dispatch pass of mlp_fused.wgsl for a small
//! MLP, layer by layer (with the loss kernels between) for anything else — so the session never
//! builds a pass only to discard it.

use crate::error::Result;
use crate::gpu::{Gpu, Op, Tensor};
use crate::kernels::loss::{cross_entropy_rows, mse_loss_backward, mse_loss_partials, LossSum};
use crate::kernels::matmul::Adapter;
use crate::model::params::ParamStore;
use crate::model::{ModelConfig, Net, Taps};

pub struct TrainingPass {
    /// The batch's inputs: (B, input_dim) f32 for an MLP, (B·T) u32 tokens for a Llama
    pub input: Tensor,
    /// Forward, loss and backward dispatches, in order; backward accumulates into the grads.
    pub ops: Vec<Op>,
    /// The pass's internal tensors (none for the fused MLP pass, which keeps them in workgroup
    /// memory; `Session::inspect` reruns its batch through a forward pass for them).
    pub taps: Taps,
    /// (rows, outputs) the loss gradient the backward starts from, and the index in `ops` of
    /// the backward's first dispatch (None for the fused pass): where a loss scale goes.
    pub d_output: Option<(Tensor, usize)>,
    /// The batch's loss as partials the optimizer's closing sum averages into `loss` (None: the
    /// fused pass writes `loss` itself).
    pub loss_sum: Option<LossSum>,
}

impl ModelConfig {
    /// The pass for `batch` examples. `targets`: (rows) labels or next tokens, or (rows, 1)
    /// regression targets; `loss`: (1) the batch's mean loss, written by the fused pass (the
    /// others leave it as `loss_sum`).
    pub fn training_pass(&self, gpu: &Gpu, params: &ParamStore, batch: usize, targets: &Tensor, loss: &Tensor, regression: bool) -> Result<TrainingPass> {
        if let ModelConfig::Mlp(m) = self {
            if m.fusable(Adapter::of(gpu)) {
                // (B, input_dim)
                let input = gpu.tensor("mlp input", &[batch, m.input_dim])?;
                let ops = m.fused_pass(gpu, params, &input, targets, loss, regression)?;
                return Ok(TrainingPass { input, ops, taps: Taps::default(), d_output: None, loss_sum: None });
            }
        }
        let net = self.build(gpu, params, batch, true)?;
        let (loss_ops, loss_sum) = loss_ops(gpu, &net, targets, regression)?;
        let Net { input, forward, backward, taps, d_output, .. } = net;
        let backward_at = forward.len() + loss_ops.len();
        let ops = forward.into_iter().chain(loss_ops).chain(backward).collect();
        Ok(TrainingPass { input, ops, taps, d_output: Some((d_output, backward_at)), loss_sum: Some(loss_sum) })
    }
}

/// Mean squared error or cross-entropy of the net's output: writes `d_output`, and leaves the
/// mean loss as partials for the optimizer's closing sum.
fn loss_ops(gpu: &Gpu, net: &Net, targets: &Tensor, regression: bool) -> Result<(Vec<Op>, LossSum)> {
    if regression {
        // (1) d loss / d loss = 1, the seed of the backward pass
        let dloss = gpu.tensor_from("dloss", &[1], &[1.0f32])?;
        let (partials, sum) = mse_loss_partials(gpu, &net.output, targets)?;
        Ok((vec![partials, mse_loss_backward(gpu, &net.output, targets, &dloss, &net.d_output)?], sum))
    } else {
        // (rows) each row's cross-entropy
        let row_loss = gpu.tensor("row loss", &[net.output.shape()[0]])?;
        let (op, sum) = cross_entropy_rows(gpu, &net.output, targets, &row_loss, &net.d_output)?;
        Ok((vec![op], sum))
    }
}
