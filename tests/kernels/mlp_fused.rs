//! The fused small-MLP step (forward, loss, backward) against its f64 reference: one layer to
//! four, widths 1 to 32 (both row kernels) and to 64 (the per-neuron one), every activation,
//! cross-entropy and MSE, batches that leave the last workgroup partly empty or give a workgroup
//! several passes of rows, a label out of range, gradients accumulated onto nonzero values, and
//! workgroups folded into a 2-D grid.

use kiln::kernels::elementwise::Activation;
use kiln::kernels::mlp_fused::{self as mf, reference, FusedLayer, FusedLoss};
use kiln::Gpu;

use crate::common::*;

/// f32 dot products of ≤ 64 terms, and sums over ≤ 4,100 rows of values of order 1 taken in
/// pieces (≤ 16 rows a pass, ≤ 2 passes a slot, then ≤ 256 slots in order).
const ATOL: f64 = 2e-5;
const RTOL: f64 = 1e-4;

/// Layers chained through `widths`, each tensor at an offset rounded up to 8 (so the flat
/// buffer has padding the kernels must leave alone), and the total length.
fn layout(widths: &[usize]) -> (Vec<FusedLayer>, usize) {
    let mut at = 0;
    let mut layers = vec![];
    for w in widths.windows(2) {
        let (fan_in, out) = (w[0], w[1]);
        let wo = at;
        let b = (wo + fan_in * out).next_multiple_of(8);
        at = (b + out).next_multiple_of(8);
        layers.push(FusedLayer { w: wo, b, fan_in, out });
    }
    (layers, at + 5)
}

#[derive(Clone, Copy)]
struct Case {
    widths: &'static [usize],
    act: Activation,
    loss: FusedLoss,
    rows: usize,
    grid: u32,
    bad_label_at: Option<usize>,
}

async fn check(gpu: &Gpu, c: &mut Checks, rng: &mut Rng, kind: mf::FusedRows, case: Case) {
    gpu.set_grid_limit(case.grid);
    let (layers, total) = layout(case.widths);
    let (input, out) = (case.widths[0], case.widths[case.widths.len() - 1]);
    let (weights, w64) = random_tensor(gpu, rng, "weights", &[total], -0.6, 0.6);
    let (x, x64) = random_tensor(gpu, rng, "x", &[case.rows, input], -1.5, 1.5);
    let (targets, t64) = match case.loss {
        FusedLoss::Mse => random_tensor(gpu, rng, "targets", &[case.rows, out], -1.0, 1.0),
        FusedLoss::CrossEntropy => {
            let mut labels: Vec<u32> = (0..case.rows).map(|_| rng.below(out) as u32).collect();
            if let Some(r) = case.bad_label_at {
                labels[r] = out as u32;
            }
            let t = gpu.tensor_from("labels", &[case.rows], &labels).unwrap();
            (t, labels.iter().map(|&l| l as f64).collect())
        }
    };
    let (grads, g0) = random_tensor(gpu, rng, "grads", &[total], -0.1, 0.1);
    let loss = gpu.tensor("loss", &[1]).unwrap();
    let ops = mf::mlp_fused(gpu, kind, &layers, case.act, case.loss, &weights, &x, &targets, &grads, &loss).unwrap();
    // Twice, as every training step replays them: the partials from the first run must not leak
    // into the second, so the gradients gain exactly two batches' worth and the loss is one batch's.
    let all: Vec<_> = ops.iter().collect();
    gpu.run(&all).unwrap();
    gpu.run(&all).unwrap();
    let (want_loss, dg) = reference::loss_and_grads(&layers, case.act, case.loss, &w64, &x64, &t64);
    let want_grads: Vec<f64> = g0.iter().zip(&dg).map(|(a, b)| a + 2.0 * b).collect();
    let label = format!("{:?} {:?} {:?} rows {}", case.widths, case.act, case.loss, case.rows);
    let rows_entry = if kind == mf::FusedRows::PerNeuron { "mlp_fused_rows" } else { "mlp_fused_rows_serial" };
    let got_loss = read(gpu, &loss).await;
    if want_loss.is_nan() {
        assert!(got_loss[0].is_nan(), "{label}: a label out of range must make the loss NaN, got {}", got_loss[0]);
    } else {
        c.close(rows_entry, &format!("loss {label}"), &got_loss, &[want_loss], ATOL, RTOL);
    }
    let got = read(gpu, &grads).await;
    c.close(rows_entry, &format!("grads {label}"), &got, &want_grads, ATOL, RTOL);
    c.close("mlp_fused_reduce", &format!("grads {label}"), &got, &want_grads, ATOL, RTOL);
}

pub async fn run(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(41);
    use Activation::*;
    use FusedLoss::*;
    let cases = [
        Case { widths: &[2, 16, 16, 2], act: Relu, loss: CrossEntropy, rows: 517, grid: 65_535, bad_label_at: None },
        Case { widths: &[1, 32, 32, 1], act: Tanh, loss: Mse, rows: 33, grid: 65_535, bad_label_at: None },
        Case { widths: &[3, 5], act: Silu, loss: CrossEntropy, rows: 1, grid: 65_535, bad_label_at: None },
        Case { widths: &[32, 32, 32, 32, 32], act: Relu, loss: CrossEntropy, rows: 70, grid: 65_535, bad_label_at: None },
        Case { widths: &[4, 7, 3], act: Silu, loss: Mse, rows: 200, grid: 2, bad_label_at: None },
        Case { widths: &[2, 8, 3], act: Tanh, loss: CrossEntropy, rows: 40, grid: 65_535, bad_label_at: Some(17) },
    ];
    // Both row kernels, whichever this adapter would pick.
    for kind in [mf::FusedRows::PerNeuron, mf::FusedRows::PerRow] {
        for case in &cases {
            check(gpu, c, &mut rng, kind, *case).await;
        }
    }
    // The per-neuron kernel's wider rows: 64 threads a row (4 rows a pass); 1,100 rows are 275
    // passes, more than its 256 slots, so slot 0..18 take two passes each; and a 2-D grid.
    let wide = [
        Case { widths: &[2, 64, 64, 2], act: Relu, loss: CrossEntropy, rows: 1100, grid: 65_535, bad_label_at: None },
        Case { widths: &[33, 40, 1], act: Tanh, loss: Mse, rows: 9, grid: 65_535, bad_label_at: None },
        Case { widths: &[5, 64, 17, 64, 3], act: Silu, loss: CrossEntropy, rows: 130, grid: 3, bad_label_at: None },
        Case { widths: &[2, 16, 16, 2], act: Relu, loss: Mse, rows: 4100, grid: 65_535, bad_label_at: None },
    ];
    for case in &wide {
        check(gpu, c, &mut rng, mf::FusedRows::PerNeuron, *case).await;
    }
}

async fn rejects_unfit(gpu: &Gpu, _c: &mut Checks) {
    let t = |n: usize| gpu.tensor("t", &[n]).unwrap();
    for (kind, widths, says) in [(mf::FusedRows::PerNeuron, [2, 65, 2], "width ≤ 64"), (mf::FusedRows::PerRow, [2, 33, 2], "width ≤ 32")] {
        let (layers, total) = layout(&widths);
        let err = mf::mlp_fused(gpu, kind, &layers, Activation::Relu, FusedLoss::CrossEntropy, &t(total), &t(4), &t(2), &t(total), &t(1)).err().unwrap();
        assert!(err.to_string().contains(says), "{kind:?}: {err}");
    }
}

crate::device_test!(mlp_fused_kernels_match_reference, run, checks);
crate::device_test!(mlp_fused_rejects_layers_it_cannot_take, rejects_unfit, checks);

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn mlp_fused_reference_gradients_match_finite_differences() {
    let (layers, total) = layout(&[3, 4, 2]);
    let mut rng = Rng::new(7);
    let w: Vec<f64> = (0..total).map(|_| rng.uniform() - 0.5).collect();
    let x: Vec<f64> = (0..15).map(|_| rng.uniform() * 2.0 - 1.0).collect();
    for (kind, targets) in [(FusedLoss::CrossEntropy, vec![0.0, 1.0, 1.0, 0.0, 1.0]), (FusedLoss::Mse, (0..10).map(|i| i as f64 * 0.1).collect())] {
        for act in [Activation::Relu, Activation::Silu, Activation::Tanh] {
            let (_, g) = reference::loss_and_grads(&layers, act, kind, &w, &x, &targets);
            for p in [layers[0].w, layers[0].w + 5, layers[0].b + 1, layers[1].w + 3, layers[1].b] {
                let h = 1e-6;
                let mut plus = w.clone();
                plus[p] += h;
                let mut minus = w.clone();
                minus[p] -= h;
                let numeric = (reference::loss_and_grads(&layers, act, kind, &plus, &x, &targets).0
                    - reference::loss_and_grads(&layers, act, kind, &minus, &x, &targets).0)
                    / (2.0 * h);
                assert!((numeric - g[p]).abs() < 1e-6, "{kind:?} {act:?} param {p}: numeric {numeric}, analytic {}", g[p]);
            }
        }
    }
}
