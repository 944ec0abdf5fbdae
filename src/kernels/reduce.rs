//! Reductions (`shaders/reduce.wgsl`): deterministic two-level sums — `sum_partial` writes one
//! partial per workgroup, `sum_final` adds them in one workgroup and scales (1/N for a mean) —
//! and `column_sum`, the bias backward. WGSL has no float atomics, so each sum is a fixed tree
//! whose order depends only on the sizes: the same input always gives the same bits.

use super::{expect_len, Kernel, R, REDUCE as F, RW, U};
use crate::error::{ensure, Result};
use crate::gpu::Tensor;
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};

pub const SUM_PARTIAL: Kernel = Kernel { entry: "sum_partial", family: F, bindings: &[R, RW, U] };
pub const SUM_FINAL: Kernel = Kernel { entry: "sum_final", family: F, bindings: &[R, RW, U] };
pub const COLUMN_SUM: Kernel = Kernel { entry: "column_sum", family: F, bindings: &[R, RW, U] };

pub const KERNELS: &[&Kernel] = &[&SUM_PARTIAL, &SUM_FINAL, &COLUMN_SUM];

/// Threads per reduction workgroup (the WGSL ROW_WG).
pub const REDUCE_WG: usize = 256;
/// Most partial sums one input gets: enough workgroups to fill a GPU, few enough that the
/// single-workgroup final pass stays short. Each thread's loop waits on one load at a time, so
/// more threads keep more loads in flight: llama-d512's gradient norm (16.8M floats) took 80 µs
/// with 1,024 workgroups against 108 with 256 (H100, bench/RESULTS.md session 32).
pub const MAX_PARTIALS: usize = 1024;

/// How many workgroups (and partial sums) the first level uses for `n` elements: one per
/// 256-element block, at most `MAX_PARTIALS` (each thread then loops over several blocks).
pub fn partial_groups(n: usize) -> usize {
    n.div_ceil(REDUCE_WG).clamp(1, MAX_PARTIALS)
}

/// Mirrors `PartialParams` in reduce.wgsl (also `NormParams` in optimizer.wgsl and
/// `MseParams` in loss.wgsl, which read only `groups` and `offset`).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PartialParams {
    pub groups: u32,
    pub offset: u32,
    pub squares: u32,
    pub pad: u32,
}

/// Mirrors `FinalParams` in reduce.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct FinalParams {
    count: u32,
    index: u32,
    accumulate: u32,
    scale: f32,
}

/// Mirrors `ColumnParams` in reduce.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct ColumnParams {
    rows: u32,
    cols: u32,
    accumulate: u32,
    lanes: u32,
}

/// Where and how `sum_final` writes: `out[index] (+)= scale · Σ partials[0..count]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Final {
    pub index: usize,
    pub scale: f32,
    pub accumulate: bool,
}

impl Final {
    /// `out[0] = scale · Σ`.
    pub fn scaled(scale: f32) -> Final {
        Final { index: 0, scale, accumulate: false }
    }
}

/// Checks that `partials` can hold `groups` sums from `offset` on (shared with the loss and
/// optimizer families, whose kernels write partials the same way).
pub fn expect_partials(partials: &Tensor, offset: usize, groups: usize) -> Result<()> {
    ensure(offset + groups <= partials.len(), partials.name(), || {
        format!("partials: {groups} sums from slot {offset} need {} elements, found {}", offset + groups, partials.len())
    })
}

/// First level: `partials[offset + g]` = sum over workgroup g's share of `x` (of x² if
/// `squares`), for g < `partial_groups(x.len())`.
pub fn sum_partial(gpu: &Gpu, x: &Tensor, partials: &Tensor, offset: usize, squares: bool) -> Result<Op> {
    let groups = partial_groups(x.len());
    expect_partials(partials, offset, groups)?;
    let params = PartialParams { groups: groups as u32, offset: offset as u32, squares: squares.into(), pad: 0 };
    let p = gpu.uniform("sum_partial params", &params);
    gpu.op(&SUM_PARTIAL, &[T(x), T(partials), Uni(&p)], gpu.grid(groups as u32))
}

/// Second level, one workgroup: `out[at.index] (+)= at.scale · Σ partials[0..count]`.
pub fn sum_final(gpu: &Gpu, partials: &Tensor, count: usize, out: &Tensor, at: Final) -> Result<Op> {
    ensure(count >= 1 && count <= partials.len(), partials.name(), || format!("sum_final count must be 1..={}, got {count}", partials.len()))?;
    ensure(at.index < out.len(), out.name(), || format!("sum_final index {} is past the {} elements", at.index, out.len()))?;
    ensure(at.scale.is_finite(), "scale", || format!("must be finite, got {}", at.scale))?;
    let params = FinalParams { count: count as u32, index: at.index as u32, accumulate: at.accumulate.into(), scale: at.scale };
    let p = gpu.uniform("sum_final params", &params);
    gpu.op(&SUM_FINAL, &[T(partials), T(out), Uni(&p)], [1, 1, 1])
}

/// `out[at.index] (+)= at.scale · Σ x` (Σ x² if `squares`) as two dispatches; the partials
/// buffer is allocated here and kept alive by the ops.
pub fn reduce(gpu: &Gpu, x: &Tensor, out: &Tensor, squares: bool, at: Final) -> Result<Vec<Op>> {
    let groups = partial_groups(x.len());
    let partials = gpu.tensor(&format!("{} partials", x.name()), &[groups])?;
    Ok(vec![sum_partial(gpu, x, &partials, 0, squares)?, sum_final(gpu, &partials, groups, out, at)?])
}

/// `out[0] = scale · Σ x` (scale 1/N for the mean), any N ≥ 1.
pub fn sum(gpu: &Gpu, x: &Tensor, out: &Tensor, scale: f32) -> Result<Vec<Op>> {
    reduce(gpu, x, out, false, Final::scaled(scale))
}

/// `out[0] = scale · Σ x²`.
pub fn sum_squares(gpu: &Gpu, x: &Tensor, out: &Tensor, scale: f32) -> Result<Vec<Op>> {
    reduce(gpu, x, out, true, Final::scaled(scale))
}

/// How a column reduction over (rows, cols) runs (reduce.wgsl's `column_sum`, elementwise.wgsl's
/// `activation_backward_sum`): `lanes` threads a column, each adding every `lanes`-th row, in
/// workgroups of 256 / `lanes` columns.
#[derive(Clone, Copy, Debug)]
pub struct Columns {
    pub rows: usize,
    pub cols: usize,
    pub lanes: usize,
    pub groups: usize,
}

impl Columns {
    /// The layout for `x` (rows, C) summed into `db` (C). About 16 rows a thread: few enough that
    /// the loads of a 512-row batch are four rounds in flight, with at least 8 columns a
    /// workgroup so a warp reads whole 32-byte stretches.
    pub fn of(x: &Tensor, db: &Tensor) -> Result<Columns> {
        let cols = db.len();
        ensure(cols > 0 && x.len().is_multiple_of(cols), x.name(), || {
            format!("column sum: {} elements are not rows of {cols} columns (db {:?})", x.len(), db.shape())
        })?;
        let rows = x.len() / cols;
        let lanes = rows.div_ceil(16).next_power_of_two().clamp(4, 32);
        Ok(Columns { rows, cols, lanes, groups: cols.div_ceil(REDUCE_WG / lanes) })
    }
}

/// Bias backward: `db (+)= Σ_rows dy` for dy of shape (rows, C) and db of C elements.
pub fn column_sum(gpu: &Gpu, dy: &Tensor, db: &Tensor, accumulate: bool) -> Result<Op> {
    let at = Columns::of(dy, db)?;
    let params = ColumnParams { rows: at.rows as u32, cols: at.cols as u32, accumulate: accumulate.into(), lanes: at.lanes as u32 };
    let p = gpu.uniform("column_sum params", &params);
    gpu.op(&COLUMN_SUM, &[T(dy), T(db), Uni(&p)], gpu.grid(at.groups as u32))
}

/// Fails unless `t` is the 1-element buffer holding a GPU-side scalar (a loss, norm², dloss).
pub fn expect_scalar(t: &Tensor, what: &str) -> Result<()> {
    expect_len(t, 1, what)
}

// ---------------------------------------------------------------- f64 references

pub mod reference {
    use super::REDUCE_WG;

    /// The partial sums `sum_partial` writes: workgroup g owns the 256-blocks g, g+G, ...
    pub fn partials(x: &[f64], groups: usize, squares: bool) -> Vec<f64> {
        let mut out = vec![0.0; groups];
        for (i, &v) in x.iter().enumerate() {
            out[(i / REDUCE_WG) % groups] += if squares { v * v } else { v };
        }
        out
    }

    pub fn sum(x: &[f64], squares: bool) -> f64 {
        x.iter().map(|&v| if squares { v * v } else { v }).sum()
    }

    /// db[c] = Σ_r dy[r, c].
    pub fn column_sum(dy: &[f64], cols: usize) -> Vec<f64> {
        let mut db = vec![0.0; cols];
        for (i, &v) in dy.iter().enumerate() {
            db[i % cols] += v;
        }
        db
    }

    /// The forward whose b-gradient column_sum is: y[r, c] = x[r, c] + b[c].
    pub fn add_bias(x: &[f64], b: &[f64]) -> Vec<f64> {
        x.iter().enumerate().map(|(i, &v)| v + b[i % b.len()]).collect()
    }
}
