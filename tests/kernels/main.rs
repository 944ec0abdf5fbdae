//! Kernel tests: every entry point against its f64 CPU reference on a real WebGPU, natively
//! and in headless Chromium, plus finite-difference checks of every reference backward.

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

#[macro_use]
mod common;
mod elementwise;
mod matmul;
mod norm;
mod softmax;
mod loss;
mod reduce;
mod optimizer;
mod rope;
mod attention;
mod embedding;
mod quant;
mod conv;
mod sampling;
mod metrics;
mod mlp_fused;
#[cfg(not(target_arch = "wasm32"))]
mod coverage;
