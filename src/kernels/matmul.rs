//! Matrix multiplication (`shaders/matmul.wgsl`): tiled kernels for
//! `C = alpha · op(A) · op(B) + (accumulate ? C : 0)` with optional transposes and a batch
//! dimension, plus the f64 reference. The wrapper picks the tile (64x64 or 128x128) by problem
//! size, and `matmul_ops` may split a long k across workgroups (split-K: partial products in a
//! scratch buffer, then `matmul_split_reduce`) when the output has too few tiles to fill a GPU.
//!
//! For a Linear layer `Y = X·Wᵀ` (X: (M, K), W: (N, K)):
//! forward `MatmulDesc::new(M, N, K).trans_b()`, `dX = dY·W` is `MatmulDesc::new(M, K, N)`,
//! and `dW += dYᵀ·X` is `MatmulDesc::new(N, K, M).trans_a().accumulate()`.

use super::{expect_len, Kernel, MATMUL as F, R, RW, U};
use crate::error::{KilnError, Result};
use crate::gpu::Tensor;
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};

pub const MATMUL: Kernel = Kernel { entry: "matmul", family: F, bindings: &[R, R, RW, U] };
/// Bindings 4 and 5 are A and B again, read as vec4s for aligned products (a placeholder else).
pub const MATMUL_128: Kernel = Kernel { entry: "matmul_128", family: F, bindings: &[R, R, RW, U, R, R] };
pub const MATMUL_SMALL: Kernel = Kernel { entry: "matmul_small", family: F, bindings: &[R, R, RW, U] };
pub const MATMUL_SPLIT_REDUCE: Kernel = Kernel { entry: "matmul_split_reduce", family: F, bindings: &[R, RW, U] };

pub const KERNELS: &[&Kernel] = &[&MATMUL, &MATMUL_128, &MATMUL_SMALL, &MATMUL_SPLIT_REDUCE];

/// k per workgroup-memory step of the 64-tile kernel; split chunks are multiples of it.
const KT: usize = 16;

const TRANS_A: u32 = 1;
const TRANS_B: u32 = 2;
const ACCUMULATE: u32 = 4;
const ALIGNED: u32 = 8;

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
    /// Force the output tile (64 or 128) instead of the size-based choice (benchmarks, tests).
    pub tile: Option<usize>,
    /// Force the number of k chunks (`matmul_ops` only; 1 = no split).
    pub splits: Option<usize>,
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
            tile: None,
            splits: None,
        }
    }

    /// Forces the 64x64 or 128x128 tile kernel, or `SMALL` (`matmul_small`).
    pub fn tile(mut self, tile: usize) -> Self {
        self.tile = Some(tile);
        self
    }

    /// Forces `splits` k chunks in `matmul_ops` (rounded to what k allows).
    pub fn splits(mut self, splits: usize) -> Self {
        self.splits = Some(splits);
        self
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
    splits: u32,
    k_chunk: u32,
    stride_a: u32,
    stride_b: u32,
    stride_c: u32,
    split_stride: u32,
}

/// Mirrors `MatmulReduceParams` in matmul.wgsl (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ReduceParams {
    len: u32,
    splits: u32,
    stride: u32,
    accumulate: u32,
}

/// Workgroups a split product aims for: about two per multiprocessor of a large GPU (an
/// H200 has 132); a small GPU is full either way.
const SPLIT_TARGET_GROUPS: usize = 256;

/// Multiply-adds (m·n·k·batch) from which splitting is worth its extra dispatch.
const SPLIT_MIN_MACS: usize = 1 << 26;

/// Shortest k chunk of a split: shorter ones spend more on the partials than they save.
const SPLIT_MIN_CHUNK: usize = 128;

/// 128x128 output tiles from which the 128 kernel beats the 64 one without a split (measured
/// on an H200: 192 tiles of a (4096, 768) output already favour it, 64 tiles of a (4096, 256)
/// one do not).
const BIG_TILE_MIN_TILES: usize = 160;

/// Products up to this many multiply-adds, with k up to `small_max_k`, run on `matmul_small`
/// (one thread per output element): the forward and input-gradient products of tiny MLPs.
/// On a GPU a longer k (a weight gradient over the batch) is a serial loop per thread that
/// measured several times slower on an H200 than the split-K plan, so those keep it; on a CPU
/// adapter (llvmpipe) the plain loop wins there too (2.2× mlp-spiral steps/s).
const SMALL_MAX_MACS: usize = 1 << 20;
pub const SMALL_MAX_K_GPU: usize = 64;
pub const SMALL_MAX_K_CPU: usize = 1024;
/// The `tile` that names `matmul_small` (in `MatmulDesc::tile` and `plan`).
pub const SMALL: usize = 1;

/// Largest split-K scratch buffer, in elements (64 MiB).
const SPLIT_MAX_SCRATCH: usize = 1 << 24;

/// Tile and k split for a product: (tile, splits, k_chunk). Measured on an H200 (bench/RESULTS.md):
/// enough output tiles → the 128 tile alone; few tiles and a long k (weight gradients, and
/// (tokens, 256) outputs with k ≥ 512) → the 128 tile split into chunks of ≥ 128 that bring
/// the workgroups to about SPLIT_TARGET_GROUPS, else the 64 tile split towards twice that
/// (chunks still ≥ 128); small products → the 64 tile alone.
pub fn plan(d: &MatmulDesc, allow_split: bool, small_max_k: usize) -> (usize, usize, usize) {
    let tiles = |t: usize| d.m.div_ceil(t) * d.n.div_ceil(t) * d.batch;
    // Split big products with few tiles, and small ones whose long k would run as one serial,
    // latency-bound loop (the weight gradients of tiny MLPs: (16, 16) outputs over k = 512).
    let long_k = d.k >= 2 * SPLIT_MIN_CHUNK && tiles(64) < 16;
    let can_split = allow_split && d.batch == 1 && (d.m * d.n * d.k >= SPLIT_MIN_MACS || long_k);
    let (tile, splits) = match (d.tile.or(env_tile()), d.splits) {
        (Some(t), Some(s)) => (t, s),
        (Some(t), None) if env_tile().is_some() && d.tile.is_none() => (t, 1),
        (Some(t), None) => (t, if can_split { SPLIT_TARGET_GROUPS.div_ceil(tiles(t)) } else { 1 }),
        (None, forced) => {
            let s128 = SPLIT_TARGET_GROUPS.div_ceil(tiles(128));
            let s64 = (2 * SPLIT_TARGET_GROUPS).div_ceil(tiles(64));
            let small = d.m * d.n * d.k * d.batch <= SMALL_MAX_MACS && d.k <= small_max_k;
            let (t, s) = if small {
                (SMALL, 1)
            } else if tiles(128) >= BIG_TILE_MIN_TILES {
                (128, 1)
            } else if !can_split {
                (64, 1)
            } else if d.k / s128 >= SPLIT_MIN_CHUNK {
                (128, s128)
            } else if tiles(64) < SPLIT_TARGET_GROUPS {
                (64, s64.min(d.k / SPLIT_MIN_CHUNK).max(1))
            } else {
                (64, 1)
            };
            (t, forced.unwrap_or(s))
        }
    };
    let tile = match tile {
        SMALL | 128 => tile,
        _ => 64,
    };
    let mut splits = if allow_split && d.batch == 1 { splits } else { 1 };
    // Chunks of at least 2 KT, a multiple of KT; the scratch stays bounded.
    splits = splits.clamp(1, d.k.div_ceil(2 * KT).clamp(1, 65_535));
    while splits > 1 && splits * d.m * d.n > SPLIT_MAX_SCRATCH {
        splits -= 1;
    }
    let k_chunk = d.k.div_ceil(splits).next_multiple_of(KT);
    let splits = d.k.div_ceil(k_chunk);
    (tile, splits, k_chunk)
}

/// The longest k `matmul_small` takes on this adapter.
pub fn small_max_k(gpu: &Gpu) -> usize {
    if gpu.on_cpu() {
        SMALL_MAX_K_CPU
    } else {
        SMALL_MAX_K_GPU
    }
}

/// `KILN_MATMUL_TILE=64|128` natively forces one tile (and no split) for A/B measurements.
fn env_tile() -> Option<usize> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        std::env::var("KILN_MATMUL_TILE").ok().and_then(|v| v.parse().ok())
    }
    #[cfg(target_arch = "wasm32")]
    {
        None
    }
}

/// `C = alpha · op(A) · op(B) (+ C)` as one dispatch (never split along k). Lengths are checked
/// against `desc`: with dense strides (stride = one matrix) a tensor must hold exactly `batch`
/// matrices; with custom strides it must hold at least `(batch - 1) * stride + matrix` elements.
pub fn matmul(gpu: &Gpu, a: &Tensor, b: &Tensor, c: &Tensor, desc: MatmulDesc) -> Result<Op> {
    validate(gpu, a, b, c, &desc)?;
    let (tile, _, _) = plan(&desc, false, small_max_k(gpu));
    product(gpu, a, b, c, &desc, tile, 1, desc.k)
}

/// The same product as `matmul`, as one dispatch or, when the output has few tiles and k is
/// long (weight gradients), as a split-K product into a scratch buffer plus a reduction.
pub fn matmul_ops(gpu: &Gpu, a: &Tensor, b: &Tensor, c: &Tensor, desc: MatmulDesc) -> Result<Vec<Op>> {
    validate(gpu, a, b, c, &desc)?;
    let d = desc;
    let (tile, splits, k_chunk) = plan(&d, true, small_max_k(gpu));
    if splits == 1 {
        return Ok(vec![product(gpu, a, b, c, &d, tile, 1, d.k)?]);
    }
    let len = d.m * d.n;
    let parts = gpu.scratch("matmul split-K partials", splits * len)?;
    let mut part_desc = d;
    part_desc.accumulate = false;
    part_desc.stride_c = len;
    let first = product(gpu, a, b, &parts, &part_desc, tile, splits, k_chunk)?;
    Ok(vec![first, split_reduce(gpu, &parts, c, splits, d.accumulate)?])
}

/// `out` (len) = Σ_s parts[s · len ..][..len] in order (+ out's contents with `accumulate`):
/// the reduction of split-K products, also used for other sums split into partials.
pub fn split_reduce(gpu: &Gpu, parts: &Tensor, out: &Tensor, splits: usize, accumulate: bool) -> Result<Op> {
    let len = out.len();
    expect_len(parts, splits * len, "split partials (splits, len)")?;
    let params = ReduceParams { len: len as u32, splits: splits as u32, stride: len as u32, accumulate: u32::from(accumulate) };
    let uniform = gpu.uniform("split reduce params", &params);
    gpu.op(&MATMUL_SPLIT_REDUCE, &[T(parts), T(out), Uni(&uniform)], gpu.grid(super::groups_1d(len)))
}

fn validate(gpu: &Gpu, a: &Tensor, b: &Tensor, c: &Tensor, d: &MatmulDesc) -> Result<()> {
    for (v, field) in [(d.m, "m"), (d.n, "n"), (d.k, "k"), (d.batch, "batch")] {
        if v == 0 {
            return Err(KilnError::invalid(field, "matmul dimensions must be at least 1"));
        }
    }
    check_span(a, d.m * d.k, d.stride_a, d.batch, "a", "stride_a")?;
    check_span(b, d.k * d.n, d.stride_b, d.batch, "b", "stride_b")?;
    check_span(c, d.m * d.n, d.stride_c, d.batch, "c", "stride_c")?;
    if d.batch > 1 && d.stride_c < d.m * d.n {
        return Err(KilnError::invalid("stride_c", format!("batches of C would overlap: stride {} < m*n = {}", d.stride_c, d.m * d.n)));
    }
    let max_dim = gpu.limits().max_compute_workgroups_per_dimension as usize;
    if d.batch > max_dim {
        return Err(KilnError::invalid("batch", format!("at most {max_dim} batches per dispatch, got {}", d.batch)));
    }
    Ok(())
}

/// One dispatch of the `tile` kernel; with `splits` > 1, split s writes C + s * m·n.
#[allow(clippy::too_many_arguments)]
fn product(gpu: &Gpu, a: &Tensor, b: &Tensor, c: &Tensor, d: &MatmulDesc, tile: usize, splits: usize, k_chunk: usize) -> Result<Op> {
    // Workgroups per matrix: output tiles, or 64-element groups for `matmul_small`.
    let tiles = if tile == SMALL { super::groups_1d(d.m * d.n) as usize } else { d.m.div_ceil(tile) * d.n.div_ceil(tile) };
    let [x, y, _] = gpu.grid(u32::try_from(tiles).map_err(|_| KilnError::invalid("m", "too many output tiles"))?);
    // The 128 tile skips its range checks when no tile or k step reaches past the matrix.
    let aligned = tile == 128
        && d.m.is_multiple_of(128)
        && d.n.is_multiple_of(128)
        && d.k.is_multiple_of(8)
        && k_chunk.is_multiple_of(8)
        && d.stride_a.is_multiple_of(4)
        && d.stride_b.is_multiple_of(4);
    let flags = u32::from(d.trans_a) * TRANS_A + u32::from(d.trans_b) * TRANS_B + u32::from(d.accumulate) * ACCUMULATE + u32::from(aligned) * ALIGNED;
    let params = MatmulParams {
        m: d.m as u32,
        n: d.n as u32,
        k: d.k as u32,
        flags,
        alpha: d.alpha,
        batch: d.batch as u32,
        splits: splits as u32,
        k_chunk: k_chunk as u32,
        stride_a: d.stride_a as u32,
        stride_b: d.stride_b as u32,
        stride_c: d.stride_c as u32,
        split_stride: (d.m * d.n) as u32,
    };
    let uniform = gpu.uniform("matmul params", &params);
    let groups = [x, y, (d.batch * splits) as u32];
    match tile {
        SMALL => gpu.op(&MATMUL_SMALL, &[T(a), T(b), T(c), Uni(&uniform)], groups),
        128 => {
            // The vec4 bindings see A and B when the kernel reads them (aligned), else a placeholder.
            let (a4, b4) = if aligned { (a.clone(), b.clone()) } else { (gpu.placeholder()?, gpu.placeholder()?) };
            gpu.op(&MATMUL_128, &[T(a), T(b), T(c), Uni(&uniform), T(&a4), T(&b4)], groups)
        }
        _ => gpu.op(&MATMUL, &[T(a), T(b), T(c), Uni(&uniform)], groups),
    }
}

/// Checks that `t` covers `batch` matrices of `size` elements spaced `stride` apart.
fn check_span(t: &Tensor, size: usize, stride: usize, batch: usize, what: &str, stride_field: &str) -> Result<()> {
    let span = (batch - 1) * stride + size;
    if stride == size {
        if t.len() != span {
            let msg = format!("operand `{what}`: expected {span} elements ({batch} x {size}), found {} (shape {:?})", t.len(), t.shape());
            return Err(KilnError::invalid(t.name(), msg));
        }
    } else if t.len() < span {
        let msg = format!("operand `{what}` with {stride_field} = {stride}: needs at least {span} elements, found {}", t.len());
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
