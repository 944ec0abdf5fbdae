//! The wasm-bindgen API that the page (and the npm package) use. Every call is async and every
//! failure is a rejected promise carrying a readable message.

use wasm_bindgen::prelude::*;

use crate::gpu::Gpu;

#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

fn js_error(e: impl std::fmt::Display) -> JsValue {
    js_sys::Error::new(&e.to_string()).into()
}

/// Acquires the browser's WebGPU device and describes the adapter and its limits.
#[wasm_bindgen(js_name = adapterInfo)]
pub async fn adapter_info() -> Result<JsValue, JsValue> {
    let gpu = Gpu::new().await.map_err(js_error)?;
    serde_wasm_bindgen::to_value(&gpu.summary()).map_err(js_error)
}
