//! GPU-vs-reference checks for shaders/norm.wgsl, and finite-difference checks of the
//! reference backwards.
//!
//! Tolerances: forward values are O(1..10) products of f32 inputs with one 256-way tree sum
//! (mean of squares): atol 1e-5, rtol 1e-5 is ~100 ulp. The backward's dx subtracts two terms
//! of similar size (rstd·w·g and x·k), so it gets rtol 1e-4; dweight sums up to 1,030 rows of
//! O(4) terms (in row chunks of up to 150, then the chunks) in another order than the
//! reference: atol 1e-4 with rtol 1e-4 (the sums reach ~30, so rtol gives them ~3e-3).

use kiln::kernels::matmul::Unreduced;
use kiln::kernels::norm::{self, reference};
use kiln::{Gpu, KilnError};

use crate::common::*;

const EPS: f32 = 1e-5;
const FWD_ATOL: f64 = 1e-5;
const FWD_RTOL: f64 = 1e-5;
const BWD_ATOL: f64 = 1e-4;
const BWD_RTOL: f64 = 1e-4;

/// (rows, C, grid limit): C under a workgroup, a non-multiple of 64/256 looping past 256,
/// rows on a 2-D grid (37 rows with a limit of 5; dweight's 7 channel blocks too), C > 256·3,
/// C past the 4·256 the backward keeps in registers (the rest read twice), and batches long
/// enough that dweight is summed in row chunks (8 chunks, the last one short; 4 chunks on a
/// 2-D grid of channel blocks and rows).
const SHAPES: &[(usize, usize, u32)] =
    &[(4, 64, 65_535), (7, 300, 65_535), (37, 200, 5), (9, 1_000, 3), (3, 2_100, 65_535), (1_030, 40, 65_535), (600, 300, 3)];

async fn forward(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(11);
    for &(rows, ch, limit) in SHAPES {
        gpu.set_grid_limit(limit);
        let label = format!("rows={rows} C={ch}");
        let (x, x64) = random_tensor(gpu, &mut rng, "x", &[rows, ch], -2.0, 2.0);
        let (res, res64) = random_tensor(gpu, &mut rng, "residual", &[rows, ch], -2.0, 2.0);
        let (w, w64) = random_tensor(gpu, &mut rng, "weight", &[ch], -2.0, 2.0);
        let out = gpu.tensor("out", &[rows, ch]).unwrap();
        let rstd = gpu.tensor("rstd", &[rows]).unwrap();
        let op = norm::rms_norm(gpu, &x, &w, &out, &rstd, EPS).unwrap();
        assert_eq!(op.workgroups[1] > 1, rows > limit as usize, "2-D grid expected iff rows > limit");
        gpu.run(&[&op]).unwrap();
        let (want, want_rstd) = reference::rms_norm(&x64, &w64, EPS as f64);
        c.close("rms_norm", &format!("out {label}"), &read(gpu, &out).await, &want, FWD_ATOL, FWD_RTOL);
        c.close("rms_norm", &format!("rstd {label}"), &read(gpu, &rstd).await, &want_rstd, FWD_ATOL, FWD_RTOL);

        let sum = gpu.tensor("sum", &[rows, ch]).unwrap();
        gpu.run(&[&norm::rms_norm_residual(gpu, &x, &res, &w, &sum, &out, &rstd, EPS).unwrap()]).unwrap();
        let (want_sum, want, want_rstd) = reference::rms_norm_residual(&x64, &res64, &w64, EPS as f64);
        let e = "rms_norm_residual";
        c.close(e, &format!("sum {label}"), &read(gpu, &sum).await, &want_sum, FWD_ATOL, FWD_RTOL);
        c.close(e, &format!("out {label}"), &read(gpu, &out).await, &want, FWD_ATOL, FWD_RTOL);
        c.close(e, &format!("rstd {label}"), &read(gpu, &rstd).await, &want_rstd, FWD_ATOL, FWD_RTOL);

        // The residual as three split partials, added in order (p0 + p1 + p2 in f32).
        let parts32 = rng.vec_f32(3 * rows * ch, -1.0, 1.0);
        let len = rows * ch;
        let res32: Vec<f32> = (0..len).map(|i| parts32[i] + parts32[len + i] + parts32[2 * len + i]).collect();
        let parts = gpu.tensor_from("residual partials", &[3 * len], &parts32).unwrap();
        let residual = Unreduced { parts, splits: 3, c: res.clone() };
        gpu.run(&[&norm::rms_norm_residual_unreduced(gpu, &x, &residual, &w, &sum, &out, &rstd, EPS).unwrap()]).unwrap();
        let (want_sum, want, _) = reference::rms_norm_residual(&x64, &f64s(&res32), &w64, EPS as f64);
        let label = format!("{label}, residual in 3 partials");
        c.close(e, &format!("sum {label}"), &read(gpu, &sum).await, &want_sum, FWD_ATOL, FWD_RTOL);
        c.close(e, &format!("out {label}"), &read(gpu, &out).await, &want, FWD_ATOL, FWD_RTOL);
    }
}

async fn backward(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(12);
    for &(rows, ch, limit) in SHAPES {
        gpu.set_grid_limit(limit);
        let (x, x64) = random_tensor(gpu, &mut rng, "x", &[rows, ch], -2.0, 2.0);
        let (w, w64) = random_tensor(gpu, &mut rng, "weight", &[ch], -2.0, 2.0);
        let (g, g64) = random_tensor(gpu, &mut rng, "dout", &[rows, ch], -1.0, 1.0);
        // The kernels get the reference rstd (rounded to f32) so only the backward is tested.
        let (_, rstd64) = reference::rms_norm(&x64, &w64, EPS as f64);
        let rstd_f32 = to32(&rstd64);
        let rstd = gpu.tensor_from("rstd", &[rows], &rstd_f32).unwrap();
        let rstd64 = f64s(&rstd_f32);
        let want_dx = reference::rms_norm_backward(&g64, &x64, &w64, &rstd64);
        let want_dw = reference::rms_norm_backward_weight(&g64, &x64, &rstd64, ch);
        for accumulate in [false, true] {
            let label = format!("rows={rows} C={ch} accumulate={accumulate}");
            // Garbage in dx must be overwritten without accumulate and kept under it.
            let (dx, dx0) = random_tensor(gpu, &mut rng, "dx", &[rows, ch], -1.0, 1.0);
            let (dw, dw0) = random_tensor(gpu, &mut rng, "dweight", &[ch], -1.0, 1.0);
            let grads = norm::NormGrads { dx: &dx, accumulate, dweight: &dw };
            let ops = norm::rms_norm_backward(gpu, &Unreduced::whole(&g), &x, &w, &rstd, grads, None).unwrap();
            assert_eq!(ops.len(), if rows >= 256 { 2 } else { 1 }, "dweight in row chunks, then their sum, iff the batch is long");
            gpu.run(&ops.iter().collect::<Vec<_>>()).unwrap();
            let want: Vec<f64> = if accumulate { want_dx.iter().zip(&dx0).map(|(a, b)| a + b).collect() } else { want_dx.clone() };
            c.close("rms_norm_backward", &format!("dx {label}"), &read(gpu, &dx).await, &want, BWD_ATOL, BWD_RTOL);
            // dweight always accumulates.
            let want: Vec<f64> = want_dw.iter().zip(&dw0).map(|(a, b)| a + b).collect();
            c.close("rms_norm_backward", &format!("dweight {label}"), &read(gpu, &dw).await, &want, BWD_ATOL, BWD_RTOL);
        }
    }
}

/// dout as three split partials (a split-K input gradient left unreduced): dx and dweight
/// against the reference at their f32 sum, and bit for bit those of the same kernel given that
/// sum (p0 + p1 + p2, in order, as matmul_split_reduce would add it).
async fn backward_unreduced(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(13);
    for &(rows, ch, limit) in SHAPES {
        gpu.set_grid_limit(limit);
        let len = rows * ch;
        let (x, x64) = random_tensor(gpu, &mut rng, "x", &[rows, ch], -2.0, 2.0);
        let (w, w64) = random_tensor(gpu, &mut rng, "weight", &[ch], -2.0, 2.0);
        let parts32 = rng.vec_f32(3 * len, -1.0, 1.0);
        let g32: Vec<f32> = (0..len).map(|i| parts32[i] + parts32[len + i] + parts32[2 * len + i]).collect();
        let (_, rstd64) = reference::rms_norm(&x64, &w64, EPS as f64);
        let rstd = gpu.tensor_from("rstd", &[rows], &to32(&rstd64)).unwrap();
        let rstd64 = f64s(&to32(&rstd64));
        let dx0 = rng.vec_f32(len, -1.0, 1.0);
        let dw0 = rng.vec_f32(ch, -1.0, 1.0);
        // (dx, dweight) from dout given as `splits` partials of `values`.
        let run = |values: &[f32], splits: usize| {
            let dx = gpu.tensor_from("dx", &[rows, ch], &dx0).unwrap();
            let dw = gpu.tensor_from("dweight", &[ch], &dw0).unwrap();
            let parts = gpu.tensor_from("dout partials", &[splits * len], values).unwrap();
            let dout = Unreduced { parts, splits, c: gpu.tensor("dout", &[rows, ch]).unwrap() };
            let ops = norm::rms_norm_backward(gpu, &dout, &x, &w, &rstd, norm::NormGrads { dx: &dx, accumulate: true, dweight: &dw }, None).unwrap();
            gpu.run(&ops.iter().collect::<Vec<_>>()).unwrap();
            (dx, dw)
        };
        let (dx, dw) = run(&parts32, 3);
        let (dx_summed, dw_summed) = run(&g32, 1);
        let label = format!("rows={rows} C={ch}, dout in 3 partials");
        let g64 = f64s(&g32);
        let want: Vec<f64> = reference::rms_norm_backward(&g64, &x64, &w64, &rstd64).iter().zip(&dx0).map(|(a, b)| a + *b as f64).collect();
        let got_dx = read(gpu, &dx).await;
        c.close("rms_norm_backward", &format!("dx {label}"), &got_dx, &want, BWD_ATOL, BWD_RTOL);
        let want: Vec<f64> = reference::rms_norm_backward_weight(&g64, &x64, &rstd64, ch).iter().zip(&dw0).map(|(a, b)| a + *b as f64).collect();
        let got_dw = read(gpu, &dw).await;
        c.close("rms_norm_backward", &format!("dweight {label}"), &got_dw, &want, BWD_ATOL, BWD_RTOL);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        c.exact("rms_norm_backward", &format!("dx {label}: as from their sum"), &bits(&got_dx), &bits(&read(gpu, &dx_summed).await));
        c.exact("rms_norm_backward", &format!("dweight {label}: as from their sum"), &bits(&got_dw), &bits(&read(gpu, &dw_summed).await));
    }
}

/// Bad lengths and eps are errors naming the tensor or field, never panics.
pub async fn validation(gpu: &Gpu, _c: &mut Checks) {
    let x = gpu.tensor("x", &[3, 10]).unwrap();
    let w = gpu.tensor("w", &[7]).unwrap();
    let w10 = gpu.tensor("w10", &[10]).unwrap();
    let out = gpu.tensor("out", &[3, 10]).unwrap();
    let rstd = gpu.tensor("rstd", &[3]).unwrap();
    let rstd_bad = gpu.tensor("rstd_bad", &[4]).unwrap();
    let field = |r: kiln::Result<kiln::Op>| match r {
        Err(KilnError::InvalidInput { field, .. }) => field,
        other => panic!("expected InvalidInput, got {:?}", other.map(|o| o.entry)),
    };
    assert_eq!(field(norm::rms_norm(gpu, &x, &w, &out, &rstd, EPS)), "x");
    assert_eq!(field(norm::rms_norm(gpu, &x, &w10, &out, &rstd_bad, EPS)), "rstd_bad");
    assert_eq!(field(norm::rms_norm(gpu, &x, &w10, &out, &rstd, f32::NAN)), "eps");
    let backward = |rstd: &kiln::Tensor, dweight: &kiln::Tensor| {
        let grads = norm::NormGrads { dx: &out, accumulate: false, dweight };
        norm::rms_norm_backward(gpu, &Unreduced::whole(&x), &x, &w10, rstd, grads, None).map(|mut ops| ops.remove(0))
    };
    assert_eq!(field(backward(&rstd_bad, &w10)), "rstd_bad");
    assert_eq!(field(backward(&rstd, &w)), "w");
}

pub async fn run(gpu: &Gpu, c: &mut Checks) {
    forward(gpu, c).await;
    backward(gpu, c).await;
    backward_unreduced(gpu, c).await;
}

crate::device_test!(norm_kernels_match_reference, run, checks);
crate::device_test!(norm_wrappers_reject_bad_input, validation, checks);

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn norm_reference_backwards_match_finite_differences() {
    let mut rng = Rng::new(13);
    let (rows, ch) = (3, 5);
    let x: Vec<f64> = (0..rows * ch).map(|_| rng.range(-2.0, 2.0)).collect();
    let w: Vec<f64> = (0..ch).map(|_| rng.range(-2.0, 2.0)).collect();
    let g: Vec<f64> = (0..rows * ch).map(|_| rng.range(-1.0, 1.0)).collect();
    let eps = 1e-5;
    let (_, rstd) = reference::rms_norm(&x, &w, eps);
    let nx = numeric_grad(|x| dot(&reference::rms_norm(x, &w, eps).0, &g), &x, 1e-6);
    let nw = numeric_grad(|w| dot(&reference::rms_norm(&x, w, eps).0, &g), &w, 1e-6);
    assert_close("rms_norm dx", &to32(&reference::rms_norm_backward(&g, &x, &w, &rstd)), &nx, 1e-6, 1e-5);
    assert_close("rms_norm dw", &to32(&reference::rms_norm_backward_weight(&g, &x, &rstd, ch)), &nw, 1e-6, 1e-5);
    // The fused forward's gradient w.r.t. x and residual is rms_norm_backward at their sum.
    let res: Vec<f64> = (0..rows * ch).map(|_| rng.range(-2.0, 2.0)).collect();
    let (sum, _, rstd) = reference::rms_norm_residual(&x, &res, &w, eps);
    let want = reference::rms_norm_backward(&g, &sum, &w, &rstd);
    let nr = numeric_grad(|r| dot(&reference::rms_norm_residual(&x, r, &w, eps).1, &g), &res, 1e-6);
    assert_close("rms_norm_residual d/residual", &to32(&want), &nr, 1e-6, 1e-5);
}
