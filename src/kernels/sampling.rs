//! Sampling kernels (`shaders/sampling.wgsl`): batched top-k (indices and values, best first,
//! ties to the lower index) and a seeded draw from softmax(top-k values / temperature), with
//! f64 references and the same counter-based RNG in Rust.

use super::{expect_len, groups_1d, Kernel, R, RW, SAMPLING as F, U};
use crate::error::{KilnError, Result};
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};
use crate::gpu::{Tensor, Uniform};

pub const TOP_K: Kernel = Kernel { entry: "top_k", family: F, bindings: &[R, RW, RW, U] };
pub const TOP_K_SAMPLE: Kernel = Kernel { entry: "top_k_sample", family: F, bindings: &[R, R, RW, U] };

pub const KERNELS: &[&Kernel] = &[&TOP_K, &TOP_K_SAMPLE];

/// Largest k: one pick per round of a 256-thread workgroup, and the sampler's loop bound.
pub const MAX_K: usize = 256;

/// Mirrors `TopKParams` in sampling.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct TopKParams {
    vocab: u32,
    k: u32,
    rows: u32,
    _pad: u32,
}

/// Mirrors `SampleParams` in sampling.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct SampleParams {
    k: u32,
    rows: u32,
    temperature: f32,
    seed: u32,
}

fn check_k(k: usize, vocab: usize) -> Result<()> {
    let max = vocab.min(MAX_K);
    if k == 0 || k > max {
        return Err(KilnError::invalid("k", format!("must be in 1..={max} (min(vocab={vocab}, {MAX_K})), got {k}")));
    }
    Ok(())
}

fn check_temperature(t: f32) -> Result<()> {
    // Subnormal temperatures may be flushed to 0 on the GPU, turning weights into 0/0.
    if !(t == 0.0 || (t.is_finite() && t >= f32::MIN_POSITIVE)) {
        return Err(KilnError::invalid("temperature", format!("must be 0 (greedy) or a finite value >= {:e}, got {t}", f32::MIN_POSITIVE)));
    }
    Ok(())
}

/// Top-k of each row of `logits` (rows, vocab): `indices` (rows, k) as u32 and `values`
/// (rows, k), ordered by value descending, ties to the lower index. Needs
/// 1 <= k <= min(vocab, 256). One 256-thread workgroup per row.
pub fn top_k(gpu: &Gpu, logits: &Tensor, vocab: usize, k: usize, indices: &Tensor, values: &Tensor) -> Result<Op> {
    if vocab == 0 || !logits.len().is_multiple_of(vocab) {
        return Err(KilnError::invalid("vocab", format!("must be >= 1 and divide the {} logits of `{}`, got {vocab}", logits.len(), logits.name())));
    }
    check_k(k, vocab)?;
    let rows = logits.len() / vocab;
    expect_len(indices, rows * k, "top_k indices (rows, k)")?;
    expect_len(values, rows * k, "top_k values (rows, k)")?;
    let params = TopKParams { vocab: vocab as u32, k: k as u32, rows: rows as u32, _pad: 0 };
    let params = gpu.uniform("top_k params", &params);
    gpu.op(&TOP_K, &[T(logits), T(indices), T(values), Uni(&params)], gpu.grid(rows as u32))
}

/// A `top_k_sample` dispatch and its params buffer: change temperature or seed between runs
/// with [`Sampler::set`] without rebuilding the op.
pub struct Sampler {
    pub op: Op,
    pub params: Uniform,
    k: u32,
    rows: u32,
}

impl Sampler {
    pub fn set(&self, gpu: &Gpu, temperature: f32, seed: u32) -> Result<()> {
        check_temperature(temperature)?;
        let params = SampleParams { k: self.k, rows: self.rows, temperature, seed };
        gpu.write_uniform(&self.params, &params);
        Ok(())
    }
}

/// Draws one token per row from softmax(values / temperature) over the row's k picks
/// (`indices`, `values`: (rows, k) as written by [`top_k`]); writes `tokens` (rows) as u32.
/// The draw is `reference::draw(seed, row)`; temperature 0 is greedy (pick 0).
pub fn top_k_sample(gpu: &Gpu, indices: &Tensor, values: &Tensor, k: usize, temperature: f32, seed: u32, tokens: &Tensor) -> Result<Sampler> {
    check_k(k, MAX_K)?;
    check_temperature(temperature)?;
    let rows = tokens.len();
    expect_len(indices, rows * k, "top_k_sample indices (rows, k)")?;
    expect_len(values, rows * k, "top_k_sample values (rows, k)")?;
    let p = SampleParams { k: k as u32, rows: rows as u32, temperature, seed };
    let params = gpu.uniform("top_k_sample params", &p);
    let args = [T(indices), T(values), T(tokens), Uni(&params)];
    let op = gpu.op(&TOP_K_SAMPLE, &args, gpu.grid(groups_1d(rows)))?;
    Ok(Sampler { op, params, k: p.k, rows: p.rows })
}

// ---------------------------------------------------------------- references

pub mod reference {
    /// Sort-based top-k of each row: (indices, values), value descending, ties to the lower
    /// index (`==` comparison, so -0.0 and +0.0 tie, as on the GPU).
    pub fn top_k(logits: &[f64], vocab: usize, k: usize) -> (Vec<u32>, Vec<f64>) {
        let (mut indices, mut values) = (Vec::new(), Vec::new());
        for row in logits.chunks(vocab) {
            let mut order: Vec<usize> = (0..vocab).collect();
            order.sort_by(|&a, &b| row[b].partial_cmp(&row[a]).expect("finite logits").then(a.cmp(&b)));
            indices.extend(order[..k].iter().map(|&i| i as u32));
            values.extend(order[..k].iter().map(|&i| row[i]));
        }
        (indices, values)
    }

    /// The shader's hash, in u32 wrapping arithmetic.
    pub fn pcg_hash(x: u32) -> u32 {
        let state = x.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
        let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277_803_737);
        (word >> 22) ^ word
    }

    /// The uniform draw in [0, 1) the GPU uses for `row` under `seed` (24 bits, exact).
    pub fn draw(seed: u32, row: u32) -> f64 {
        (pcg_hash(seed.wrapping_add(pcg_hash(row))) >> 8) as f64 / 16_777_216.0
    }

    /// softmax(values / t) of one row's picks (t > 0), with the shader's exponent clamp.
    pub fn probabilities(values: &[f64], t: f64) -> Vec<f64> {
        let w: Vec<f64> = values.iter().map(|&v| ((v - values[0]).max(-104.0 * t) / t).exp()).collect();
        let total: f64 = w.iter().sum();
        w.iter().map(|x| x / total).collect()
    }

    /// The pick slot (0..k) that draw `u` selects: the first whose CDF exceeds u.
    pub fn pick(probs: &[f64], u: f64) -> usize {
        let mut cum = 0.0;
        for (j, p) in probs.iter().enumerate() {
            cum += p;
            if u < cum {
                return j;
            }
        }
        probs.iter().rposition(|&p| p > 0.0).unwrap_or(0)
    }

    /// Sampled token per row from top-k (indices, values) of width k.
    pub fn sample(indices: &[u32], values: &[f64], k: usize, temperature: f64, seed: u32) -> Vec<u32> {
        (0..indices.len() / k)
            .map(|row| {
                let (idx, vals) = (&indices[row * k..][..k], &values[row * k..][..k]);
                if temperature == 0.0 {
                    idx[0]
                } else {
                    idx[pick(&probabilities(vals, temperature), draw(seed, row as u32))]
                }
            })
            .collect()
    }
}
