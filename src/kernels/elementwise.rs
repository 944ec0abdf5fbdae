//! Elementwise kernels (`shaders/elementwise.wgsl`): add/sub/mul with bias broadcast,
//! ReLU/SiLU/tanh, the fused SwiGLU gate, and their backwards, with f64 references; and an
//! MLP hidden layer's fused bias + activation and its backward with the bias gradient.

use super::matmul::Unreduced;
use super::reduce::Columns;
use super::{expect_len, groups_1d, Kernel, ELEMENTWISE as F, R, RW, U};
use crate::error::{ensure, KilnError, Result};
use crate::gpu::Tensor;
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};

pub const ADD: Kernel = Kernel { entry: "add", family: F, bindings: &[R, R, RW] };
pub const SUB: Kernel = Kernel { entry: "sub", family: F, bindings: &[R, R, RW] };
pub const MUL: Kernel = Kernel { entry: "mul", family: F, bindings: &[R, R, RW] };
pub const ADD_BACKWARD: Kernel = Kernel { entry: "add_backward", family: F, bindings: &[R, RW, RW] };
pub const SUB_BACKWARD: Kernel = Kernel { entry: "sub_backward", family: F, bindings: &[R, RW, RW] };
pub const MUL_BACKWARD: Kernel = Kernel { entry: "mul_backward", family: F, bindings: &[R, R, R, RW, RW] };
pub const SILU: Kernel = Kernel { entry: "silu", family: F, bindings: &[R, RW] };
pub const RELU: Kernel = Kernel { entry: "relu", family: F, bindings: &[R, RW] };
pub const TANH: Kernel = Kernel { entry: "tanh_forward", family: F, bindings: &[R, RW] };
pub const SILU_BACKWARD: Kernel = Kernel { entry: "silu_backward_real", family: F, bindings: &[R, R, RW] };
pub const RELU_BACKWARD: Kernel = Kernel { entry: "relu_backward", family: F, bindings: &[R, R, RW] };
pub const TANH_BACKWARD: Kernel = Kernel { entry: "tanh_backward", family: F, bindings: &[R, R, RW] };
/// Elements per workgroup of the SwiGLU kernels (see elementwise.wgsl).
const GLU_PER_WG: usize = 256;

pub const SILU_GATE: Kernel = Kernel { entry: "silu_gate_fused", family: F, bindings: &[R, RW, U] };
pub const SILU_GATE_BACKWARD: Kernel = Kernel { entry: "silu_gate_backward", family: F, bindings: &[R, R, RW, U] };

pub const BIAS_ACTIVATION: Kernel = Kernel { entry: "bias_activation", family: F, bindings: &[R, R, RW, RW, U, R] };
pub const ACTIVATION_BACKWARD_SUM: Kernel = Kernel { entry: "activation_backward_sum", family: F, bindings: &[R, R, RW, RW, U, R] };

pub const KERNELS: &[&Kernel] = &[
    &BIAS_ACTIVATION,
    &ACTIVATION_BACKWARD_SUM,
    &ADD,
    &SUB,
    &MUL,
    &ADD_BACKWARD,
    &SUB_BACKWARD,
    &MUL_BACKWARD,
    &SILU,
    &RELU,
    &TANH,
    &SILU_BACKWARD,
    &RELU_BACKWARD,
    &TANH_BACKWARD,
    &SILU_GATE,
    &SILU_GATE_BACKWARD,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binary {
    Add,
    Sub,
    Mul,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    Relu,
    Silu,
    Tanh,
}

/// out = a (op) b; b is either a's shape or a vector that broadcasts along a's rows.
/// # Example
///
/// ```
/// # pollster::block_on(async {
/// use kiln::kernels::elementwise::{binary, Binary};
/// let gpu = kiln::Gpu::new().await?;
/// let a = gpu.tensor_from("a", &[2, 2], &[1.0f32, 2.0, 3.0, 4.0])?;
/// let b = gpu.tensor_from("b", &[2], &[10.0f32, 20.0])?; // broadcast along a's rows
/// let out = gpu.tensor("out", &[2, 2])?;
/// gpu.run(&[&binary(&gpu, Binary::Mul, &a, &b, &out)?])?;
/// assert_eq!(gpu.read_f32(&out).await?, [10.0, 40.0, 30.0, 80.0]);
/// gpu.run(&[&binary(&gpu, Binary::Sub, &a, &b, &out)?])?;
/// assert_eq!(gpu.read_f32(&out).await?, [-9.0, -18.0, -7.0, -16.0]);
/// # Ok::<(), kiln::KilnError>(())
/// # }).unwrap();
/// ```
pub fn binary(gpu: &Gpu, op: Binary, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<Op> {
    expect_len(out, a.len(), "binary output")?;
    if b.is_empty() || !a.len().is_multiple_of(b.len()) {
        return Err(KilnError::invalid(b.name(), format!("cannot broadcast {} elements over {}", b.len(), a.len())));
    }
    let kernel = match op {
        Binary::Add => &ADD,
        Binary::Sub => &SUB,
        Binary::Mul => &MUL,
    };
    gpu.op(kernel, &[T(a), T(b), T(out)], gpu.grid(groups_1d(a.len())))
}

/// grad_a, grad_b of `a (op) b` for same-shape inputs (mul needs the forward inputs).
/// # Example
///
/// ```
/// # pollster::block_on(async {
/// use kiln::kernels::elementwise::{binary_backward, Binary};
/// let gpu = kiln::Gpu::new().await?;
/// let (a, b) = (gpu.tensor_from("a", &[2], &[3.0f32, -1.0])?, gpu.tensor_from("b", &[2], &[2.0f32, 5.0])?);
/// let grad_out = gpu.tensor_from("grad_out", &[2], &[1.0f32, 0.5])?;
/// let (grad_a, grad_b) = (gpu.tensor("grad_a", &[2])?, gpu.tensor("grad_b", &[2])?);
/// // d(a·b): grad_a = grad_out·b, grad_b = grad_out·a
/// gpu.run(&[&binary_backward(&gpu, Binary::Mul, &grad_out, Some((&a, &b)), &grad_a, &grad_b)?])?;
/// assert_eq!((gpu.read_f32(&grad_a).await?, gpu.read_f32(&grad_b).await?), (vec![2.0, 2.5], vec![3.0, -0.5]));
/// // d(a − b) needs no inputs: grad_a = grad_out, grad_b = −grad_out (Add: both grad_out)
/// gpu.run(&[&binary_backward(&gpu, Binary::Sub, &grad_out, None, &grad_a, &grad_b)?])?;
/// assert_eq!(gpu.read_f32(&grad_b).await?, [-1.0, -0.5]);
/// # Ok::<(), kiln::KilnError>(())
/// # }).unwrap();
/// ```
pub fn binary_backward(gpu: &Gpu, op: Binary, grad_out: &Tensor, inputs: Option<(&Tensor, &Tensor)>, grad_a: &Tensor, grad_b: &Tensor) -> Result<Op> {
    let n = grad_out.len();
    expect_len(grad_a, n, "grad_a")?;
    expect_len(grad_b, n, "grad_b")?;
    let grid = gpu.grid(groups_1d(n));
    match (op, inputs) {
        (Binary::Add, _) => gpu.op(&ADD_BACKWARD, &[T(grad_out), T(grad_a), T(grad_b)], grid),
        (Binary::Sub, _) => gpu.op(&SUB_BACKWARD, &[T(grad_out), T(grad_a), T(grad_b)], grid),
        (Binary::Mul, Some((a, b))) => {
            expect_len(a, n, "a")?;
            expect_len(b, n, "b")?;
            gpu.op(&MUL_BACKWARD, &[T(grad_out), T(a), T(b), T(grad_a), T(grad_b)], grid)
        }
        (Binary::Mul, None) => Err(KilnError::invalid("inputs", "mul_backward needs a and b")),
    }
}

/// out = f(x) elementwise (the seed's `relu`, `silu` and a tanh): the MLP uses the fused
/// `bias_activation` instead; this is for passes of your own.
///
/// # Example
///
/// ```
/// # pollster::block_on(async {
/// use kiln::kernels::elementwise::{activation, Activation};
/// let gpu = kiln::Gpu::new().await?;
/// let x = gpu.tensor_from("x", &[3], &[-1.0f32, 0.0, 2.0])?;
/// let out = gpu.tensor("out", &[3])?;
/// gpu.run(&[&activation(&gpu, Activation::Relu, &x, &out)?])?;
/// assert_eq!(gpu.read_f32(&out).await?, [0.0, 0.0, 2.0]);
/// gpu.run(&[&activation(&gpu, Activation::Silu, &x, &out)?])?; // x·sigmoid(x)
/// let silu = gpu.read_f32(&out).await?;
/// assert!((silu[0] + 0.268_941_4).abs() < 1e-6 && silu[1] == 0.0 && (silu[2] - 1.761_594_2).abs() < 1e-6);
/// # Ok::<(), kiln::KilnError>(())
/// # }).unwrap();
/// ```
pub fn activation(gpu: &Gpu, act: Activation, x: &Tensor, out: &Tensor) -> Result<Op> {
    expect_len(out, x.len(), "activation output")?;
    let kernel = match act {
        Activation::Relu => &RELU,
        Activation::Silu => &SILU,
        Activation::Tanh => &TANH,
    };
    gpu.op(kernel, &[T(x), T(out)], gpu.grid(groups_1d(x.len())))
}

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

/// grad_in = grad_out * f'(x), where x is the forward input (the seed's `relu_backward`,
/// `silu_backward_real` and a tanh backward): the MLP uses the fused `activation_backward_sum`
/// instead; this is for passes of your own.
///
/// # Example
///
/// ```
/// # pollster::block_on(async {
/// use kiln::kernels::elementwise::{activation_backward, Activation};
/// let gpu = kiln::Gpu::new().await?;
/// let x = gpu.tensor_from("x", &[3], &[-1.0f32, 0.5, 2.0])?;
/// let grad_out = gpu.tensor_from("grad_out", &[3], &[4.0f32, 4.0, -2.0])?;
/// let grad_in = gpu.tensor("grad_in", &[3])?;
/// gpu.run(&[&activation_backward(&gpu, Activation::Relu, &grad_out, &x, &grad_in)?])?;
/// assert_eq!(gpu.read_f32(&grad_in).await?, [0.0, 4.0, -2.0]); // passes where x > 0
/// # Ok::<(), kiln::KilnError>(())
/// # }).unwrap();
/// ```
pub fn activation_backward(gpu: &Gpu, act: Activation, grad_out: &Tensor, x: &Tensor, grad_in: &Tensor) -> Result<Op> {
    expect_len(x, grad_out.len(), "activation input")?;
    expect_len(grad_in, grad_out.len(), "activation grad_in")?;
    let kernel = match act {
        Activation::Relu => &RELU_BACKWARD,
        Activation::Silu => &SILU_BACKWARD,
        Activation::Tanh => &TANH_BACKWARD,
    };
    gpu.op(kernel, &[T(grad_out), T(x), T(grad_in)], gpu.grid(groups_1d(x.len())))
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

/// Mirrors `GluParams` in elementwise.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct GluParams {
    hidden: u32,
    pad: [u32; 3],
}

/// Checks an (N, 2F) [up | gate] tensor against its (N, F) partner and makes the params.
fn glu_params(gpu: &Gpu, up_gate: &Tensor, half: &Tensor, hidden: usize) -> Result<crate::gpu::Uniform> {
    if hidden == 0 || !half.len().is_multiple_of(hidden) {
        return Err(KilnError::invalid(half.name(), format!("{} elements are not rows of hidden width {hidden}", half.len())));
    }
    expect_len(up_gate, 2 * half.len(), "up_gate (N, 2F)")?;
    Ok(gpu.uniform("silu_gate params", &GluParams { hidden: hidden as u32, pad: [0; 3] }))
}

/// out (N, F) = silu(up) * gate, where each row of `up_gate` (N, 2F) is [up (F) | gate (F)].
pub fn silu_gate(gpu: &Gpu, up_gate: &Tensor, out: &Tensor, hidden: usize) -> Result<Op> {
    let p = glu_params(gpu, up_gate, out, hidden)?;
    gpu.op(&SILU_GATE, &[T(up_gate), T(out), Uni(&p)], gpu.grid(out.len().div_ceil(GLU_PER_WG) as u32))
}

/// grad_up_gate (N, 2F) = [d up | d gate] from grad_out (N, F), in `up_gate`'s layout.
pub fn silu_gate_backward(gpu: &Gpu, up_gate: &Tensor, grad_out: &Tensor, grad_up_gate: &Tensor, hidden: usize) -> Result<Op> {
    let p = glu_params(gpu, up_gate, grad_out, hidden)?;
    expect_len(grad_up_gate, up_gate.len(), "grad_up_gate")?;
    let args = [T(up_gate), T(grad_out), T(grad_up_gate), Uni(&p)];
    gpu.op(&SILU_GATE_BACKWARD, &args, gpu.grid(grad_out.len().div_ceil(GLU_PER_WG) as u32))
}

// ---------------------------------------------------------------- f64 references

pub mod reference {
    use super::{Activation, Binary};

    pub fn binary(op: Binary, a: &[f64], b: &[f64]) -> Vec<f64> {
        a.iter()
            .enumerate()
            .map(|(i, &x)| {
                let y = b[i % b.len()];
                match op {
                    Binary::Add => x + y,
                    Binary::Sub => x - y,
                    Binary::Mul => x * y,
                }
            })
            .collect()
    }

    pub fn sigmoid(x: f64) -> f64 {
        1.0 / (1.0 + (-x).exp())
    }

    pub fn activation(act: Activation, x: &[f64]) -> Vec<f64> {
        x.iter()
            .map(|&v| match act {
                Activation::Relu => v.max(0.0),
                Activation::Silu => v * sigmoid(v),
                Activation::Tanh => v.tanh(),
            })
            .collect()
    }

    pub fn activation_backward(act: Activation, grad_out: &[f64], x: &[f64]) -> Vec<f64> {
        x.iter()
            .zip(grad_out)
            .map(|(&v, &g)| {
                g * match act {
                    Activation::Relu => f64::from(u8::from(v > 0.0)),
                    Activation::Silu => sigmoid(v) * (1.0 + v * (1.0 - sigmoid(v))),
                    Activation::Tanh => 1.0 - v.tanh().powi(2),
                }
            })
            .collect()
    }

    /// (up, gate) of an (N, 2F) [up | gate] tensor, as two (N, F) ones.
    pub fn split_up_gate(up_gate: &[f64], hidden: usize) -> (Vec<f64>, Vec<f64>) {
        let rows = up_gate.chunks(2 * hidden);
        (rows.clone().flat_map(|r| &r[..hidden]).copied().collect(), rows.flat_map(|r| &r[hidden..]).copied().collect())
    }

    /// The inverse of `split_up_gate`.
    pub fn join_up_gate(up: &[f64], gate: &[f64], hidden: usize) -> Vec<f64> {
        up.chunks(hidden).zip(gate.chunks(hidden)).flat_map(|(u, g)| u.iter().chain(g)).copied().collect()
    }

    pub fn silu_gate(up: &[f64], gate: &[f64]) -> Vec<f64> {
        up.iter().zip(gate).map(|(&u, &g)| u * sigmoid(u) * g).collect()
    }

    /// (grad_up, grad_gate)
    pub fn silu_gate_backward(up: &[f64], gate: &[f64], grad_out: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let grad_up = (0..up.len())
            .map(|i| {
                let s = sigmoid(up[i]);
                grad_out[i] * gate[i] * s * (1.0 + up[i] * (1.0 - s))
            })
            .collect();
        let grad_gate = (0..up.len()).map(|i| grad_out[i] * up[i] * sigmoid(up[i])).collect();
        (grad_up, grad_gate)
    }
}
