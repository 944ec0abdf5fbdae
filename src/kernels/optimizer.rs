//! Optimizer kernels (`shaders/optimizer.wgsl`): the global gradient norm² reduced on the GPU
//! (its wrappers in grad_norm.rs, re-exported here), clipping by it, AdamW and SGD (both clip on the fly and skip the whole step when the norm is
//! not finite), and gradient accumulate/scale. Every kernel works over the arrayLength of the
//! range it is bound to, so tensors may be views of one flat parameter buffer.

use std::marker::PhantomData;

use super::reduce::expect_scalar;
use super::{expect_len, groups_1d, Kernel, OPTIMIZER as F, R, RW, U};
use crate::error::{ensure, Result};
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};
use crate::gpu::{Tensor, Uniform};

pub use super::grad_norm::{grad_norm_and_loss, grad_norm_squared, gradient_norm_squared, norm_partials_len};

pub const GRADIENT_NORM_SQUARED: Kernel = Kernel { entry: "gradient_norm_squared", family: F, bindings: &[R, RW, U] };
pub const CLIP_GRAD_BY_NORM: Kernel = Kernel { entry: "clip_grad_by_norm", family: F, bindings: &[RW, R, U] };
pub const ADAMW_UPDATE: Kernel = Kernel { entry: "adamw_update", family: F, bindings: &[RW, R, RW, RW, R, U] };
pub const SGD_UPDATE: Kernel = Kernel { entry: "sgd_update", family: F, bindings: &[RW, R, RW, R, U] };
pub const GRADIENT_ACCUMULATE: Kernel = Kernel { entry: "gradient_accumulate", family: F, bindings: &[RW, R] };
pub const GRADIENT_SCALE: Kernel = Kernel { entry: "gradient_scale", family: F, bindings: &[RW, U] };

pub const LOSS_AND_GRAD_NORM: Kernel = Kernel { entry: "loss_and_grad_norm", family: F, bindings: &[R, R, RW, RW, U] };
pub const LOSS_SCALE_UPDATE: Kernel = Kernel { entry: "loss_scale_update", family: F, bindings: &[R, RW, RW, U] };

pub const KERNELS: &[&Kernel] =
    &[&GRADIENT_NORM_SQUARED, &CLIP_GRAD_BY_NORM, &ADAMW_UPDATE, &SGD_UPDATE, &GRADIENT_ACCUMULATE, &GRADIENT_SCALE, &LOSS_AND_GRAD_NORM, &LOSS_SCALE_UPDATE];

/// Mirrors `AdamParams` in optimizer.wgsl. PyTorch AdamW semantics; `t` is the step number
/// (1 on the first update), `max_norm` 0 disables clipping.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct AdamWParams {
    pub lr: f32,
    pub beta1: f32,
    pub beta2: f32,
    pub eps: f32,
    pub weight_decay: f32,
    pub t: f32,
    pub max_norm: f32,
    /// Elements [0, decay_end) get weight decay; the rest (norms, biases) do not. u32::MAX: all.
    pub decay_end: u32,
}

impl AdamWParams {
    /// PyTorch's defaults (betas 0.9/0.999, eps 1e-8, weight decay 0.01), step 1, no clipping.
    pub fn new(lr: f32) -> AdamWParams {
        AdamWParams { lr, beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.01, t: 1.0, max_norm: 0.0, decay_end: u32::MAX }
    }
}

/// Mirrors `SgdParams` in optimizer.wgsl. PyTorch SGD: momentum 0 is plain SGD, weight decay is
/// L2 (added to the gradient), `max_norm` 0 disables clipping.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SgdParams {
    pub lr: f32,
    pub momentum: f32,
    pub weight_decay: f32,
    pub max_norm: f32,
}

/// Mirrors `ClipParams` and `ScaleParams`: one float padded to 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct OneFloat {
    value: f32,
    pad: [f32; 3],
}

/// Parameters a uniform buffer carries, checked before they reach the GPU.
pub trait Validate {
    fn validate(&self) -> Result<()>;
}

fn finite_at_least(value: f32, min: f32, field: &str) -> Result<()> {
    ensure(value.is_finite() && value >= min, field, || format!("must be finite and >= {min}, got {value}"))
}

impl Validate for AdamWParams {
    fn validate(&self) -> Result<()> {
        finite_at_least(self.lr, 0.0, "lr")?;
        for (beta, field) in [(self.beta1, "beta1"), (self.beta2, "beta2")] {
            ensure((0.0..1.0).contains(&beta), field, || format!("must be in [0, 1), got {beta}"))?;
        }
        ensure(self.eps.is_finite() && self.eps > 0.0, "eps", || format!("must be > 0, got {}", self.eps))?;
        finite_at_least(self.weight_decay, 0.0, "weight_decay")?;
        // Whole steps only: the kernel raises beta to u32(t), exact for t <= 2^24.
        ensure(self.t >= 1.0 && self.t <= 16_777_216.0 && self.t.fract() == 0.0, "t", || {
            format!("step number must be a whole number from 1 to 2^24, got {}", self.t)
        })?;
        finite_at_least(self.max_norm, 0.0, "max_norm")
    }
}

impl Validate for SgdParams {
    fn validate(&self) -> Result<()> {
        finite_at_least(self.lr, 0.0, "lr")?;
        ensure((0.0..1.0).contains(&self.momentum), "momentum", || format!("must be in [0, 1), got {}", self.momentum))?;
        finite_at_least(self.weight_decay, 0.0, "weight_decay")?;
        finite_at_least(self.max_norm, 0.0, "max_norm")
    }
}

/// A dispatch whose parameters change between steps (lr, step t): rewrite them with `set`
/// before running the op again; no new bind group is needed.
pub struct UniformOp<P> {
    pub op: Op,
    pub params: Uniform,
    kind: PhantomData<P>,
}

impl<P: bytemuck::Pod + Validate> UniformOp<P> {
    pub fn new(op: Op, params: Uniform) -> UniformOp<P> {
        UniformOp { op, params, kind: PhantomData }
    }

    pub fn set(&self, gpu: &Gpu, params: &P) -> Result<()> {
        params.validate()?;
        gpu.write_uniform(&self.params, params);
        Ok(())
    }
}

/// `grad *= min(1, max_norm / (sqrt(norm_sq[0]) + 1e-6))`, norm_sq read on the GPU. A
/// non-finite norm leaves the gradient unchanged (the optimizers then skip the step).
/// # Example
///
/// ```
/// # pollster::block_on(async {
/// use kiln::kernels::optimizer::clip_grad_by_norm;
/// let gpu = kiln::Gpu::new().await?;
/// let grad = gpu.tensor_from("grad", &[2], &[3.0f32, 4.0])?;
/// // ‖grad‖² as the GPU's norm kernels leave it: 25, so the norm is 5.
/// let norm_sq = gpu.tensor_from("norm_sq", &[1], &[25.0f32])?;
/// gpu.run(&[&clip_grad_by_norm(&gpu, &grad, &norm_sq, 1.0)?])?;
/// let g = gpu.read_f32(&grad).await?; // scaled to norm 1 (up to the 1e-6 guard)
/// assert!((g[0] - 0.6).abs() < 1e-5 && (g[1] - 0.8).abs() < 1e-5);
/// # Ok::<(), kiln::KilnError>(())
/// # }).unwrap();
/// ```
pub fn clip_grad_by_norm(gpu: &Gpu, grad: &Tensor, norm_sq: &Tensor, max_norm: f32) -> Result<Op> {
    expect_scalar(norm_sq, "norm_sq")?;
    ensure(max_norm.is_finite() && max_norm > 0.0, "max_norm", || format!("must be > 0, got {max_norm}"))?;
    let p = gpu.uniform("clip params", &OneFloat { value: max_norm, pad: [0.0; 3] });
    gpu.op(&CLIP_GRAD_BY_NORM, &[T(grad), T(norm_sq), Uni(&p)], gpu.grid(groups_1d(grad.len())))
}

/// One AdamW step over w, m, v (same length as grad); norm_sq (1) drives clipping and the
/// NaN guard. Rewrite lr/t each step with `UniformOp::set`.
pub fn adamw_update(
    gpu: &Gpu,
    weight: &Tensor,
    grad: &Tensor,
    m: &Tensor,
    v: &Tensor,
    norm_sq: &Tensor,
    params: &AdamWParams,
) -> Result<UniformOp<AdamWParams>> {
    let n = weight.len();
    for (t, what) in [(grad, "grad"), (m, "adam m"), (v, "adam v")] {
        expect_len(t, n, what)?;
    }
    expect_scalar(norm_sq, "norm_sq")?;
    params.validate()?;
    let p = gpu.uniform("adamw params", params);
    let args = [T(weight), T(grad), T(m), T(v), T(norm_sq), Uni(&p)];
    let op = gpu.op(&ADAMW_UPDATE, &args, gpu.grid(groups_1d(n)))?;
    Ok(UniformOp { op, params: p, kind: PhantomData })
}

/// One SGD step; `momentum_buf` (same length as weight, zeroed at the start) is required when
/// `params.momentum > 0` and may be None for plain SGD.
pub fn sgd_update(
    gpu: &Gpu,
    weight: &Tensor,
    grad: &Tensor,
    momentum_buf: Option<&Tensor>,
    norm_sq: &Tensor,
    params: &SgdParams,
) -> Result<UniformOp<SgdParams>> {
    let n = weight.len();
    expect_len(grad, n, "grad")?;
    expect_scalar(norm_sq, "norm_sq")?;
    params.validate()?;
    let placeholder;
    let buf = match momentum_buf {
        Some(b) => {
            expect_len(b, n, "momentum buffer")?;
            b
        }
        None => {
            ensure(params.momentum == 0.0, "momentum_buf", || format!("momentum {} needs a momentum buffer of {n} elements", params.momentum))?;
            placeholder = gpu.tensor("sgd momentum placeholder", &[1])?;
            &placeholder
        }
    };
    let p = gpu.uniform("sgd params", params);
    let args = [T(weight), T(grad), T(buf), T(norm_sq), Uni(&p)];
    let op = gpu.op(&SGD_UPDATE, &args, gpu.grid(groups_1d(n)))?;
    Ok(UniformOp { op, params: p, kind: PhantomData })
}

/// `grad += new` (accumulation over micro-batches).
/// # Example
///
/// ```
/// # pollster::block_on(async {
/// use kiln::kernels::optimizer::gradient_accumulate;
/// let gpu = kiln::Gpu::new().await?;
/// let grad = gpu.tensor_from("grad", &[3], &[1.0f32, 2.0, 3.0])?;
/// let micro_batch = gpu.tensor_from("new", &[3], &[0.5f32, -2.0, 10.0])?;
/// gpu.run(&[&gradient_accumulate(&gpu, &grad, &micro_batch)?])?;
/// assert_eq!(gpu.read_f32(&grad).await?, [1.5, 0.0, 13.0]);
/// # Ok::<(), kiln::KilnError>(())
/// # }).unwrap();
/// ```
pub fn gradient_accumulate(gpu: &Gpu, grad: &Tensor, new: &Tensor) -> Result<Op> {
    expect_len(new, grad.len(), "new gradient")?;
    gpu.op(&GRADIENT_ACCUMULATE, &[T(grad), T(new)], gpu.grid(groups_1d(grad.len())))
}

/// `grad *= factor` (e.g. 1/k after accumulating k micro-batches).
pub fn gradient_scale(gpu: &Gpu, grad: &Tensor, factor: f32) -> Result<Op> {
    ensure(factor.is_finite(), "factor", || format!("must be finite, got {factor}"))?;
    gradient_scale_by(gpu, grad, &factor_uniform(gpu, factor))
}

/// A uniform holding `gradient_scale`'s factor (16 bytes, the factor first), to be bound by
/// `gradient_scale_by` and rewritten later, by the CPU or by a copy from a GPU buffer.
pub fn factor_uniform(gpu: &Gpu, factor: f32) -> Uniform {
    gpu.uniform("gradient_scale params", &OneFloat { value: factor, pad: [0.0; 3] })
}

/// `grad *= factor` with the factor read from `factor` (see `factor_uniform`) when it runs.
pub fn gradient_scale_by(gpu: &Gpu, grad: &Tensor, factor: &Uniform) -> Result<Op> {
    gpu.op(&GRADIENT_SCALE, &[T(grad), Uni(factor)], gpu.grid(groups_1d(grad.len())))
}

/// Mirrors `LossScaleParams` in optimizer.wgsl (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct LossScaleParams {
    pub row: u32,
    pub growth_interval: u32,
    pub pad: [u32; 2],
}

impl Validate for LossScaleParams {
    fn validate(&self) -> Result<()> {
        ensure(self.growth_interval >= 1, "growth_interval", || "must be at least 1".into())
    }
}

/// Updates the loss scale `state` (4: scale, 1/scale, clean steps, 0) from this step's
/// `norm_sq` (1) and records the scale used in `ring`[row] (see optimizer.wgsl).
pub fn loss_scale_update(gpu: &Gpu, norm_sq: &Tensor, state: &Tensor, ring: &Tensor, params: &LossScaleParams) -> Result<UniformOp<LossScaleParams>> {
    expect_scalar(norm_sq, "norm_sq")?;
    expect_len(state, 4, "loss scale state")?;
    params.validate()?;
    let p = gpu.uniform("loss scale params", params);
    let op = gpu.op(&LOSS_SCALE_UPDATE, &[T(norm_sq), T(state), T(ring), Uni(&p)], [1, 1, 1])?;
    Ok(UniformOp { op, params: p, kind: PhantomData })
}

// ---------------------------------------------------------------- f64 references

pub mod reference {
    use super::{AdamWParams, SgdParams};

    /// The largest loss scale (2^24).
    pub const LOSS_SCALE_MAX: f64 = 16_777_216.0;

    /// One loss-scale update: (scale, clean steps in a row) after a step that used `scale`
    /// and whose squared gradient norm was `norm_sq`.
    pub fn loss_scale(scale: f64, clean: f64, norm_sq: f64, growth_interval: u32) -> (f64, f64) {
        let (scale, clean) = if !norm_sq.is_finite() {
            ((scale / 2.0).max(1.0), 0.0)
        } else if clean + 1.0 >= growth_interval as f64 {
            (scale * 2.0, 0.0)
        } else {
            (scale, clean + 1.0)
        };
        (scale.min(LOSS_SCALE_MAX), clean)
    }

    pub fn norm_squared(grads: &[&[f64]]) -> f64 {
        grads.iter().flat_map(|g| g.iter()).map(|x| x * x).sum()
    }

    /// PyTorch clip_grad_norm_'s factor; 1 when max_norm is 0 (no clipping).
    pub fn clip_factor(norm_sq: f64, max_norm: f64) -> f64 {
        if max_norm <= 0.0 {
            1.0
        } else {
            (max_norm / (norm_sq.sqrt() + 1e-6)).min(1.0)
        }
    }

    pub fn clip(grad: &[f64], norm_sq: f64, max_norm: f64) -> Vec<f64> {
        let f = clip_factor(norm_sq, max_norm);
        grad.iter().map(|g| g * f).collect()
    }

    /// One AdamW step in place (torch.optim.AdamW, amsgrad off); skipped if norm_sq is not finite.
    pub fn adamw(w: &mut [f64], m: &mut [f64], v: &mut [f64], grad: &[f64], norm_sq: f64, p: &AdamWParams) {
        if !norm_sq.is_finite() {
            return;
        }
        let (lr, b1, b2, eps, wd, t) = (p.lr as f64, p.beta1 as f64, p.beta2 as f64, p.eps as f64, p.weight_decay as f64, p.t as f64);
        let f = clip_factor(norm_sq, p.max_norm as f64);
        for i in 0..w.len() {
            let g = grad[i] * f;
            if i < p.decay_end as usize {
                w[i] *= 1.0 - lr * wd;
            }
            m[i] = b1 * m[i] + (1.0 - b1) * g;
            v[i] = b2 * v[i] + (1.0 - b2) * g * g;
            let m_hat = m[i] / (1.0 - b1.powf(t));
            let v_hat = v[i] / (1.0 - b2.powf(t));
            w[i] -= lr * m_hat / (v_hat.sqrt() + eps);
        }
    }

    /// One SGD step in place (torch.optim.SGD, dampening 0, no Nesterov); skipped if norm_sq
    /// is not finite. `buf` starts at zero, so the first step sets it to the gradient as PyTorch does.
    pub fn sgd(w: &mut [f64], buf: &mut [f64], grad: &[f64], norm_sq: f64, p: &SgdParams) {
        if !norm_sq.is_finite() {
            return;
        }
        let f = clip_factor(norm_sq, p.max_norm as f64);
        for i in 0..w.len() {
            let mut d = grad[i] * f + p.weight_decay as f64 * w[i];
            if p.momentum != 0.0 {
                buf[i] = p.momentum as f64 * buf[i] + d;
                d = buf[i];
            }
            w[i] -= p.lr as f64 * d;
        }
    }
}
