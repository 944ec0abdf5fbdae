//! Soak: 10,000 steps natively and 2,000 in headless Chromium, with metric readbacks,
//! evaluations, predictions, checkpoints and recovery snapshots along the way, while Kiln's own
//! counters of live GPU buffers and bytes stay exactly where they were after warm-up. A
//! per-step allocation or a leaked evaluation net would show as growth.

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use kiln::presets::preset;
use kiln::session::Session;
use kiln::Gpu;

/// Ten rounds of `round_steps` steps each; the first is the warm-up.
async fn hold_steady(round_steps: u64) {
    let mut cfg = preset("mlp-spiral").unwrap();
    cfg.batch = 32;
    let mut s = Session::with_gpu(Gpu::new().await.unwrap(), cfg).unwrap();
    s.snapshots.set_every(round_steps / 5);
    let mut after_warm_up = None;
    for round in 0..10 {
        for _ in 0..10 {
            s.train(round_steps / 10).unwrap();
            s.read_metrics().await.unwrap();
        }
        s.evaluate(true).await.unwrap();
        s.predict(16, &[0.25f32; 32]).await.unwrap();
        s.save_checkpoint().await.unwrap();
        let live = s.gpu.live();
        match after_warm_up {
            None => println!("live after warm-up (round {round}): {live:?}"),
            Some(warm) => assert_eq!(live, warm, "live buffers changed at step {}", s.step_count()),
        }
        after_warm_up.get_or_insert(live);
    }
    assert_eq!(s.step_count(), 10 * round_steps);
    assert!(s.snapshots.latest().is_some_and(|l| l.step == s.step_count()), "the last snapshot is the last step");
    let last = s.read_metrics().await.unwrap();
    assert!(last.is_empty(), "every step was already read");
    assert!(s.evaluate(true).await.unwrap().accuracy.unwrap() > 0.9);
}

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn ten_thousand_steps_hold_steady() {
    pollster::block_on(hold_steady(1000));
}

#[cfg(target_arch = "wasm32")]
#[wasm_bindgen_test::wasm_bindgen_test]
async fn two_thousand_steps_in_the_browser_hold_steady() {
    hold_steady(200).await;
}
