//! Device loss: `device.destroy()` mid-training, natively and in headless Chromium. The session
//! notices (`DeviceLost`, never zeros from a failed readback), `recover` acquires a new device
//! and rebuilds from the latest in-memory snapshot, at most `every` steps are redone, and the
//! losses afterwards are bit-identical to a run that was never interrupted (same adapter, same
//! kernels, same seeded batches: any difference is a recovery bug, so no tolerance).

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

#[macro_use]
#[path = "support/device_test.rs"]
mod support;

use kiln::presets::preset;
use kiln::session::{Session, StepMetrics};
use kiln::{Gpu, KilnError};

const EVERY: u64 = 10;

async fn session() -> Session {
    let mut cfg = preset("mlp-spiral").expect("preset");
    cfg.batch = 16;
    let mut s = Session::with_gpu(Gpu::new().await.expect("a GPU adapter"), cfg).expect("session");
    s.snapshots.set_every(EVERY);
    s
}

/// Lets the browser deliver `device.lost` (a promise resolved on a later task).
async fn settle() {
    #[cfg(target_arch = "wasm32")]
    {
        use wasm_bindgen::{JsCast, JsValue};
        let promise = js_sys::Promise::new(&mut |resolve, _| {
            let set_timeout = js_sys::Reflect::get(&js_sys::global(), &"setTimeout".into()).unwrap();
            set_timeout.unchecked_into::<js_sys::Function>().call2(&JsValue::NULL, &resolve, &JsValue::from(10)).unwrap();
        });
        wasm_bindgen_futures::JsFuture::from(promise).await.unwrap();
    }
}

fn losses(m: &[StepMetrics]) -> Vec<(u64, u32, u32)> {
    m.iter().map(|m| (m.step, m.loss.to_bits(), m.grad_norm.to_bits())).collect()
}

async fn destroyed_device_is_rebuilt_from_the_snapshot() {
    let mut reference = session().await;
    reference.train(40).unwrap();
    let uninterrupted = reference.read_metrics().await.unwrap();

    let mut s = session().await;
    s.train(20).unwrap();
    s.read_metrics().await.unwrap(); // the read waits for the GPU, so the step-20 snapshot lands
    s.train(7).unwrap();
    s.gpu.destroy();
    let read = s.read_metrics().await;
    assert!(read.is_err(), "a read from a destroyed device must fail, not return {read:?}");
    let mut reason = None;
    for _ in 0..100 {
        reason = s.gpu.lost();
        if reason.is_some() {
            break;
        }
        settle().await;
    }
    assert!(reason.is_some_and(|r| r.contains("destroyed")), "the loss was not noticed");
    assert!(matches!(s.train(1), Err(KilnError::DeviceLost(_))), "training on a lost device must say so");

    let report = s.recover().await.expect("recovery");
    assert_eq!((report.lost_at, report.resumed_at), (27, 20), "{report:?}");
    assert!(report.lost_at - report.resumed_at <= EVERY);
    assert_eq!(s.step_count(), 20);
    s.train(20).unwrap();
    let after = s.read_metrics().await.unwrap();
    assert_eq!(losses(&after), losses(&uninterrupted[20..]), "losses after recovery differ from the uninterrupted run");
}
device_test!(device_loss_resumes_from_the_latest_snapshot_identically, destroyed_device_is_rebuilt_from_the_snapshot);

async fn loss_before_any_snapshot_restarts_from_the_seed() {
    let mut reference = session().await;
    reference.train(6).unwrap();
    let uninterrupted = reference.read_metrics().await.unwrap();

    let mut s = session().await;
    s.train(4).unwrap();
    s.gpu.destroy();
    settle().await;
    let report = s.recover().await.expect("recovery");
    assert_eq!((report.lost_at, report.resumed_at), (4, 0));
    s.train(6).unwrap();
    assert_eq!(losses(&s.read_metrics().await.unwrap()), losses(&uninterrupted));
}
device_test!(device_loss_before_the_first_snapshot_restarts_identically, loss_before_any_snapshot_restarts_from_the_seed);

async fn checkpoint_is_the_snapshot_until_the_next() {
    let mut source = session().await;
    source.train(13).unwrap();
    let bytes = source.save_checkpoint().await.unwrap();
    source.train(5).unwrap();
    let uninterrupted = source.read_metrics().await.unwrap();

    let mut s = Session::from_checkpoint(Gpu::new().await.unwrap(), &bytes).unwrap();
    s.snapshots.set_every(EVERY);
    s.train(2).unwrap();
    s.gpu.destroy();
    settle().await;
    let report = s.recover().await.expect("recovery");
    assert_eq!(report.resumed_at, 13, "a loaded checkpoint is the latest snapshot");
    s.train(5).unwrap();
    assert_eq!(losses(&s.read_metrics().await.unwrap()), losses(&uninterrupted[13..]));
}
device_test!(device_loss_after_a_checkpoint_load_resumes_from_it, checkpoint_is_the_snapshot_until_the_next);
