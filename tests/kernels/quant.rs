//! GPU-vs-reference checks for shaders/quant.wgsl. Dequantized bytes and the f16 casts are
//! exact (compared bit for bit, NaNs included: both sides produce the same quiet NaN);
//! affine dequantization is two f32 roundings of values |x| <= 255·0.1 + 1 = 26.5, so
//! atol 1e-5 >= 2·26.5·2^-24 ≈ 3.2e-6 with margin (and fma vs mul+add both pass).

use kiln::kernels::quant::{self as q, reference};
use kiln::{Gpu, KilnError};

use crate::common::*;

const AFFINE_ATOL: f64 = 1e-5;

fn random_bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.below(256) as u8).collect()
}

async fn dequantize(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(11);
    // Group sizes: a partial last group (7 % 3), the MLX default 64 with 1000 % 64 = 40 left
    // over, and small groups on the 2-D grid.
    for (&(n, grid), group) in SIZES_1D.iter().zip([3usize, 64, 32]) {
        gpu.set_grid_limit(grid);
        let bytes = random_bytes(&mut rng, n);
        let packed = gpu.tensor_from("packed", &[n.div_ceil(4)], &reference::pack_u8(&bytes)).unwrap();
        let out = gpu.tensor("out", &[n]).unwrap();
        gpu.run(&[&q::dequantize(gpu, &packed, &out).unwrap()]).unwrap();
        c.close("dequantize", &format!("n={n}"), &read(gpu, &out).await, &reference::dequantize(&bytes), 0.0, 0.0);

        let groups = n.div_ceil(group);
        let (scales, s64) = random_tensor(gpu, &mut rng, "scales", &[groups], -0.1, 0.1);
        let (biases, b64) = random_tensor(gpu, &mut rng, "biases", &[groups], -1.0, 1.0);
        let op = q::affine_dequantize(gpu, &packed, &scales, &biases, group, &out).unwrap();
        gpu.run(&[&op]).unwrap();
        let want = reference::affine_dequantize(&bytes, &s64, &b64, group);
        c.close("affine_dequantize", &format!("n={n} group={group}"), &read(gpu, &out).await, &want, AFFINE_ATOL, 0.0);

        // 4-bit codes, eight per word (the reference formula is the same over codes 0..=15).
        let codes: Vec<u8> = bytes.iter().map(|b| b & 0xF).collect();
        let packed4 = gpu.tensor_from("packed4", &[n.div_ceil(8)], &reference::pack_u4(&codes)).unwrap();
        gpu.run(&[&q::affine_dequantize_bits(gpu, 4, &packed4, &scales, &biases, group, &out).unwrap()]).unwrap();
        let want4 = reference::affine_dequantize(&codes, &s64, &b64, group);
        c.close("affine_dequantize4", &format!("n={n} group={group}"), &read(gpu, &out).await, &want4, AFFINE_ATOL, 0.0);
        let err = q::affine_dequantize_bits(gpu, 4, &packed, &scales, &biases, group, &out).err();
        assert!(matches!(err, Some(KilnError::InvalidInput { ref message, .. }) if message.contains("4-bit")), "8-bit words as 4-bit codes: {err:?}");

        // Bad group sizes are errors naming the field, not panics or out-of-bounds reads.
        let err = q::affine_dequantize(gpu, &packed, &scales, &biases, 0, &out).err();
        assert!(matches!(err, Some(KilnError::InvalidInput { ref field, .. }) if field == "group_size"), "{err:?}");
        if groups != n.div_ceil(group * 2) {
            let err = q::affine_dequantize(gpu, &packed, &scales, &biases, group * 2, &out).err();
            let named = matches!(err, Some(KilnError::InvalidInput { ref field, ref message })
                if field == "scales" && message.contains("group_size"));
            assert!(named, "{err:?}");
        }
    }
}

/// Every f16 bit pattern, in order.
fn all_halves() -> Vec<u16> {
    (0..=u16::MAX).collect()
}

async fn f16_to_f32(gpu: &Gpu, c: &mut Checks, halves: &[u16], label: &str) {
    let n = halves.len();
    let packed = gpu.tensor_from("halves", &[n.div_ceil(2)], &reference::pack_f16(halves)).unwrap();
    let out = gpu.tensor("f32 bits", &[n]).unwrap();
    gpu.run(&[&q::fp16_to_fp32(gpu, &packed, &out).unwrap()]).unwrap();
    let want: Vec<u32> = halves.iter().map(|&h| reference::f16_to_f32(h).to_bits()).collect();
    c.exact("fp16_to_fp32", label, &gpu.read_u32(&out).await.unwrap(), &want);
}

async fn f32_to_f16(gpu: &Gpu, c: &mut Checks, values: &[u32], label: &str) {
    let n = values.len();
    let input = gpu.tensor_from("f32 bits", &[n], values).unwrap();
    let out = gpu.tensor("halves", &[n.div_ceil(2)]).unwrap();
    gpu.run(&[&q::fp32_to_fp16(gpu, &input, &out).unwrap()]).unwrap();
    let halves: Vec<u16> = values.iter().map(|&b| reference::f32_to_f16(f32::from_bits(b))).collect();
    c.exact("fp32_to_fp16", label, &gpu.read_u32(&out).await.unwrap(), &reference::pack_f16(&halves));
}

/// Rounding edge cases as f32 bit patterns, each also negated.
fn tricky_f32() -> Vec<u32> {
    let p = |e: i32| 2f32.powi(e);
    let mut v: Vec<f32> = vec![
        0.0,
        f32::INFINITY,
        65504.0,                     // largest finite half
        f32::from_bits(0x477F_EFFF), // just below 65520: rounds down to 65504
        65520.0,                     // halfway to 65536: ties to even -> Inf
        65536.0,
        1e5,
        1e10,
        f32::MAX,
        1.0 + p(-11),                // tie, even neighbour below (0x3C00)
        1.0 + 3.0 * p(-11),          // tie, even neighbour above (0x3C02)
        f32::from_bits(0x3F80_1001), // just above a tie
        f32::from_bits(0x3F80_0FFF), // just below a tie
        2049.0,                      // tie -> 2048
        2051.0,                      // tie -> 2052
        p(-14),                      // smallest normal half
        f32::from_bits(0x387F_FFFF), // just below it: rounds up to it
        p(-14) - p(-25),             // tie between 0x3FF and 0x400 -> 0x400
        p(-14) - 3.0 * p(-25),       // tie between 0x3FE and 0x3FF -> 0x3FE
        p(-24),                      // smallest subnormal half
        p(-25),                      // half of it: tie -> 0
        f32::from_bits(0x3300_0001), // just above: -> smallest subnormal
        f32::from_bits(0x32FF_FFFF), // just below: -> 0
        1.5 * p(-24),                // tie -> 2 (even)
        2.5 * p(-24),                // tie -> 2 (even)
        1e-10,
        1e-30,
        f32::from_bits(1), // smallest f32 subnormal
        f32::MIN_POSITIVE,
        1.0 / 3.0,
        0.1,
    ];
    v.extend(v.clone().iter().map(|x| -x));
    let mut bits: Vec<u32> = v.iter().map(|x| x.to_bits()).collect();
    // NaNs: quiet, negative, signalling with a payload that lives only in low bits (must not
    // become Inf), and one with a high payload.
    bits.extend([0x7FC0_0000, 0xFFC0_0000, 0x7F80_0001, 0xFF80_0001, 0x7FA0_0000, 0x7F81_2000]);
    bits
}

/// Random bit patterns (every exponent, NaNs and Infs included) and random values whose
/// exponents span the half range and both sides of it, with random mantissas and signs.
fn random_f32(rng: &mut Rng, n: usize) -> Vec<u32> {
    (0..n)
        .map(|i| {
            let m = rng.next_u64() as u32;
            if i % 2 == 0 {
                m
            } else {
                let e = (127 - 30 + rng.below(50)) as u32; // 2^-30 .. 2^19
                (m & 0x8000_0000) | e << 23 | (m & 0x7F_FFFF)
            }
        })
        .collect()
}

async fn casts(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(12);
    let halves = all_halves();
    f16_to_f32(gpu, c, &halves, "all 65,536 f16 bit patterns").await;
    // Each decoded half must come back unchanged (NaNs as the quiet NaN the reference gives).
    let decoded: Vec<u32> = halves.iter().map(|&h| reference::f16_to_f32(h).to_bits()).collect();
    f32_to_f16(gpu, c, &decoded, "all 65,536 decoded halves").await;
    f32_to_f16(gpu, c, &tricky_f32(), "rounding edge cases").await;
    for &(n, grid) in SIZES_1D {
        gpu.set_grid_limit(grid);
        let some: Vec<u16> = (0..n).map(|_| rng.below(65_536) as u16).collect();
        f16_to_f32(gpu, c, &some, &format!("n={n} random halves")).await;
        f32_to_f16(gpu, c, &random_f32(&mut rng, n), &format!("n={n} random f32")).await;
    }
}

pub async fn run(gpu: &Gpu, c: &mut Checks) {
    dequantize(gpu, c).await;
    casts(gpu, c).await;
}

crate::device_test!(quant_kernels_match_reference, run, checks);

/// The references against IEEE facts: every non-NaN half round-trips, NaNs stay NaN both
/// ways, and rounding matches a brute-force nearest-half search (ties to the even encoding).
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn quant_f16_reference_is_ieee() {
    let finite: Vec<(f64, u16)> = (0u16..0x7C00).map(|h| (reference::f16_to_f32(h) as f64, h)).collect();
    for h in 0..=u16::MAX {
        let x = reference::f16_to_f32(h);
        if (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0 {
            assert!(x.is_nan() && reference::f32_to_f16(x) == h | 0x200, "NaN {h:#06x}");
        } else {
            assert_eq!(reference::f32_to_f16(x), h, "round trip of {h:#06x} ({x:e})");
        }
    }
    assert_eq!(reference::f16_to_f32(0x0001), 2f32.powi(-24));
    assert_eq!(reference::f16_to_f32(0x7BFF), 65504.0);
    assert_eq!(reference::f16_to_f32(0x8000).to_bits(), 0x8000_0000);
    let mut rng = Rng::new(13);
    let brute = |a: f64| -> u16 {
        // Nearest finite half by search; past 65504 + half an ulp it is Inf.
        if a >= 65520.0 {
            return 0x7C00;
        }
        let i = finite.partition_point(|&(v, _)| v < a).min(finite.len() - 1);
        let (hi, hb) = finite[i];
        if i == 0 {
            return hb;
        }
        let (lo, lb) = finite[i - 1];
        match (a - lo).total_cmp(&(hi - a)) {
            std::cmp::Ordering::Less => lb,
            std::cmp::Ordering::Greater => hb,
            std::cmp::Ordering::Equal => {
                if lb % 2 == 0 {
                    lb
                } else {
                    hb
                }
            }
        }
    };
    for bits in random_f32(&mut rng, 200_000).into_iter().chain(tricky_f32()) {
        let x = f32::from_bits(bits);
        if x.is_nan() {
            continue;
        }
        let want = brute((x as f64).abs()) | ((bits >> 16) & 0x8000) as u16;
        assert_eq!(reference::f32_to_f16(x), want, "{x:e} ({bits:#010x})");
    }
}
