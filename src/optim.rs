//! Optimizers over a `ParamStore`: AdamW (decoupled weight decay, none on norms and biases) or
//! SGD with momentum; global-norm clipping computed on the GPU (the update kernels read the
//! squared norm and scale on the fly, and skip the update when it is not finite); gradient
//! accumulation over micro-batches; constant or warmup + cosine learning-rate schedules.

use serde::{Deserialize, Serialize};

use crate::error::{ensure, shown, Result};
use crate::gpu::Tensor;
use crate::gpu::{Gpu, Op};
use crate::kernels::loss::LossSum;
use crate::kernels::optimizer::{adamw_update, grad_norm_and_loss, gradient_scale, norm_partials_len, sgd_update, AdamWParams, SgdParams, UniformOp};
use crate::model::params::ParamStore;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum OptimizerKind {
    Adamw,
    Sgd,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Schedule {
    Constant,
    /// Linear warmup for `warmup_steps`, then cosine decay to `min_lr_fraction`·lr at `total_steps`.
    WarmupCosine {
        warmup_steps: u32,
        total_steps: u32,
        min_lr_fraction: f32,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(default, deny_unknown_fields)]
/// Every field may be left out: it then takes its default.
pub struct OptimConfig {
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub kind: OptimizerKind,
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub lr: f32,
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub beta1: f32,
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub beta2: f32,
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub eps: f32,
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub weight_decay: f32,
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub momentum: f32,
    /// Global gradient-norm clip; 0 disables it.
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub clip: f32,
    /// Micro-batches whose gradients are averaged into one update.
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub accumulation: u32,
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub schedule: Schedule,
}

impl Default for OptimConfig {
    fn default() -> Self {
        OptimConfig {
            kind: OptimizerKind::Adamw,
            lr: 1e-2,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
            momentum: 0.9,
            clip: 1.0,
            accumulation: 1,
            schedule: Schedule::Constant,
        }
    }
}

impl OptimConfig {
    pub fn validate(&self) -> Result<()> {
        ensure(self.lr.is_finite() && self.lr > 0.0 && self.lr <= 10.0, "optimizer.lr", || format!("must be in (0, 10], got {}", shown(self.lr)))?;
        ensure((1..=64).contains(&self.accumulation), "optimizer.accumulation", || format!("must be 1..=64, got {}", self.accumulation))?;
        ensure(self.clip.is_finite() && self.clip >= 0.0, "optimizer.clip", || format!("must be >= 0 (0 = off), got {}", shown(self.clip)))?;
        if let Schedule::WarmupCosine { warmup_steps, total_steps, min_lr_fraction } = self.schedule {
            ensure(total_steps > warmup_steps, "optimizer.schedule.total_steps", || format!("must exceed warmup_steps ({warmup_steps}), got {total_steps}"))?;
            ensure((0.0..=1.0).contains(&min_lr_fraction), "optimizer.schedule.min_lr_fraction", || format!("must be in [0, 1], got {min_lr_fraction}"))?;
        }
        // The kernels' own parameter checks name beta1/beta2/eps/momentum/weight_decay.
        self.adamw(1, u32::MAX).map(|_| ()).map_err(|e| e.under("optimizer"))?;
        self.sgd(1, true).map(|_| ()).map_err(|e| e.under("optimizer"))
    }

    /// Learning rate at 1-based step `t`.
    pub fn lr_at(&self, t: u64) -> f32 {
        match self.schedule {
            Schedule::Constant => self.lr,
            Schedule::WarmupCosine { warmup_steps, total_steps, min_lr_fraction } => {
                let t = t as f32;
                if t <= warmup_steps as f32 {
                    self.lr * t / warmup_steps.max(1) as f32
                } else {
                    let progress = ((t - warmup_steps as f32) / (total_steps - warmup_steps) as f32).min(1.0);
                    let cos = 0.5 * (1.0 + (std::f32::consts::PI * progress).cos());
                    self.lr * (min_lr_fraction + (1.0 - min_lr_fraction) * cos)
                }
            }
        }
    }

    /// AdamW's uniforms for step `t`, decaying the flat elements before `decay_end`.
    fn adamw(&self, t: u64, decay_end: u32) -> Result<AdamWParams> {
        let p = AdamWParams {
            lr: self.lr_at(t),
            beta1: self.beta1,
            beta2: self.beta2,
            eps: self.eps,
            weight_decay: self.weight_decay,
            t: t as f32,
            max_norm: self.clip,
            decay_end,
        };
        crate::kernels::optimizer::Validate::validate(&p)?;
        Ok(p)
    }

    fn sgd(&self, t: u64, decay: bool) -> Result<SgdParams> {
        let p = SgdParams { lr: self.lr_at(t), momentum: self.momentum, weight_decay: if decay { self.weight_decay } else { 0.0 }, max_norm: self.clip };
        crate::kernels::optimizer::Validate::validate(&p)?;
        Ok(p)
    }
}

enum Update {
    /// One dispatch over the whole flat buffer; decay stops at the given element.
    Adamw(UniformOp<AdamWParams>, u32),
    /// One dispatch per range (decay, no decay).
    Sgd(UniformOp<SgdParams>, bool),
}

/// The optimizer's part of a step: average accumulated gradients, reduce the global norm,
/// update each range of the flat parameter buffer.
pub struct Optimizer {
    pub cfg: OptimConfig,
    /// (1) squared global gradient norm, written every step
    pub norm_sq: Tensor,
    pub ops_before_update: Vec<Op>,
    updates: Vec<Update>,
}

impl Optimizer {
    /// The update of `params`, after the step's closing sums: the gradient norm², and `loss`
    /// (1) finished from `loss_sum` (None: the pass wrote it), whose non-finite value skips the
    /// step as a non-finite gradient does.
    pub fn new(gpu: &Gpu, params: &ParamStore, cfg: OptimConfig, loss: &Tensor, loss_sum: Option<&LossSum>) -> Result<Optimizer> {
        cfg.validate()?;
        let norm_sq = gpu.tensor("grad norm squared", &[1])?;
        let grads = [&params.grads];
        let partials = gpu.tensor("grad norm partials", &[norm_partials_len(&grads)])?;
        let mut ops_before_update = vec![];
        if cfg.accumulation > 1 {
            ops_before_update.push(gradient_scale(gpu, &params.grads, 1.0 / cfg.accumulation as f32)?);
        }
        ops_before_update.extend(grad_norm_and_loss(gpu, &grads, &partials, &norm_sq, loss, loss_sum)?);
        let mut updates = vec![];
        match cfg.kind {
            OptimizerKind::Adamw => {
                let decay_end = params.decay_end as u32;
                let (w, g, m, v) = (&params.weights, &params.grads, &params.m, &params.v);
                updates.push(Update::Adamw(adamw_update(gpu, w, g, m, v, &norm_sq, &cfg.adamw(1, decay_end)?)?, decay_end));
            }
            OptimizerKind::Sgd => {
                let [w0, w1] = params.ranges(&params.weights);
                let [g0, g1] = params.ranges(&params.grads);
                let [m0, m1] = params.ranges(&params.m);
                for (decay, w, g, m) in [(true, w0, g0, m0), (false, w1, g1, m1)] {
                    let (Some(w), Some(g), Some(m)) = (w, g, m) else { continue };
                    updates.push(Update::Sgd(sgd_update(gpu, &w, &g, Some(&m), &norm_sq, &cfg.sgd(1, decay)?)?, decay));
                }
            }
        }
        Ok(Optimizer { cfg, norm_sq, ops_before_update, updates })
    }

    /// Writes the uniforms for 1-based step `t` (learning rate, bias correction).
    pub fn prepare(&self, gpu: &Gpu, t: u64) -> Result<()> {
        for u in &self.updates {
            match u {
                Update::Adamw(op, decay_end) => op.set(gpu, &self.cfg.adamw(t, *decay_end)?)?,
                Update::Sgd(op, decay) => op.set(gpu, &self.cfg.sgd(t, *decay)?)?,
            }
        }
        Ok(())
    }

    pub fn ops(&self) -> Vec<&Op> {
        let updates = self.updates.iter().map(|u| match u {
            Update::Adamw(op, _) => &op.op,
            Update::Sgd(op, _) => &op.op,
        });
        self.ops_before_update.iter().chain(updates).collect()
    }
}
