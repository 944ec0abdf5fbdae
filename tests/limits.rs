//! Limits: a model over the device's per-buffer limit or memory budget is refused before any
//! allocation (Kiln's live-buffer counter stays at zero), with a message saying what would fit;
//! the batch it names does fit. Natively and in headless Chromium.

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

#[macro_use]
#[path = "support/device_test.rs"]
mod support;

use kiln::config::SessionConfig;
use kiln::presets::preset;
use kiln::session::Session;
use kiln::{Gpu, KilnError};

/// Builds `cfg` on a fresh device; on refusal also returns how many buffers were allocated.
async fn attempt(cfg: SessionConfig) -> (Result<Session, KilnError>, i64) {
    let gpu = Gpu::new().await.expect("a GPU adapter");
    let counters = gpu.live_counters();
    let result = Session::with_gpu(gpu, cfg);
    (result, counters.now().buffers)
}

async fn too_large_a_batch_names_the_batch_that_fits() {
    let mut cfg = preset("mlp-spiral").unwrap();
    if let kiln::model::ModelConfig::Mlp(m) = &mut cfg.model {
        m.hidden = vec![4096, 4096];
    }
    cfg.batch = 65_536; // (B, 4096) activations: 1 GiB each
    let (result, allocated) = attempt(cfg.clone()).await;
    let Err(KilnError::InvalidInput { field, message }) = result else { panic!("expected a refusal, got {:?}", result.err()) };
    assert_eq!(field, "batch", "{message}");
    assert_eq!(allocated, 0, "nothing may be allocated before the refusal");
    // Which limit binds depends on the device: the per-buffer one (llvmpipe: 128 MiB) or the
    // memory budget (Chromium: 4 × its 1 GiB largest buffer).
    assert!((message.contains("largest buffer") || message.contains("in all")) && message.contains("MiB"), "{message}");
    let best: usize = message
        .split("a batch of at most ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no batch named in: {message}"));
    assert!(best >= 1 && best < cfg.batch, "{message}");
    // One more than the batch it names is refused as well; the named batch itself is built.
    cfg.batch = best + 1;
    assert!(attempt(cfg.clone()).await.0.is_err(), "batch {} should not fit", best + 1);
    if cfg!(not(target_arch = "wasm32")) {
        // (In the browser SwiftShader would really allocate the gigabyte this needs.)
        cfg.batch = best;
        let (built, _) = attempt(cfg).await;
        assert!(built.is_ok(), "the batch the message named must fit: {:?}", built.err());
    }
}
device_test!(a_batch_over_the_buffer_limit_is_refused_naming_one_that_fits, too_large_a_batch_names_the_batch_that_fits);

async fn too_large_a_model_says_to_shrink_it() {
    let mut cfg = preset("llama-small").unwrap();
    if let kiln::model::ModelConfig::Llama(l) = &mut cfg.model {
        (l.d_model, l.heads, l.layers, l.hidden) = (4096, 32, 48, 16384); // ~13 billion parameters
    }
    let (result, allocated) = attempt(cfg).await;
    let Err(KilnError::InvalidInput { field, message }) = result else { panic!("expected a refusal, got {:?}", result.err()) };
    assert_eq!((field.as_str(), allocated), ("model", 0), "{message}");
    assert!(message.contains("even with a batch of 1") && message.contains("fewer or narrower layers"), "{message}");
}
device_test!(a_model_that_fits_in_no_batch_is_refused_before_allocating, too_large_a_model_says_to_shrink_it);
