//! Elementwise kernels (`shaders/elementwise.wgsl`): add/sub/mul with bias broadcast,
//! ReLU/SiLU/tanh, the fused SwiGLU gate, and their backwards, with f64 references. The same
//! shader holds an MLP layer's fused kernels, whose wrappers are in mlp_layer.rs.

use super::{expect_len, groups_1d, Kernel, ELEMENTWISE as F, R, RW, U};
use crate::error::{KilnError, Result};
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
