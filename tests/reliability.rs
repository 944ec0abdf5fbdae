//! Reliability: the NaN/Inf guard. A non-finite loss or gradient, detected on the GPU, skips the
//! update (weights and optimizer state stay bit-identical) and is counted; after
//! MAX_SKIPS_IN_A_ROW in a row the run stops with a message saying what to change.

use kiln::data::batches::Batch;
use kiln::presets::preset;
use kiln::session::{Session, MAX_SKIPS_IN_A_ROW};
use kiln::{Gpu, KilnError};

fn spiral() -> Session {
    let mut cfg = preset("mlp-spiral").unwrap();
    cfg.batch = 16;
    pollster::block_on(async { Session::with_gpu(Gpu::new().await.unwrap(), cfg).unwrap() })
}

fn state(s: &Session) -> Vec<Vec<u32>> {
    [&s.params.weights, &s.params.m, &s.params.v].iter().map(|t| pollster::block_on(s.gpu.read_u32(t)).unwrap()).collect()
}

fn batch(poison: f32) -> Batch {
    let mut x: Vec<f32> = (0..32).map(|i| (i as f32 * 0.37).sin()).collect();
    x[5] = poison;
    Batch::Classes(x, (0..16).map(|i| i % 2).collect())
}

#[test]
fn a_nan_or_inf_step_is_skipped_bit_exactly_and_counted() {
    let mut s = spiral();
    pollster::block_on(async {
        s.train(3).unwrap();
        s.read_metrics().await.unwrap();
        for poison in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let before = state(&s);
            s.train_on(&[batch(poison)]).unwrap();
            let m = s.read_metrics().await.unwrap();
            assert!(m[0].skipped, "{poison}: the step should be reported as skipped");
            assert_eq!(state(&s), before, "{poison}: weights or optimizer state changed");
        }
        assert_eq!(s.skipped_steps, 3);
        let before = state(&s);
        s.train_on(&[batch(0.5)]).unwrap();
        assert!(!s.read_metrics().await.unwrap()[0].skipped);
        assert_ne!(state(&s), before, "a finite step must update the weights");
    });
}

#[test]
fn many_non_finite_steps_in_a_row_stop_the_run_with_advice() {
    let mut s = spiral();
    pollster::block_on(async {
        s.train(2).unwrap();
        for _ in 0..MAX_SKIPS_IN_A_ROW - 1 {
            s.train_on(&[batch(f32::NAN)]).unwrap();
        }
        s.read_metrics().await.expect("one short of the limit is still running");
        s.train_on(&[batch(f32::NAN)]).unwrap();
        match s.read_metrics().await {
            Err(KilnError::Diverged(msg)) => assert!(msg.contains("learning rate") && msg.contains("8 steps"), "{msg}"),
            other => panic!("expected Diverged, got {other:?}"),
        }
    });
}
