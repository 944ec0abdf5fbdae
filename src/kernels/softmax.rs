//! Softmax kernels (`shaders/softmax.wgsl`): row softmax with an optional causal mask and its
//! backward, with f64 references. Rows have `len` values; rows = x.len() / len.

use super::{expect_len, Kernel, R, RW, SOFTMAX as F, U};
use crate::error::{KilnError, Result};
use crate::gpu::Tensor;
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};

pub const SOFTMAX: Kernel = Kernel { entry: "softmax", family: F, bindings: &[R, RW, U] };
pub const SOFTMAX_BACKWARD: Kernel = Kernel { entry: "softmax_backward", family: F, bindings: &[R, R, RW, U] };

pub const KERNELS: &[&Kernel] = &[&SOFTMAX, &SOFTMAX_BACKWARD];

/// Which columns of a row take part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mask {
    /// Every column.
    None,
    /// Row r is query position r % seq_len and keeps columns 0..=pos; the rest are exactly 0.
    Causal { seq_len: usize },
}

/// Mirrors `SoftmaxParams` in softmax.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SoftmaxParams {
    pub len: u32,
    pub rows: u32,
    pub causal: u32,
    pub seq_len: u32,
}

fn params(x: &Tensor, len: usize, mask: Mask) -> Result<SoftmaxParams> {
    if len == 0 || !x.len().is_multiple_of(len) {
        return Err(KilnError::invalid(x.name(), format!("{} elements are not whole rows of len {len}", x.len())));
    }
    let (causal, seq_len) = match mask {
        Mask::None => (0, 1),
        Mask::Causal { seq_len: 0 } => return Err(KilnError::invalid("seq_len", "the causal mask needs seq_len >= 1")),
        Mask::Causal { seq_len } => (1, seq_len as u32),
    };
    Ok(SoftmaxParams { len: len as u32, rows: (x.len() / len) as u32, causal, seq_len })
}

/// out = softmax of each `len`-long row of x, under `mask`.
pub fn softmax(gpu: &Gpu, x: &Tensor, out: &Tensor, len: usize, mask: Mask) -> Result<Op> {
    let p = params(x, len, mask)?;
    expect_len(out, x.len(), "softmax output")?;
    let u = gpu.uniform("softmax params", &p);
    gpu.op(&SOFTMAX, &[T(x), T(out), Uni(&u)], gpu.grid(p.rows))
}

/// grad_in = y * (grad_out - Σ y·grad_out) per row, from the forward output y (same mask).
/// # Example
///
/// ```
/// # pollster::block_on(async {
/// use kiln::kernels::softmax::{softmax, softmax_backward, Mask};
/// let gpu = kiln::Gpu::new().await?;
/// let x = gpu.tensor_from("x", &[1, 3], &[1.0f32, 2.0, 3.0])?;
/// let (y, grad_in) = (gpu.tensor("y", &[1, 3])?, gpu.tensor("grad_in", &[1, 3])?);
/// // The gradient of y[2] alone: y2·(onehot − y), which sums to zero over the row.
/// let grad_out = gpu.tensor_from("grad_out", &[1, 3], &[0.0f32, 0.0, 1.0])?;
/// gpu.run(&[&softmax(&gpu, &x, &y, 3, Mask::None)?, &softmax_backward(&gpu, &grad_out, &y, &grad_in, 3, Mask::None)?])?;
/// let (p, g) = (gpu.read_f32(&y).await?, gpu.read_f32(&grad_in).await?);
/// assert!((g[0] + p[2] * p[0]).abs() < 1e-6 && (g[2] - p[2] * (1.0 - p[2])).abs() < 1e-6);
/// assert!(g.iter().sum::<f32>().abs() < 1e-6);
/// # Ok::<(), kiln::KilnError>(())
/// # }).unwrap();
/// ```
pub fn softmax_backward(gpu: &Gpu, grad_out: &Tensor, y: &Tensor, grad_in: &Tensor, len: usize, mask: Mask) -> Result<Op> {
    let p = params(y, len, mask)?;
    expect_len(grad_out, y.len(), "softmax_backward grad_out")?;
    expect_len(grad_in, y.len(), "softmax_backward grad_in")?;
    let u = gpu.uniform("softmax params", &p);
    gpu.op(&SOFTMAX_BACKWARD, &[T(grad_out), T(y), T(grad_in), Uni(&u)], gpu.grid(p.rows))
}

// ---------------------------------------------------------------- f64 references

pub mod reference {
    use super::Mask;

    /// Columns of `row` that take part under `mask`.
    pub fn kept(row: usize, len: usize, mask: Mask) -> usize {
        match mask {
            Mask::None => len,
            Mask::Causal { seq_len } => (row % seq_len + 1).min(len),
        }
    }

    pub fn softmax(x: &[f64], len: usize, mask: Mask) -> Vec<f64> {
        let mut out = vec![0.0; x.len()];
        for (row, xr) in x.chunks(len).enumerate() {
            let k = kept(row, len, mask);
            let mx = xr[..k].iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = xr[..k].iter().map(|v| (v - mx).exp()).sum();
            for i in 0..k {
                out[row * len + i] = (xr[i] - mx).exp() / sum;
            }
        }
        out
    }

    pub fn softmax_backward(grad_out: &[f64], y: &[f64], len: usize, mask: Mask) -> Vec<f64> {
        let mut gin = vec![0.0; y.len()];
        for row in 0..y.len() / len {
            let off = row * len;
            let k = kept(row, len, mask);
            let d: f64 = (off..off + k).map(|i| grad_out[i] * y[i]).sum();
            for i in off..off + k {
                gin[i] = y[i] * (grad_out[i] - d);
            }
        }
        gin
    }
}
