//! GPU-vs-reference checks for shaders/conv.wgsl. Each output is bias plus at most three f32
//! products of values in [-2, 2] (|out| <= 13): f32 rounding (fma or not) stays below
//! 4·13·2^-24 ≈ 3e-6, so atol 1e-5 with rtol 1e-5.

use kiln::kernels::conv::{self as cv, reference};
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

crate::device_test!(conv_kernels_match_reference, conv1d, checks);

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
