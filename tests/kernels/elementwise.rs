//! GPU-vs-reference checks for shaders/elementwise.wgsl, and finite-difference checks of the
//! reference backwards. f32 elementwise math on values in [-4, 4]: atol 1e-6, rtol 1e-5 covers
//! exp/sigmoid rounding (a few ulp) on every WebGPU implementation we run.

use kiln::kernels::elementwise::{self as ew, reference, Activation, Binary};
use kiln::kernels::matmul::{reference::matmul as matmul_reference, MatmulDesc, Unreduced};
use kiln::kernels::mlp_layer::{
    self as layer,
    LayerProduct::{Computed, Short},
    SHORT_K,
};
use kiln::kernels::reduce::reference::column_sum;
use kiln::kernels::reduce::{column_sum as column_sum_op, Columns};
use kiln::Gpu;

use crate::common::*;

const ATOL: f64 = 1e-6;
const RTOL: f64 = 1e-5;

async fn binaries(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(1);
    for &(n, grid) in SIZES_1D {
        gpu.set_grid_limit(grid);
        for (op, entry) in [(Binary::Add, "add"), (Binary::Sub, "sub"), (Binary::Mul, "mul")] {
            // Same shape, then a bias vector broadcast along rows of width 7 where it divides.
            let widths: Vec<usize> = if n % 7 == 0 { vec![n, 7] } else { vec![n, 1] };
            for width in widths {
                let (a, a64) = random_tensor(gpu, &mut rng, "a", &[n], -4.0, 4.0);
                let (b, b64) = random_tensor(gpu, &mut rng, "b", &[width], -4.0, 4.0);
                let out = gpu.tensor("out", &[n]).unwrap();
                gpu.run(&[&ew::binary(gpu, op, &a, &b, &out).unwrap()]).unwrap();
                let want = reference::binary(op, &a64, &b64);
                c.close(entry, &format!("n={n} b={width}"), &read(gpu, &out).await, &want, ATOL, RTOL);
            }
        }
        let (g, g64) = random_tensor(gpu, &mut rng, "g", &[n], -1.0, 1.0);
        let (a, a64) = random_tensor(gpu, &mut rng, "a", &[n], -4.0, 4.0);
        let (b, b64) = random_tensor(gpu, &mut rng, "b", &[n], -4.0, 4.0);
        let (ga, gb) = (gpu.tensor("ga", &[n]).unwrap(), gpu.tensor("gb", &[n]).unwrap());
        for (op, entry) in [(Binary::Add, "add_backward"), (Binary::Sub, "sub_backward"), (Binary::Mul, "mul_backward")] {
            let bw = ew::binary_backward(gpu, op, &g, Some((&a, &b)), &ga, &gb).unwrap();
            gpu.run(&[&bw]).unwrap();
            let (want_a, want_b): (Vec<f64>, Vec<f64>) = match op {
                Binary::Add => (g64.clone(), g64.clone()),
                Binary::Sub => (g64.clone(), g64.iter().map(|x| -x).collect()),
                Binary::Mul => (reference::binary(Binary::Mul, &g64, &b64), reference::binary(Binary::Mul, &g64, &a64)),
            };
            c.close(entry, &format!("grad_a n={n}"), &read(gpu, &ga).await, &want_a, ATOL, RTOL);
            c.close(entry, &format!("grad_b n={n}"), &read(gpu, &gb).await, &want_b, ATOL, RTOL);
        }
    }
}

async fn activations(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(2);
    let acts =
        [(Activation::Relu, "relu", "relu_backward"), (Activation::Silu, "silu", "silu_backward_real"), (Activation::Tanh, "tanh_forward", "tanh_backward")];
    for &(n, grid) in SIZES_1D {
        gpu.set_grid_limit(grid);
        for (act, fwd, bwd) in acts {
            // Wide range: exp must neither overflow nor lose the sign for |x| up to 60.
            let (x, x64) = random_tensor(gpu, &mut rng, "x", &[n], -60.0, 60.0);
            let (g, g64) = random_tensor(gpu, &mut rng, "g", &[n], -1.0, 1.0);
            let (out, gin) = (gpu.tensor("out", &[n]).unwrap(), gpu.tensor("gin", &[n]).unwrap());
            gpu.run(&[&ew::activation(gpu, act, &x, &out).unwrap(), &ew::activation_backward(gpu, act, &g, &x, &gin).unwrap()]).unwrap();
            c.close(fwd, &format!("n={n}"), &read(gpu, &out).await, &reference::activation(act, &x64), ATOL, RTOL);
            let want = reference::activation_backward(act, &g64, &x64);
            c.close(bwd, &format!("n={n}"), &read(gpu, &gin).await, &want, ATOL, RTOL);
        }
    }
}

/// `splits` partial arrays of a (rows, cols) product, and their f64 sum in split order.
fn random_parts(gpu: &Gpu, rng: &mut Rng, splits: usize, rows: usize, cols: usize, bound: f64) -> (Unreduced, Vec<f64>) {
    let (parts, p64) = random_tensor(gpu, rng, "parts", &[splits, rows, cols], -bound, bound);
    let n = rows * cols;
    let sum = (0..n).map(|i| (0..splits).map(|s| p64[s * n + i]).sum()).collect();
    (Unreduced { parts, splits, c: gpu.tensor("c", &[rows, cols]).unwrap() }, sum)
}

/// An MLP hidden layer's z = x + b, h = f(z) in one dispatch, for each activation, with x whole
/// or as three partial arrays. Three partials of |·| ≤ 10 plus a bias: each of the three adds
/// rounds by at most half an ulp of 33 (1.9e-6), so atol 6e-6 where z nears 0.
async fn bias_activation(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(4);
    for (rows, cols, grid, splits) in [(1, 1, 65_535, 1), (512, 16, 65_535, 1), (37, 130, 7, 1), (45, 72, 65_535, 3)] {
        gpu.set_grid_limit(grid);
        let atol = if splits > 1 { 6e-6 } else { ATOL };
        for act in [Activation::Relu, Activation::Silu, Activation::Tanh] {
            let n = rows * cols;
            let (x, x64) = random_parts(gpu, &mut rng, splits, rows, cols, 30.0 / splits as f64);
            let (b, b64) = random_tensor(gpu, &mut rng, "bias", &[cols], -3.0, 3.0);
            let (z, h) = (gpu.tensor("z", &[n]).unwrap(), gpu.tensor("h", &[n]).unwrap());
            gpu.run(&[&layer::bias_activation(gpu, Some((act, &h)), Computed(&x), &b, &z).unwrap()]).unwrap();
            let z64: Vec<f64> = x64.iter().enumerate().map(|(i, v)| v + b64[i % cols]).collect();
            let label = format!("{act:?} {rows}x{cols} splits={splits}");
            c.close("bias_activation", &format!("z {label}"), &read(gpu, &z).await, &z64, atol, RTOL);
            c.close("bias_activation", &format!("h {label}"), &read(gpu, &h).await, &reference::activation(act, &z64), atol, RTOL);
        }
    }
}

/// (rows, cols, grid limit, splits): one element; few rows (4 lanes, 64 columns a workgroup);
/// ragged columns with dh in three partials; 100 and 200 rows (8 and 16 lanes); a 512-row
/// batch (32 lanes of 16 rows, four loads in flight) with dh in two; 2,000 rows over 3 columns
/// (the lanes' loops end part-way); and 700 columns on a 2-D grid of limit 5.
const ACT_SUM_SHAPES: &[(usize, usize, u32, usize)] = &[
    (1, 1, 65_535, 1),
    (3, 7, 65_535, 1),
    (37, 130, 65_535, 3),
    (100, 24, 65_535, 1),
    (200, 40, 65_535, 2),
    (512, 72, 65_535, 2),
    (2_000, 3, 65_535, 1),
    (9, 700, 5, 1),
];

/// dz = dh · f'(z) and db (+)= Σ_rows dz in one pass. dh's partials are in [-1, 1] and
/// |f'| ≤ 1.1, so |dz| ≤ 1.1 · splits: dz within atol 2e-6 · splits (its adds and the
/// derivative's few ulp). db: those errors over the rows, plus its sums' own rounding
/// (`column_sum_atol`, bounded from the data).
async fn activation_backward_sums(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(6);
    for &(rows, cols, grid, splits) in ACT_SUM_SHAPES {
        gpu.set_grid_limit(grid);
        for act in [Activation::Relu, Activation::Silu, Activation::Tanh] {
            let (dh, dh64) = random_parts(gpu, &mut rng, splits, rows, cols, 1.0);
            let (z, z64) = random_tensor(gpu, &mut rng, "z", &[rows, cols], -6.0, 6.0);
            let (db, db64) = random_tensor(gpu, &mut rng, "db", &[cols], -1.0, 1.0);
            let dz = gpu.tensor("dz", &[rows, cols]).unwrap();
            let op = layer::activation_backward_sum(gpu, act, Computed(&dh), &z, &dz, &db, true).unwrap();
            if grid < 65_535 {
                assert!(op.workgroups[1] > 1, "expected a 2-D grid, got {:?}", op.workgroups);
            }
            gpu.run(&[&op]).unwrap();
            let dz64 = reference::activation_backward(act, &dh64, &z64);
            let sums = column_sum(&dz64, cols);
            let label = format!("{act:?} {rows}x{cols} splits={splits}");
            let atol = 2e-6 * splits as f64;
            let lanes = Columns::of(&z, &db).unwrap().lanes;
            let db_atol = atol * rows as f64 + column_sum_atol(rows, lanes, column_abs_max(&dz64, &db64));
            c.close("activation_backward_sum", &format!("dz {label}"), &read(gpu, &dz).await, &dz64, atol, RTOL);
            let acc: Vec<f64> = sums.iter().zip(&db64).map(|(s, d)| s + d).collect();
            c.close("activation_backward_sum", &format!("db accumulate {label}"), &read(gpu, &db).await, &acc, db_atol, 0.0);
            gpu.run(&[&layer::activation_backward_sum(gpu, act, Computed(&dh), &z, &dz, &db, false).unwrap()]).unwrap();
            c.close("activation_backward_sum", &format!("db write {label}"), &read(gpu, &db).await, &sums, db_atol, 0.0);
        }
    }
    // A dh with the wrong number of partials is an error naming it.
    let (dh, _) = random_parts(gpu, &mut rng, 2, 3, 4, 1.0);
    let short = Unreduced { splits: 3, ..dh };
    let (z, dz, db) = (gpu.tensor("z", &[3, 4]).unwrap(), gpu.tensor("dz", &[3, 4]).unwrap(), gpu.tensor("db", &[4]).unwrap());
    let err = layer::activation_backward_sum(gpu, Activation::Relu, Computed(&short), &z, &dz, &db, true).err().unwrap().to_string();
    assert!(err.contains("`parts`") && err.contains("3 partial arrays"), "{err}");
}

/// (rows, cols, k, grid limit) of products the fused kernels form themselves: one element; a
/// 512-row batch over an MLP's 2-D input; ragged columns at the longest k; and 700 columns on a
/// 2-D grid of limit 5.
const SHORT_SHAPES: &[(usize, usize, usize, u32)] = &[(1, 1, 1, 65_535), (512, 72, 2, 65_535), (37, 130, SHORT_K, 65_535), (9, 700, 3, 5)];

/// Short products formed inside the fused kernels, with the weight as a layer's own (C, k) (the
/// forward's x·Wᵀ) and as (k, C) (the backward's dy·W): `bias_activation` with and without an
/// activation (an output layer, z only), and `activation_backward_sum`. Operands in [-1, 1]:
/// a k-term f32 dot product is within k · 2⁻²⁴ · Σ|terms| ≤ k² · 2⁻²⁴ of its value, and z adds
/// one rounding of |z| ≤ k + 1; h and dz scale that by |f'| ≤ 1.1, and db sums it over the rows.
async fn short_products(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(10);
    let acts = [Activation::Relu, Activation::Silu, Activation::Tanh];
    for (i, &(rows, cols, k, grid)) in SHORT_SHAPES.iter().enumerate() {
        gpu.set_grid_limit(grid);
        for w_trans in [true, false] {
            let act = acts[(2 * i + usize::from(w_trans)) % 3];
            let (x, x64) = random_tensor(gpu, &mut rng, "x", &[rows, k], -1.0, 1.0);
            let (w, w64) = random_tensor(gpu, &mut rng, "w", &if w_trans { [cols, k] } else { [k, cols] }, -1.0, 1.0);
            let (b, b64) = random_tensor(gpu, &mut rng, "bias", &[cols], -1.0, 1.0);
            let desc = if w_trans { MatmulDesc::new(rows, cols, k).trans_b() } else { MatmulDesc::new(rows, cols, k) };
            let product = matmul_reference(&desc, &x64, &w64, &vec![0.0; rows * cols]);
            let short = Short { a: &x, w: &w, w_trans };
            let atol = (k * k + k + 1) as f64 * 2f64.powi(-24) + ATOL;
            let label = format!("{act:?} {rows}x{cols} k={k} w_trans={w_trans}");
            let outs = |name: &str| gpu.tensor(name, &[rows, cols]).unwrap();
            let (z, h, z_only) = (outs("z"), outs("h"), outs("z only"));
            gpu.run(&[&layer::bias_activation(gpu, Some((act, &h)), short, &b, &z).unwrap(), &layer::bias_activation(gpu, None, short, &b, &z_only).unwrap()])
                .unwrap();
            let z64: Vec<f64> = product.iter().enumerate().map(|(i, v)| v + b64[i % cols]).collect();
            c.close("bias_activation", &format!("short z {label}"), &read(gpu, &z).await, &z64, atol, RTOL);
            c.close("bias_activation", &format!("short h {label}"), &read(gpu, &h).await, &reference::activation(act, &z64), 1.1 * atol, RTOL);
            c.close("bias_activation", &format!("short, no activation {label}"), &read(gpu, &z_only).await, &z64, atol, RTOL);
            let (zb, zb64) = random_tensor(gpu, &mut rng, "z", &[rows, cols], -6.0, 6.0);
            let (dz, db) = (outs("dz"), gpu.tensor("db", &[cols]).unwrap());
            gpu.run(&[&layer::activation_backward_sum(gpu, act, short, &zb, &dz, &db, false).unwrap()]).unwrap();
            let dz64 = reference::activation_backward(act, &product, &zb64);
            let lanes = Columns::of(&zb, &db).unwrap().lanes;
            let db_atol = 1.1 * atol * rows as f64 + column_sum_atol(rows, lanes, column_abs_max(&dz64, &vec![0.0; cols]));
            c.close("activation_backward_sum", &format!("short dz {label}"), &read(gpu, &dz).await, &dz64, 1.1 * atol, RTOL);
            c.close("activation_backward_sum", &format!("short db {label}"), &read(gpu, &db).await, &column_sum(&dz64, cols), db_atol, 0.0);
        }
    }
    // A k past SHORT_K, and a left side of the wrong length, are errors naming the tensor.
    let (z, dz, db) = (gpu.tensor("z", &[4, 3]).unwrap(), gpu.tensor("dz", &[4, 3]).unwrap(), gpu.tensor("db", &[3]).unwrap());
    let long_w = gpu.tensor("long w", &[3, SHORT_K + 1]).unwrap();
    let a = gpu.tensor("a", &[4, SHORT_K + 1]).unwrap();
    let err = layer::bias_activation(gpu, None, Short { a: &a, w: &long_w, w_trans: true }, &db, &z).err().unwrap().to_string();
    assert!(err.contains("`long w`") && err.contains("k 1..=16"), "{err}");
    let w = gpu.tensor("w", &[2, 3]).unwrap();
    let err = layer::activation_backward_sum(gpu, Activation::Relu, Short { a: &a, w: &w, w_trans: false }, &z, &dz, &db, false).err().unwrap().to_string();
    assert!(err.contains("`a`") && err.contains("k 2"), "{err}");
}

/// The orders the comments promise, bit for bit: partials are added in split order (three
/// partials give the bits of one array holding the f32 sum p0 + p1 + p2, for z, h, dz and db),
/// and the backward's bias sums are column_sum's (ReLU with every z > 0 passes dh through).
async fn fused_orders(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(8);
    let (rows, cols) = (200, 40);
    let (parts, p64) = random_tensor(gpu, &mut rng, "parts", &[3, rows, cols], -1.0, 1.0);
    let n = rows * cols;
    let summed: Vec<f32> = (0..n).map(|i| (p64[i] as f32 + p64[n + i] as f32) + p64[2 * n + i] as f32).collect();
    let whole = gpu.tensor_from("summed", &[rows, cols], &summed).unwrap();
    let (split, one) = (Unreduced { parts: parts.clone(), splits: 3, c: whole.clone() }, Unreduced::whole(&whole));
    let (bias, _) = random_tensor(gpu, &mut rng, "bias", &[cols], -1.0, 1.0);
    let (z, _) = random_tensor(gpu, &mut rng, "z", &[rows, cols], -3.0, 3.0);
    let outs = |name: &str| gpu.tensor(name, &[rows, cols]).unwrap();
    let mut got = vec![];
    for x in [&split, &one] {
        let (za, h, dz, db) = (outs("z"), outs("h"), outs("dz"), gpu.tensor("db", &[cols]).unwrap());
        gpu.run(&[&layer::bias_activation(gpu, Some((Activation::Silu, &h)), Computed(x), &bias, &za).unwrap()]).unwrap();
        gpu.run(&[&layer::activation_backward_sum(gpu, Activation::Tanh, Computed(x), &z, &dz, &db, false).unwrap()]).unwrap();
        got.push([read(gpu, &za).await, read(gpu, &h).await, read(gpu, &dz).await, read(gpu, &db).await]);
    }
    for (k, what) in ["z", "h", "dz", "db"].iter().enumerate() {
        c.exact("activation_backward_sum", &format!("{what}: three partials = their f32 sum"), &got[0][k], &got[1][k]);
    }
    let positive = gpu.tensor_from("z > 0", &[rows, cols], &vec![1.0f32; n]).unwrap();
    let (dz, db, db_plain) = (outs("dz"), gpu.tensor("db", &[cols]).unwrap(), gpu.tensor("db plain", &[cols]).unwrap());
    gpu.run(&[&layer::activation_backward_sum(gpu, Activation::Relu, Computed(&one), &positive, &dz, &db, false).unwrap()]).unwrap();
    gpu.run(&[&column_sum_op(gpu, &whole, &db_plain, false).unwrap()]).unwrap();
    c.exact("activation_backward_sum", "ReLU's db with z > 0 = column_sum's", &read(gpu, &db).await, &read(gpu, &db_plain).await);
}

async fn silu_gate(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(3);
    // (rows, hidden): ragged widths, one row, and a 2-D grid at a lowered limit.
    for &(rows, f, grid) in &[(1, 7, 65_535), (9, 100, 65_535), (37, 111, 5), (4, 256, 65_535)] {
        gpu.set_grid_limit(grid);
        let n = rows * f;
        let (_, up64) = random_tensor(gpu, &mut rng, "up", &[n], -6.0, 6.0);
        let (_, gate64) = random_tensor(gpu, &mut rng, "gate", &[n], -2.0, 2.0);
        let joined = reference::join_up_gate(&up64, &gate64, f);
        let up_gate = gpu.tensor_from("up_gate", &[rows, 2 * f], &to32(&joined)).unwrap();
        let (g, g64) = random_tensor(gpu, &mut rng, "g", &[rows, f], -1.0, 1.0);
        let out = gpu.tensor("out", &[rows, f]).unwrap();
        let d_up_gate = gpu.tensor("d_up_gate", &[rows, 2 * f]).unwrap();
        let fwd = ew::silu_gate(gpu, &up_gate, &out, f).unwrap();
        let bwd = ew::silu_gate_backward(gpu, &up_gate, &g, &d_up_gate, f).unwrap();
        gpu.run(&[&fwd, &bwd]).unwrap();
        let label = format!("{rows}x{f}");
        c.close("silu_gate_fused", &label, &read(gpu, &out).await, &reference::silu_gate(&up64, &gate64), ATOL, RTOL);
        let (want_u, want_g) = reference::silu_gate_backward(&up64, &gate64, &g64);
        let (got_u, got_g) = reference::split_up_gate(&f64s(&read(gpu, &d_up_gate).await), f);
        c.close("silu_gate_backward", &format!("d up {label}"), &to32(&got_u), &want_u, ATOL, RTOL);
        c.close("silu_gate_backward", &format!("d gate {label}"), &to32(&got_g), &want_g, ATOL, RTOL);
    }
    // A hidden width that does not divide the tensor, and a wrong-size gradient, are refused.
    let (a, b) = (gpu.tensor("up_gate", &[3, 10]).unwrap(), gpu.tensor("out", &[3, 5]).unwrap());
    let err = ew::silu_gate(gpu, &a, &b, 4).map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("hidden width 4"), "{err}");
    let err = ew::silu_gate_backward(gpu, &a, &b, &b, 5).map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("grad_up_gate"), "{err}");
}

/// A real 2-D launch: more than 65,535 workgroups of 64 threads at the device's own limit.
pub async fn huge_silu(gpu: &Gpu, c: &mut Checks) {
    let n = 65_536 * 64 + 3;
    let mut rng = Rng::new(4);
    let (x, x64) = random_tensor(gpu, &mut rng, "x", &[n], -8.0, 8.0);
    let out = gpu.tensor("out", &[n]).unwrap();
    let op = ew::activation(gpu, Activation::Silu, &x, &out).unwrap();
    assert!(op.workgroups[1] > 1, "expected a 2-D grid, got {:?}", op.workgroups);
    gpu.run(&[&op]).unwrap();
    c.close("silu", "n=4M (2-D grid)", &read(gpu, &out).await, &reference::activation(Activation::Silu, &x64), ATOL, RTOL);
}

pub async fn run(gpu: &Gpu, c: &mut Checks) {
    binaries(gpu, c).await;
    activations(gpu, c).await;
    bias_activation(gpu, c).await;
    activation_backward_sums(gpu, c).await;
    short_products(gpu, c).await;
    fused_orders(gpu, c).await;
    silu_gate(gpu, c).await;
}

crate::device_test!(elementwise_kernels_match_reference, run, checks);
crate::device_test!(elementwise_two_d_grid_at_device_limit, huge_silu, checks);

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn elementwise_reference_backwards_match_finite_differences() {
    let mut rng = Rng::new(5);
    let x: Vec<f64> = (0..9).map(|_| rng.range(-3.0, 3.0)).collect();
    let g: Vec<f64> = (0..9).map(|_| rng.range(-1.0, 1.0)).collect();
    for act in [Activation::Silu, Activation::Tanh, Activation::Relu] {
        let numeric = numeric_grad(|x| dot(&reference::activation(act, x), &g), &x, 1e-6);
        assert_close(&format!("{act:?}'"), &to32(&reference::activation_backward(act, &g, &x)), &numeric, 1e-6, 1e-5);
    }
    let gate: Vec<f64> = (0..9).map(|_| rng.range(-2.0, 2.0)).collect();
    let (gu, gg) = reference::silu_gate_backward(&x, &gate, &g);
    let nu = numeric_grad(|u| dot(&reference::silu_gate(u, &gate), &g), &x, 1e-6);
    let ng = numeric_grad(|v| dot(&reference::silu_gate(&x, v), &g), &gate, 1e-6);
    assert_close("silu_gate d/up", &to32(&gu), &nu, 1e-6, 1e-5);
    assert_close("silu_gate d/gate", &to32(&gg), &ng, 1e-6, 1e-5);
}
