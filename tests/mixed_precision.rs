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
/// their fp32 gradients) is recorded beside it. The fit check's estimate must not undercount
/// what a session really allocates, in either precision.
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
        let mut estimates = vec![];
        for precision in [Precision::Fp32, Precision::Mixed] {
            let cfg = with_precision("llama-small", precision);
            let estimate = kiln::fit::footprint(&cfg.model, cfg.batch).total as f64;
            let session = Session::new(cfg).await.unwrap();
            let live = session.gpu.live().bytes as f64;
            drop(session);
            println!("llama-small {precision:?}: fit estimate {:.0} MB, session holds {:.0} MB", estimate / 1e6, live / 1e6);
            assert!(estimate >= 0.9 * live && estimate <= 1.5 * live, "estimate {estimate} vs live {live}");
            estimates.push(estimate);
        }
        assert!(estimates[1] < 0.75 * estimates[0], "the fit check counts the smaller buffers: {estimates:?}");
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

/// One step from the same start, plain and with the short conv: the loss and the gradient
/// norm agree to f16's precision (the stashed activations are rounded to 11 bits, relative
/// ≤ 4.9e-4, which the backward's recomputed norms, conv and gate carry through: 1e-3 leaves
/// room while a wrong recompute or a stale stash moves the norm by far more).
#[test]
fn mixed_precision_first_step_matches_fp32() {
    pollster::block_on(async {
        for short_conv in [false, true] {
            let mut got = vec![];
            for precision in [Precision::Fp32, Precision::Mixed] {
                let mut cfg = with_precision("llama-tiny", precision);
                cfg.batch = 2;
                if let ModelConfig::Llama(l) = &mut cfg.model {
                    l.short_conv = short_conv;
                }
                got.push(train(cfg, 20).await);
            }
            for (a, b) in got[0].iter().zip(&got[1]).take(3) {
                let (dl, dg) = ((a.loss - b.loss).abs() / a.loss, (a.grad_norm - b.grad_norm).abs() / a.grad_norm);
                println!("short_conv {short_conv} step {}: loss {} / {}, grad norm {} / {}", a.step, a.loss, b.loss, a.grad_norm, b.grad_norm);
                assert!(dl < 1e-3 && dg < 1e-3, "step {}: loss {dl:.2e}, grad norm {dg:.2e} apart", a.step);
            }
        }
    });
}
