//! GPU-vs-reference checks for shaders/optimizer.wgsl: the gradient norm² over several tensors
//! (partials and total), clipping by a GPU-side norm, AdamW and SGD over several steps with
//! changing lr and t (with and without on-the-fly clipping) against f64 reference loops, the
//! NaN guard (a non-finite norm leaves weights and state bit-for-bit unchanged), the step's
//! closing sum of loss and norm, and gradient accumulate/scale.
//!
//! Tolerances: norm² sums non-negative terms, relative error ≤ depth·2^-24 (depth ≤ 31): rtol
//! 4e-6, partials atol 2e-6·Σg². Clipping adds half that through the sqrt: rtol 1e-5. Optimizer
//! steps compound a few f32 roundings per step over 5 steps, and AdamW's bias correction
//! 1 − β2^t is ~3e-5 relative off at small t in f32 (β2^t rounds near 1): w atol 2e-6 (lr 1e-2),
//! m, v rtol 2e-5. Accumulate/scale are one rounding: rtol 1e-6.

use kiln::kernels::loss::LossSum;
use kiln::kernels::optimizer::{self as opt, reference, AdamWParams, SgdParams};
use kiln::kernels::reduce;
use kiln::{Gpu, Op, Tensor};

use crate::common::*;

fn refs(ops: &[Op]) -> Vec<&Op> {
    ops.iter().collect()
}

/// (gradient sizes, grid limit): one tiny tensor, three tensors incl. a single element and a
/// non-multiple of 64/256, two tensors whose partials (17 + 2 groups) run on a 2-D grid, and
/// one past `MAX_PARTIALS` blocks (each workgroup then loops over two or three of them).
const NORM_CASES: &[(&[usize], u32)] = &[(&[7], 65_535), (&[1_000, 65, 1], 65_535), (&[4_099, 300], 5), (&[600_001], 65_535)];

async fn norm_and_clip(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(31);
    for &(sizes, grid) in NORM_CASES {
        gpu.set_grid_limit(grid);
        let grads: Vec<(Tensor, Vec<f64>)> = sizes.iter().map(|&n| random_tensor(gpu, &mut rng, "g", &[n], -1.0, 1.0)).collect();
        let tensors: Vec<&Tensor> = grads.iter().map(|(t, _)| t).collect();
        let partials = gpu.tensor("partials", &[opt::norm_partials_len(&tensors)]).unwrap();
        let norm_sq = gpu.tensor("norm_sq", &[1]).unwrap();
        let ops = opt::grad_norm_squared(gpu, &tensors, &partials, &norm_sq).unwrap();
        if grid < 65_535 {
            assert!(ops[0].workgroups[1] > 1, "expected a 2-D grid, got {:?}", ops[0].workgroups);
        }
        gpu.run(&refs(&ops)).unwrap();
        let label = format!("sizes {sizes:?}");
        let mut want = Vec::new();
        for (_, g64) in &grads {
            want.extend(reduce::reference::partials(g64, reduce::partial_groups(g64.len()), true));
        }
        let slices: Vec<&[f64]> = grads.iter().map(|(_, g)| g.as_slice()).collect();
        let total = reference::norm_squared(&slices);
        c.close("gradient_norm_squared", &format!("partials {label}"), &read(gpu, &partials).await, &want, 2e-6 * total, 0.0);
        c.close("gradient_norm_squared", &format!("total {label}"), &read(gpu, &norm_sq).await, &[total], 0.0, 4e-6);

        // Clip at half the norm (factor ≈ 0.5), then at twice it (factor 1: unchanged).
        let norm = total.sqrt();
        for (g, g64) in &grads {
            gpu.run(&[&opt::clip_grad_by_norm(gpu, g, &norm_sq, (0.5 * norm) as f32).unwrap()]).unwrap();
            let clipped = reference::clip(g64, total, (0.5 * norm) as f32 as f64);
            c.close("clip_grad_by_norm", &format!("half norm {label}"), &read(gpu, g).await, &clipped, 1e-12, 1e-5);
            gpu.run(&[&opt::clip_grad_by_norm(gpu, g, &norm_sq, (2.0 * norm) as f32).unwrap()]).unwrap();
            c.close("clip_grad_by_norm", &format!("twice norm {label}"), &read(gpu, g).await, &clipped, 1e-12, 1e-5);
        }
        // A non-finite norm leaves gradients alone (the optimizer then skips the step).
        let (g, _) = &grads[0];
        let before = gpu.read_u32(g).await.unwrap();
        gpu.write(&norm_sq, &[f32::NAN]).unwrap();
        gpu.run(&[&opt::clip_grad_by_norm(gpu, g, &norm_sq, 1.0).unwrap()]).unwrap();
        c.exact("clip_grad_by_norm", "NaN norm: untouched", &gpu.read_u32(g).await.unwrap(), &before);
    }
}

/// The step's closing sums: `loss_and_grad_norm` gives the norm² `grad_norm_squared` gives (bit
/// for bit: the same tree), the mean of the loss partials (rtol 4e-6, as the norm), and a
/// non-finite loss makes the norm non-finite; with no partials it leaves the loss as written.
async fn loss_and_grad_norm(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(37);
    let (g, _) = random_tensor(gpu, &mut rng, "g", &[4_099], -1.0, 1.0);
    let partials = gpu.tensor("partials", &[opt::norm_partials_len(&[&g])]).unwrap();
    let (norm_sq, loss) = (gpu.tensor("norm_sq", &[1]).unwrap(), gpu.tensor("loss", &[1]).unwrap());
    gpu.run(&refs(&opt::grad_norm_squared(gpu, &[&g], &partials, &norm_sq).unwrap())).unwrap();
    let norm_bits = gpu.read_u32(&norm_sq).await.unwrap();
    for rows in [1, 300, 1_000] {
        let (row_loss, r64) = random_tensor(gpu, &mut rng, "row loss", &[rows], 0.0, 4.0);
        let sum = LossSum { partials: row_loss.clone(), count: rows, scale: 1.0 / rows as f32 };
        let ops = opt::grad_norm_and_loss(gpu, &[&g], &partials, &norm_sq, &loss, Some(&sum)).unwrap();
        assert_eq!(ops.len(), 2, "one partials dispatch and one closing sum");
        gpu.run(&refs(&ops)).unwrap();
        c.exact("loss_and_grad_norm", &format!("norm² bits, {rows} rows"), &gpu.read_u32(&norm_sq).await.unwrap(), &norm_bits);
        let mean = r64.iter().sum::<f64>() / rows as f64;
        c.close("loss_and_grad_norm", &format!("mean loss, {rows} rows"), &read(gpu, &loss).await, &[mean], 0.0, 4e-6);
        for bad in [f32::NAN, f32::INFINITY] {
            gpu.write(&row_loss, &vec![bad; 1].into_iter().chain(std::iter::repeat_n(1.0, rows - 1)).collect::<Vec<_>>()).unwrap();
            gpu.run(&refs(&ops)).unwrap();
            let norm = read(gpu, &norm_sq).await[0];
            assert!(!norm.is_finite(), "a {bad} row loss must make norm² non-finite, got {norm}");
            c.pass("loss_and_grad_norm");
        }
    }
    // No partials: the loss the pass wrote stays, and still guards the norm.
    let ops = opt::grad_norm_and_loss(gpu, &[&g], &partials, &norm_sq, &loss, None).unwrap();
    gpu.write(&loss, &[2.5f32]).unwrap();
    gpu.run(&refs(&ops)).unwrap();
    c.exact("loss_and_grad_norm", "written loss kept", &read(gpu, &loss).await, &[2.5]);
    c.exact("loss_and_grad_norm", "written loss: norm² bits", &gpu.read_u32(&norm_sq).await.unwrap(), &norm_bits);
    gpu.write(&loss, &[f32::NAN]).unwrap();
    gpu.run(&refs(&ops)).unwrap();
    assert!(read(gpu, &norm_sq).await[0].is_nan(), "a NaN written loss must make norm² NaN");
    c.pass("loss_and_grad_norm");
}

/// Reads weights and state as raw bits, for the bit-for-bit NaN-guard checks.
async fn bits(gpu: &Gpu, ts: &[&Tensor]) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    for t in ts {
        out.push(gpu.read_u32(t).await.unwrap());
    }
    out
}

/// Gradients that make norm² non-finite: a NaN, an Inf, and an overflow of g² (1e30² > f32 max).
fn poisoned(rng: &mut Rng, n: usize) -> Vec<Vec<f32>> {
    [f32::NAN, f32::INFINITY, 1e30]
        .iter()
        .map(|&bad| {
            let mut g = rng.vec_f32(n, -1.0, 1.0);
            g[n / 2] = bad;
            g
        })
        .collect()
}

async fn adamw(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(32);
    for &(n, grid) in SIZES_1D {
        gpu.set_grid_limit(grid);
        // max_norm 0: no clipping; 0.2·E‖g‖ (‖g‖ ≈ sqrt(n/3)): every step clipped on the fly.
        for max_norm in [0.0, 0.2 * (n as f64 / 3.0).sqrt()] {
            let (w, mut w64) = random_tensor(gpu, &mut rng, "w", &[n], -1.0, 1.0);
            let (g, m, v) = (gpu.tensor("g", &[n]).unwrap(), gpu.tensor("m", &[n]).unwrap(), gpu.tensor("v", &[n]).unwrap());
            let (mut m64, mut v64) = (vec![0.0; n], vec![0.0; n]);
            let partials = gpu.tensor("partials", &[reduce::partial_groups(n)]).unwrap();
            let norm_sq = gpu.tensor("norm_sq", &[1]).unwrap();
            let norm_ops = opt::grad_norm_squared(gpu, &[&g], &partials, &norm_sq).unwrap();
            // Decay stops a third of the way in, as it does where the norms and biases begin.
            let mut params = AdamWParams { weight_decay: 0.1, max_norm: max_norm as f32, decay_end: (n / 3) as u32, ..AdamWParams::new(1e-2) };
            let update = opt::adamw_update(gpu, &w, &g, &m, &v, &norm_sq, &params).unwrap();
            if grid < 65_535 {
                assert!(update.op.workgroups[1] > 1, "expected a 2-D grid, got {:?}", update.op.workgroups);
            }
            for step in 1..=5 {
                let g32 = rng.vec_f32(n, -1.0, 1.0);
                gpu.write(&g, &g32).unwrap();
                params.t = step as f32;
                params.lr = 1e-2 * (1.0 - 0.1 * step as f32); // a schedule: lr changes too
                update.set(gpu, &params).unwrap();
                let mut ops = refs(&norm_ops);
                ops.push(&update.op);
                gpu.run(&ops).unwrap();
                let g64 = f64s(&g32);
                let ns = reference::norm_squared(&[&g64]);
                assert!(max_norm == 0.0 || reference::clip_factor(ns, max_norm) < 1.0, "clipping should be active");
                reference::adamw(&mut w64, &mut m64, &mut v64, &g64, ns, &params);
            }
            let label = format!("n={n} max_norm={max_norm:.2} after 5 steps");
            c.close("adamw_update", &format!("w {label}"), &read(gpu, &w).await, &w64, 2e-6, 1e-5);
            c.close("adamw_update", &format!("m {label}"), &read(gpu, &m).await, &m64, 1e-8, 2e-5);
            c.close("adamw_update", &format!("v {label}"), &read(gpu, &v).await, &v64, 1e-10, 2e-5);

            // NaN guard: a non-finite norm² skips the step, leaving w, m, v bit-for-bit.
            let before = bits(gpu, &[&w, &m, &v]).await;
            params.t = 6.0;
            update.set(gpu, &params).unwrap();
            for bad in poisoned(&mut rng, n) {
                gpu.write(&g, &bad).unwrap();
                let mut ops = refs(&norm_ops);
                ops.push(&update.op);
                gpu.run(&ops).unwrap();
                assert!(!read(gpu, &norm_sq).await[0].is_finite());
                c.exact("adamw_update", &format!("skipped step n={n}"), &bits(gpu, &[&w, &m, &v]).await, &before);
            }
        }
    }
}

async fn sgd(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(33);
    for &(n, grid) in SIZES_1D {
        gpu.set_grid_limit(grid);
        let clip = 0.2 * (n as f64 / 3.0).sqrt();
        // (momentum, weight decay, max_norm): plain SGD, momentum + decay, and clipped too.
        for (momentum, weight_decay, max_norm) in [(0.0, 0.0, 0.0), (0.9, 0.01, 0.0), (0.9, 0.01, clip)] {
            let (w, mut w64) = random_tensor(gpu, &mut rng, "w", &[n], -1.0, 1.0);
            let g = gpu.tensor("g", &[n]).unwrap();
            let buf = gpu.tensor("momentum", &[n]).unwrap();
            let mut buf64 = vec![0.0; n];
            let partials = gpu.tensor("partials", &[reduce::partial_groups(n)]).unwrap();
            let norm_sq = gpu.tensor("norm_sq", &[1]).unwrap();
            let norm_ops = opt::grad_norm_squared(gpu, &[&g], &partials, &norm_sq).unwrap();
            let mut params = SgdParams { lr: 0.1, momentum, weight_decay, max_norm: max_norm as f32 };
            let momentum_buf = (momentum > 0.0).then_some(&buf);
            let update = opt::sgd_update(gpu, &w, &g, momentum_buf, &norm_sq, &params).unwrap();
            for step in 1..=4 {
                let g32 = rng.vec_f32(n, -1.0, 1.0);
                gpu.write(&g, &g32).unwrap();
                params.lr = 0.1 / step as f32;
                update.set(gpu, &params).unwrap();
                let mut ops = refs(&norm_ops);
                ops.push(&update.op);
                gpu.run(&ops).unwrap();
                let g64 = f64s(&g32);
                reference::sgd(&mut w64, &mut buf64, &g64, reference::norm_squared(&[&g64]), &params);
            }
            let label = format!("n={n} momentum={momentum} wd={weight_decay} max_norm={max_norm:.2} after 4 steps");
            c.close("sgd_update", &format!("w {label}"), &read(gpu, &w).await, &w64, 2e-6, 1e-5);
            c.close("sgd_update", &format!("buf {label}"), &read(gpu, &buf).await, &buf64, 1e-6, 1e-5);

            let before = bits(gpu, &[&w, &buf]).await;
            for bad in poisoned(&mut rng, n) {
                gpu.write(&g, &bad).unwrap();
                let mut ops = refs(&norm_ops);
                ops.push(&update.op);
                gpu.run(&ops).unwrap();
                c.exact("sgd_update", &format!("skipped step {label}"), &bits(gpu, &[&w, &buf]).await, &before);
            }
        }
    }
}

async fn accumulate_and_scale(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(34);
    for &(n, grid) in SIZES_1D {
        gpu.set_grid_limit(grid);
        let (grad, g64) = random_tensor(gpu, &mut rng, "grad", &[n], -1.0, 1.0);
        let (new, new64) = random_tensor(gpu, &mut rng, "new", &[n], -1.0, 1.0);
        let acc = opt::gradient_accumulate(gpu, &grad, &new).unwrap();
        if grid < 65_535 {
            assert!(acc.workgroups[1] > 1, "expected a 2-D grid, got {:?}", acc.workgroups);
        }
        gpu.run(&[&acc]).unwrap();
        let sum: Vec<f64> = g64.iter().zip(&new64).map(|(a, b)| a + b).collect();
        c.close("gradient_accumulate", &format!("n={n}"), &read(gpu, &grad).await, &sum, 1e-7, 1e-6);
        gpu.run(&[&opt::gradient_scale(gpu, &grad, 0.25).unwrap(), &opt::gradient_scale(gpu, &grad, -3.0).unwrap()]).unwrap();
        let scaled: Vec<f64> = sum.iter().map(|x| x * 0.25 * -3.0).collect();
        c.close("gradient_scale", &format!("n={n}"), &read(gpu, &grad).await, &scaled, 1e-7, 1e-6);
    }
}

/// Bad parameters and shapes are typed errors naming the field, never panics.
async fn rejects_bad_input(gpu: &Gpu, _c: &mut Checks) {
    let (w, g, s) = (gpu.tensor("w", &[8]).unwrap(), gpu.tensor("g", &[8]).unwrap(), gpu.tensor("ns", &[1]).unwrap());
    let short = gpu.tensor("m_short", &[7]).unwrap();
    let p = AdamWParams::new(1e-3);
    let err = opt::adamw_update(gpu, &w, &g, &short, &g, &s, &p).err().unwrap().to_string();
    assert!(err.contains("m_short"), "{err}");
    let err = opt::adamw_update(gpu, &w, &g, &g, &g, &s, &AdamWParams { t: 0.0, ..p }).err().unwrap().to_string();
    assert!(err.contains("`t`"), "{err}");
    let sgd = SgdParams { lr: 0.1, momentum: 0.9, weight_decay: 0.0, max_norm: 0.0 };
    assert!(opt::sgd_update(gpu, &w, &g, None, &s, &sgd).is_err(), "momentum needs a buffer");
    let plain = opt::sgd_update(gpu, &w, &g, None, &s, &SgdParams { momentum: 0.0, ..sgd }).unwrap();
    assert!(plain.set(gpu, &SgdParams { lr: f32::NAN, ..sgd }).is_err());
    assert!(opt::clip_grad_by_norm(gpu, &g, &w, 1.0).is_err(), "norm_sq must be 1 element");
}

/// Dynamic loss scaling, one step per case from a given (scale, clean steps) and norm²:
/// finite below the interval (count up), finite at it (double), non-finite (halve, floor 1),
/// growth past 2^24 and an infinite scale (both back to 2^24). The state and the ring slot
/// are exact: powers of two and small counts.
async fn loss_scale(gpu: &Gpu, c: &mut Checks) {
    let cases = [
        (65_536.0, 3.0, 2.5, 10),
        (65_536.0, 9.0, 2.5, 10),
        (65_536.0, 9.0, f64::INFINITY, 10),
        (1.0, 0.0, f64::NAN, 10),
        (16_777_216.0, 0.0, 1.0, 1),
        (f64::INFINITY, 5.0, f64::INFINITY, 10),
    ];
    for (scale, clean, norm_sq, interval) in cases {
        let state = gpu.tensor_from("state", &[4], &[scale as f32, 1.0 / scale as f32, clean as f32, 0.0]).unwrap();
        let norm = gpu.tensor_from("norm_sq", &[1], &[norm_sq as f32]).unwrap();
        let ring = gpu.tensor_from("ring", &[4], &[-1.0f32; 4]).unwrap();
        let params = opt::LossScaleParams { row: 2, growth_interval: interval, pad: [0; 2] };
        let op = opt::loss_scale_update(gpu, &norm, &state, &ring, &params).unwrap();
        gpu.run(&[&op.op]).unwrap();
        let (want_scale, want_clean) = reference::loss_scale(scale, clean, norm_sq, interval);
        let label = format!("scale {scale}, clean {clean}, norm² {norm_sq}, interval {interval}");
        let want = [want_scale as f32, (1.0 / want_scale) as f32, want_clean as f32, 0.0];
        c.exact("loss_scale_update", &label, &read(gpu, &state).await, &want);
        c.exact("loss_scale_update", &format!("{label}: ring"), &read(gpu, &ring).await, &[-1.0, -1.0, scale as f32, -1.0]);
    }
    let (state, norm, ring) = (gpu.tensor("state", &[3]).unwrap(), gpu.tensor("n", &[1]).unwrap(), gpu.tensor("r", &[1]).unwrap());
    let params = opt::LossScaleParams { row: 0, growth_interval: 1, pad: [0; 2] };
    assert!(opt::loss_scale_update(gpu, &norm, &state, &ring, &params).is_err(), "the state is 4 words");
    let state = gpu.tensor("state", &[4]).unwrap();
    assert!(opt::loss_scale_update(gpu, &norm, &state, &ring, &opt::LossScaleParams { growth_interval: 0, ..params }).is_err(), "interval >= 1");
}

pub async fn run(gpu: &Gpu, c: &mut Checks) {
    norm_and_clip(gpu, c).await;
    loss_and_grad_norm(gpu, c).await;
    loss_scale(gpu, c).await;
    adamw(gpu, c).await;
    sgd(gpu, c).await;
    accumulate_and_scale(gpu, c).await;
    rejects_bad_input(gpu, c).await;
}

crate::device_test!(optimizer_kernels_match_reference, run, checks);
