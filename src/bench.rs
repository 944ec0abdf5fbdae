//! Native benchmarks (`kiln bench`): matmul GFLOP/s over square and preset shapes, and training
//! throughput of the presets (steps/s, tokens/s, dispatches per step, host time to encode a
//! step). Wall-clock timing around work that ends in a blocking wait, after warm-up runs.
//! Speed is measured here, never asserted in tests.

use std::time::Instant;

use serde::Serialize;

use crate::error::Result;
use crate::gpu::Gpu;
use crate::kernels::matmul::{matmul, MatmulDesc};
use crate::presets::preset;
use crate::rng::Rng;
use crate::train::Session;

#[derive(Debug, Serialize)]
pub struct MatmulResult {
    pub shape: String,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub gflops: f64,
    pub ms: f64,
}

#[derive(Debug, Serialize)]
pub struct TrainResult {
    pub preset: String,
    pub steps_per_sec: f64,
    pub tokens_per_sec: f64,
    pub dispatches_per_step: usize,
    pub host_us_per_step: f64,
    pub final_loss: f32,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub adapter: String,
    pub backend: String,
    pub driver: String,
    pub matmul: Vec<MatmulResult>,
    pub training: Vec<TrainResult>,
}

/// Blocks until the GPU has finished everything submitted so far.
fn sync(gpu: &Gpu) {
    gpu.device.poll(wgpu::PollType::wait_indefinitely()).ok();
}

fn bench_matmul(gpu: &Gpu, label: &str, (m, n, k): (usize, usize, usize), trans_b: bool) -> Result<MatmulResult> {
    let mut rng = Rng::new(1);
    let a = gpu.tensor_from("a", &[m, k], &rng.vec_f32(m * k, -1.0, 1.0))?;
    let b = gpu.tensor_from("b", &[k, n], &rng.vec_f32(k * n, -1.0, 1.0))?;
    let c = gpu.tensor("c", &[m, n])?;
    let desc = MatmulDesc::new(m, n, k);
    let op = matmul(gpu, &a, &b, &c, if trans_b { desc.trans_b() } else { desc })?;
    let flops = 2.0 * (m * n * k) as f64;
    gpu.run(&[&op])?;
    sync(gpu);
    // Enough repetitions for ~50 ms of work at the first run's speed, at least 3, at most 200.
    let t0 = Instant::now();
    gpu.run(&[&op])?;
    sync(gpu);
    let once = t0.elapsed().as_secs_f64().max(1e-6);
    let reps = ((0.05 / once) as usize).clamp(3, 200);
    let ops: Vec<_> = std::iter::repeat_n(&op, reps).collect();
    let t0 = Instant::now();
    gpu.run(&ops)?;
    sync(gpu);
    let secs = t0.elapsed().as_secs_f64() / reps as f64;
    Ok(MatmulResult { shape: label.to_string(), m, n, k, gflops: flops / secs / 1e9, ms: secs * 1e3 })
}

fn bench_training(gpu: Gpu, name: &str, seconds: f64, chunk: u64) -> Result<TrainResult> {
    let cfg = preset(name).expect("bench presets exist");
    let mut s = Session::with_gpu(gpu, cfg)?;
    let tokens_per_step = (s.cfg.batch * s.model().rows_per_example()) as f64;
    s.train(3)?;
    pollster::block_on(s.read_metrics())?;
    // Chunks of steps, each ending in a metrics readback (as a page does), until `seconds` pass.
    let (mut steps, mut host) = (0u64, 0.0);
    let t0 = Instant::now();
    let mut last = f32::NAN;
    while t0.elapsed().as_secs_f64() < seconds || steps < chunk {
        let h = Instant::now();
        s.train(chunk)?;
        host += h.elapsed().as_secs_f64();
        last = pollster::block_on(s.read_metrics())?.last().map_or(f32::NAN, |m| m.loss);
        steps += chunk;
    }
    let rate = steps as f64 / t0.elapsed().as_secs_f64();
    Ok(TrainResult {
        preset: name.into(),
        steps_per_sec: rate,
        tokens_per_sec: rate * tokens_per_step,
        dispatches_per_step: s.dispatches_per_step(),
        host_us_per_step: host / steps as f64 * 1e6,
        final_loss: last,
    })
}

/// Runs every benchmark; `quick` keeps sizes that a CPU adapter finishes in seconds.
pub async fn run(quick: bool, seconds: f64) -> Result<Report> {
    let gpu = Gpu::new().await?;
    let info = gpu.summary();
    let sizes: &[usize] = if quick { &[256, 512, 1024] } else { &[256, 512, 1024, 2048, 4096] };
    let mut matmul_results = vec![];
    for &s in sizes {
        matmul_results.push(bench_matmul(&gpu, &format!("{s}³"), (s, s, s), false)?);
    }
    // llama-small's linear layers: (B·T, C) · Wᵀ for qkv, the MLP up/gate, and the LM head.
    let presets_shapes = [("llama-small qkv", (4096, 768, 256)), ("llama-small up", (4096, 1024, 256)), ("llama-small down", (4096, 256, 1024)), ("mlp-spiral hidden", (512, 16, 16))];
    for (label, shape) in presets_shapes {
        matmul_results.push(bench_matmul(&gpu, label, shape, true)?);
    }
    let mut training = vec![bench_training(gpu, "mlp-spiral", seconds, 50)?];
    // llama-small is ~85 GFLOP a step: minutes on a CPU adapter, so --quick leaves it out.
    let llamas: &[&str] = if quick { &["llama-tiny"] } else { &["llama-tiny", "llama-small"] };
    for name in llamas {
        training.push(bench_training(Gpu::new().await?, name, seconds, if quick { 2 } else { 10 })?);
    }
    Ok(Report { adapter: info.name, backend: info.backend, driver: info.driver, matmul: matmul_results, training })
}

pub fn print(report: &Report) {
    println!("adapter: {} ({}), driver {}", report.adapter, report.backend, report.driver);
    println!("\n{:<20} {:>6} {:>6} {:>6} {:>10} {:>10}", "matmul", "M", "N", "K", "ms", "GFLOP/s");
    for r in &report.matmul {
        println!("{:<20} {:>6} {:>6} {:>6} {:>10.3} {:>10.1}", r.shape, r.m, r.n, r.k, r.ms, r.gflops);
    }
    println!("\n{:<14} {:>10} {:>12} {:>11} {:>13} {:>10}", "preset", "steps/s", "tokens/s", "dispatches", "host µs/step", "loss");
    for t in &report.training {
        println!(
            "{:<14} {:>10.1} {:>12.0} {:>11} {:>13.1} {:>10.4}",
            t.preset, t.steps_per_sec, t.tokens_per_sec, t.dispatches_per_step, t.host_us_per_step, t.final_loss
        );
    }
}
