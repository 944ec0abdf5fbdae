//! GPU-vs-reference checks for shaders/softmax.wgsl, and finite-difference checks of the
//! reference backward.
//!
//! Tolerances: outputs lie in [0, 1]; f32 exp is a few ulp and the row sum a 256-way tree, so
//! atol 1e-6 + rtol 1e-5. The backward subtracts the row dot product Σ y·g from g, so its
//! absolute error follows |g| ~ 1 rather than the output: atol 1e-6 + rtol 1e-4.

use kiln::kernels::softmax::{self as sm, reference, Mask};
use kiln::Gpu;

use crate::common::*;

const ATOL: f64 = 1e-6;
const RTOL: f64 = 1e-5;
const BWD_RTOL: f64 = 1e-4;

/// (rows, len, grid limit, mask): a short row, a non-multiple of 64/256 looping past 256,
/// attention-shaped causal rows (B·H·T, T) on a 2-D grid (54 rows, limit 5), causal rows
/// longer than 64, and rows longer than 3·256 on a 2-D grid.
const CASES: &[(usize, usize, u32, Mask)] = &[
    (5, 10, 65_535, Mask::None),
    (6, 300, 65_535, Mask::None),
    (54, 9, 5, Mask::Causal { seq_len: 9 }),
    (140, 70, 65_535, Mask::Causal { seq_len: 70 }),
    (4, 1_000, 3, Mask::None),
];

/// Random values with every masked entry replaced by NaN: the kernels must never read them.
fn poisoned(rng: &mut Rng, rows: usize, len: usize, mask: Mask, lo: f64, hi: f64) -> Vec<f32> {
    let mut v = rng.vec_f32(rows * len, lo, hi);
    for row in 0..rows {
        for i in reference::kept(row, len, mask)..len {
            v[row * len + i] = f32::NAN;
        }
    }
    v
}

/// f64 copy with the masked entries at 0 (the references never read them either).
fn clean(v: &[f32], len: usize, mask: Mask) -> Vec<f64> {
    let mut out = f64s(v);
    for (row, r) in out.chunks_mut(len).enumerate() {
        r[reference::kept(row, len, mask)..].fill(0.0);
    }
    out
}

pub async fn run(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(21);
    for &(rows, len, limit, mask) in CASES {
        gpu.set_grid_limit(limit);
        let label = format!("rows={rows} len={len} {mask:?}");
        let xv = poisoned(&mut rng, rows, len, mask, -8.0, 8.0);
        let x = gpu.tensor_from("x", &[rows, len], &xv).unwrap();
        let out = gpu.tensor("out", &[rows, len]).unwrap();
        let op = sm::softmax(gpu, &x, &out, len, mask).unwrap();
        assert_eq!(op.workgroups[1] > 1, rows > limit as usize, "2-D grid expected iff rows > limit");
        gpu.run(&[&op]).unwrap();
        let y = reference::softmax(&clean(&xv, len, mask), len, mask);
        let got = read(gpu, &out).await;
        c.close("softmax", &label, &got, &y, ATOL, RTOL);
        let masked: Vec<f32> = (0..got.len()).filter(|&i| xv[i].is_nan()).map(|i| got[i]).collect();
        c.exact("softmax", &format!("masked outputs are 0, {label}"), &masked, &vec![0.0; masked.len()]);

        // The backward gets the reference y (as f32), NaN-poisoned where masked like g.
        let mut yv = to32(&y);
        let gv = poisoned(&mut rng, rows, len, mask, -1.0, 1.0);
        for (i, g) in gv.iter().enumerate() {
            if g.is_nan() {
                yv[i] = f32::NAN;
            }
        }
        let yt = gpu.tensor_from("y", &[rows, len], &yv).unwrap();
        let g = gpu.tensor_from("grad_out", &[rows, len], &gv).unwrap();
        let (gin, _) = random_tensor(gpu, &mut rng, "grad_in", &[rows, len], -1.0, 1.0);
        gpu.run(&[&sm::softmax_backward(gpu, &g, &yt, &gin, len, mask).unwrap()]).unwrap();
        let want = reference::softmax_backward(&clean(&gv, len, mask), &clean(&yv, len, mask), len, mask);
        let got = read(gpu, &gin).await;
        c.close("softmax_backward", &label, &got, &want, ATOL, BWD_RTOL);
        let masked: Vec<f32> = (0..got.len()).filter(|&i| gv[i].is_nan()).map(|i| got[i]).collect();
        c.exact("softmax_backward", &format!("masked grads are 0, {label}"), &masked, &vec![0.0; masked.len()]);
    }
    // Bad input is an error naming the field.
    let x = gpu.tensor("x", &[3, 10]).unwrap();
    let bad = sm::softmax(gpu, &x, &x, 7, Mask::None);
    assert!(matches!(bad, Err(kiln::KilnError::InvalidInput { field, .. }) if field == "x"));
    let bad = sm::softmax(gpu, &x, &x, 10, Mask::Causal { seq_len: 0 });
    assert!(matches!(bad, Err(kiln::KilnError::InvalidInput { field, .. }) if field == "seq_len"));
}

crate::device_test!(softmax_kernels_match_reference, run, checks);

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn softmax_reference_backward_matches_finite_differences() {
    let mut rng = Rng::new(22);
    let len = 6;
    for mask in [Mask::None, Mask::Causal { seq_len: 3 }, Mask::Causal { seq_len: 6 }] {
        let x: Vec<f64> = (0..4 * len).map(|_| rng.range(-3.0, 3.0)).collect();
        let g: Vec<f64> = (0..4 * len).map(|_| rng.range(-1.0, 1.0)).collect();
        let y = reference::softmax(&x, len, mask);
        let numeric = numeric_grad(|x| dot(&reference::softmax(x, len, mask), &g), &x, 1e-6);
        let got = to32(&reference::softmax_backward(&g, &y, len, mask));
        assert_close(&format!("softmax' {mask:?}"), &got, &numeric, 1e-6, 1e-5);
    }
}
