//! GPU-vs-reference checks for shaders/conv.wgsl, and a finite-difference check of the
//! reference backward. Each output and input gradient is at most four f32 terms of values in
//! [-2, 2] (|out| <= 13): f32 rounding (fma or not) stays below 4·13·2^-24 ≈ 3e-6, so atol
//! 1e-5 with rtol 1e-5. A weight gradient sums B·T products of magnitude <= 4: f32
//! accumulation errs by about B·T·4·2^-24, so atol 1e-5 + 4e-7·B·T, rtol 1e-5.

use kiln::kernels::conv::{self as cv, reference, ConvShape};
use kiln::{Gpu, KilnError};

use crate::common::*;

const ATOL: f64 = 1e-5;
const RTOL: f64 = 1e-5;

pub async fn conv1d(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(21);
    // (dim, seq_len, grid limit): seq_len 1 (both taps are padding), a single channel,
    // sizes that are not multiples of 64, and one launch on a 2-D grid (37·130 = 4810
    // elements = 76 workgroups over a limit of 5).
    let shapes = [(4, 1, 65_535), (1, 2, 65_535), (3, 7, 65_535), (5, 100, 65_535), (37, 130, 5)];
    for (dim, seq_len, grid) in shapes {
        gpu.set_grid_limit(grid);
        let n = dim * seq_len;
        let (input, in64) = random_tensor(gpu, &mut rng, "input", &[dim, seq_len], -2.0, 2.0);
        let (weight, w64) = random_tensor(gpu, &mut rng, "weight", &[dim, 3], -2.0, 2.0);
        let (bias, b64) = random_tensor(gpu, &mut rng, "bias", &[dim], -1.0, 1.0);
        let out = gpu.tensor("out", &[dim, seq_len]).unwrap();
        let op = cv::conv1d(gpu, &input, &weight, &bias, &out, dim, seq_len).unwrap();
        if grid < 65_535 {
            assert!(op.workgroups[1] > 1, "expected a 2-D grid, got {:?}", op.workgroups);
        }
        gpu.run(&[&op]).unwrap();
        let want = reference::conv1d(&in64, &w64, &b64, dim, seq_len);
        let label = format!("dim={dim} seq_len={seq_len} (n={n})");
        c.close("conv1d", &label, &read(gpu, &out).await, &want, ATOL, RTOL);

        // Mismatched lengths are errors naming the tensor, not out-of-bounds reads.
        let err = cv::conv1d(gpu, &input, &bias, &bias, &out, dim, seq_len).err();
        assert!(matches!(err, Some(KilnError::InvalidInput { ref field, .. }) if field == "bias"), "{err:?}");
        let err = cv::conv1d(gpu, &input, &weight, &bias, &out, dim, 0).err();
        assert!(matches!(err, Some(KilnError::InvalidInput { ref field, .. }) if field == "seq_len"), "{err:?}");
    }
}

/// The causal and centred convolutions over both layouts and batches, forward and backward.
pub async fn conv1d_shaped(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(22);
    // (batch, dim, seq_len, causal, token_major, grid limit): a Llama's causal token-major use,
    // the seed's layout batched, one position, ragged sizes, and a 2-D grid.
    let shapes = [
        (2, 5, 7, true, true, 65_535),
        (3, 4, 6, false, false, 65_535),
        (1, 3, 1, true, true, 65_535),
        (2, 3, 9, true, false, 65_535),
        (4, 33, 17, false, true, 65_535),
        (3, 40, 50, true, true, 7),
    ];
    for (batch, dim, seq_len, causal, token_major, grid) in shapes {
        gpu.set_grid_limit(grid);
        let sh = ConvShape { batch, dim, seq_len, causal, token_major };
        let n = batch * dim * seq_len;
        let (input, in64) = random_tensor(gpu, &mut rng, "input", &[n], -2.0, 2.0);
        let (weight, w64) = random_tensor(gpu, &mut rng, "weight", &[dim, 3], -2.0, 2.0);
        let (bias, b64) = random_tensor(gpu, &mut rng, "bias", &[dim], -1.0, 1.0);
        let (d_out, g64) = random_tensor(gpu, &mut rng, "d_out", &[n], -1.0, 1.0);
        // The weight gradients accumulate onto what is there.
        let (d_weight, dw0) = random_tensor(gpu, &mut rng, "d_weight", &[dim, 3], -1.0, 1.0);
        let (d_bias, db0) = random_tensor(gpu, &mut rng, "d_bias", &[dim], -1.0, 1.0);
        let (out, d_input) = (gpu.tensor("out", &[n]).unwrap(), gpu.tensor("d_input", &[n]).unwrap());
        let ops = [
            cv::conv1d_shaped(gpu, &input, &weight, &bias, &out, sh).unwrap(),
            cv::conv1d_backward_input(gpu, &d_out, &weight, &d_input, sh).unwrap(),
            cv::conv1d_backward_weight(gpu, &d_out, &input, &d_weight, &d_bias, sh).unwrap(),
        ];
        if grid < 65_535 {
            assert!(ops[0].workgroups[1] > 1, "expected a 2-D grid, got {:?}", ops[0].workgroups);
        }
        gpu.run(&ops.iter().collect::<Vec<_>>()).unwrap();
        let label = format!("{sh:?}");
        c.close("conv1d", &label, &read(gpu, &out).await, &reference::conv1d_shaped(&in64, &w64, &b64, &sh), ATOL, RTOL);
        let (di, dw, db) = reference::conv1d_backward(&in64, &w64, &g64, &sh);
        c.close("conv1d_backward_input", &label, &read(gpu, &d_input).await, &di, ATOL, RTOL);
        let plus = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x + y).collect::<Vec<_>>();
        let atol = ATOL + 4e-7 * (batch * seq_len) as f64;
        c.close("conv1d_backward_weight", &format!("{label} weights"), &read(gpu, &d_weight).await, &plus(&dw0, &dw), atol, RTOL);
        c.close("conv1d_backward_weight", &format!("{label} bias"), &read(gpu, &d_bias).await, &plus(&db0, &db), atol, RTOL);

        let err = cv::conv1d_backward_weight(gpu, &d_out, &input, &d_bias, &d_bias, sh).err();
        assert!(matches!(err, Some(KilnError::InvalidInput { ref field, .. }) if field == "d_bias"), "{err:?}");
    }
}

crate::device_test!(conv_kernels_match_reference, conv1d, checks);
crate::device_test!(conv_shaped_kernels_match_reference, conv1d_shaped, checks);

/// The reference backward is the gradient of the reference forward, for every shape kind.
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn conv_reference_backward_matches_finite_differences() {
    let mut rng = Rng::new(24);
    for (causal, token_major) in [(true, true), (false, false), (true, false), (false, true)] {
        let sh = ConvShape { batch: 2, dim: 3, seq_len: 5, causal, token_major };
        let n = 30;
        let x: Vec<f64> = (0..n).map(|_| rng.range(-2.0, 2.0)).collect();
        let w: Vec<f64> = (0..9).map(|_| rng.range(-2.0, 2.0)).collect();
        let bias: Vec<f64> = (0..3).map(|_| rng.range(-1.0, 1.0)).collect();
        let g: Vec<f64> = (0..n).map(|_| rng.range(-1.0, 1.0)).collect();
        let (di, dw, db) = reference::conv1d_backward(&x, &w, &g, &sh);
        let what = format!("{sh:?}");
        assert_close(&format!("d_input {what}"), &to32(&di), &numeric_grad(|v| dot(&reference::conv1d_shaped(v, &w, &bias, &sh), &g), &x, 1e-6), 1e-6, 1e-5);
        assert_close(&format!("d_weight {what}"), &to32(&dw), &numeric_grad(|v| dot(&reference::conv1d_shaped(&x, v, &bias, &sh), &g), &w, 1e-6), 1e-6, 1e-5);
        assert_close(&format!("d_bias {what}"), &to32(&db), &numeric_grad(|v| dot(&reference::conv1d_shaped(&x, &w, v, &sh), &g), &bias, 1e-6), 1e-6, 1e-5);
    }
}

/// Causal taps never read the future: output s depends on inputs s−2, s−1 and s only.
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn causal_conv_reference_by_hand() {
    // One token-major sequence of 4 positions, 1 channel: w = [1, 10, 100], bias 0.
    let sh = ConvShape::causal_tokens(1, 4, 1);
    let got = reference::conv1d_shaped(&[1.0, 2.0, 3.0, 4.0], &[1.0, 10.0, 100.0], &[0.0], &sh);
    assert_eq!(got, [100.0, 10.0 + 200.0, 1.0 + 20.0 + 300.0, 2.0 + 30.0 + 400.0]);
}

/// The reference against a hand-computed case: edges see zero padding, the middle all taps.
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn conv_reference_by_hand() {
    // Channel 0: x = [1, 2, 3], w = [10, 100, 1000], bias 0.5.
    // Channel 1: x = [4, 5, 6], w = [1, 0, -1], bias 0.
    let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let w = [10.0, 100.0, 1000.0, 1.0, 0.0, -1.0];
    let got = reference::conv1d(&x, &w, &[0.5, 0.0], 2, 3);
    let want = [0.5 + 100.0 + 2000.0, 0.5 + 10.0 + 200.0 + 3000.0, 0.5 + 20.0 + 300.0, -5.0, 4.0 - 6.0, 5.0];
    assert_eq!(got, want);
}
