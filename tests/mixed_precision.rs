//! Mixed-precision training (`model.llama.precision = "mixed"`): the same run in fp32 and in
//! mixed precision, the memory it saves, and the loss scale's back-off on overflow.

use kiln::config::SessionConfig;
use kiln::model::llama::Precision;
use kiln::model::ModelConfig;
use kiln::presets::preset;
use kiln::session::{Session, StepMetrics};
use kiln::Gpu;

fn with_precision(name: &str, precision: Precision) -> SessionConfig {
    let mut cfg = preset(name).expect("preset");
    if let ModelConfig::Llama(l) = &mut cfg.model {
        l.precision = precision;
    }
    cfg
}

async fn train(cfg: SessionConfig, steps: u64) -> Vec<StepMetrics> {
    let mut s = Session::new(cfg).await.expect("session");
    let mut out = vec![];
    for _ in 0..steps / 20 {
        s.train(20).expect("train");
        out.extend(s.read_metrics().await.expect("metrics"));
    }
    out
}

fn mean_loss(m: &[StepMetrics]) -> f64 {
    m.iter().map(|m| m.loss as f64).sum::<f64>() / m.len() as f64
}

/// llama-tiny, same seed, 120 steps (batch 4 to keep llvmpipe quick) both ways. f16 keeps
/// 11 bits of each stashed activation (relative rounding ≤ 4.9e-4), so the two runs start
/// equal to about 1e-3 and drift apart only as far as training is sensitive to it: the mean
/// loss of the last 20 steps must agree within 2% while both fall well below the start.
#[test]
fn mixed_precision_tracks_fp32_on_llama_tiny() {
    pollster::block_on(async {
        let mut runs = vec![];
        for precision in [Precision::Fp32, Precision::Mixed] {
            let mut cfg = with_precision("llama-tiny", precision);
            cfg.batch = 4;
            runs.push(train(cfg, 120).await);
        }
        let (fp32, mixed) = (&runs[0], &runs[1]);
        assert!(fp32.iter().all(|m| m.loss_scale.is_none()), "fp32 has no loss scale");
        assert!(mixed.iter().all(|m| m.loss_scale == Some(65_536.0) && !m.skipped), "mixed: scale 2^16, no skipped step in 120");
        let first = (fp32[0].loss as f64 - mixed[0].loss as f64).abs() / fp32[0].loss as f64;
        assert!(first < 2e-3, "first-step losses differ by {first:.2e}: {} vs {}", fp32[0].loss, mixed[0].loss);
        let (a, b) = (mean_loss(&fp32[100..]), mean_loss(&mixed[100..]));
        println!("llama-tiny last-20 mean loss: fp32 {a:.4}, mixed {b:.4} (start {:.4})", fp32[0].loss);
        assert!((a - b).abs() / a < 0.02, "fp32 {a:.4} vs mixed {b:.4}");
        assert!(b < 0.8 * mixed[0].loss as f64, "mixed precision trains: {} -> {b:.4}", mixed[0].loss);
    });
}

/// The target: llama-small's weight + activation bytes at least 40% smaller in mixed
/// precision (the weights the passes read, and every buffer a forward pass allocates; each
/// precision on a fresh device, nothing runs). The training pass as a whole (activations and
/// their fp32 gradients) is recorded beside it. The fit check's estimate must come within 3%
/// below and 10% above what a session really allocates, in either precision.
#[test]
fn mixed_precision_shrinks_llama_small() {
    pollster::block_on(async {
        let mut sizes = vec![];
        for precision in [Precision::Fp32, Precision::Mixed] {
            let cfg = with_precision("llama-small", precision);
            let b = kiln::bench::pass_bytes(&Gpu::new().await.unwrap(), &cfg).unwrap();
            println!("llama-small {precision:?}: weights {} B, activations {} B, training pass {} B", b.weights, b.activations, b.pass);
            sizes.push(((b.weights + b.activations) as f64, (b.weights + b.pass) as f64));
        }
        let saved = 1.0 - sizes[1].0 / sizes[0].0;
        println!("llama-small weight + activation bytes: {:.0} -> {:.0} MB ({:.1}% smaller)", sizes[0].0 / 1e6, sizes[1].0 / 1e6, 100.0 * saved);
        println!(
            "llama-small weights + training pass: {:.0} -> {:.0} MB ({:.1}% smaller)",
            sizes[0].1 / 1e6,
            sizes[1].1 / 1e6,
            100.0 * (1.0 - sizes[1].1 / sizes[0].1)
        );
        assert!(saved >= 0.40, "only {:.1}% smaller", 100.0 * saved);
        assert!(sizes[1].1 < 0.75 * sizes[0].1, "the whole pass shrinks too: {sizes:?}");
        // The fit check's estimate against a whole session's buffers (weights, gradients,
        // optimizer state, snapshots, the pass, metrics), in both precisions.
        let (mut estimates, mut lives) = (vec![], vec![]);
        for precision in [Precision::Fp32, Precision::Mixed] {
            let cfg = with_precision("llama-small", precision);
            let estimate = kiln::fit::footprint(&cfg.model, cfg.batch).total as f64;
            let session = Session::new(cfg).await.unwrap();
            let live = session.gpu.live().bytes as f64;
            drop(session);
            println!("llama-small {precision:?}: fit estimate {:.0} MB, session holds {:.0} MB", estimate / 1e6, live / 1e6);
            assert!(estimate >= 0.97 * live && estimate <= 1.1 * live, "estimate {estimate} vs live {live}");
            estimates.push(estimate);
            lives.push(live);
        }
        // The estimate shrinks with the buffers: its mixed/fp32 ratio within 0.05 of the real
        // one (0.73 when measured; fp32 buffers both precisions share, such as the split-K
        // partials, keep it from the activations' 0.53).
        let (est_ratio, live_ratio) = (estimates[1] / estimates[0], lives[1] / lives[0]);
        assert!((est_ratio - live_ratio).abs() < 0.05, "the fit check counts the smaller buffers: {estimates:?} against {lives:?}");
    });
}

/// An infinite loss scale makes every scaled gradient overflow: the step is skipped (the
/// weights stay as they were), the metrics show it, and the scale comes back to its cap
/// (2^24); from there the run trains again.
#[test]
fn loss_scale_backs_off_after_an_overflow() {
    pollster::block_on(async {
        let mut cfg = with_precision("llama-tiny", Precision::Mixed);
        cfg.batch = 2;
        let mut s = Session::new(cfg).await.unwrap();
        s.train(1).unwrap();
        let before = s.gpu.read_f32(&s.params.weights).await.unwrap();
        s.set_loss_scale(f32::INFINITY).unwrap();
        s.train(1).unwrap();
        assert_eq!(s.gpu.read_f32(&s.params.weights).await.unwrap(), before, "the overflowing step changed the weights");
        s.train(1).unwrap();
        assert_ne!(s.gpu.read_f32(&s.params.weights).await.unwrap(), before, "the step after it did not train");
        let m = s.read_metrics().await.unwrap();
        assert_eq!(m.len(), 3);
        assert!(!m[0].skipped && m[0].loss_scale == Some(65_536.0), "{:?}", m[0]);
        assert!(m[1].skipped && m[1].loss_scale == Some(f32::INFINITY), "{:?}", m[1]);
        assert!(!m[2].skipped && m[2].loss_scale == Some(16_777_216.0), "{:?}", m[2]);
        assert_eq!(s.skipped_steps, 1);
    });
}

/// One step from the same start in each precision — plain, with the short conv, and with two
/// micro-batches accumulated — then every parameter tensor's gradient compared: the relative
/// difference ‖g_mixed − g_fp32‖ / ‖g_fp32‖ of each tensor must stay under 2e-3 (measured at most 5.3e-4). f16 keeps 11
/// bits (relative rounding ≤ 4.9e-4), and each gradient is a sum over rows of a stashed
/// activation times a gradient computed from stashed activations, so a few roundings add up;
/// a wrong stash, a stale widening, a missed recompute or an unscaled gradient moves some
/// tensor by 1e-1 or more.
#[test]
fn mixed_precision_gradients_match_fp32_tensor_by_tensor() {
    pollster::block_on(async {
        for (short_conv, accumulation) in [(false, 1), (true, 1), (false, 2)] {
            let mut grads = vec![];
            let mut names = vec![];
            for precision in [Precision::Fp32, Precision::Mixed] {
                let mut cfg = with_precision("llama-tiny", precision);
                cfg.batch = 2;
                cfg.optimizer.accumulation = accumulation;
                if let ModelConfig::Llama(l) = &mut cfg.model {
                    l.short_conv = short_conv;
                }
                let mut s = Session::new(cfg).await.unwrap();
                s.train(1).unwrap();
                let g = s.gpu.read_f32(&s.params.grads).await.unwrap();
                names = s.params.entries.iter().map(|e| (e.spec.name.clone(), e.offset, e.elements())).collect();
                grads.push(g);
            }
            let mut worst = (0.0f64, String::new());
            for (name, off, len) in &names {
                let (a, b) = (&grads[0][*off..off + len], &grads[1][*off..off + len]);
                let diff = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum::<f64>().sqrt();
                let norm = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
                let rel = diff / norm.max(1e-30);
                if rel > worst.0 {
                    worst = (rel, name.clone());
                }
            }
            println!("short_conv {short_conv}, accumulation {accumulation}: worst tensor {} at {:.2e}", worst.1, worst.0);
            assert!(worst.0 < 2e-3, "short_conv {short_conv}, accumulation {accumulation}: {} differs by {:.2e}", worst.1, worst.0);
        }
    });
}

/// A checkpoint holds parameters, not a precision: an fp32 run's checkpoint loads into a mixed
/// run of the same model (and back), and a load restarts the loss scale at 2^16.
#[test]
fn checkpoints_load_across_precisions() {
    pollster::block_on(async {
        let mut cfg = with_precision("llama-tiny", Precision::Fp32);
        cfg.batch = 2;
        let mut fp32 = Session::new(cfg.clone()).await.unwrap();
        fp32.train(2).unwrap();
        let bytes = fp32.save_checkpoint().await.unwrap();
        if let ModelConfig::Llama(l) = &mut cfg.model {
            l.precision = Precision::Mixed;
        }
        let mut mixed = Session::new(cfg).await.unwrap();
        mixed.set_loss_scale(1024.0).unwrap();
        mixed.load_checkpoint(&bytes).unwrap();
        assert_eq!(mixed.step_count(), 2);
        assert_eq!(mixed.gpu.read_f32(&mixed.params.weights).await.unwrap(), fp32.gpu.read_f32(&fp32.params.weights).await.unwrap());
        mixed.train(1).unwrap();
        let m = mixed.read_metrics().await.unwrap();
        assert_eq!(m.last().and_then(|m| m.loss_scale), Some(65_536.0), "the load restarts the scale");
        fp32.load_checkpoint(&mixed.save_checkpoint().await.unwrap()).unwrap();
        assert_eq!(fp32.step_count(), 3);
    });
}
