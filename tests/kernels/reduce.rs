//! GPU-vs-reference checks for shaders/reduce.wgsl: the two-level sum (partials, final, the
//! `sum`/`sum_squares` wrappers for N from 1 to 10^6) and column_sum, plus a finite-difference
//! check of column_sum's reference as the bias gradient.
//!
//! Tolerances: inputs are exact f32 values, so the only error is f32 summation, bounded by
//! depth·2^-24·Σ|x| where depth (per-thread loop + two 8-level trees) is at most ~31 for the
//! two-level sums here: atol = 2e-6·Σ|x| of the sum being checked (well above the typical
//! random-walk error); column sums use the same bound with their own depth (`column_sum_atol`).
//! sum_final is always one workgroup, so it has no 2-D grid case; it is checked on every size.

use kiln::kernels::reduce::{self as rd, reference, Final};
use kiln::Gpu;

use crate::common::*;

/// The summation tolerance above for a sum over `x` (x² if `squares`).
fn sum_tol(x: &[f64], squares: bool) -> f64 {
    2e-6 * reference::sum(&x.iter().map(|v| v.abs()).collect::<Vec<_>>(), squares) + 1e-30
}

/// (N, grid limit): 1 element, under one workgroup, non-multiples of 256, a 2-D grid (17
/// groups over a limit of 5), 10^6 elements (1,024 partials, the most) on the device grid and on a 2-D one.
const SIZES: &[(usize, u32)] = &[(1, 65_535), (7, 65_535), (1_000, 65_535), (4_099, 5), (1_000_000, 65_535), (1_000_000, 16)];

async fn two_level(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(11);
    for &(n, grid) in SIZES {
        gpu.set_grid_limit(grid);
        let (x, x64) = random_tensor(gpu, &mut rng, "x", &[n], -1.0, 1.0);
        let groups = rd::partial_groups(n);
        for squares in [false, true] {
            // Level 1 at an offset: the slots before it must survive (shared partials arrays).
            let offset = 3;
            let sentinel = vec![7.5f32; offset + groups];
            let partials = gpu.tensor_from("partials", &[offset + groups], &sentinel).unwrap();
            let op = rd::sum_partial(gpu, &x, &partials, offset, squares).unwrap();
            if grid < 65_535 {
                assert!(op.workgroups[1] > 1, "expected a 2-D grid, got {:?}", op.workgroups);
            }
            gpu.run(&[&op]).unwrap();
            let got = read(gpu, &partials).await;
            let mut want = vec![7.5; offset];
            want.extend(reference::partials(&x64, groups, squares));
            let label = format!("n={n} squares={squares} G={groups}");
            c.close("sum_partial", &label, &got, &want, sum_tol(&x64, squares), 0.0);

            // Level 2 into out[1] of 3, written then accumulated, scale 1/N (the mean).
            let out = gpu.tensor_from("out", &[3], &[1.0f32, -2.0, 3.0]).unwrap();
            let (scale, total) = (1.0 / n as f32, reference::sum(&x64, squares));
            let mean = total * scale as f64;
            let with_sentinels = mean + 3.0 * 7.5 * scale as f64; // the offset slots are summed too
            for accumulate in [true, false] {
                let at = Final { index: 1, scale, accumulate };
                gpu.run(&[&rd::sum_final(gpu, &partials, offset + groups, &out, at).unwrap()]).unwrap();
                let want_1 = if accumulate { -2.0 + with_sentinels } else { with_sentinels };
                let tol = sum_tol(&x64, squares) * scale as f64 + 1e-6 * with_sentinels.abs();
                let want = [1.0, want_1, 3.0];
                c.close("sum_final", &format!("{label} acc={accumulate}"), &read(gpu, &out).await, &want, tol, 0.0);
            }

            // The wrappers: out[0] = mean of x (of x²).
            let out = gpu.tensor("mean", &[1]).unwrap();
            let ops = if squares { rd::sum_squares(gpu, &x, &out, scale) } else { rd::sum(gpu, &x, &out, scale) };
            let ops = ops.unwrap();
            gpu.run(&ops.iter().collect::<Vec<_>>()).unwrap();
            let tol = sum_tol(&x64, squares) * scale as f64;
            c.close("sum_final", &format!("mean {label}"), &read(gpu, &out).await, &[mean], tol, 1e-6);
            c.close("sum_partial", &format!("mean {label}"), &read(gpu, &out).await, &[mean], tol, 1e-6);
        }
    }
}

/// Two inputs sharing one partials array (how the gradient norm sums many tensors).
async fn shared_partials(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(12);
    let (a, a64) = random_tensor(gpu, &mut rng, "a", &[300], -1.0, 1.0);
    let (b, b64) = random_tensor(gpu, &mut rng, "b", &[5_000], -1.0, 1.0);
    let (ga, gb) = (rd::partial_groups(300), rd::partial_groups(5_000));
    let partials = gpu.tensor("partials", &[ga + gb]).unwrap();
    let out = gpu.tensor("out", &[1]).unwrap();
    gpu.run(&[
        &rd::sum_partial(gpu, &a, &partials, 0, false).unwrap(),
        &rd::sum_partial(gpu, &b, &partials, ga, false).unwrap(),
        &rd::sum_final(gpu, &partials, ga + gb, &out, Final::scaled(1.0)).unwrap(),
    ])
    .unwrap();
    let all: Vec<f64> = a64.iter().chain(&b64).cloned().collect();
    c.close("sum_final", "a ++ b", &read(gpu, &out).await, &[reference::sum(&all, false)], sum_tol(&all, false), 0.0);
}

/// (rows, cols, grid limit): one element; few rows (4 lanes a column, 64 columns a workgroup);
/// ragged columns; 100 and 200 rows (8 and 16 lanes); 301 rows (32 lanes, 8 columns a
/// workgroup, each lane's loop ending part-way through its rounds of four loads); a 512-row
/// batch; 2,000 rows (63 a lane) over 3 columns; and 700 columns (11 workgroups) on a 2-D grid
/// of limit 5.
const COLUMN_SHAPES: &[(usize, usize, u32)] = &[
    (1, 1, 65_535),
    (3, 7, 65_535),
    (37, 130, 65_535),
    (100, 20, 65_535),
    (200, 33, 65_535),
    (301, 65, 65_535),
    (512, 1_024, 65_535),
    (2_000, 3, 65_535),
    (9, 700, 5),
];

/// Within `column_sum_atol` (common.rs): the sums' own rounding, bounded from the data.
async fn column_sums(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(13);
    for &(rows, cols, grid) in COLUMN_SHAPES {
        gpu.set_grid_limit(grid);
        let (dy, dy64) = random_tensor(gpu, &mut rng, "dy", &[rows, cols], -1.0, 1.0);
        let (db, db64) = random_tensor(gpu, &mut rng, "db", &[cols], -1.0, 1.0);
        let want = reference::column_sum(&dy64, cols);
        let tol = column_sum_atol(rows, rd::Columns::of(&dy, &db).unwrap().lanes, column_abs_max(&dy64, &db64));
        let op = rd::column_sum(gpu, &dy, &db, true).unwrap();
        if grid < 65_535 {
            assert!(op.workgroups[1] > 1, "expected a 2-D grid, got {:?}", op.workgroups);
        }
        gpu.run(&[&op]).unwrap();
        let acc: Vec<f64> = want.iter().zip(&db64).map(|(w, d)| w + d).collect();
        c.close("column_sum", &format!("{rows}x{cols} accumulate"), &read(gpu, &db).await, &acc, tol, 0.0);
        gpu.run(&[&rd::column_sum(gpu, &dy, &db, false).unwrap()]).unwrap();
        c.close("column_sum", &format!("{rows}x{cols} write"), &read(gpu, &db).await, &want, tol, 0.0);
    }
}

/// Bad sizes are typed errors naming the tensor, never panics.
async fn rejects_bad_input(gpu: &Gpu, _c: &mut Checks) {
    let x = gpu.tensor("x", &[1_000]).unwrap();
    let small = gpu.tensor("small", &[2]).unwrap();
    let out = gpu.tensor("out", &[1]).unwrap();
    assert!(rd::sum_partial(gpu, &x, &small, 0, false).err().unwrap().to_string().contains("small"));
    assert!(rd::sum_final(gpu, &small, 3, &out, Final::scaled(1.0)).is_err());
    assert!(rd::sum_final(gpu, &small, 2, &out, Final { index: 1, scale: 1.0, accumulate: false }).is_err());
    let db = gpu.tensor("db", &[3]).unwrap();
    assert!(rd::column_sum(gpu, &x, &db, false).err().unwrap().to_string().contains("`x`"));
}

pub async fn run(gpu: &Gpu, c: &mut Checks) {
    two_level(gpu, c).await;
    shared_partials(gpu, c).await;
    column_sums(gpu, c).await;
    rejects_bad_input(gpu, c).await;
}

crate::device_test!(reduce_kernels_match_reference, run, checks);

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn reduce_column_sum_reference_is_the_bias_gradient() {
    let mut rng = Rng::new(14);
    let (rows, cols) = (5, 3);
    let x: Vec<f64> = (0..rows * cols).map(|_| rng.range(-1.0, 1.0)).collect();
    let dy: Vec<f64> = (0..rows * cols).map(|_| rng.range(-1.0, 1.0)).collect();
    let b: Vec<f64> = (0..cols).map(|_| rng.range(-1.0, 1.0)).collect();
    let numeric = numeric_grad(|b| dot(&reference::add_bias(&x, b), &dy), &b, 1e-6);
    assert_close("d/db", &to32(&reference::column_sum(&dy, cols)), &numeric, 1e-8, 1e-6);
}
