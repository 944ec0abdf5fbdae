//! Post-training affine quantization in MLX's layout. A weight matrix (rows, cols) is cut into
//! groups of `group_size` consecutive values along each row; each group gets a scale and a bias
//! (its minimum) and each value an integer code q in 0..=2^bits − 1, so w ≈ scale·q + bias. The
//! codes are packed little-endian into u32 words, four 8-bit or eight 4-bit codes a word, lowest
//! first. A tensor whose rows do not split into whole groups, or that is not a matrix (norm
//! gains, biases), stays in f32, as MLX leaves such layers unquantized; the report says why.

use serde::{Deserialize, Serialize};

use crate::error::{ensure, Result};

/// How to quantize (JS names the fields in camelCase; both may be left out).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct QuantizeOptions {
    /// 8 or 4 (default 8).
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub bits: u32,
    /// Values per scale and bias along a row: 32, 64 or 128 (default 64).
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub group_size: usize,
}

impl Default for QuantizeOptions {
    fn default() -> Self {
        QuantizeOptions { bits: 8, group_size: 64 }
    }
}

pub const BITS: [u32; 2] = [4, 8];
pub const GROUP_SIZES: [usize; 3] = [32, 64, 128];

impl QuantizeOptions {
    pub fn validate(&self) -> Result<()> {
        ensure(BITS.contains(&self.bits), "bits", || format!("must be 4 or 8, got {}", self.bits))?;
        ensure(GROUP_SIZES.contains(&self.group_size), "groupSize", || format!("must be 32, 64 or 128, got {}", self.group_size))
    }

    /// The largest code: 255 or 15.
    pub fn levels(&self) -> u32 {
        (1 << self.bits) - 1
    }

    /// Codes per u32 word: 4 or 8.
    pub fn per_word(&self) -> usize {
        32 / self.bits as usize
    }

    /// Why a tensor of `shape` stays in f32, or None when it is quantized.
    pub fn kept_because(&self, shape: &[usize]) -> Option<String> {
        match shape {
            [_, cols] if cols % self.group_size == 0 => None,
            [_, cols] => Some(format!("its rows hold {cols} values, not a multiple of the group size {}", self.group_size)),
            _ => Some("not a matrix (norm gains and biases stay in f32)".into()),
        }
    }

    /// Bytes of a quantized (rows, cols) matrix: codes, and an f32 scale and bias per group.
    pub fn bytes(&self, len: usize) -> usize {
        len.div_ceil(self.per_word()) * 4 + 2 * 4 * len.div_ceil(self.group_size)
    }
}

/// One quantized matrix: (rows, cols / per_word) code words and (rows, cols / group) scales
/// and biases, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Packed {
    pub words: Vec<u32>,
    pub scales: Vec<f32>,
    pub biases: Vec<f32>,
}

/// Quantizes row-major values whose rows are whole groups (see `kept_because`).
pub fn quantize(values: &[f32], opts: &QuantizeOptions) -> Packed {
    let levels = opts.levels() as f32;
    let mut codes = Vec::with_capacity(values.len());
    let groups = values.len().div_ceil(opts.group_size);
    let (mut scales, mut biases) = (Vec::with_capacity(groups), Vec::with_capacity(groups));
    for group in values.chunks(opts.group_size) {
        let lo = group.iter().copied().fold(f32::INFINITY, f32::min);
        let hi = group.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        // A constant group has scale 0: every code 0, the bias holds the value.
        let scale = ((hi as f64 - lo as f64) / levels as f64) as f32;
        // The codes round against the f32 scale and bias the dequantization will use.
        codes.extend(group.iter().map(|&x| if scale > 0.0 { ((x - lo) / scale).round().clamp(0.0, levels) as u32 } else { 0 }));
        scales.push(scale);
        biases.push(lo);
    }
    Packed { words: pack(&codes, opts), scales, biases }
}

/// Codes packed `per_word` to a u32, lowest first; a partial last word is zero-padded.
fn pack(codes: &[u32], opts: &QuantizeOptions) -> Vec<u32> {
    codes.chunks(opts.per_word()).map(|c| c.iter().enumerate().fold(0u32, |w, (j, &q)| w | q << (j as u32 * opts.bits))).collect()
}

/// The values a packed matrix stands for, on the CPU (the GPU's `affine_dequantize` does the
/// same): scale·q + bias for each of `len` values.
pub fn dequantize(p: &Packed, opts: &QuantizeOptions, len: usize) -> Vec<f32> {
    let mask = opts.levels();
    (0..len)
        .map(|i| {
            let q = (p.words[i / opts.per_word()] >> ((i % opts.per_word()) as u32 * opts.bits)) & mask;
            let g = i / opts.group_size;
            (q as f32).mul_add(p.scales[g], p.biases[g])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_is_within_half_a_step_of_its_group() {
        for bits in BITS {
            let opts = QuantizeOptions { bits, group_size: 32 };
            let values: Vec<f32> = (0..128).map(|i| ((i * 37 % 101) as f32 - 50.0) / 17.0).chain([0.5; 32]).collect();
            let p = quantize(&values, &opts);
            assert_eq!((p.words.len(), p.scales.len()), (160 / opts.per_word(), 5));
            let back = dequantize(&p, &opts, values.len());
            for (i, (&w, &b)) in values.iter().zip(&back).enumerate() {
                let step = p.scales[i / 32];
                // Half a step of rounding, plus f32 rounding of the scale and the fma.
                assert!((w - b).abs() <= step / 2.0 + 1e-5, "bits {bits} value {i}: {w} became {b} (step {step})");
            }
            // The constant group comes back exactly.
            assert!(back[128..].iter().all(|&v| v == 0.5));
        }
        assert!(QuantizeOptions { bits: 3, group_size: 64 }.validate().is_err());
        assert!(QuantizeOptions { bits: 8, group_size: 48 }.validate().unwrap_err().to_string().contains("groupSize"));
    }
}
