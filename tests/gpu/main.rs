//! The GPU runtime: adapter report, grid splitting, typed errors for bad shaders, oversize
//! buffers and mismatched bindings — natively and in headless Chromium.

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use kiln::kernels::elementwise::{activation, Activation};
use kiln::{Gpu, KilnError};

macro_rules! gpu_test {
    ($name:ident, $body:ident) => {
        #[cfg(not(target_arch = "wasm32"))]
        #[test]
        fn $name() {
            pollster::block_on(async { $body(&Gpu::new().await.expect("a GPU adapter")).await })
        }
        #[cfg(target_arch = "wasm32")]
        #[wasm_bindgen_test::wasm_bindgen_test]
        async fn $name() {
            $body(&Gpu::new().await.expect("a GPU adapter")).await
        }
    };
}

async fn reports_adapter(gpu: &Gpu) {
    let s = gpu.summary();
    assert!(!s.name.is_empty(), "adapter name is empty");
    assert!(s.max_storage_binding_bytes >= 128 << 20, "WebGPU guarantees 128 MiB bindings, got {}", s.max_storage_binding_bytes);
    assert!(s.max_workgroups_per_dim >= 65_535);
}
gpu_test!(adapter_is_reported, reports_adapter);

async fn grid_spills_into_y(gpu: &Gpu) {
    assert_eq!(gpu.grid(10), [10, 1, 1]);
    assert_eq!(gpu.grid(0), [1, 1, 1]);
    assert_eq!(gpu.grid(65_536), [65_535, 2, 1]);
    gpu.set_grid_limit(4);
    assert_eq!(gpu.grid(10), [4, 3, 1]);
}
gpu_test!(grid_splits_past_the_limit, grid_spills_into_y);

async fn bad_shader_is_typed(gpu: &Gpu) {
    let err = gpu.check_wgsl("broken", "@compute @workgroup_size(1) fn f() { let x: f32 = 1u; }").await;
    match err {
        Err(KilnError::ShaderValidation { family, message }) => {
            assert_eq!(family, "broken");
            assert!(!message.is_empty());
        }
        other => panic!("expected ShaderValidation, got {other:?}"),
    }
    gpu.check_wgsl("fine", "@compute @workgroup_size(1) fn f() {}").await.expect("valid shader");
}
gpu_test!(invalid_wgsl_is_a_typed_error, bad_shader_is_typed);

async fn oversize_is_typed(gpu: &Gpu) {
    let limit = gpu.summary().max_storage_binding_bytes.min(gpu.summary().max_buffer_bytes);
    let too_many = (limit / 4 + 1) as usize;
    match gpu.tensor("weights", &[too_many]) {
        Err(KilnError::BufferTooLarge { name, bytes, .. }) => {
            assert_eq!(name, "weights");
            assert_eq!(bytes, too_many as u64 * 4);
        }
        other => panic!("expected BufferTooLarge, got {:?}", other.map(|t| t.len())),
    }
    assert!(matches!(gpu.tensor("empty", &[3, 0]), Err(KilnError::InvalidInput { .. })));
}
gpu_test!(oversize_buffer_is_a_typed_error, oversize_is_typed);

async fn mismatches_are_typed(gpu: &Gpu) {
    let x = gpu.tensor("x", &[8]).unwrap();
    let y = gpu.tensor("y", &[9]).unwrap();
    let err = activation(gpu, Activation::Relu, &x, &y).err().expect("length mismatch must fail");
    assert!(err.to_string().contains("`y`"), "error should name the tensor: {err}");
    let err = gpu.write(&x, &[1.0f32; 3]).expect_err("short write must fail");
    assert!(err.to_string().contains("expected 8 elements"), "{err}");
}
gpu_test!(mismatched_lengths_are_typed_errors, mismatches_are_typed);

async fn round_trips_words(gpu: &Gpu) {
    let words: Vec<u32> = (0..1000u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let t = gpu.tensor_from("words", &[1000], &words).unwrap();
    assert_eq!(gpu.read_u32(&t).await.unwrap(), words);
}
gpu_test!(upload_and_readback_round_trip, round_trips_words);
