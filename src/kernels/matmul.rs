//! Matrix multiplication (`shaders/matmul.wgsl`): one tiled kernel for
//! `C = alpha · op(A) · op(B) + (accumulate ? C : 0)` with optional transposes and a batch
//! dimension, plus the f64 reference.
//!
//! For a Linear layer `Y = X·Wᵀ` (X: (M, K), W: (N, K)):
//! forward `MatmulDesc::new(M, N, K).trans_b()`, `dX = dY·W` is `MatmulDesc::new(M, K, N)`,
//! and `dW += dYᵀ·X` is `MatmulDesc::new(N, K, M).trans_a().accumulate()`.

use super::{Family::Matmul as F, Kernel, R, RW, U};
use crate::error::{KilnError, Result};
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};
use crate::tensor::Tensor;

pub const MATMUL: Kernel = Kernel { entry: "matmul", family: F, bindings: &[R, R, RW, U] };

pub const KERNELS: &[&Kernel] = &[&MATMUL];

/// Output rows/columns per workgroup tile (see the shader).
const TILE: usize = 64;

const TRANS_A: u32 = 1;
const TRANS_B: u32 = 2;
const ACCUMULATE: u32 = 4;

/// One (batched) product. Build with `MatmulDesc::new(m, n, k)` and the flag methods.
///
/// Shapes: op(A) is (m, k) — A stored (m, k), or (k, m) with `trans_a`; op(B) is (k, n) — B
/// stored (k, n), or (n, k) with `trans_b`; C is (m, n). All row-major. Batch `z` reads A at
/// element offset `z * stride_a` (likewise B, C); a stride of 0 shares one matrix across batches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatmulDesc {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub trans_a: bool,
    pub trans_b: bool,
    /// Add the product to C's current contents instead of overwriting them.
    pub accumulate: bool,
    pub alpha: f32,
    pub batch: usize,
    pub stride_a: usize,
    pub stride_b: usize,
    pub stride_c: usize,
}

impl MatmulDesc {
    /// Plain `C = A·B`, batch 1, dense strides.
    pub fn new(m: usize, n: usize, k: usize) -> MatmulDesc {
        MatmulDesc {
            m,
            n,
            k,
            trans_a: false,
            trans_b: false,
            accumulate: false,
            alpha: 1.0,
            batch: 1,
            stride_a: m * k,
            stride_b: k * n,
            stride_c: m * n,
        }
    }

    pub fn trans_a(mut self) -> Self {
        self.trans_a = true;
        self
    }

    pub fn trans_b(mut self) -> Self {
        self.trans_b = true;
        self
    }

    pub fn accumulate(mut self) -> Self {
        self.accumulate = true;
        self
    }

    pub fn alpha(mut self, alpha: f32) -> Self {
        self.alpha = alpha;
        self
    }

    /// `batch` products over densely packed matrices (strides = one matrix each).
    pub fn batched(mut self, batch: usize) -> Self {
        self.batch = batch;
        self
    }

    /// Custom per-batch element strides (e.g. 0 to share one operand across the batch).
    pub fn strides(mut self, stride_a: usize, stride_b: usize, stride_c: usize) -> Self {
        (self.stride_a, self.stride_b, self.stride_c) = (stride_a, stride_b, stride_c);
        self
    }
}

/// Mirrors `MatmulParams` in matmul.wgsl (48 bytes).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct MatmulParams {
    m: u32,
    n: u32,
    k: u32,
    flags: u32,
    alpha: f32,
    batch: u32,
    _pad0: [u32; 2],
    stride_a: u32,
    stride_b: u32,
    stride_c: u32,
    _pad1: u32,
}

/// `C = alpha · op(A) · op(B) (+ C)` as one dispatch. Lengths are checked against `desc`:
/// with dense strides (stride = one matrix) a tensor must hold exactly `batch` matrices;
/// with custom strides it must hold at least `(batch - 1) * stride + matrix` elements.
pub fn matmul(gpu: &Gpu, a: &Tensor, b: &Tensor, c: &Tensor, desc: MatmulDesc) -> Result<Op> {
    let d = desc;
    for (v, field) in [(d.m, "m"), (d.n, "n"), (d.k, "k"), (d.batch, "batch")] {
        if v == 0 {
            return Err(KilnError::invalid(field, "matmul dimensions must be at least 1"));
        }
    }
    check_span(a, d.m * d.k, d.stride_a, d.batch, "a", "stride_a")?;
    check_span(b, d.k * d.n, d.stride_b, d.batch, "b", "stride_b")?;
    check_span(c, d.m * d.n, d.stride_c, d.batch, "c", "stride_c")?;
    if d.batch > 1 && d.stride_c < d.m * d.n {
        return Err(KilnError::invalid(
            "stride_c",
            format!("batches of C would overlap: stride {} < m*n = {}", d.stride_c, d.m * d.n),
        ));
    }
    let max_dim = gpu.limits().max_compute_workgroups_per_dimension as usize;
    if d.batch > max_dim {
        return Err(KilnError::invalid("batch", format!("at most {max_dim} batches per dispatch, got {}", d.batch)));
    }
    let tiles = d.m.div_ceil(TILE) * d.n.div_ceil(TILE);
    let [x, y, _] = gpu.grid(u32::try_from(tiles).map_err(|_| KilnError::invalid("m", "too many output tiles"))?);
    let flags = u32::from(d.trans_a) * TRANS_A + u32::from(d.trans_b) * TRANS_B + u32::from(d.accumulate) * ACCUMULATE;
    let params = MatmulParams {
        m: d.m as u32,
        n: d.n as u32,
        k: d.k as u32,
        flags,
        alpha: d.alpha,
        batch: d.batch as u32,
        _pad0: [0; 2],
        stride_a: d.stride_a as u32,
        stride_b: d.stride_b as u32,
        stride_c: d.stride_c as u32,
        _pad1: 0,
    };
    let uniform = gpu.uniform("matmul params", &params);
    gpu.op(&MATMUL, &[T(a), T(b), T(c), Uni(&uniform)], [x, y, d.batch as u32])
}

/// Checks that `t` covers `batch` matrices of `size` elements spaced `stride` apart.
fn check_span(t: &Tensor, size: usize, stride: usize, batch: usize, what: &str, stride_field: &str) -> Result<()> {
    let span = (batch - 1) * stride + size;
    if stride == size {
        if t.len() != span {
            let msg = format!(
                "operand `{what}`: expected {span} elements ({batch} x {size}), found {} (shape {:?})",
                t.len(),
                t.shape()
            );
            return Err(KilnError::invalid(t.name(), msg));
        }
    } else if t.len() < span {
        let msg = format!(
            "operand `{what}` with {stride_field} = {stride}: needs at least {span} elements, found {}",
            t.len()
        );
        return Err(KilnError::invalid(t.name(), msg));
    }
    if span > u32::MAX as usize {
        return Err(KilnError::invalid(stride_field, "indices exceed 32 bits"));
    }
    Ok(())
}

// ---------------------------------------------------------------- f64 reference

pub mod reference {
    use super::MatmulDesc;

    /// The product as a plain triple loop; `c` is C's prior contents (used with accumulate),
    /// the result has `c`'s length (elements outside the batches are copied through).
    pub fn matmul(d: &MatmulDesc, a: &[f64], b: &[f64], c: &[f64]) -> Vec<f64> {
        let mut out = c.to_vec();
        for z in 0..d.batch {
            let (ao, bo, co) = (z * d.stride_a, z * d.stride_b, z * d.stride_c);
            for i in 0..d.m {
                for j in 0..d.n {
                    let mut s = 0.0;
                    for p in 0..d.k {
                        let av = if d.trans_a { a[ao + p * d.m + i] } else { a[ao + i * d.k + p] };
                        let bv = if d.trans_b { b[bo + j * d.k + p] } else { b[bo + p * d.n + j] };
                        s += av * bv;
                    }
                    let idx = co + i * d.n + j;
                    let prior = if d.accumulate { c[idx] } else { 0.0 };
                    out[idx] = d.alpha as f64 * s + prior;
                }
            }
        }
        out
    }
}
