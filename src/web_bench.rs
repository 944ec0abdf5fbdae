//! Benchmarks in the browser's engine (Dawn in Chrome, or Node's `webgpu` package), timed
//! around work that ends in an awaited readback: `benchMatmul` (the matmul kernel's GFLOP/s)
//! and `profileStep` (a training step's GPU time by kernel, as `kiln bench` profiles natively).
//! Used by bench/dawn_bench.mjs; not part of the page.

use wasm_bindgen::prelude::*;

use crate::config::SessionConfig;
use crate::gpu::{Gpu, Op};
use crate::kernels::matmul::{matmul, MatmulDesc};
use crate::profile;
use crate::rng::Rng;
use crate::session::Session;

fn js_error(e: impl std::fmt::Display) -> JsValue {
    js_sys::Error::new(&e.to_string()).into()
}

/// Milliseconds from `performance.now()` (sub-millisecond in Node and in browsers), falling
/// back to `Date.now()` (whole milliseconds) where there is none.
fn now_ms() -> f64 {
    let global = js_sys::global();
    let now = js_sys::Reflect::get(&global, &"performance".into())
        .ok()
        .filter(|p| p.is_object())
        .and_then(|p| js_sys::Reflect::get(&p, &"now".into()).ok().map(|f| (p, f)))
        .and_then(|(p, f)| f.dyn_ref::<js_sys::Function>().and_then(|f| f.call0(&p).ok()))
        .and_then(|v| v.as_f64());
    now.unwrap_or_else(js_sys::Date::now)
}

/// GFLOP/s of C(m,n) = A(m,k)·B (B stored (n,k) when `trans_b`): the fastest of three runs of
/// about 200 ms of work.
#[wasm_bindgen(js_name = benchMatmul)]
pub async fn bench_matmul(m: usize, n: usize, k: usize, trans_b: bool) -> Result<f64, JsValue> {
    let gpu = Gpu::new().await.map_err(js_error)?;
    let mut rng = Rng::new(1);
    let a = gpu.tensor_from("a", &[m, k], &rng.vec_f32(m * k, -1.0, 1.0)).map_err(js_error)?;
    let b = gpu.tensor_from("b", &[k, n], &rng.vec_f32(k * n, -1.0, 1.0)).map_err(js_error)?;
    let c = gpu.tensor("c", &[m, n]).map_err(js_error)?;
    let desc = MatmulDesc::new(m, n, k);
    let op = matmul(&gpu, &a, &b, &c, if trans_b { desc.trans_b() } else { desc }).map_err(js_error)?;
    let secs = seconds_per_run(&gpu, &[&op], 0.2, 2000).await?;
    // In f64: m·n·k overflows wasm32's 32-bit usize from 2048³ on.
    Ok(2.0 * m as f64 * n as f64 * k as f64 / secs / 1e9)
}

/// Seconds per run of `ops`: repeated back to back for about `budget` seconds of work (at
/// most `max_reps` times), timed three times, the fastest counting.
async fn seconds_per_run(gpu: &Gpu, ops: &[&Op], budget: f64, max_reps: usize) -> Result<f64, JsValue> {
    let probe = gpu.tensor("probe", &[1]).map_err(js_error)?;
    // A readback of a tiny buffer waits for everything submitted before it.
    let time = |reps: usize| {
        let all: Vec<&Op> = (0..reps).flat_map(|_| ops.iter().copied()).collect();
        let probe = &probe;
        async move {
            let t0 = now_ms();
            gpu.run(&all).map_err(js_error)?;
            gpu.read_f32(probe).await.map_err(js_error)?;
            Ok::<f64, JsValue>((now_ms() - t0).max(0.001) / 1e3)
        }
    };
    time(2).await?;
    let once = time(1).await?;
    // Each timing ends in a readback round trip, whose cost from Node varies by milliseconds
    // (and now and then a run is slow throughout): the fastest of three runs counts.
    let reps = ((budget / once) as usize).clamp(3, max_reps);
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        best = best.min(time(reps).await?);
    }
    Ok(best / reps as f64)
}

/// A config's training step, each dispatch timed alone and summed by entry point, costliest
/// first (`[{preset, entry, dispatches, us_per_step}]`; `name` fills `preset`).
#[wasm_bindgen(js_name = profileStep)]
pub async fn profile_step(name: String, config_json: String) -> Result<JsValue, JsValue> {
    let cfg: SessionConfig = crate::parse::from_json(&config_json, "config").map_err(js_error)?;
    let mut session = Session::new(cfg).await.map_err(js_error)?;
    session.train(2).map_err(js_error)?;
    session.read_metrics().await.map_err(js_error)?;
    let mut out = vec![];
    for op in session.step_ops() {
        // About 10 ms of work per timing: the readback that ends it costs ≈ 0.1–1 ms in Node.
        profile::add(&mut out, &name, op.entry, seconds_per_run(&session.gpu, &[op], 0.01, 2000).await?);
    }
    profile::sort(&mut out);
    serde_wasm_bindgen::to_value(&out).map_err(js_error)
}

/// The scaling table's configs (`presets::scaling`) as `[{name, config}]`, for
/// `bench/dawn_bench.mjs --scaling`.
#[wasm_bindgen(js_name = scalingConfigs)]
pub fn scaling_configs() -> Result<JsValue, JsValue> {
    let rows: Vec<serde_json::Value> =
        crate::presets::scaling().into_iter().map(|(name, config)| serde_json::json!({ "name": name, "config": config })).collect();
    js_sys::JSON::parse(&serde_json::Value::from(rows).to_string())
}
