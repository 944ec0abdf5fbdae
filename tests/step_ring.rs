//! Many steps per submission (`Session::train`) against one step per submission
//! (`Session::train_on`) on the very same batches: losses, gradient norms, weights and optimizer
//! state must be bit-identical (same kernels in the same order on the same data, so any
//! difference is a bug in the rings or the copies). AdamW's bias correction (and the Llama's
//! warmup-cosine schedule) make every step's uniforms differ; 70 steps cross two full
//! submissions and a partial one. Natively and
//! in headless Chromium.

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

#[macro_use]
#[path = "support/both.rs"]
mod support;

use kiln::config::SessionConfig;
use kiln::model::ModelConfig;
use kiln::presets::preset;
use kiln::train::Session;
use kiln::Gpu;

async fn pair(cfg: &SessionConfig) -> (Session, Session) {
    let make = async || Session::with_gpu(Gpu::new().await.expect("a GPU adapter"), cfg.clone()).expect("session");
    (make().await, make().await)
}

async fn state(s: &Session) -> Vec<Vec<u32>> {
    let mut out = vec![];
    for t in [&s.params.weights, &s.params.m, &s.params.v] {
        out.push(s.gpu.read_u32(t).await.unwrap());
    }
    out
}

async fn same_as_single_steps(cfg: SessionConfig, steps: u64) {
    let (mut batched, mut single) = pair(&cfg).await;
    batched.train(steps).unwrap();
    for _ in 0..steps {
        let batch = single.sample_batch();
        single.train_on(&[batch]).unwrap();
    }
    let bits = |m: Vec<kiln::train::StepMetrics>| m.iter().map(|m| (m.step, m.loss.to_bits(), m.grad_norm.to_bits())).collect::<Vec<_>>();
    let (a, b) = (bits(batched.read_metrics().await.unwrap()), bits(single.read_metrics().await.unwrap()));
    assert_eq!(a.len(), steps as usize);
    assert_eq!(a, b, "per-step metrics differ");
    assert!(state(&batched).await == state(&single).await, "weights or optimizer state differ");
    assert_eq!(batched.update_ratios(), single.update_ratios());
}

async fn classifier() {
    let mut cfg = preset("mlp-spiral").unwrap();
    cfg.batch = 16;
    same_as_single_steps(cfg, 70).await;
}
both!(batched_submissions_match_single_steps_classifier, classifier);

async fn regression() {
    let mut cfg = preset("mlp-sine").unwrap();
    cfg.batch = 16;
    same_as_single_steps(cfg, 40).await;
}
both!(batched_submissions_match_single_steps_regression, regression);

async fn llama() {
    let mut cfg = preset("llama-tiny").unwrap();
    if let ModelConfig::Llama(l) = &mut cfg.model {
        (l.d_model, l.heads, l.layers, l.hidden, l.context) = (16, 2, 1, 32, 16);
    }
    cfg.batch = 4;
    same_as_single_steps(cfg, 36).await;
}
both!(batched_submissions_match_single_steps_llama, llama);
