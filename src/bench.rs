//! Native benchmarks (`kiln bench`): matmul GFLOP/s over square and preset shapes, and training
//! throughput of the presets (steps/s, tokens/s, dispatches per step, host time to encode a
//! step), with `--scaling` the cost curve over model sizes (presets::scaling), and with
//! `--mixed` fp32 against mixed precision (speed and bytes). Wall-clock
//! timing around work that ends in a blocking wait, after warm-up runs.
//! Speed is measured here, never asserted in tests.

use std::time::Instant;

use serde::Serialize;

use crate::config::SessionConfig;
use crate::error::Result;
use crate::gpu::Gpu;
use crate::kernels::matmul::{matmul_ops, plan, wide_allowed, Adapter, MatmulDesc, LEAN, SMALL, WIDE};
use crate::model::llama::Precision;
use crate::model::params::ParamStore;
use crate::model::ModelConfig;
use crate::presets::preset;
use crate::profile::{self, ProfileEntry};
use crate::rng::Rng;
use crate::session::Session;

#[derive(Debug, Serialize)]
pub struct MatmulResult {
    pub shape: String,
    /// Kernel choice: "t64" / "t128" tile, "lean" (64x64, 64 threads), "small", "+sN" when split into N k chunks; "(auto)" when chosen
    /// by the wrapper rather than forced.
    pub variant: String,
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
    pub profile: Vec<ProfileEntry>,
}

/// One row of the scaling table: a config of `presets::scaling` and its training speed.
#[derive(Debug, Serialize)]
pub struct ScalingResult {
    pub name: String,
    pub config: SessionConfig,
    pub parameters: usize,
    pub steps_per_sec: f64,
    pub tokens_per_sec: f64,
    pub dispatches_per_step: usize,
}

#[derive(Debug, Serialize)]
pub struct ScalingReport {
    pub adapter: String,
    pub backend: String,
    pub scaling: Vec<ScalingResult>,
    /// The Llama configs' steps, dispatch by dispatch (where the cost curve bends).
    pub profile: Vec<ProfileEntry>,
}

/// One preset in one precision (`kiln bench --mixed`).
#[derive(Debug, Serialize)]
pub struct PrecisionResult {
    pub preset: String,
    pub precision: Precision,
    /// None when only the memory was measured (llama-small with `--quick` on a CPU adapter).
    pub tokens_per_sec: Option<f64>,
    pub dispatches_per_step: usize,
    pub bytes: PassBytes,
    /// Everything the run holds: also the master weights, gradients, AdamW state, snapshots.
    pub session_bytes: u64,
    pub final_loss: Option<f32>,
}

#[derive(Debug, Serialize)]
pub struct PrecisionReport {
    pub adapter: String,
    pub backend: String,
    pub runs: Vec<PrecisionResult>,
    /// llama-small's step in each precision, dispatch by dispatch (not with `quick`).
    pub profile: Vec<ProfileEntry>,
}

/// What a training pass holds, in bytes, from Kiln's live-buffer count (nothing runs).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PassBytes {
    /// The weights the passes read: the f16 copy in mixed precision, else the fp32 weights.
    pub weights: u64,
    /// Every buffer a forward pass allocates: the activations (and the logits).
    pub activations: u64,
    /// Every buffer the training pass allocates: the activations and their gradients.
    pub pass: u64,
}

/// `PassBytes` of a config. The split-K workspace that one `Gpu` shares among all passes is
/// allocated first and left out (it is the same in both precisions).
pub fn pass_bytes(gpu: &Gpu, cfg: &SessionConfig) -> Result<PassBytes> {
    let params = ParamStore::new(gpu, cfg.model.param_specs(), cfg.seed, cfg.model.mixed())?;
    let weights = params.weights16.as_ref().unwrap_or(&params.weights).bytes();
    drop(cfg.model.build(gpu, &params, cfg.batch, true)?);
    let allocated = |train: bool| -> Result<u64> {
        let before = gpu.live().bytes;
        let net = cfg.model.build(gpu, &params, cfg.batch, train)?;
        let bytes = (gpu.live().bytes - before) as u64;
        drop(net);
        Ok(bytes)
    };
    Ok(PassBytes { weights, activations: allocated(false)?, pass: allocated(true)? })
}

/// fp32 against mixed precision on llama-tiny and llama-small (with `quick`, llama-small's
/// memory only), each run on a fresh device.
pub async fn precision(quick: bool, seconds: f64) -> Result<PrecisionReport> {
    let info = Gpu::new().await?.summary();
    let (mut runs, mut profile) = (vec![], vec![]);
    for name in ["llama-tiny", "llama-small"] {
        for precision in [Precision::Fp32, Precision::Mixed] {
            let mut cfg = preset(name).expect("bench presets exist");
            if let ModelConfig::Llama(l) = &mut cfg.model {
                l.precision = precision;
            }
            let bytes = pass_bytes(&Gpu::new().await?, &cfg)?;
            let session = Session::with_gpu(Gpu::new().await?, cfg.clone())?;
            let (session_bytes, dispatches_per_step) = (session.gpu.live().bytes as u64, session.dispatches_per_step());
            drop(session);
            if !quick && name == "llama-small" {
                profile.extend(profile_config(Gpu::new().await?, &format!("{name} {precision:?}"), cfg.clone())?);
            }
            let trained =
                if quick && name == "llama-small" { None } else { Some(bench_config(Gpu::new().await?, name, cfg, seconds, if quick { 2 } else { 10 })?.0) };
            let r = PrecisionResult {
                preset: name.into(),
                precision,
                tokens_per_sec: trained.as_ref().map(|t| t.tokens_per_sec),
                dispatches_per_step,
                bytes,
                session_bytes,
                final_loss: trained.map(|t| t.final_loss),
            };
            let mb = |b: u64| b as f64 / 1e6;
            let speed = r.tokens_per_sec.map_or("-".into(), |t| format!("{t:.0}"));
            println!(
                "{name:<12} {precision:<6?} {speed:>10} tokens/s {:>4} dispatches  weights {:>6.1} + activations {:>6.1} MB (pass {:>6.1}, session {:>6.1} MB)",
                r.dispatches_per_step,
                mb(r.bytes.weights),
                mb(r.bytes.activations),
                mb(r.bytes.pass),
                mb(r.session_bytes)
            );
            runs.push(r);
        }
    }
    for p in &profile {
        println!("    {:<18} {:<28} {:>4} dispatches {:>9.1} µs/step", p.preset, p.entry, p.dispatches, p.us_per_step);
    }
    Ok(PrecisionReport { adapter: info.name, backend: info.backend, runs, profile })
}

/// Blocks until the GPU has finished everything submitted so far.
fn sync(gpu: &Gpu) {
    gpu.wait();
}

/// Times `ops` repeated back to back in one compute pass: seconds per repetition, from the
/// fastest of three runs.
fn time_ops(gpu: &Gpu, ops: &[&crate::gpu::Op], budget: f64, max_reps: usize) -> Result<f64> {
    gpu.run(ops)?;
    sync(gpu);
    let t0 = Instant::now();
    gpu.run(ops)?;
    sync(gpu);
    let once = t0.elapsed().as_secs_f64().max(1e-6);
    let reps = ((budget / once) as usize).clamp(3, max_reps);
    let all: Vec<_> = (0..reps).flat_map(|_| ops.iter().copied()).collect();
    // The fastest of three runs, as the browser-engine bench (web_bench.rs) measures.
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t0 = Instant::now();
        gpu.run(&all)?;
        sync(gpu);
        best = best.min(t0.elapsed().as_secs_f64());
    }
    Ok(best / reps as f64)
}

fn bench_matmul(gpu: &Gpu, label: &str, d: MatmulDesc) -> Result<MatmulResult> {
    let (m, n, k) = (d.m, d.n, d.k);
    let mut rng = Rng::new(1);
    let a = gpu.tensor_from("a", &[m, k], &rng.vec_f32(m * k, -1.0, 1.0))?;
    let b = gpu.tensor_from("b", &[k, n], &rng.vec_f32(k * n, -1.0, 1.0))?;
    let c = gpu.tensor("c", &[m, n])?;
    let ops = matmul_ops(gpu, &a, &b, &c, d)?;
    let (tile, splits, _) = plan(&d, true, Adapter::of(gpu));
    let forced = d.tile.is_some() || d.splits.is_some();
    let name = match tile {
        LEAN => "lean".to_string(),
        WIDE if wide_allowed(gpu) => "wide".to_string(),
        WIDE => "t128".to_string(),
        SMALL => "small".to_string(),
        t => format!("t{t}"),
    };
    let variant = format!("{name}{}{}", if splits > 1 { format!("+s{splits}") } else { String::new() }, if forced { "" } else { " (auto)" });
    let flops = 2.0 * (m * n * k) as f64;
    // Enough repetitions for ~50 ms of work at the first run's speed, at least 3, at most 200.
    let secs = time_ops(gpu, &ops.iter().collect::<Vec<_>>(), 0.05, 200)?;
    Ok(MatmulResult { shape: label.to_string(), variant, m, n, k, gflops: flops / secs / 1e9, ms: secs * 1e3 })
}

/// Each dispatch of a preset's training step timed alone, summed by entry point.
fn profile(gpu: Gpu, name: &str) -> Result<Vec<ProfileEntry>> {
    profile_config(gpu, name, preset(name).expect("bench presets exist"))
}

/// `profile` of any config.
fn profile_config(gpu: Gpu, name: &str, cfg: SessionConfig) -> Result<Vec<ProfileEntry>> {
    let mut s = Session::with_gpu(gpu, cfg)?;
    s.train(2)?;
    pollster::block_on(s.read_metrics())?;
    let mut out = vec![];
    // KILN_PROFILE_EACH=1 also prints every dispatch in step order, with its grid.
    let each = std::env::var("KILN_PROFILE_EACH").is_ok();
    for (i, op) in s.step_ops().into_iter().enumerate() {
        let secs = time_ops(&s.gpu, &[op], 0.003, 50)?;
        if each {
            println!("  {name} #{i:<3} {:<30} {:>16} {:>9.1} µs", op.entry, format!("{:?}", op.workgroups), secs * 1e6);
        }
        profile::add(&mut out, name, op.entry, secs);
    }
    profile::sort(&mut out);
    Ok(out)
}

fn bench_training(gpu: Gpu, name: &str, seconds: f64, chunk: u64) -> Result<TrainResult> {
    bench_config(gpu, name, preset(name).expect("bench presets exist"), seconds, chunk).map(|(r, _)| r)
}

/// Training speed of `cfg`, and its parameter count.
fn bench_config(gpu: Gpu, name: &str, cfg: SessionConfig, seconds: f64, chunk: u64) -> Result<(TrainResult, usize)> {
    let mut s = Session::with_gpu(gpu, cfg)?;
    // KILN_SNAPSHOT_EVERY=N measures recovery snapshots every N steps (0: none) instead of the
    // default, for A/B runs.
    if let Some(every) = std::env::var("KILN_SNAPSHOT_EVERY").ok().and_then(|v| v.parse().ok()) {
        s.snapshots.set_every(every);
    }
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
    let result = TrainResult {
        preset: name.into(),
        steps_per_sec: rate,
        tokens_per_sec: rate * tokens_per_step,
        dispatches_per_step: s.dispatches_per_step(),
        host_us_per_step: host / steps as f64 * 1e6,
        final_loss: last,
    };
    Ok((result, s.params.count()))
}

/// The scaling table: every config of `presets::scaling`, each on a fresh device.
pub async fn scaling(seconds: f64) -> Result<ScalingReport> {
    let info = Gpu::new().await?.summary();
    let (mut rows, mut profile) = (vec![], vec![]);
    // KILN_SCALING_ONLY=PREFIX keeps the configs whose name starts with it (for A/B runs).
    let only = std::env::var("KILN_SCALING_ONLY").unwrap_or_default();
    for (name, cfg) in crate::presets::scaling().into_iter().filter(|(name, _)| name.starts_with(&only)) {
        let llama = matches!(cfg.model, crate::model::ModelConfig::Llama(_));
        let (r, parameters) = bench_config(Gpu::new().await?, &name, cfg.clone(), seconds, if llama { 10 } else { 50 })?;
        println!(
            "{name:<12} {parameters:>10} params {:>10.1} steps/s {:>12.0} tokens/s {:>5} dispatches",
            r.steps_per_sec, r.tokens_per_sec, r.dispatches_per_step
        );
        let entries = profile_config(Gpu::new().await?, &name, cfg.clone())?;
        for p in entries.iter().take(6) {
            println!("    {:<28} {:>4} dispatches {:>9.1} µs/step", p.entry, p.dispatches, p.us_per_step);
        }
        profile.extend(entries);
        let (steps_per_sec, tokens_per_sec, dispatches_per_step) = (r.steps_per_sec, r.tokens_per_sec, r.dispatches_per_step);
        rows.push(ScalingResult { name, config: cfg, parameters, steps_per_sec, tokens_per_sec, dispatches_per_step });
    }
    Ok(ScalingReport { adapter: info.name, backend: info.backend, scaling: rows, profile })
}

/// Runs every benchmark; `quick` keeps sizes that a CPU adapter finishes in seconds.
pub async fn run(quick: bool, seconds: f64) -> Result<Report> {
    let gpu = Gpu::new().await?;
    let info = gpu.summary();
    let sizes: &[usize] = if quick { &[256, 512, 1024] } else { &[256, 512, 1024, 2048, 4096] };
    let mut matmul_results = vec![];
    for &s in sizes {
        matmul_results.push(bench_matmul(&gpu, &format!("{s}³"), MatmulDesc::new(s, s, s))?);
    }
    // Forced tiles on the big squares, to compare the kernels.
    let big: &[usize] = if quick { &[1024] } else { &[1024, 4096] };
    for &s in big {
        for tile in [64, 128, LEAN, WIDE] {
            matmul_results.push(bench_matmul(&gpu, &format!("{s}³"), MatmulDesc::new(s, s, s).tile(tile).splits(1))?);
        }
    }
    // llama-small's linear layers (N = B·T = 4096 rows, C = 256, F = 1024): forward Y = X·Wᵀ,
    // dX = dY·W and the weight gradients dW += dYᵀ·X (few output tiles, k = 4096).
    let rows = if quick { 512 } else { 4096 };
    let fwd = |n: usize, k: usize| MatmulDesc::new(rows, n, k).trans_b();
    let dw = |o: usize, i: usize| MatmulDesc::new(o, i, rows).trans_a().accumulate();
    let shapes = [
        ("llama-small qkv", fwd(768, 256)),
        ("llama-small up", fwd(1024, 256)),
        ("llama-small down", fwd(256, 1024)),
        ("llama-small proj", fwd(256, 256)),
        ("llama-small dX up", MatmulDesc::new(rows, 256, 1024)),
        ("llama-small dW qkv", dw(768, 256)),
        ("llama-small dW up", dw(1024, 256)),
        ("llama-small dW down", dw(256, 1024)),
        ("llama-small dW proj", dw(256, 256)),
    ];
    for (label, d) in shapes {
        matmul_results.push(bench_matmul(&gpu, label, d)?);
        for tile in [64, 128, LEAN, WIDE] {
            matmul_results.push(bench_matmul(&gpu, label, d.tile(tile).splits(1))?);
        }
        if label == "llama-small proj" {
            // Few tiles and a short k: the 128 tile split into chunks of 128 and 64.
            for splits in [2, 4] {
                matmul_results.push(bench_matmul(&gpu, label, d.tile(128).splits(splits))?);
            }
        }
        if label.contains("dW") {
            // Other splits: the 128 tile with its automatic split, and twice the 64 tile's.
            matmul_results.push(bench_matmul(&gpu, label, d.tile(128))?);
            let (_, s, _) = plan(&d.tile(64), true, Adapter::of(&gpu));
            matmul_results.push(bench_matmul(&gpu, label, d.tile(64).splits(2 * s))?);
        }
    }
    matmul_results.push(bench_matmul(&gpu, "mlp-spiral hidden", MatmulDesc::new(512, 16, 16).trans_b())?);
    let mut training = vec![bench_training(gpu, "mlp-spiral", seconds, 50)?];
    // llama-small is ~85 GFLOP a step: minutes on a CPU adapter, so --quick leaves it out.
    let llamas: &[&str] = if quick { &["llama-tiny"] } else { &["llama-tiny", "llama-small"] };
    for name in llamas {
        training.push(bench_training(Gpu::new().await?, name, seconds, if quick { 2 } else { 10 })?);
    }
    let mut prof = profile(Gpu::new().await?, "mlp-spiral")?;
    prof.extend(profile(Gpu::new().await?, llamas[llamas.len() - 1])?);
    Ok(Report { adapter: info.name, backend: info.backend, driver: info.driver, matmul: matmul_results, training, profile: prof })
}

pub fn print(report: &Report) {
    println!("adapter: {} ({}), driver {}", report.adapter, report.backend, report.driver);
    println!("\n{:<20} {:<14} {:>6} {:>6} {:>6} {:>10} {:>10}", "matmul", "kernel", "M", "N", "K", "ms", "GFLOP/s");
    for r in &report.matmul {
        println!("{:<20} {:<14} {:>6} {:>6} {:>6} {:>10.3} {:>10.1}", r.shape, r.variant, r.m, r.n, r.k, r.ms, r.gflops);
    }
    println!("\n{:<14} {:>10} {:>12} {:>11} {:>13} {:>10}", "preset", "steps/s", "tokens/s", "dispatches", "host µs/step", "loss");
    for t in &report.training {
        println!(
            "{:<14} {:>10.1} {:>12.0} {:>11} {:>13.1} {:>10.4}",
            t.preset, t.steps_per_sec, t.tokens_per_sec, t.dispatches_per_step, t.host_us_per_step, t.final_loss
        );
    }
    println!("\n{:<14} {:<28} {:>10} {:>12}", "profile", "entry point", "dispatches", "µs/step");
    for p in &report.profile {
        println!("{:<14} {:<28} {:>10} {:>12.1}", p.preset, p.entry, p.dispatches, p.us_per_step);
    }
}
