//! Shared test harness: one test body runs natively (wgpu on Vulkan) and in the browser
#![allow(dead_code)] // each test target uses a different part of the harness
//! (wasm-bindgen-test in headless Chromium's WebGPU). GPU results are compared with the f64
//! references under `atol + rtol·|ref|`; a failure prints the worst elements.

use std::collections::BTreeSet;

use kiln::{Gpu, Tensor};

pub use kiln::rng::Rng;

pub async fn gpu() -> Gpu {
    match Gpu::new().await {
        Ok(gpu) => gpu,
        Err(e) => panic!("no GPU for the kernel tests: {e}"),
    }
}

/// Which entry points were verified against their reference, and how many comparisons ran.
#[derive(Default)]
pub struct Checks {
    pub entries: BTreeSet<&'static str>,
    pub count: usize,
}

impl Checks {
    /// Asserts |got - want| <= atol + rtol·|want| elementwise, crediting `entry`. A NaN fails,
    /// on either side: a reference that is NaN by accident must not pass a GPU that is too.
    pub fn close(&mut self, entry: &'static str, label: &str, got: &[f32], want: &[f64], atol: f64, rtol: f64) {
        assert_close(&format!("{entry}: {label}"), got, want, atol, rtol);
        self.pass(entry);
    }

    /// `close` for outputs that are meant to be NaN somewhere (a bad target, a NaN input): there
    /// a NaN on both sides passes.
    pub fn close_or_nan(&mut self, entry: &'static str, label: &str, got: &[f32], want: &[f64], atol: f64, rtol: f64) {
        compare(&format!("{entry}: {label}"), got, want, atol, rtol, true);
        self.pass(entry);
    }

    /// Asserts exact equality of words (indices, bit patterns), crediting `entry`.
    pub fn exact<T: PartialEq + std::fmt::Debug>(&mut self, entry: &'static str, label: &str, got: &[T], want: &[T]) {
        assert_eq!(got.len(), want.len(), "{entry}: {label}: length");
        if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
            panic!("{entry}: {label}: first mismatch at {i}: got {:?}, want {:?}", got[i], want[i]);
        }
        self.pass(entry);
    }

    pub fn pass(&mut self, entry: &'static str) {
        self.entries.insert(entry);
        self.count += 1;
    }

    pub fn report(&self, test: &str) {
        let line = format!("kernel checks: {test}: {} passed over {} entry points", self.count, self.entries.len());
        #[cfg(target_arch = "wasm32")]
        web_sys::console::log_1(&line.into());
        #[cfg(not(target_arch = "wasm32"))]
        println!("{line}");
    }
}

/// |got - want| <= atol + rtol·|want| elementwise; any NaN fails (see `Checks::close_or_nan`).
pub fn assert_close(label: &str, got: &[f32], want: &[f64], atol: f64, rtol: f64) {
    compare(label, got, want, atol, rtol, false);
}

fn compare(label: &str, got: &[f32], want: &[f64], atol: f64, rtol: f64, nan_meant: bool) {
    assert_eq!(got.len(), want.len(), "{label}: length");
    let mut bad: Vec<(usize, f64)> = (0..got.len())
        .filter_map(|i| {
            let (g, w) = (got[i] as f64, want[i]);
            let err = (g - w).abs();
            let ok = err <= atol + rtol * w.abs() || (nan_meant && g.is_nan() && w.is_nan()) || g == w;
            (!ok).then_some((i, err))
        })
        .collect();
    if !bad.is_empty() {
        bad.sort_by(|a, b| b.1.total_cmp(&a.1));
        let worst: Vec<String> = bad.iter().take(5).map(|&(i, e)| format!("  [{i}] got {} want {} (err {e:.3e})", got[i], want[i])).collect();
        panic!("{label}: {} of {} elements outside atol {atol:e} + rtol {rtol:e}·|ref|; worst:\n{}", bad.len(), got.len(), worst.join("\n"));
    }
}

pub fn f64s(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

/// Uploads random values in [lo, hi) and returns the tensor with its f64 copy.
pub fn random_tensor(gpu: &Gpu, rng: &mut Rng, name: &str, shape: &[usize], lo: f64, hi: f64) -> (Tensor, Vec<f64>) {
    let n: usize = shape.iter().product();
    let data = rng.vec_f32(n, lo, hi);
    let t = gpu.tensor_from(name, shape, &data).expect("upload");
    (t, f64s(&data))
}

pub async fn read(gpu: &Gpu, t: &Tensor) -> Vec<f32> {
    gpu.read_f32(t).await.expect("readback")
}

/// Central finite differences of scalar `f` at `x`: the gradient check of a reference backward.
pub fn numeric_grad(f: impl Fn(&[f64]) -> f64, x: &[f64], eps: f64) -> Vec<f64> {
    let mut x = x.to_vec();
    (0..x.len())
        .map(|i| {
            let keep = x[i];
            x[i] = keep + eps;
            let up = f(&x);
            x[i] = keep - eps;
            let down = f(&x);
            x[i] = keep;
            (up - down) / (2.0 * eps)
        })
        .collect()
}

/// Σ out·w: turns a vector function into the scalar whose gradient a backward computes.
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Element counts used by every 1-D family: under one workgroup, a non-multiple of 64, and a
/// size launched on a 2-D grid (the grid limit is lowered so small sizes need it).
pub const SIZES_1D: &[(usize, u32)] = &[(7, 65_535), (1_000, 65_535), (4_099, 5)];

pub fn to32(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

/// The f32 error bound of a column sum in reduce.wgsl's layout (`Columns`): each term passes
/// through at most ⌈rows / lanes⌉ serial adds, log2(lanes) tree adds and one add of db's prior
/// value, each off by at most half an ulp (2⁻²⁴ relative) of a partial sum ≤ `abs_sum`, the
/// largest column's Σ|term| + |db|.
pub fn column_sum_atol(rows: usize, lanes: usize, abs_sum: f64) -> f64 {
    let depth = rows.div_ceil(lanes) + lanes.trailing_zeros() as usize + 1;
    depth as f64 * 2f64.powi(-24) * abs_sum + 1e-30
}

/// max over columns c of Σ_r |x[r, c]| + |db[c]|, for `column_sum_atol`.
pub fn column_abs_max(x: &[f64], db: &[f64]) -> f64 {
    let cols = db.len();
    let mut sums: Vec<f64> = db.iter().map(|v| v.abs()).collect();
    for (i, v) in x.iter().enumerate() {
        sums[i % cols] += v.abs();
    }
    sums.into_iter().fold(0.0, f64::max)
}
