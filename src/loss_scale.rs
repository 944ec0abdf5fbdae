//! Dynamic loss scaling for mixed-precision training, the recipe of PyTorch's GradScaler,
//! kept on the GPU so a step never waits for the CPU: the loss gradient is multiplied by the
//! scale S before the backward and the gradients by 1/S after it (both the seed's
//! `gradient_scale`, their factors copied from the GPU-side state at the start of each
//! micro-batch); a step whose gradients are not finite is skipped by the optimizers' NaN guard
//! and halves S; `GROWTH_INTERVAL` clean steps in a row double it (`loss_scale_update`).
//!
//! Why scale at all when Kiln's gradient buffers are fp32: the f16 stashes hold activations,
//! not gradients, so small gradients cannot flush to zero here and a power-of-two scale
//! changes no digit of them; what the scaler does here is catch overflow — a step whose
//! scaled gradients leave the f32 range is skipped and S backs off — and keep the recipe whole
//! for kernels that will keep gradients in f16.

use crate::error::Result;
use crate::gpu::{Command, Gpu, Op, Tensor, Uniform};
use crate::kernels::optimizer::{factor_uniform, gradient_scale_by, loss_scale_update, LossScaleParams, UniformOp};

/// GradScaler's defaults: start at 2^16, double after 2000 clean steps.
pub const INITIAL_SCALE: f32 = 65_536.0;
pub const GROWTH_INTERVAL: u32 = 2000;

pub struct LossScaler {
    /// (4) scale, 1/scale, clean steps in a row, 0
    state: Tensor,
    /// (ring slots) the scale each step used, at row step % slots
    pub ring: Tensor,
    /// gradient_scale's factors: S for the loss gradient, 1/S for the gradients
    scale: Uniform,
    unscale: Uniform,
    /// d_output *= S, before the backward
    pub scale_op: Op,
    /// gradients *= 1/S, before the norm and the update
    pub unscale_op: Op,
    /// after the update
    update: UniformOp<LossScaleParams>,
}

impl LossScaler {
    pub fn new(gpu: &Gpu, d_output: &Tensor, grads: &Tensor, norm_sq: &Tensor, slots: usize) -> Result<LossScaler> {
        let state = gpu.tensor_from("loss scale state", &[4], &[INITIAL_SCALE, 1.0 / INITIAL_SCALE, 0.0, 0.0])?;
        let ring = gpu.tensor("loss scale ring", &[slots])?;
        let (scale, unscale) = (factor_uniform(gpu, INITIAL_SCALE), factor_uniform(gpu, 1.0 / INITIAL_SCALE));
        let scale_op = gradient_scale_by(gpu, d_output, &scale)?;
        let unscale_op = gradient_scale_by(gpu, grads, &unscale)?;
        let params = LossScaleParams { row: 0, growth_interval: GROWTH_INTERVAL, pad: [0; 2] };
        let update = loss_scale_update(gpu, norm_sq, &state, &ring, &params)?;
        Ok(LossScaler { state, ring, scale, unscale, scale_op, unscale_op, update })
    }

    /// The copies that bring the current scale into the two factors: the first commands of
    /// every micro-batch's submission.
    pub fn copies(&self) -> [Command<'_>; 2] {
        [Command::CopyToUniform { from: &self.state, word: 0, to: &self.scale }, Command::CopyToUniform { from: &self.state, word: 1, to: &self.unscale }]
    }

    /// Points the update at this step's ring row.
    pub fn prepare(&self, gpu: &Gpu, row: usize) -> Result<()> {
        self.update.set(gpu, &LossScaleParams { row: row as u32, growth_interval: GROWTH_INTERVAL, pad: [0; 2] })
    }

    pub fn update_op(&self) -> &Op {
        &self.update.op
    }

    /// Sets the scale (and restarts the count of clean steps): a loaded checkpoint or a
    /// recovered snapshot starts again from `INITIAL_SCALE`, and tests force an overflow with it.
    pub fn set(&self, gpu: &Gpu, scale: f32) -> Result<()> {
        gpu.write(&self.state, &[scale, 1.0 / scale, 0.0, 0.0])
    }
}
