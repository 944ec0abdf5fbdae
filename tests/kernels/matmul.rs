//! GPU-vs-reference checks for shaders/matmul.wgsl, and finite-difference checks of the
//! Linear-layer backward formulas (dX = dY·W, dW = dYᵀ·X) on the reference.
//!
//! Tolerance: operands are uniform in [-1, 1], so a K-term f32 dot product has rounding error
//! growing like sqrt(K) · eps · (typical partial sum); atol = 4e-6·sqrt(K) (K = 200 → 5.7e-5)
//! with rtol 1e-5 covers any summation order, while a wrong index gives errors of order 0.1.

use kiln::kernels::matmul::{self as mm, reference, MatmulDesc, Unreduced, LEAN, SMALL, WIDE};
use kiln::kernels::norm;
use kiln::kernels::quant::reference as qref;
use kiln::kernels::split_sums::PendingSums;
use kiln::model::params::{Init, ParamSpec, ParamStore};
use kiln::Gpu;

use crate::common::*;

const RTOL: f64 = 1e-5;

fn atol(k: usize) -> f64 {
    4e-6 * (k as f64).sqrt()
}

/// Runs `desc` on random operands (C starts random, so accumulate is visible) and checks it.
async fn check(gpu: &Gpu, c: &mut Checks, rng: &mut Rng, d: MatmulDesc, label: &str) {
    let span = |size: usize, stride: usize| (d.batch - 1) * stride + size;
    let (a, a64) = random_tensor(gpu, rng, "a", &[span(d.m * d.k, d.stride_a)], -1.0, 1.0);
    let (b, b64) = random_tensor(gpu, rng, "b", &[span(d.k * d.n, d.stride_b)], -1.0, 1.0);
    let (out, c64) = random_tensor(gpu, rng, "c", &[span(d.m * d.n, d.stride_c)], -1.0, 1.0);
    let op = mm::matmul(gpu, &a, &b, &out, d).unwrap();
    gpu.run(&[&op]).unwrap();
    let want = reference::matmul(&d, &a64, &b64, &c64);
    let label = format!("{label} {d:?} grid {:?}", op.workgroups);
    c.close(op.entry, &label, &read(gpu, &out).await, &want, atol(d.k), RTOL);
}

/// `matmul_ops` with a forced tile and split: the partial products and their reduction.
async fn check_split(gpu: &Gpu, c: &mut Checks, rng: &mut Rng, d: MatmulDesc, label: &str) {
    let (a, a64) = random_tensor(gpu, rng, "a", &[d.m * d.k], -1.0, 1.0);
    let (b, b64) = random_tensor(gpu, rng, "b", &[d.k * d.n], -1.0, 1.0);
    let (out, c64) = random_tensor(gpu, rng, "c", &[d.m * d.n], -1.0, 1.0);
    let ops = mm::matmul_ops(gpu, &a, &b, &out, d).unwrap();
    assert_eq!(ops.len(), 2, "{label} {d:?} should split");
    gpu.run(&ops.iter().collect::<Vec<_>>()).unwrap();
    let want = reference::matmul(&d, &a64, &b64, &c64);
    let label = format!("{label} {d:?} grid {:?}", ops[0].workgroups);
    let got = read(gpu, &out).await;
    c.close(ops[0].entry, &label, &got, &want, atol(d.k), RTOL);
    c.close(ops[1].entry, &label, &got, &want, atol(d.k), RTOL);
}

const SHAPES: &[(usize, usize, usize)] = &[(1, 1, 1), (37, 53, 29), (64, 64, 64), (130, 70, 200), (3, 129, 17)];

/// Every shape, transpose and accumulate combination on both tile kernels and `matmul_small`.
async fn all_variants(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(11);
    for tile in [SMALL, 64, 128] {
        for &(m, n, k) in SHAPES.iter().chain(&[(128, 256, 24), (257, 131, 9)]) {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                for acc in [false, true] {
                    let mut d = MatmulDesc::new(m, n, k).tile(tile);
                    (d.trans_a, d.trans_b, d.accumulate) = (ta, tb, acc);
                    check(gpu, c, &mut rng, d, "").await;
                }
            }
        }
        // alpha scales only the product, not the accumulated C.
        check(gpu, c, &mut rng, MatmulDesc::new(20, 9, 33).alpha(-0.5).accumulate().tile(tile), "alpha").await;
    }
    // The lean tile takes aligned products (m, n multiples of 64, k of 8); split below.
    for &(m, n, k) in &[(64, 64, 8), (128, 192, 24), (192, 64, 136)] {
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            for acc in [false, true] {
                let mut d = MatmulDesc::new(m, n, k).tile(LEAN).alpha(if acc { 0.5 } else { 1.0 });
                (d.trans_a, d.trans_b, d.accumulate) = (ta, tb, acc);
                check(gpu, c, &mut rng, d, "lean").await;
            }
        }
    }
    // Asked for on a product it cannot take (unaligned, or B as packed f16), the lean tile
    // gives way to the 128 one.
    assert_eq!(mm::plan(&MatmulDesc::new(100, 64, 8).tile(LEAN), true, mm::Adapter::Gpu).0, 128);
    assert_eq!(mm::plan(&MatmulDesc::new(64, 64, 8).tile(LEAN).b_f16(), true, mm::Adapter::Gpu).0, 128);
    wide_variants(gpu, c, &mut rng).await;
}

/// The wide tile (128x256) on aligned products, every transpose and accumulate, batched too.
async fn wide_variants(gpu: &Gpu, c: &mut Checks, rng: &mut Rng) {
    // It needs 24 KiB of workgroup memory; every adapter the tests run on (llvmpipe,
    // SwiftShader, GPUs) offers 32 KiB, so the checks below are of matmul_wide itself.
    assert!(mm::wide_allowed(gpu), "the adapter's workgroup memory is too small for matmul_wide");
    for &(m, n, k) in &[(128, 256, 8), (256, 512, 24), (128, 256, 136)] {
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            for acc in [false, true] {
                let mut d = MatmulDesc::new(m, n, k).tile(WIDE).splits(1).alpha(if acc { 0.5 } else { 1.0 });
                (d.trans_a, d.trans_b, d.accumulate) = (ta, tb, acc);
                check(gpu, c, rng, d, "wide").await;
            }
        }
    }
    check(gpu, c, rng, MatmulDesc::new(128, 256, 16).trans_b().batched(3).tile(WIDE).splits(1), "wide batch").await;
    // Asked for on a product it cannot take (n not a multiple of 256, or B as packed f16), the
    // wide tile gives way to the 128 one.
    assert_eq!(mm::plan(&MatmulDesc::new(128, 128, 8).tile(WIDE), true, mm::Adapter::Gpu).0, 128);
    assert_eq!(mm::plan(&MatmulDesc::new(128, 256, 8).tile(WIDE).b_f16(), true, mm::Adapter::Gpu).0, 128);
}

/// Split-K on both tiles: k chunks of a multiple of 16 with a ragged last chunk, with and
/// without accumulate and transposes (the weight-gradient form is trans_a + accumulate).
async fn split_k(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(16);
    for tile in [64, 128, LEAN, WIDE] {
        let shapes = match tile {
            LEAN => [(64, 128, 1000, 7), (128, 64, 304, 3), (64, 64, 96, 2)],
            WIDE => [(128, 256, 1000, 7), (256, 256, 304, 3), (128, 512, 96, 2)],
            _ => [(37, 53, 300, 3), (64, 64, 1000, 7), (130, 70, 97, 2)],
        };
        for (m, n, k, splits) in shapes {
            for (ta, tb, acc) in [(false, false, false), (true, false, true), (false, true, true), (true, true, false)] {
                let mut d = MatmulDesc::new(m, n, k).tile(tile).splits(splits).alpha(0.75);
                (d.trans_a, d.trans_b, d.accumulate) = (ta, tb, acc);
                check_split(gpu, c, &mut rng, d, "split-K").await;
            }
        }
    }
    // The automatic plan splits a weight gradient with few output tiles and a long k.
    let d = MatmulDesc::new(128, 128, 4096).trans_a().accumulate();
    let (_, splits, _) = mm::plan(&d, true, mm::Adapter::Gpu);
    assert!(splits > 1, "a 128x128x4096 weight gradient should split, got {splits}");
    // `matmul` (one dispatch) never splits.
    assert_eq!(mm::plan(&d, false, mm::Adapter::Gpu).1, 1);
    // A big product whose k is too short to split takes the 128 tile, whole, on a GPU, or the
    // lean one when it has too few 128 tiles to fill one (64 here); CPU adapters the 64 tile.
    let short_k = MatmulDesc::new(4096, 256, 256).trans_b();
    assert_eq!(mm::plan(&short_k, true, mm::Adapter::Gpu), (LEAN, 1, 256));
    // With enough wide tiles (128 here), or a short k split into enough of them (32 x 4), the
    // wide one; long weight gradients keep the 128 tile, while long-k products split in two
    // (llama-d512's up projection's input gradient and its down projection: 32 x 2 wide tiles
    // x 2) take the wide one, at k = LONG_K too.
    assert_eq!(mm::plan(&MatmulDesc::new(4096, 1024, 256), true, mm::Adapter::Gpu), (WIDE, 1, 256));
    assert_eq!(mm::plan(&MatmulDesc::new(4096, 256, 1024), true, mm::Adapter::Gpu).0, WIDE);
    assert_eq!(mm::plan(&MatmulDesc::new(768, 256, 4096).trans_a().accumulate(), true, mm::Adapter::Gpu).0, 128);
    assert_eq!(mm::plan(&MatmulDesc::new(4096, 512, 4096), true, mm::Adapter::Gpu), (WIDE, 2, 2048));
    assert_eq!(mm::plan(&MatmulDesc::new(4096, 512, 2048).trans_b(), true, mm::Adapter::Gpu), (WIDE, 2, 1024));
    // A split on the 128 tile stays within one wave (264 workgroups): llama-d512's dW qkv (48
    // tiles) splits 5 ways, not the 6 that rounding 256 up would give; llama-small's (12 tiles)
    // still 22 ways (264).
    assert_eq!(mm::plan(&MatmulDesc::new(1536, 512, 4096).trans_a().accumulate(), true, mm::Adapter::Gpu), (128, 5, 832));
    // Not where one wave would leave a single split (144 tiles), nor on a CPU adapter.
    assert_eq!(mm::plan(&MatmulDesc::new(768, 3072, 4096).trans_a().accumulate(), true, mm::Adapter::Gpu), (128, 2, 2048));
    assert_eq!(mm::plan(&MatmulDesc::new(1536, 512, 4096).trans_a().accumulate(), true, mm::Adapter::Cpu), (128, 6, 688));
    assert_eq!(mm::plan(&MatmulDesc::new(768, 256, 4096).trans_a().accumulate(), true, mm::Adapter::Gpu), (128, 22, 192));
    assert_eq!(mm::plan(&MatmulDesc::new(4096, 1024, 256), true, mm::Adapter::Cpu).0, 128);
    assert_eq!(mm::plan(&short_k, true, mm::Adapter::Cpu), (64, 1, 256));
    // A GPU splits a product of few 64 tiles (32 here) into chunks of 32 on the lean tile;
    // a CPU adapter keeps it whole.
    let few = MatmulDesc::new(512, 256, 256).trans_b();
    assert_eq!(mm::plan(&few, true, mm::Adapter::Gpu), (LEAN, 8, 32));
    assert_eq!(mm::plan(&few, true, mm::Adapter::Cpu), (64, 1, 256));
    check_split(gpu, c, &mut rng, few.tile(LEAN).splits(8), "few-tile split-K").await;
    check_split(gpu, c, &mut rng, d, "auto split-K").await;
    // A batched product never splits.
    assert_eq!(mm::plan(&MatmulDesc::new(64, 64, 4096).batched(2).splits(4), true, mm::Adapter::Gpu).1, 1);
}

async fn batched(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(12);
    for tile in [SMALL, 64, 128] {
        check(gpu, c, &mut rng, MatmulDesc::new(17, 23, 9).batched(3).tile(tile), "dense batch").await;
        check(gpu, c, &mut rng, MatmulDesc::new(65, 5, 31).trans_a().batched(4).accumulate().tile(tile), "dense batch").await;
        // Shared B (stride 0) and padded strides, as per-head products over strided views do.
        let d = MatmulDesc::new(10, 12, 7).trans_b().batched(5).strides(10 * 7 + 3, 0, 10 * 12 + 5).tile(tile);
        check(gpu, c, &mut rng, d, "strided batch").await;
    }
}

/// Lowers the grid limit so the output tiles fold into a 2-D grid (x and y both > 1).
pub async fn two_d_grid(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(13);
    gpu.set_grid_limit(3);
    for d in [
        MatmulDesc::new(300, 200, 40),
        MatmulDesc::new(130, 250, 20).trans_a().trans_b().batched(2),
        MatmulDesc::new(300, 520, 40).tile(128),
        MatmulDesc::new(30, 20, 7).trans_a().batched(2).tile(SMALL),
    ] {
        let t = d.tile.unwrap_or(64);
        let tiles = d.m.div_ceil(t) * d.n.div_ceil(t);
        assert!(tiles > 3, "case must need a 2-D grid");
        check(gpu, c, &mut rng, d, "2-D grid").await;
    }
}

/// The Linear backward as training runs it: dX = dY·W, then dW += dYᵀ·X on a nonzero dW.
async fn linear_backward(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(14);
    let (m, n, k) = (45, 19, 70); // X (M, K), W (N, K), Y (M, N)
    let (dy, dy64) = random_tensor(gpu, &mut rng, "dy", &[m, n], -1.0, 1.0);
    let (w, w64) = random_tensor(gpu, &mut rng, "w", &[n, k], -1.0, 1.0);
    let (x, x64) = random_tensor(gpu, &mut rng, "x", &[m, k], -1.0, 1.0);
    let (dw, dw64) = random_tensor(gpu, &mut rng, "dw", &[n, k], -1.0, 1.0);
    let dx = gpu.tensor("dx", &[m, k]).unwrap();
    let dx_desc = MatmulDesc::new(m, k, n);
    let dw_desc = MatmulDesc::new(n, k, m).trans_a().accumulate();
    gpu.run(&[&mm::matmul(gpu, &dy, &w, &dx, dx_desc).unwrap(), &mm::matmul(gpu, &dy, &x, &dw, dw_desc).unwrap()]).unwrap();
    let want_dx = reference::matmul(&dx_desc, &dy64, &w64, &vec![0.0; m * k]);
    let want_dw = reference::matmul(&dw_desc, &dy64, &x64, &dw64);
    c.close("matmul", "linear dX = dY·W", &read(gpu, &dx).await, &want_dx, atol(n), RTOL);
    c.close("matmul", "linear dW += dYᵀ·X", &read(gpu, &dw).await, &want_dw, atol(m), RTOL);
}

/// The wrapper's error for `desc` (it must fail), as text.
fn error(gpu: &Gpu, a: &kiln::Tensor, b: &kiln::Tensor, c: &kiln::Tensor, d: MatmulDesc) -> String {
    match mm::matmul(gpu, a, b, c, d) {
        Ok(_) => panic!("{d:?} should be rejected"),
        Err(e) => e.to_string(),
    }
}

async fn rejects_bad_lengths(gpu: &Gpu, _c: &mut Checks) {
    let a = gpu.tensor("a", &[6, 4]).unwrap();
    let b = gpu.tensor("b", &[4, 5]).unwrap();
    let out = gpu.tensor("c", &[6, 5]).unwrap();
    assert!(mm::matmul(gpu, &a, &b, &out, MatmulDesc::new(6, 5, 4)).is_ok());
    let err = error(gpu, &a, &b, &out, MatmulDesc::new(6, 5, 3));
    assert!(err.contains("`a`") && err.contains("18"), "{err}");
    let err = error(gpu, &a, &b, &out, MatmulDesc::new(6, 4, 4));
    assert!(err.contains("`b`"), "{err}");
    let err = error(gpu, &a, &b, &out, MatmulDesc::new(6, 5, 4).batched(2));
    assert!(err.contains("2 x 24"), "{err}");
    let err = error(gpu, &a, &b, &out, MatmulDesc::new(0, 5, 4));
    assert!(err.contains("`m`"), "{err}");
}

/// B as packed f16 pairs (a mixed-precision Llama's weights): every tile, both B layouts and a
/// split, against the reference on B rounded to f16 (the rounding is the host's
/// `f32_to_f16`, checked against the GPU cast in quant.rs), so the products agree to f32 tolerance.
async fn packed_f16_b(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(23);
    let shapes = [(1, 1, 1), (37, 53, 29), (130, 70, 200), (128, 256, 24), (256, 128, 512)];
    for tile in [SMALL, 64, 128] {
        for &(m, n, k) in &shapes {
            for (tb, acc, split) in [(false, false, 1), (true, false, 1), (true, true, 1), (false, true, 3)] {
                let mut d = MatmulDesc::new(m, n, k).tile(tile).splits(split).b_f16();
                (d.trans_b, d.accumulate) = (tb, acc);
                let (a, a64) = random_tensor(gpu, &mut rng, "a", &[m * k], -1.0, 1.0);
                let halves: Vec<u16> = rng.vec_f32(k * n, -1.0, 1.0).into_iter().map(qref::f32_to_f16).collect();
                let b64: Vec<f64> = halves.iter().map(|&h| qref::f16_to_f32(h) as f64).collect();
                let b = gpu.tensor_from("b16", &[(k * n).div_ceil(2)], &qref::pack_f16(&halves)).unwrap();
                let (out, c64) = random_tensor(gpu, &mut rng, "c", &[m * n], -1.0, 1.0);
                let ops = mm::matmul_ops(gpu, &a, &b, &out, d).unwrap();
                gpu.run(&ops.iter().collect::<Vec<_>>()).unwrap();
                let want = reference::matmul(&d, &a64, &b64, &c64);
                let label = format!("packed f16 B {d:?} grid {:?}", ops[0].workgroups);
                c.close(ops[0].entry, &label, &read(gpu, &out).await, &want, atol(k), RTOL);
            }
        }
    }
    // A packed B of the wrong length is refused, naming the words expected.
    let (a, b, out) = (gpu.tensor("a", &[6, 4]).unwrap(), gpu.tensor("b", &[20]).unwrap(), gpu.tensor("c", &[6, 5]).unwrap());
    let err = error(gpu, &a, &b, &out, MatmulDesc::new(6, 5, 4).b_f16());
    assert!(err.contains("packed f16") && err.contains("10 words"), "{err}");
}

/// Two split weight gradients and a norm weight's row chunks waiting in one `PendingSums`, then
/// summed by one dispatch into a gradient buffer that starts random (so accumulate shows and the
/// padding between the tensors must come back untouched).
async fn pending_sums(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(17);
    let spec = |name: &str, shape: Vec<usize>| ParamSpec { name: name.into(), shape, init: Init::Constant(0.0), decay: true, joins_next: false };
    let store = ParamStore::new(gpu, vec![spec("a", vec![37, 53]), spec("b", vec![64, 30]), spec("norm", vec![48])], 1, false).unwrap();
    let grads0 = rng.vec_f32(store.total, -1.0, 1.0);
    gpu.write(&store.grads, &grads0).unwrap();
    let mut want = f64s(&grads0);
    let da = MatmulDesc::new(37, 53, 300).trans_a().accumulate().tile(64).splits(3);
    let db = MatmulDesc::new(64, 30, 1000).trans_a().accumulate().tile(128).splits(7);
    let (rows, ch) = (600, 48); // four row chunks of the norm weight's sum
    let room = [da, db].iter().map(|d| d.splits.unwrap() * d.m * d.n).sum::<usize>() + norm::weight_partials_len(ch, rows);
    let mut pending = PendingSums::new(gpu, room).unwrap();
    let mut ops = vec![];
    for (d, name) in [(da, "a"), (db, "b")] {
        let (x, x64) = random_tensor(gpu, &mut rng, "x", &[d.k * d.m], -1.0, 1.0);
        let (y, y64) = random_tensor(gpu, &mut rng, "y", &[d.k * d.n], -1.0, 1.0);
        let step = mm::matmul_ops_pending(gpu, &x, &y, &store.grad(name), d, &mut pending).unwrap();
        assert_eq!(step.len(), 1, "{name}: the split product alone; its sum waits");
        ops.extend(step);
        let at = store.entry(name).offset;
        let prior = want[at..at + d.m * d.n].to_vec();
        want.splice(at..at + d.m * d.n, reference::matmul(&d, &x64, &y64, &prior));
    }
    let (dout, dout64) = random_tensor(gpu, &mut rng, "dout", &[rows, ch], -1.0, 1.0);
    let (x, x64) = random_tensor(gpu, &mut rng, "x", &[rows, ch], -1.0, 1.0);
    let (rstd, rstd64) = random_tensor(gpu, &mut rng, "rstd", &[rows], 0.5, 2.0);
    let (w, dx) = (gpu.tensor("norm weight", &[ch]).unwrap(), gpu.tensor("dx", &[rows, ch]).unwrap());
    let grads = norm::NormGrads { dx: &dx, accumulate: false, dweight: &store.grad("norm") };
    let step = norm::rms_norm_backward(gpu, &Unreduced::whole(&dout), &x, &w, &rstd, grads, Some(&mut pending)).unwrap();
    assert_eq!(step.len(), 1, "the norm's backward alone; its weight's sum waits");
    ops.extend(step);
    let at = store.entry("norm").offset;
    for (i, v) in norm::reference::rms_norm_backward_weight(&dout64, &x64, &rstd64, ch).into_iter().enumerate() {
        want[at + i] += v;
    }
    let flush = pending.flush(gpu).unwrap().expect("three sums wait");
    assert!(pending.flush(gpu).unwrap().is_none(), "a flush empties the table");
    ops.push(flush);
    gpu.run(&ops.iter().collect::<Vec<_>>()).unwrap();
    let label = format!("three sums in one dispatch, grid {:?}", ops[3].workgroups);
    c.close(ops[3].entry, &label, &read(gpu, &store.grads).await, &want, atol(1000), RTOL);
}

pub async fn run(gpu: &Gpu, c: &mut Checks) {
    all_variants(gpu, c).await;
    pending_sums(gpu, c).await;
    packed_f16_b(gpu, c).await;
    split_k(gpu, c).await;
    batched(gpu, c).await;
    linear_backward(gpu, c).await;
    rejects_bad_lengths(gpu, c).await;
}

crate::device_test!(matmul_kernels_match_reference, run, checks);
crate::device_test!(matmul_two_d_grid, two_d_grid, checks);

/// Y = X·Wᵀ with L = Σ G∘Y: dL/dX = G·W and dL/dW = Gᵀ·X, via the reference matmul.
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn matmul_linear_backward_formulas_match_finite_differences() {
    let mut rng = Rng::new(15);
    let (m, n, k) = (4, 3, 5);
    let mut rand = |len: usize| (0..len).map(|_| rng.range(-1.0, 1.0)).collect::<Vec<f64>>();
    let (x, w, g) = (rand(m * k), rand(n * k), rand(m * n));
    let fwd = MatmulDesc::new(m, n, k).trans_b();
    let y = |x: &[f64], w: &[f64]| reference::matmul(&fwd, x, w, &vec![0.0; m * n]);
    let dx = reference::matmul(&MatmulDesc::new(m, k, n), &g, &w, &vec![0.0; m * k]);
    let dw = reference::matmul(&MatmulDesc::new(n, k, m).trans_a(), &g, &x, &vec![0.0; n * k]);
    let num_dx = numeric_grad(|x| dot(&y(x, &w), &g), &x, 1e-6);
    let num_dw = numeric_grad(|w| dot(&y(&x, w), &g), &w, 1e-6);
    assert_close("dX = G·W", &to32(&dx), &num_dx, 1e-6, 1e-5);
    assert_close("dW = Gᵀ·X", &to32(&dw), &num_dw, 1e-6, 1e-5);
}
