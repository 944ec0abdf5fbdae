//! Kernel tests: every entry point against its f64 CPU reference on a real WebGPU, natively
//! and in headless Chromium, plus finite-difference checks of every reference backward.

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

#[macro_use]
#[path = "../support/device_test.rs"]
mod device_test;
mod attention;
mod common;
mod conv;
#[cfg(not(target_arch = "wasm32"))]
mod coverage;
mod elementwise;
mod embedding;
mod inspect;
mod loss;
mod matmul;
mod matmul_swiglu;
mod metrics;
mod mlp_fused;
mod norm;
mod optimizer;
mod quant;
mod reduce;
mod rope;
mod sampling;
mod softmax;
