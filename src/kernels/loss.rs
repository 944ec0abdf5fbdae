//! Losses (`shaders/loss.wgsl`): batched cross-entropy with its gradient fused into the forward
//! pass, and mean-squared error, each finished by `reduce::sum_final` into a 1-element loss
//! buffer (or, in a training step, by the optimizer's `loss_and_grad_norm`: a `LossSum`); backwards read the upstream gradient from a 1-element GPU buffer. f64 references.

use super::reduce::{self, expect_scalar, partial_groups, Final, PartialParams};
use super::{expect_len, groups_1d, Kernel, LOSS as F, R, RW, U};
use crate::error::{ensure, KilnError, Result};
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};
use crate::gpu::{Tensor, Uniform};

pub const CROSS_ENTROPY_LOSS: Kernel = Kernel { entry: "cross_entropy_loss", family: F, bindings: &[R, R, RW, RW, U] };
pub const CROSS_ENTROPY_LOSS_SMALL: Kernel = Kernel { entry: "cross_entropy_loss_small", family: F, bindings: &[R, R, RW, RW, U] };
pub const CROSS_ENTROPY_BACKWARD: Kernel = Kernel { entry: "cross_entropy_backward", family: F, bindings: &[R, R, R, RW, U] };
pub const MSE_LOSS: Kernel = Kernel { entry: "mse_loss", family: F, bindings: &[R, R, RW, U] };
pub const MSE_LOSS_BACKWARD: Kernel = Kernel { entry: "mse_loss_backward", family: F, bindings: &[R, R, R, RW] };

pub const KERNELS: &[&Kernel] = &[&CROSS_ENTROPY_LOSS, &CROSS_ENTROPY_LOSS_SMALL, &CROSS_ENTROPY_BACKWARD, &MSE_LOSS, &MSE_LOSS_BACKWARD];

/// Mirrors `CeParams` in loss.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct CeParams {
    rows: u32,
    vocab: u32,
    grad_scale: f32,
    pad: u32,
}

/// Fails naming the first target that is not a class index below `vocab`. The kernels also
/// survive bad targets (NaN row loss, zero gradient), but the host should refuse them up front.
pub fn check_targets(targets: &[u32], vocab: usize) -> Result<()> {
    match targets.iter().position(|&t| t as usize >= vocab) {
        None => Ok(()),
        Some(i) => Err(KilnError::invalid("targets", format!("target at position {i} is {}, but classes are 0..{vocab}", targets[i]))),
    }
}

/// (rows N, vocab V) of logits whose last axis is the vocabulary; targets must hold N.
fn ce_shape(logits: &Tensor, targets: &Tensor) -> Result<(usize, usize)> {
    let vocab = *logits.shape().last().unwrap_or(&0);
    ensure(vocab >= 1, logits.name(), || format!("logits shape {:?} has no class axis", logits.shape()))?;
    let rows = logits.len() / vocab;
    expect_len(targets, rows, "targets (one per logits row)")?;
    Ok((rows, vocab))
}

fn ce_params(gpu: &Gpu, rows: usize, vocab: usize) -> Uniform {
    let params = CeParams { rows: rows as u32, vocab: vocab as u32, grad_scale: 1.0 / rows as f32, pad: 0 };
    gpu.uniform("cross_entropy params", &params)
}

/// One pass, one workgroup per row: `row_loss[r] = logsumexp(logits[r]) − logits[r, t_r]` and
/// `dlogits = (softmax − onehot)/N`, the gradient of the mean loss. A target ≥ V gives a NaN
/// row loss and a zero gradient row. logits (…, V), targets (N) u32, row_loss (N), dlogits like logits.
pub fn cross_entropy_loss(gpu: &Gpu, logits: &Tensor, targets: &Tensor, row_loss: &Tensor, dlogits: &Tensor) -> Result<Op> {
    let (rows, vocab) = ce_shape(logits, targets)?;
    expect_len(row_loss, rows, "row_loss")?;
    expect_len(dlogits, logits.len(), "dlogits")?;
    let p = ce_params(gpu, rows, vocab);
    let args = [T(logits), T(targets), T(row_loss), T(dlogits), Uni(&p)];
    if vocab <= SMALL_VOCAB {
        gpu.op(&CROSS_ENTROPY_LOSS_SMALL, &args, gpu.grid(groups_1d(rows)))
    } else {
        gpu.op(&CROSS_ENTROPY_LOSS, &args, gpu.grid(rows as u32))
    }
}

/// Up to this many classes the fused cross-entropy runs one thread per row.
pub const SMALL_VOCAB: usize = 64;

/// A loss not yet averaged: `scale · Σ partials[0..count]` (row losses or MSE partials). A
/// training step leaves it for the optimizer's `loss_and_grad_norm`, which sums it together with
/// the gradient norm in one dispatch; `mean_op` sums it on its own.
#[derive(Clone)]
pub struct LossSum {
    pub partials: Tensor,
    pub count: usize,
    pub scale: f32,
}

impl LossSum {
    /// `loss[0] = scale · Σ partials[0..count]` as one dispatch.
    pub fn mean_op(&self, gpu: &Gpu, loss: &Tensor) -> Result<Op> {
        expect_scalar(loss, "loss")?;
        reduce::sum_final(gpu, &self.partials, self.count, loss, Final::scaled(self.scale))
    }
}

/// logits + targets → `loss` (1 element, the mean over rows) and `dlogits`, as two dispatches:
/// the fused row kernel, then `sum_final` over the row losses with scale 1/N.
pub fn cross_entropy(gpu: &Gpu, logits: &Tensor, targets: &Tensor, row_loss: &Tensor, loss: &Tensor, dlogits: &Tensor) -> Result<Vec<Op>> {
    let (fused, sum) = cross_entropy_rows(gpu, logits, targets, row_loss, dlogits)?;
    Ok(vec![fused, sum.mean_op(gpu, loss)?])
}

/// The fused row kernel of `cross_entropy`, its mean left as a `LossSum` over the row losses.
pub fn cross_entropy_rows(gpu: &Gpu, logits: &Tensor, targets: &Tensor, row_loss: &Tensor, dlogits: &Tensor) -> Result<(Op, LossSum)> {
    let rows = row_loss.len();
    let fused = cross_entropy_loss(gpu, logits, targets, row_loss, dlogits)?;
    Ok((fused, LossSum { partials: row_loss.clone(), count: rows, scale: 1.0 / rows as f32 }))
}

/// Gradient only: `dlogits = dloss[0] · (softmax − onehot)/N`, dloss a 1-element GPU buffer.
/// # Example
///
/// ```
/// # pollster::block_on(async {
/// use kiln::kernels::loss::cross_entropy_backward;
/// let gpu = kiln::Gpu::new().await?;
/// // Two rows of three logits, all equal: softmax is 1/3 everywhere.
/// let logits = gpu.tensor_from("logits", &[2, 3], &[0.0f32; 6])?;
/// let targets = gpu.tensor_from("targets", &[2], &[0u32, 2])?;
/// let dloss = gpu.tensor_from("dloss", &[1], &[1.0f32])?;
/// let dlogits = gpu.tensor("dlogits", &[2, 3])?;
/// gpu.run(&[&cross_entropy_backward(&gpu, &logits, &targets, &dloss, &dlogits)?])?;
/// let (third, target) = (1.0 / 6.0, (1.0 / 3.0 - 1.0) / 2.0); // (softmax − onehot) / rows
/// let want = [target, third, third, third, third, target];
/// assert!(gpu.read_f32(&dlogits).await?.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-6));
/// # Ok::<(), kiln::KilnError>(())
/// # }).unwrap();
/// ```
pub fn cross_entropy_backward(gpu: &Gpu, logits: &Tensor, targets: &Tensor, dloss: &Tensor, dlogits: &Tensor) -> Result<Op> {
    let (rows, vocab) = ce_shape(logits, targets)?;
    expect_scalar(dloss, "dloss")?;
    expect_len(dlogits, logits.len(), "dlogits")?;
    let p = ce_params(gpu, rows, vocab);
    let args = [T(logits), T(targets), T(dloss), T(dlogits), Uni(&p)];
    gpu.op(&CROSS_ENTROPY_BACKWARD, &args, gpu.grid(rows as u32))
}

/// `loss[0] = mean((pred − target)²)` over all N elements (PyTorch MSELoss 'mean'): partial
/// sums (buffer allocated here, kept alive by the ops), then `sum_final` with scale 1/N.
pub fn mse_loss(gpu: &Gpu, pred: &Tensor, target: &Tensor, loss: &Tensor) -> Result<Vec<Op>> {
    let (part, sum) = mse_loss_partials(gpu, pred, target)?;
    Ok(vec![part, sum.mean_op(gpu, loss)?])
}

/// The partial sums of `mse_loss`, its mean left as a `LossSum`.
pub fn mse_loss_partials(gpu: &Gpu, pred: &Tensor, target: &Tensor) -> Result<(Op, LossSum)> {
    let n = pred.len();
    expect_len(target, n, "mse target")?;
    let groups = partial_groups(n);
    // (G) squared-error partials
    let partials = gpu.tensor("mse partials", &[groups])?;
    let params = PartialParams { groups: groups as u32, offset: 0, squares: 1, pad: 0 };
    let p = gpu.uniform("mse_loss params", &params);
    let part = gpu.op(&MSE_LOSS, &[T(pred), T(target), T(&partials), Uni(&p)], gpu.grid(groups as u32))?;
    Ok((part, LossSum { partials, count: groups, scale: 1.0 / n as f32 }))
}

/// `grad = dloss[0] · 2(pred − target)/N`, dloss a 1-element GPU buffer.
pub fn mse_loss_backward(gpu: &Gpu, pred: &Tensor, target: &Tensor, dloss: &Tensor, grad: &Tensor) -> Result<Op> {
    let n = pred.len();
    expect_len(target, n, "mse target")?;
    expect_scalar(dloss, "dloss")?;
    expect_len(grad, n, "mse grad")?;
    gpu.op(&MSE_LOSS_BACKWARD, &[T(pred), T(target), T(dloss), T(grad)], gpu.grid(groups_1d(n)))
}

// ---------------------------------------------------------------- f64 references

pub mod reference {
    /// Per-row loss logsumexp(x_r) − x_r[t_r] of logits (rows, vocab); NaN for a target ≥ vocab.
    pub fn cross_entropy_rows(logits: &[f64], targets: &[u32], vocab: usize) -> Vec<f64> {
        logits
            .chunks(vocab)
            .zip(targets)
            .map(|(row, &t)| {
                let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let lse = m + row.iter().map(|&x| (x - m).exp()).sum::<f64>().ln();
                row.get(t as usize).map_or(f64::NAN, |&x_t| lse - x_t)
            })
            .collect()
    }

    /// The mean over rows.
    pub fn cross_entropy(logits: &[f64], targets: &[u32], vocab: usize) -> f64 {
        let rows = cross_entropy_rows(logits, targets, vocab);
        rows.iter().sum::<f64>() / rows.len() as f64
    }

    /// d(dloss · mean loss)/dlogits = dloss · (softmax − onehot)/N; a zero row for a bad target.
    pub fn cross_entropy_backward(logits: &[f64], targets: &[u32], vocab: usize, dloss: f64) -> Vec<f64> {
        let n = targets.len() as f64;
        logits
            .chunks(vocab)
            .zip(targets)
            .flat_map(|(row, &t)| {
                let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let s: f64 = row.iter().map(|&x| (x - m).exp()).sum();
                let valid = (t as usize) < vocab;
                row.iter()
                    .enumerate()
                    .map(|(j, &x)| {
                        let onehot = if j == t as usize { 1.0 } else { 0.0 };
                        if valid {
                            dloss * ((x - m).exp() / s - onehot) / n
                        } else {
                            0.0
                        }
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    pub fn mse(pred: &[f64], target: &[f64]) -> f64 {
        pred.iter().zip(target).map(|(p, t)| (p - t).powi(2)).sum::<f64>() / pred.len() as f64
    }

    pub fn mse_backward(pred: &[f64], target: &[f64], dloss: f64) -> Vec<f64> {
        let n = pred.len() as f64;
        pred.iter().zip(target).map(|(p, t)| dloss * 2.0 * (p - t) / n).collect()
    }
}
