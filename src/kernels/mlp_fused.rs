//! Typed wrapper for shaders/mlp_fused.wgsl: a small MLP's forward, loss and backward as two
//! dispatches (per-row work with partial gradients per slot, then their reduction), and
//! the f64 reference it is checked against.

use super::elementwise::Activation;
use super::matmul::Adapter;
use super::{expect_len, groups_1d, Kernel, MLP_FUSED as F, R, RW, U};
use crate::error::{KilnError, Result};
use crate::gpu::Tensor;
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};

pub const MLP_FUSED_ROWS: Kernel = Kernel { entry: "mlp_fused_rows", family: F, bindings: &[R, R, R, RW, U] };
pub const MLP_FUSED_ROWS_SERIAL: Kernel = Kernel { entry: "mlp_fused_rows_serial", family: F, bindings: &[R, R, R, RW, U] };
pub const MLP_FUSED_REDUCE: Kernel = Kernel { entry: "mlp_fused_reduce", family: F, bindings: &[R, RW, RW, U] };

pub const KERNELS: &[&Kernel] = &[&MLP_FUSED_ROWS, &MLP_FUSED_ROWS_SERIAL, &MLP_FUSED_REDUCE];

/// Most layers the fused kernels take (MF_MAXL in the shader).
pub const MAX_LAYERS: usize = 4;
/// Threads of a `mlp_fused_rows` workgroup (MF_PLANE), `stride` per row.
const PLANE: usize = 256;
/// At most this many partials slots (workgroups of `mlp_fused_rows`): a bigger batch deals its
/// passes out to them, so the partials (slots × (P + 1)) stay a few MB at any batch size.
const MAX_SLOTS: usize = 256;

/// Which kernel runs the rows: a thread per neuron (`mlp_fused_rows`, for GPUs) or a thread
/// per partials slot running whole rows (`mlp_fused_rows_serial`, for CPU adapters, which run a
/// workgroup's threads as loops).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FusedRows {
    PerNeuron,
    PerRow,
}

impl FusedRows {
    /// The kernel that is faster on this adapter.
    pub fn for_gpu(gpu: &Gpu) -> FusedRows {
        Self::for_adapter(Adapter::of(gpu))
    }

    pub fn for_adapter(adapter: Adapter) -> FusedRows {
        match adapter {
            Adapter::Cpu => FusedRows::PerRow,
            Adapter::Gpu => FusedRows::PerNeuron,
        }
    }

    /// The widest layer the kernel takes: MF_MAXW, or MFS_MAXW for the serial one (whose
    /// per-row arrays live in each thread's registers).
    pub fn max_width(self) -> usize {
        match self {
            FusedRows::PerNeuron => 64,
            FusedRows::PerRow => 32,
        }
    }

    /// Whether layers of these (in, out) shapes fit this kernel.
    pub fn fits(self, dims: &[(usize, usize)]) -> bool {
        !dims.is_empty() && dims.len() <= MAX_LAYERS && dims.iter().all(|&(i, o)| i.max(o) <= self.max_width())
    }

    /// (partials slots, passes of rows) for a batch of `rows` whose widest layer takes `stride`
    /// threads: per-neuron, a pass is PLANE / stride rows and each of at most MAX_SLOTS
    /// workgroups takes every slots-th pass; serial, a slot is a thread taking every slots-th
    /// row (at most 256 slots).
    fn slots(self, rows: usize, stride: usize) -> (usize, usize) {
        match self {
            FusedRows::PerNeuron => {
                let passes = rows.div_ceil(PLANE / stride);
                (passes.min(MAX_SLOTS), passes)
            }
            FusedRows::PerRow => (rows.min(256), rows),
        }
    }

    /// Workgroups of the rows kernel for `slots` slots (MFS_THREADS threads each, serially).
    fn workgroups(self, slots: usize) -> usize {
        match self {
            FusedRows::PerNeuron => slots,
            FusedRows::PerRow => slots.div_ceil(16),
        }
    }
}

/// Threads per row of `mlp_fused_rows` for layers `dims`: the widest rounded up to a power of
/// two, so PLANE holds whole rows, and at least 16, so the workgroup's serial sums over its
/// rows stay short.
fn stride(dims: &[(usize, usize)]) -> usize {
    let widest = dims.iter().map(|&(i, o)| i.max(o)).max().unwrap_or(1);
    widest.next_power_of_two().max(16)
}

/// Floats of the partials the fused pass keeps for a batch of `rows` through layers `dims`
/// with `params` flat parameters (what the fit check counts).
pub fn partials_len(kind: FusedRows, dims: &[(usize, usize)], rows: usize, params: usize) -> usize {
    kind.slots(rows, stride(dims)).0 * (params + 1)
}

/// One layer: where its weight (out, in) and bias (out) lie in the flat parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FusedLayer {
    pub w: usize,
    pub b: usize,
    pub fan_in: usize,
    pub out: usize,
}

/// The loss the fused backward starts from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FusedLoss {
    /// Mean cross-entropy over rows, targets are u32 labels.
    CrossEntropy,
    /// Mean squared error over every output, targets are f32 (rows, out).
    Mse,
}

/// Mirrors `MfParams` in mlp_fused.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct MfParams {
    rows: u32,
    layers: u32,
    act: u32,
    mse: u32,
    total: u32,
    groups: u32,
    loss_scale: f32,
    grad_scale: f32,
    stride: u32,
    passes: u32,
    pad: [u32; 2],
    layer: [[u32; 4]; MAX_LAYERS],
}

/// The two dispatches: partial gradients and loss per slot (`FusedRows::slots`) into partials
/// (G, P + 1) that the ops own, then `grads` (P) += their sum and `loss` (1) = the mean loss.
#[allow(clippy::too_many_arguments)]
pub fn mlp_fused(
    gpu: &Gpu,
    kind: FusedRows,
    layers: &[FusedLayer],
    act: Activation,
    loss_kind: FusedLoss,
    weights: &Tensor,
    x: &Tensor,
    targets: &Tensor,
    grads: &Tensor,
    loss: &Tensor,
) -> Result<Vec<Op>> {
    let dims: Vec<(usize, usize)> = layers.iter().map(|l| (l.fan_in, l.out)).collect();
    if !kind.fits(&dims) || layers.windows(2).any(|w| w[0].out != w[1].fan_in) {
        let widest = kind.max_width();
        return Err(KilnError::invalid("layers", format!("the fused MLP ({kind:?}) takes 1..={MAX_LAYERS} chained layers of width ≤ {widest}, got {dims:?}")));
    }
    let total = weights.len();
    if layers.iter().any(|l| l.w + l.fan_in * l.out > total || l.b + l.out > total) {
        return Err(KilnError::invalid("layers", "a layer lies outside the flat parameters"));
    }
    let (input, out) = (layers[0].fan_in, layers[layers.len() - 1].out);
    let rows = x.len() / input;
    if rows == 0 || !x.len().is_multiple_of(input) {
        return Err(KilnError::invalid(x.name(), format!("inputs must be (rows, {input}), found {} elements", x.len())));
    }
    let (target_len, loss_scale, grad_scale) = match loss_kind {
        FusedLoss::CrossEntropy => (rows, 1.0 / rows as f32, 1.0 / rows as f32),
        FusedLoss::Mse => (rows * out, 1.0 / (rows * out) as f32, 2.0 / (rows * out) as f32),
    };
    expect_len(targets, target_len, "fused MLP targets")?;
    let stride = stride(&dims);
    let (groups, passes) = kind.slots(rows, stride);
    expect_len(grads, total, "fused MLP gradients")?;
    expect_len(loss, 1, "fused MLP loss")?;
    let mut layer = [[0u32; 4]; MAX_LAYERS];
    for (slot, l) in layer.iter_mut().zip(layers) {
        *slot = [l.w as u32, l.b as u32, l.fan_in as u32, l.out as u32];
    }
    let act = match act {
        Activation::Relu => 0,
        Activation::Silu => 1,
        Activation::Tanh => 2,
    };
    let params = MfParams {
        rows: rows as u32,
        layers: layers.len() as u32,
        act,
        mse: u32::from(loss_kind == FusedLoss::Mse),
        total: total as u32,
        groups: groups as u32,
        loss_scale,
        grad_scale,
        stride: stride as u32,
        passes: passes as u32,
        pad: [0; 2],
        layer,
    };
    // Its own zeroed buffer, not the shared scratch: parameters outside every layer are never
    // written by the rows kernel, and their partials must stay zero for the reduction.
    let partials = gpu.tensor("fused MLP partials", &[groups * (total + 1)])?;
    let p = gpu.uniform("mlp_fused params", &params);
    let kernel = if kind == FusedRows::PerNeuron { &MLP_FUSED_ROWS } else { &MLP_FUSED_ROWS_SERIAL };
    let per_row = gpu.op(kernel, &[T(weights), T(x), T(targets), T(&partials), Uni(&p)], gpu.grid(kind.workgroups(groups) as u32))?;
    let reduce = gpu.op(&MLP_FUSED_REDUCE, &[T(&partials), T(grads), T(loss), Uni(&p)], gpu.grid(groups_1d(total + 1)))?;
    Ok(vec![per_row, reduce])
}

// ---------------------------------------------------------------- f64 reference

pub mod reference {
    use super::{FusedLayer, FusedLoss};
    use crate::kernels::elementwise::Activation;

    fn act(a: Activation, z: f64) -> f64 {
        match a {
            Activation::Relu => z.max(0.0),
            Activation::Silu => z / (1.0 + (-z).exp()),
            Activation::Tanh => z.tanh(),
        }
    }

    fn act_grad(a: Activation, z: f64) -> f64 {
        match a {
            Activation::Relu => f64::from(u8::from(z > 0.0)),
            Activation::Silu => {
                let s = 1.0 / (1.0 + (-z).exp());
                s * (1.0 + z * (1.0 - s))
            }
            Activation::Tanh => 1.0 - z.tanh().powi(2),
        }
    }

    /// (mean loss, gradient of every flat parameter) for `rows` rows of `x`. Targets: labels
    /// (cross-entropy; a label out of range gives a NaN loss and no gradient) or values (MSE).
    pub fn loss_and_grads(layers: &[FusedLayer], a: Activation, kind: FusedLoss, w: &[f64], x: &[f64], targets: &[f64]) -> (f64, Vec<f64>) {
        let (input, out) = (layers[0].fan_in, layers[layers.len() - 1].out);
        let rows = x.len() / input;
        let mut grads = vec![0.0; w.len()];
        let mut total_loss = 0.0;
        for r in 0..rows {
            let mut ins = vec![x[r * input..(r + 1) * input].to_vec()];
            let mut zs = vec![];
            for (l, ly) in layers.iter().enumerate() {
                let h = &ins[l];
                let z: Vec<f64> = (0..ly.out).map(|o| w[ly.b + o] + (0..ly.fan_in).map(|i| w[ly.w + o * ly.fan_in + i] * h[i]).sum::<f64>()).collect();
                let next = if l + 1 == layers.len() { z.clone() } else { z.iter().map(|&v| act(a, v)).collect() };
                zs.push(z);
                ins.push(next);
            }
            let y = &ins[layers.len()];
            let mut d: Vec<f64> = match kind {
                FusedLoss::Mse => {
                    let n = (rows * out) as f64;
                    (0..out)
                        .map(|o| {
                            let diff = y[o] - targets[r * out + o];
                            total_loss += diff * diff / n;
                            2.0 * diff / n
                        })
                        .collect()
                }
                FusedLoss::CrossEntropy => {
                    let t = targets[r] as usize;
                    let m = y.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let s: f64 = y.iter().map(|v| (v - m).exp()).sum();
                    if t >= out {
                        total_loss = f64::NAN;
                        vec![0.0; out]
                    } else {
                        total_loss += (m + s.ln() - y[t]) / rows as f64;
                        (0..out).map(|o| ((y[o] - m).exp() / s - f64::from(u8::from(o == t))) / rows as f64).collect()
                    }
                }
            };
            for l in (0..layers.len()).rev() {
                let ly = layers[l];
                for o in 0..ly.out {
                    grads[ly.b + o] += d[o];
                    for i in 0..ly.fan_in {
                        grads[ly.w + o * ly.fan_in + i] += d[o] * ins[l][i];
                    }
                }
                if l > 0 {
                    d = (0..ly.fan_in).map(|i| (0..ly.out).map(|o| w[ly.w + o * ly.fan_in + i] * d[o]).sum::<f64>() * act_grad(a, zs[l - 1][i])).collect();
                }
            }
        }
        (total_loss, grads)
    }
}
