//! Soak: 10,000 steps with metric readbacks, evaluations, predictions and checkpoints along the
//! way, while Kiln's own counters of live GPU buffers and bytes stay exactly where they were
//! after warm-up. A per-step allocation or a leaked evaluation net would show as growth.

use kiln::presets::preset;
use kiln::train::Session;
use kiln::Gpu;

#[test]
fn ten_thousand_steps_hold_steady() {
    let mut cfg = preset("mlp-spiral").unwrap();
    cfg.batch = 32;
    pollster::block_on(async {
        let mut s = Session::with_gpu(Gpu::new().await.unwrap(), cfg).unwrap();
        let round = |s: &mut Session| {
            pollster::block_on(async {
                for _ in 0..10 {
                    s.train(100).unwrap();
                    s.read_metrics().await.unwrap();
                }
                s.evaluate(true).await.unwrap();
                s.predict(16, &[0.25f32; 32]).await.unwrap();
                s.save_checkpoint().await.unwrap();
            })
        };
        round(&mut s); // warm-up: the first evaluation, prediction and checkpoint
        let after_warm_up = s.gpu.live();
        println!("live after warm-up: {after_warm_up:?}");
        for _ in 1..10 {
            round(&mut s);
            assert_eq!(s.gpu.live(), after_warm_up, "live buffers changed at step {}", s.step_count());
        }
        assert_eq!(s.step_count(), 10_000);
        let last = s.read_metrics().await.unwrap();
        assert!(last.is_empty(), "every step was already read");
        assert!(s.evaluate(true).await.unwrap().accuracy.unwrap() > 0.9);
    });
}
