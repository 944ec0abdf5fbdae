//! The global gradient norm² on the GPU (`shaders/optimizer.wgsl`): a partial sum of squares per
//! workgroup of each gradient tensor, then one final sum, which may also finish the step's loss
//! (`grad_norm_and_loss`). Re-exported by `optimizer`, whose kernels clip and skip by it.

use super::loss::LossSum;
use super::optimizer::{GRADIENT_NORM_SQUARED, LOSS_AND_GRAD_NORM};
use super::reduce::{self, expect_partials, expect_scalar, partial_groups, Final, PartialParams};
use crate::error::{ensure, Result};
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op, Tensor};

/// Slots `gradient_norm_squared` needs in a shared partials array for these gradients.
pub fn norm_partials_len(grads: &[&Tensor]) -> usize {
    grads.iter().map(|g| partial_groups(g.len())).sum()
}

/// One gradient's share: `partials[offset + g] = Σ grad²` over workgroup g, for
/// g < `reduce::partial_groups(grad.len())`.
pub fn gradient_norm_squared(gpu: &Gpu, grad: &Tensor, partials: &Tensor, offset: usize) -> Result<Op> {
    let groups = partial_groups(grad.len());
    expect_partials(partials, offset, groups)?;
    let params = PartialParams { groups: groups as u32, offset: offset as u32, squares: 1, pad: 0 };
    let p = gpu.uniform("gradient_norm_squared params", &params);
    gpu.op(&GRADIENT_NORM_SQUARED, &[T(grad), T(partials), Uni(&p)], gpu.grid(groups as u32))
}

/// One `gradient_norm_squared` dispatch per tensor, each into its own slots of `partials`.
fn norm_partials(gpu: &Gpu, grads: &[&Tensor], partials: &Tensor) -> Result<Vec<Op>> {
    ensure(!grads.is_empty(), "grads", || "need at least one gradient tensor".into())?;
    let mut offset = 0;
    let mut ops = Vec::with_capacity(grads.len() + 1);
    for g in grads {
        ops.push(gradient_norm_squared(gpu, g, partials, offset)?);
        offset += partial_groups(g.len());
    }
    Ok(ops)
}

/// `norm_sq[0] = Σ g²` over every gradient tensor (or one flat range), all on the GPU: one
/// partials dispatch per tensor into `partials` (at least `norm_partials_len(grads)` long),
/// then one `sum_final`.
pub fn grad_norm_squared(gpu: &Gpu, grads: &[&Tensor], partials: &Tensor, norm_sq: &Tensor) -> Result<Vec<Op>> {
    expect_scalar(norm_sq, "norm_sq")?;
    let mut ops = norm_partials(gpu, grads, partials)?;
    ops.push(reduce::sum_final(gpu, partials, norm_partials_len(grads), norm_sq, Final::scaled(1.0))?);
    Ok(ops)
}

/// Mirrors `LossNormParams` in optimizer.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct LossNormParams {
    norm_count: u32,
    loss_count: u32,
    loss_scale: f32,
    pad: u32,
}

/// `grad_norm_squared` whose final sum also finishes the step's loss: `loss[0] = scale · Σ` of
/// `pending`'s partials (None: `loss` already holds it), and a non-finite loss makes `norm_sq`
/// non-finite, so the update skips the step. One dispatch for what was three.
pub fn grad_norm_and_loss(gpu: &Gpu, grads: &[&Tensor], partials: &Tensor, norm_sq: &Tensor, loss: &Tensor, pending: Option<&LossSum>) -> Result<Vec<Op>> {
    expect_scalar(norm_sq, "norm_sq")?;
    expect_scalar(loss, "loss")?;
    let mut ops = norm_partials(gpu, grads, partials)?;
    let norm_count = norm_partials_len(grads);
    let (loss_partials, loss_count, loss_scale) = match pending {
        Some(s) => {
            ensure(s.count >= 1 && s.count <= s.partials.len(), s.partials.name(), || {
                format!("loss partials: count must be 1..={}, got {}", s.partials.len(), s.count)
            })?;
            (s.partials.clone(), s.count, s.scale)
        }
        None => (gpu.placeholder()?, 0, 1.0),
    };
    let params = LossNormParams { norm_count: norm_count as u32, loss_count: loss_count as u32, loss_scale, pad: 0 };
    let p = gpu.uniform("loss_and_grad_norm params", &params);
    ops.push(gpu.op(&LOSS_AND_GRAD_NORM, &[T(partials), T(&loss_partials), T(loss), T(norm_sq), Uni(&p)], [1, 1, 1])?);
    Ok(ops)
}
