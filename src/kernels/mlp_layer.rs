//! An MLP layer's fused kernels (in `shaders/elementwise.wgsl`): the forward's bias and
//! activation in one dispatch (`bias_activation`), and the backward's activation gradient with
//! the bias gradient summed in the same pass (`activation_backward_sum`). Both read their layer's
//! product as a `LayerProduct`: whole, as a split's partials, or formed in the kernel when k is
//! short. They have no references of their own: the checks compose elementwise's (add,
//! activation, activation_backward), reduce's `column_sum` and matmul's.

use super::elementwise::{Activation, ACTIVATION_BACKWARD_SUM, BIAS_ACTIVATION};
use super::matmul::Unreduced;
use super::reduce::Columns;
use super::{expect_len, groups_1d};
use crate::error::{ensure, KilnError, Result};
use crate::gpu::Tensor;
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};

/// Mirrors `BiasActParams` in elementwise.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct BiasActParams {
    kind: u32,
    splits: u32,
    k: u32,
    w_trans: u32,
}

/// The activation's number in the fused kernels' params (elementwise.wgsl `BiasActParams.kind`).
fn kind(act: Activation) -> u32 {
    match act {
        Activation::Relu => 0,
        Activation::Silu => 1,
        Activation::Tanh => 2,
    }
}

/// `BiasActParams.kind` of an output layer: z only.
const NO_ACTIVATION: u32 = 3;

/// Longest k over which the fused layer kernels form a product themselves (one thread's serial
/// loop an element, as `matmul_small`'s): an MLP's 2-D input, and the gradient coming back
/// from an output layer of up to 16 classes.
pub const SHORT_K: usize = 16;

/// The (rows, cols) product a fused MLP layer kernel (`bias_activation`,
/// `activation_backward_sum`) reads.
#[derive(Clone, Copy)]
pub enum LayerProduct<'a> {
    /// Computed by an earlier dispatch: whole, or a split's partials the kernel adds in split order.
    Computed(&'a Unreduced),
    /// Formed by the kernel itself, for k ≤ `SHORT_K`: a (rows, k) · w, with w (cols, k) when
    /// `w_trans` (a layer's own weight, as the forward reads it), else (k, cols).
    Short { a: &'a Tensor, w: &'a Tensor, w_trans: bool },
}

/// How a fused kernel binds its product: binding 0, binding 5 (w, or when unread a tensor the
/// kernel already reads) and the params' (splits, k, w_trans).
struct BoundProduct {
    first: Tensor,
    w: Tensor,
    splits: u32,
    k: u32,
    w_trans: u32,
}

impl LayerProduct<'_> {
    /// Checks the product against its (rows, cols) output; `what` names it in errors. A computed
    /// product leaves binding 5 unread: it takes `read`, bound read-only elsewhere in the same
    /// dispatch (WebGPU refuses a buffer bound both read-only and writable, so the placeholder,
    /// which an output layer binds as its unwritten h, cannot go there).
    fn bind(&self, rows: usize, cols: usize, what: &str, read: &Tensor) -> Result<BoundProduct> {
        match *self {
            LayerProduct::Computed(u) => {
                u.expect_len(rows * cols, what)?;
                Ok(BoundProduct { first: u.parts.clone(), w: read.clone(), splits: u.splits as u32, k: 0, w_trans: 0 })
            }
            LayerProduct::Short { a, w, w_trans } => {
                let k = w.len().checked_div(cols).unwrap_or(0);
                let allowed = (1..=SHORT_K).contains(&k) && w.len() == k * cols;
                ensure(allowed, w.name(), || {
                    format!("{what}: a short product's weight must be ({cols}, k) or (k, {cols}) with k 1..={SHORT_K}, got {:?}", w.shape())
                })?;
                expect_len(a, rows * k, &format!("{what} (rows {rows}, k {k})"))?;
                Ok(BoundProduct { first: a.clone(), w: w.clone(), splits: 1, k: k as u32, w_trans: w_trans.into() })
            }
        }
    }
}

/// z = x + bias (broadcast along the last axis), h = f(z): an MLP layer's bias and activation
/// in one dispatch (z is kept for the backward). `act`: the activation and h, or None for an
/// output layer (only z is written). x may be a split product's partials, added here in split
/// order (one reduction dispatch fewer), or a short-k product formed here (one product fewer).
pub fn bias_activation(gpu: &Gpu, act: Option<(Activation, &Tensor)>, x: LayerProduct<'_>, bias: &Tensor, z: &Tensor) -> Result<Op> {
    if bias.is_empty() || !z.len().is_multiple_of(bias.len()) {
        return Err(KilnError::invalid(bias.name(), format!("cannot broadcast {} elements over {}", bias.len(), z.len())));
    }
    let x = x.bind(z.len() / bias.len(), bias.len(), "bias_activation x", bias)?;
    // An output layer's h is never written: the placeholder (WebGPU refuses z twice, writable).
    let (kind, h) = match act {
        Some((act, h)) => {
            expect_len(h, z.len(), "bias_activation h")?;
            (kind(act), h.clone())
        }
        None => (NO_ACTIVATION, gpu.placeholder()?),
    };
    let params = BiasActParams { kind, splits: x.splits, k: x.k, w_trans: x.w_trans };
    let p = gpu.uniform("bias_activation params", &params);
    gpu.op(&BIAS_ACTIVATION, &[T(&x.first), T(bias), T(z), T(&h), Uni(&p), T(&x.w)], gpu.grid(groups_1d(z.len())))
}

/// Mirrors `ActSumParams` in elementwise.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ActSumParams {
    rows: u32,
    cols: u32,
    accumulate: u32,
    lanes: u32,
    splits: u32,
    kind: u32,
    k: u32,
    w_trans: u32,
}

/// An MLP hidden layer's backward through its activation and its bias gradient in one pass:
/// dz = dh · f'(z) and db (+)= Σ_rows dz, for z and dz of shape (rows, C) and db of C. dh may
/// be a split product's partials, added in split order, or a short-k product formed here.
pub fn activation_backward_sum(gpu: &Gpu, act: Activation, dh: LayerProduct<'_>, z: &Tensor, dz: &Tensor, db: &Tensor, accumulate: bool) -> Result<Op> {
    let at = Columns::of(z, db)?;
    let dh = dh.bind(at.rows, at.cols, "activation_backward_sum dh", z)?;
    expect_len(dz, z.len(), "activation_backward_sum dz")?;
    let params = ActSumParams {
        rows: at.rows as u32,
        cols: at.cols as u32,
        accumulate: accumulate.into(),
        lanes: at.lanes as u32,
        splits: dh.splits,
        kind: kind(act),
        k: dh.k,
        w_trans: dh.w_trans,
    };
    let p = gpu.uniform("activation_backward_sum params", &params);
    gpu.op(&ACTIVATION_BACKWARD_SUM, &[T(&dh.first), T(z), T(dz), T(db), Uni(&p), T(&dh.w)], gpu.grid(at.groups as u32))
}
