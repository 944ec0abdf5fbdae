//! The GPU runtime: adapter report, grid splitting, typed errors for bad shaders, oversize
//! buffers and mismatched bindings, a tensor that cannot be bound where it lies — natively and
//! in headless Chromium.

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

#[macro_use]
#[path = "../support/device_test.rs"]
mod device_test;

use kiln::kernels::elementwise::{activation, Activation};
use kiln::model::ModelConfig;
use kiln::presets::preset;
use kiln::quantize::QuantizeOptions;
use kiln::session::evaluate::MAX_EVAL_TOKENS;
use kiln::session::Session;
use kiln::{Gpu, KilnError};

async fn reports_adapter(gpu: &Gpu) {
    let s = gpu.summary();
    // The summary reports the limits the device was created with.
    let limits = gpu.limits();
    assert_eq!(s.max_storage_binding_bytes, limits.max_storage_buffer_binding_size);
    assert_eq!(s.max_workgroups_per_dim, limits.max_compute_workgroups_per_dimension);
    assert!(s.max_storage_binding_bytes >= 128 << 20, "WebGPU guarantees 128 MiB bindings, got {}", s.max_storage_binding_bytes);
    assert!(s.max_workgroups_per_dim >= 65_535);
    // This suite runs on CPU adapters (llvmpipe, SwiftShader): the summary must say so.
    let cpu_named = ["llvmpipe", "swiftshader"].iter().any(|n| s.name.to_lowercase().contains(n));
    assert!(!cpu_named || s.cpu, "{} is a CPU adapter but the summary says cpu: false", s.name);
}
device_test!(adapter_is_reported, reports_adapter, gpu);

async fn grid_spills_into_y(gpu: &Gpu) {
    assert_eq!(gpu.grid(10), [10, 1, 1]);
    assert_eq!(gpu.grid(0), [1, 1, 1]);
    assert_eq!(gpu.grid(65_536), [65_535, 2, 1]);
    gpu.set_grid_limit(4);
    assert_eq!(gpu.grid(10), [4, 3, 1]);
}
device_test!(grid_splits_past_the_limit, grid_spills_into_y, gpu);

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
device_test!(invalid_wgsl_is_a_typed_error, bad_shader_is_typed, gpu);

async fn every_family_validates(gpu: &Gpu) {
    for family in kiln::kernels::FAMILIES {
        gpu.check_wgsl(family.name, family.source).await.unwrap_or_else(|e| panic!("{}: {e}", family.name));
    }
}
device_test!(every_shader_family_validates_on_this_device, every_family_validates, gpu);

async fn compiles_on_first_use(gpu: &Gpu) {
    assert!(gpu.compiled_families().is_empty(), "a new device compiles nothing");
    let x = gpu.tensor("x", &[8]).unwrap();
    let y = gpu.tensor("y", &[8]).unwrap();
    activation(gpu, Activation::Relu, &x, &y).unwrap();
    assert_eq!(gpu.compiled_families(), ["elementwise"], "only the family of the kernel used");
}
device_test!(a_family_compiles_on_first_use, compiles_on_first_use, gpu);

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
device_test!(oversize_buffer_is_a_typed_error, oversize_is_typed, gpu);

async fn mismatches_are_typed(gpu: &Gpu) {
    let x = gpu.tensor("x", &[8]).unwrap();
    let y = gpu.tensor("y", &[9]).unwrap();
    let err = activation(gpu, Activation::Relu, &x, &y).err().expect("length mismatch must fail");
    assert!(err.to_string().contains("`y`"), "error should name the tensor: {err}");
    let err = gpu.write(&x, &[1.0f32; 3]).expect_err("short write must fail");
    assert!(err.to_string().contains("expected 8 elements"), "{err}");
}
device_test!(mismatched_lengths_are_typed_errors, mismatches_are_typed, gpu);

async fn round_trips_words(gpu: &Gpu) {
    let words: Vec<u32> = (0..1000u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let t = gpu.tensor_from("words", &[1000], &words).unwrap();
    assert_eq!(gpu.read_u32(&t).await.unwrap(), words);
}
device_test!(upload_and_readback_round_trip, round_trips_words, gpu);

/// A Llama whose gate weight starts off the storage alignment (d_model 32, SwiGLU 21: up holds
/// 672 weights, not a multiple of a 256-byte alignment's 64 floats) quantizes, and its quantized
/// file reopens: gate is dequantized into a tensor of its own and copied into place.
async fn unaligned_gate_quantizes() {
    let mut cfg = preset("llama-tiny").expect("preset");
    cfg.batch = 2;
    if let ModelConfig::Llama(l) = &mut cfg.model {
        (l.d_model, l.heads, l.hidden, l.layers, l.context) = (32, 2, 21, 1, 8);
    }
    let mut s = Session::with_gpu(Gpu::new().await.expect("a GPU adapter"), cfg).expect("valid");
    let report = s.quantize(&QuantizeOptions { bits: 8, group_size: 32 }).await.expect("quantizes");
    let gate = report.tensors.iter().find(|t| t.name == "blocks.0.gate").expect("gate in the report");
    assert!(gate.quantized && gate.relative_error > 0.0 && gate.relative_error < 0.02, "gate {gate:?}");
    // 8-bit codes: the quantized copy scores within 1% of the weights it came from.
    let (full, quantized) = (report.full.loss, report.quantized.loss);
    assert!((quantized - full).abs() < 0.01 * full, "loss {full} -> {quantized}");
    let back = Session::from_quantized(Gpu::new().await.expect("a GPU adapter"), &s.quantized_file().unwrap()).expect("reopens");
    let reopened = back.evaluate(true).await.unwrap().loss;
    // The report scores fewer tokens than a full evaluation: score the copy on the same ones.
    let quantized = s.evaluate_with(s.weights_for(true).unwrap(), true, MAX_EVAL_TOKENS).await.unwrap().loss;
    assert!((reopened - quantized).abs() < 1e-5 * quantized, "reopened {reopened}, quantized {quantized}");
}
device_test!(a_llama_with_an_unaligned_gate_quantizes_and_reopens, unaligned_gate_quantizes);
