//! Quantization kernels (`shaders/quant.wgsl`): u8 -> f32 dequantization (plain and affine with
//! per-group scale and bias) and exact IEEE 754 binary16 <-> binary32 casts, with references.
//!
//! Packing: u8 values 4 per u32 word, little-endian (element 4w+b is byte b of word w); f16
//! values 2 per word (element 2w is the low half). f32 tensors of the casts are handled as raw
//! bit patterns (upload/read them as u32 words) so NaN payloads and subnormals survive exactly.

use super::{expect_len, groups_1d, Kernel, QUANT as F, R, RW, U};
use crate::error::{KilnError, Result};
use crate::gpu::Tensor;
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op};

pub const DEQUANTIZE: Kernel = Kernel { entry: "dequantize", family: F, bindings: &[R, RW] };
pub const AFFINE_DEQUANTIZE: Kernel = Kernel { entry: "affine_dequantize", family: F, bindings: &[R, R, R, RW, U] };
pub const AFFINE_DEQUANTIZE4: Kernel = Kernel { entry: "affine_dequantize4", family: F, bindings: &[R, R, R, RW, U] };
pub const FP32_TO_FP16: Kernel = Kernel { entry: "fp32_to_fp16", family: F, bindings: &[R, RW] };
pub const FP16_TO_FP32: Kernel = Kernel { entry: "fp16_to_fp32", family: F, bindings: &[R, RW] };

pub const KERNELS: &[&Kernel] = &[&DEQUANTIZE, &AFFINE_DEQUANTIZE, &AFFINE_DEQUANTIZE4, &FP32_TO_FP16, &FP16_TO_FP32];

/// Mirrors `AffineParams` in quant.wgsl (padded to 16 bytes).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct AffineParams {
    group_size: u32,
    _pad: [u32; 3],
}

/// out[i] = u8 element i of `packed` (ceil(N/4) words) as f32; `out` has N elements.
/// # Example
///
/// ```
/// # pollster::block_on(async {
/// use kiln::kernels::quant::dequantize;
/// let gpu = kiln::Gpu::new().await?;
/// // Five u8 values 1, 2, 3, 250, 7, four to a word (element 4w+n in bits 8n..8n+7).
/// let packed = gpu.tensor_from("packed", &[2], &[0xFA03_0201u32, 0x07])?;
/// let out = gpu.tensor("out", &[5])?;
/// gpu.run(&[&dequantize(&gpu, &packed, &out)?])?;
/// assert_eq!(gpu.read_f32(&out).await?, [1.0, 2.0, 3.0, 250.0, 7.0]);
/// # Ok::<(), kiln::KilnError>(())
/// # }).unwrap();
/// ```
pub fn dequantize(gpu: &Gpu, packed: &Tensor, out: &Tensor) -> Result<Op> {
    expect_len(packed, out.len().div_ceil(4), "packed u8 words (4 per word) for the output")?;
    gpu.op(&DEQUANTIZE, &[T(packed), T(out)], gpu.grid(groups_1d(out.len())))
}

/// out[i] = u8(i) * scales[i / group_size] + biases[i / group_size]. `out` has N elements,
/// `packed` ceil(N/4) words, `scales` and `biases` ceil(N/group_size) each (the last group may
/// be partial).
pub fn affine_dequantize(gpu: &Gpu, packed: &Tensor, scales: &Tensor, biases: &Tensor, group_size: usize, out: &Tensor) -> Result<Op> {
    affine_dequantize_bits(gpu, 8, packed, scales, biases, group_size, out)
}

/// `affine_dequantize` for 8-bit codes (4 per word) or 4-bit codes (8 per word, `packed`
/// ceil(N/8) words).
pub fn affine_dequantize_bits(gpu: &Gpu, bits: u32, packed: &Tensor, scales: &Tensor, biases: &Tensor, group_size: usize, out: &Tensor) -> Result<Op> {
    let n = out.len();
    let (kernel, per_word) = match bits {
        8 => (&AFFINE_DEQUANTIZE, 4),
        4 => (&AFFINE_DEQUANTIZE4, 8),
        _ => return Err(KilnError::invalid("bits", format!("must be 4 or 8, got {bits}"))),
    };
    if group_size == 0 || group_size > u32::MAX as usize {
        return Err(KilnError::invalid("group_size", format!("must be in 1..=2^32-1, got {group_size}")));
    }
    expect_len(packed, n.div_ceil(per_word), &format!("packed {bits}-bit codes ({per_word} per word) for the output"))?;
    let groups = n.div_ceil(group_size);
    let what = format!("one per group of group_size={group_size} over {n} values");
    expect_len(scales, groups, &what)?;
    expect_len(biases, groups, &what)?;
    let params = gpu.uniform("affine_dequantize params", &AffineParams { group_size: group_size as u32, _pad: [0; 3] });
    let args = [T(packed), T(scales), T(biases), T(out), Uni(&params)];
    gpu.op(kernel, &args, gpu.grid(groups_1d(n)))
}

/// Rounds N f32 values (bit patterns) to f16, round-to-nearest-even, packed into ceil(N/2)
/// words; an odd N leaves the last word's high half +0.0.
pub fn fp32_to_fp16(gpu: &Gpu, input: &Tensor, out: &Tensor) -> Result<Op> {
    expect_len(out, input.len().div_ceil(2), "packed f16 words (2 per word) for the input")?;
    gpu.op(&FP32_TO_FP16, &[T(input), T(out)], gpu.grid(groups_1d(out.len())))
}

/// Widens the N f16 values packed in ceil(N/2) words to f32 bit patterns (exact).
/// # Example
///
/// ```
/// # pollster::block_on(async {
/// use kiln::kernels::quant::fp16_to_fp32;
/// let gpu = kiln::Gpu::new().await?;
/// // Halves 1.0 (0x3C00) and -2.5 (0xC100) in one word, then 65504 (0x7BFF, f16's largest).
/// let packed = gpu.tensor_from("packed", &[2], &[0xC100_3C00u32, 0x7BFF])?;
/// let out = gpu.tensor("out", &[3])?;
/// gpu.run(&[&fp16_to_fp32(&gpu, &packed, &out)?])?;
/// assert_eq!(gpu.read_f32(&out).await?, [1.0, -2.5, 65504.0]);
/// # Ok::<(), kiln::KilnError>(())
/// # }).unwrap();
/// ```
pub fn fp16_to_fp32(gpu: &Gpu, packed: &Tensor, out: &Tensor) -> Result<Op> {
    expect_len(packed, out.len().div_ceil(2), "packed f16 words (2 per word) for the output")?;
    gpu.op(&FP16_TO_FP32, &[T(packed), T(out)], gpu.grid(groups_1d(packed.len())))
}

// ---------------------------------------------------------------- references

/// Written independently of the WGSL bit manipulation: the casts go through f64 arithmetic
/// and `round_ties_even`, so agreement checks the shader rather than restating it.
pub mod reference {
    /// 4 bytes per word, little-endian; a partial last word is zero-padded.
    pub fn pack_u8(bytes: &[u8]) -> Vec<u32> {
        bytes.chunks(4).map(|c| c.iter().rev().fold(0u32, |w, &b| (w << 8) | b as u32)).collect()
    }

    /// 2 halves per word, element 2w in the low half; a partial last word is zero-padded.
    pub fn pack_f16(halves: &[u16]) -> Vec<u32> {
        halves.chunks(2).map(|c| c[0] as u32 | (c.get(1).copied().unwrap_or(0) as u32) << 16).collect()
    }

    /// 8 four-bit codes per word, element 8w+n in bits 4n..4n+3; a partial last word is zero-padded.
    pub fn pack_u4(codes: &[u8]) -> Vec<u32> {
        codes.chunks(8).map(|c| c.iter().rev().fold(0u32, |w, &b| (w << 4) | (b & 0xF) as u32)).collect()
    }

    pub fn dequantize(bytes: &[u8]) -> Vec<f64> {
        bytes.iter().map(|&b| b as f64).collect()
    }

    pub fn affine_dequantize(bytes: &[u8], scales: &[f64], biases: &[f64], group_size: usize) -> Vec<f64> {
        bytes.iter().enumerate().map(|(i, &b)| b as f64 * scales[i / group_size] + biases[i / group_size]).collect()
    }

    /// Exact binary16 -> binary32. NaNs stay NaN: payload kept, quiet bit set.
    pub fn f16_to_f32(h: u16) -> f32 {
        let negative = h & 0x8000 != 0;
        let (e, m) = ((h >> 10) & 0x1F, (h & 0x3FF) as u32);
        let magnitude = match e {
            31 if m != 0 => {
                return f32::from_bits((negative as u32) << 31 | 0x7FC0_0000 | m << 13);
            }
            31 => f64::INFINITY,
            0 => m as f64 * 2f64.powi(-24),
            _ => (1024 + m) as f64 * 2f64.powi(e as i32 - 25),
        };
        (if negative { -magnitude } else { magnitude }) as f32
    }

    /// binary32 -> binary16, IEEE round-to-nearest-even with gradual underflow; results past
    /// the largest finite half (after rounding) are ±Inf; NaN -> quiet NaN keeping the top
    /// payload bits; the sign of zero is kept.
    pub fn f32_to_f16(x: f32) -> u16 {
        let sign = ((x.to_bits() >> 16) & 0x8000) as u16;
        if x.is_nan() {
            return sign | 0x7E00 | ((x.to_bits() >> 13) & 0x3FF) as u16;
        }
        let a = (x as f64).abs();
        if a < 2f64.powi(-14) {
            // Subnormal range: a multiple of 2^-24; 1024 is the smallest normal's encoding.
            return sign | (a * 2f64.powi(24)).round_ties_even() as u16;
        }
        if a.is_infinite() {
            return sign | 0x7C00;
        }
        // a = 2^e * 1.f exactly (f64 exponent field); keep 11 significant bits.
        let e = ((a.to_bits() >> 52) & 0x7FF) as i64 - 1023;
        let r = (a / 2f64.powi(e as i32 - 10)).round_ties_even() as i64; // in [1024, 2048]
        let bits = ((e + 15) << 10) + (r - 1024);
        if bits >= 0x7C00 {
            sign | 0x7C00
        } else {
            sign | bits as u16
        }
    }
}
