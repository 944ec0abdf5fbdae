//! GPU-vs-reference checks for shaders/loss.wgsl (batched cross-entropy with its fused gradient,
//! the gradient-only backward, MSE and its backward), out-of-range targets, and
//! finite-difference checks of the reference backwards.
//!
//! Tolerances, cross-entropy: a row loss is (max − x_t) + log Σ, one f32 rounding of values up
//! to 160 (±80 logits) plus log of a sum of ≤ 5000 terms: atol 2e-5, rtol 1e-5. Gradients are
//! (p − onehot)·s with p = exp(·)/Σ a few ulp off (WGSL exp is 3 + 2|x| ulp) and p − 1 cancelling
//! to ~1e-6 absolute: atol 2e-6·|s|, rtol 5e-5. MSE: a sum of non-negative terms has relative
//! error ≤ depth·2^-24 (depth ≤ 31): rtol 4e-6; its backward is 4 roundings: rtol 1e-6.

use kiln::kernels::loss::{self as ls, reference};
use kiln::{Gpu, Tensor};

use crate::common::*;

/// (rows N, vocab V, grid limit, logit range): V from 2 to 5000, V not a multiple of 256,
/// ±80 logits, 13 rows on a 2-D grid of limit 5; the one-thread-per-row path (V ≤ 64) at
/// V = 2, 10 and 64 (700 rows: 11 workgroups on a 2-D grid of limit 5), the row path from 65.
const CE_SHAPES: &[(usize, usize, u32, f64)] = &[
    (1, 2, 65_535, 4.0),
    (700, 10, 5, 4.0),
    (40, 64, 65_535, 80.0),
    (5, 65, 65_535, 4.0),
    (7, 300, 65_535, 4.0),
    (3, 5_000, 65_535, 8.0),
    (13, 257, 5, 4.0),
    (6, 1_000, 65_535, 80.0),
];

fn targets_below(rng: &mut Rng, n: usize, vocab: usize) -> Vec<u32> {
    (0..n).map(|_| rng.below(vocab) as u32).collect()
}

async fn cross_entropy(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(21);
    for &(n, vocab, grid, range) in CE_SHAPES {
        gpu.set_grid_limit(grid);
        let (logits, x64) = random_tensor(gpu, &mut rng, "logits", &[n, vocab], -range, range);
        let t = targets_below(&mut rng, n, vocab);
        ls::check_targets(&t, vocab).unwrap();
        let targets = gpu.tensor_from("targets", &[n], &t).unwrap();
        let row_loss = gpu.tensor("row_loss", &[n]).unwrap();
        let loss = gpu.tensor("loss", &[1]).unwrap();
        let dlogits = gpu.tensor("dlogits", &[n, vocab]).unwrap();
        let ops = ls::cross_entropy(gpu, &logits, &targets, &row_loss, &loss, &dlogits).unwrap();
        if grid < 65_535 {
            assert!(ops[0].workgroups[1] > 1, "expected a 2-D grid, got {:?}", ops[0].workgroups);
        }
        gpu.run(&ops.iter().collect::<Vec<_>>()).unwrap();
        let label = format!("{n}x{vocab} ±{range}");
        let fused = if vocab <= ls::SMALL_VOCAB { "cross_entropy_loss_small" } else { "cross_entropy_loss" };
        let rows = reference::cross_entropy_rows(&x64, &t, vocab);
        c.close(fused, &format!("row loss {label}"), &read(gpu, &row_loss).await, &rows, 2e-5, 1e-5);
        let mean = reference::cross_entropy(&x64, &t, vocab);
        c.close(fused, &format!("mean {label}"), &read(gpu, &loss).await, &[mean], 2e-5, 1e-5);
        let grad = reference::cross_entropy_backward(&x64, &t, vocab, 1.0);
        let atol = 2e-6 / n as f64;
        c.close(fused, &format!("fused dlogits {label}"), &read(gpu, &dlogits).await, &grad, atol, 5e-5);

        let dloss_value = rng.range(-2.0, 2.0) as f32;
        let dloss = gpu.tensor_from("dloss", &[1], &[dloss_value]).unwrap();
        gpu.run(&[&ls::cross_entropy_backward(gpu, &logits, &targets, &dloss, &dlogits).unwrap()]).unwrap();
        let grad = reference::cross_entropy_backward(&x64, &t, vocab, dloss_value as f64);
        let atol = 2e-6 * (dloss_value as f64).abs() / n as f64;
        c.close("cross_entropy_backward", &format!("{label} dloss={dloss_value}"), &read(gpu, &dlogits).await, &grad, atol, 5e-5);
    }
}

/// Out-of-range targets: the host check names the first one; on the GPU its row loss is NaN
/// (so the mean is NaN) and its gradient row is 0, while the other rows stay right.
async fn bad_targets(gpu: &Gpu, c: &mut Checks) {
    let (n, vocab) = (4, 10);
    let t = [3u32, 10, 0, u32::MAX];
    let err = ls::check_targets(&t, vocab).unwrap_err().to_string();
    assert!(err.contains("position 1") && err.contains("10"), "{err}");
    let mut rng = Rng::new(22);
    let (logits, x64) = random_tensor(gpu, &mut rng, "logits", &[n, vocab], -3.0, 3.0);
    let targets = gpu.tensor_from("targets", &[n], &t).unwrap();
    let row_loss = gpu.tensor("row_loss", &[n]).unwrap();
    let loss = gpu.tensor("loss", &[1]).unwrap();
    let dlogits = gpu.tensor("dlogits", &[n, vocab]).unwrap();
    let ops = ls::cross_entropy(gpu, &logits, &targets, &row_loss, &loss, &dlogits).unwrap();
    gpu.run(&ops.iter().collect::<Vec<_>>()).unwrap();
    let got = read(gpu, &row_loss).await;
    assert!(got[1].is_nan() && got[3].is_nan(), "bad rows must be NaN: {got:?}");
    let rows = reference::cross_entropy_rows(&x64, &t, vocab);
    c.close_or_nan("cross_entropy_loss_small", "bad targets: row loss", &got, &rows, 2e-5, 1e-5);
    assert!(read(gpu, &loss).await[0].is_nan(), "the mean over a bad row must be NaN");
    let grad = reference::cross_entropy_backward(&x64, &t, vocab, 1.0);
    assert!(grad[vocab..2 * vocab].iter().all(|&g| g == 0.0));
    c.close("cross_entropy_loss_small", "bad targets: dlogits", &read(gpu, &dlogits).await, &grad, 2e-6 / n as f64, 5e-5);
    let dloss = gpu.tensor_from("dloss", &[1], &[1.0f32]).unwrap();
    gpu.run(&[&ls::cross_entropy_backward(gpu, &logits, &targets, &dloss, &dlogits).unwrap()]).unwrap();
    c.close("cross_entropy_backward", "bad targets", &read(gpu, &dlogits).await, &grad, 2e-6 / n as f64, 5e-5);
}

/// Mismatched shapes are typed errors naming the tensor.
async fn rejects_bad_shapes(gpu: &Gpu, _c: &mut Checks) {
    let logits = gpu.tensor("logits", &[4, 10]).unwrap();
    let targets = gpu.tensor("targets3", &[3]).unwrap();
    let (rows, dl) = (gpu.tensor("rows", &[4]).unwrap(), gpu.tensor("dl", &[4, 10]).unwrap());
    let err = ls::cross_entropy_loss(gpu, &logits, &targets, &rows, &dl).err().unwrap().to_string();
    assert!(err.contains("targets3"), "{err}");
    let two: Tensor = gpu.tensor("two", &[2]).unwrap();
    assert!(ls::mse_loss(gpu, &rows, &rows, &two).is_err(), "loss must be a 1-element buffer");
}

/// (N, grid limit): 1 element, SIZES_1D (7, a non-multiple of 64/256, a 2-D grid), and 10^6.
async fn mse(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(23);
    let sizes = [(1, 65_535)].iter().chain(SIZES_1D).chain(&[(1_000_000, 65_535)]).cloned().collect::<Vec<_>>();
    for (n, grid) in sizes {
        gpu.set_grid_limit(grid);
        let (pred, p64) = random_tensor(gpu, &mut rng, "pred", &[n], -2.0, 2.0);
        let (target, t64) = random_tensor(gpu, &mut rng, "target", &[n], -2.0, 2.0);
        let loss = gpu.tensor("loss", &[1]).unwrap();
        let ops = ls::mse_loss(gpu, &pred, &target, &loss).unwrap();
        if grid < 65_535 {
            assert!(ops[0].workgroups[1] > 1, "expected a 2-D grid, got {:?}", ops[0].workgroups);
        }
        gpu.run(&ops.iter().collect::<Vec<_>>()).unwrap();
        c.close("mse_loss", &format!("n={n}"), &read(gpu, &loss).await, &[reference::mse(&p64, &t64)], 0.0, 4e-6);

        let dloss_value = rng.range(-2.0, 2.0) as f32;
        let dloss = gpu.tensor_from("dloss", &[1], &[dloss_value]).unwrap();
        let grad = gpu.tensor("grad", &[n]).unwrap();
        gpu.run(&[&ls::mse_loss_backward(gpu, &pred, &target, &dloss, &grad).unwrap()]).unwrap();
        let want = reference::mse_backward(&p64, &t64, dloss_value as f64);
        c.close("mse_loss_backward", &format!("n={n}"), &read(gpu, &grad).await, &want, 1e-30, 1e-6);
    }
}

pub async fn run(gpu: &Gpu, c: &mut Checks) {
    cross_entropy(gpu, c).await;
    bad_targets(gpu, c).await;
    rejects_bad_shapes(gpu, c).await;
    mse(gpu, c).await;
}

crate::device_test!(loss_kernels_match_reference, run, checks);

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn loss_reference_backwards_match_finite_differences() {
    let mut rng = Rng::new(24);
    let dloss = 0.7;
    for (n, vocab) in [(1, 2), (3, 5), (4, 9)] {
        let x: Vec<f64> = (0..n * vocab).map(|_| rng.range(-3.0, 3.0)).collect();
        let t = targets_below(&mut rng, n, vocab);
        let numeric = numeric_grad(|x| dloss * reference::cross_entropy(x, &t, vocab), &x, 1e-6);
        let analytic = reference::cross_entropy_backward(&x, &t, vocab, dloss);
        assert_close(&format!("d CE/d logits {n}x{vocab}"), &to32(&analytic), &numeric, 1e-8, 1e-6);
    }
    let p: Vec<f64> = (0..11).map(|_| rng.range(-2.0, 2.0)).collect();
    let t: Vec<f64> = (0..11).map(|_| rng.range(-2.0, 2.0)).collect();
    let numeric = numeric_grad(|p| dloss * reference::mse(p, &t), &p, 1e-6);
    assert_close("d MSE/d pred", &to32(&reference::mse_backward(&p, &t, dloss)), &numeric, 1e-8, 1e-6);
}
