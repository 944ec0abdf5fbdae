//! Reading a run's files (checkpoints, the MLX-layout quantized copy) and quantizing, as wasm
//! bindings beside web.rs's. Only in builds with the Cargo feature `formats`: the page's
//! first-load wasm leaves them out (≈ 42 KB gzipped), and js/kiln.js moves a run of that wasm
//! to the second (kiln_full, js/full.js) the first time it is asked to load or quantize.

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;

use super::{acquire_gpu, js_error, numbers_to_js, options_or_default, to_js, WebSession};
use crate::quantize::QuantizeOptions;
use crate::session::Session;

/// `{config, step}` from a checkpoint's header (its tensors are checked when it is loaded).
#[wasm_bindgen(js_name = readCheckpoint)]
pub fn read_checkpoint(bytes: &[u8]) -> Result<JsValue, JsValue> {
    to_js(&crate::session::checkpoint::header(bytes).map_err(js_error)?)
}

#[wasm_bindgen(js_class = Session)]
impl WebSession {
    /// A run rebuilt from a checkpoint's own config, then loaded from it (continues exactly).
    #[wasm_bindgen(js_name = fromCheckpoint)]
    pub async fn from_checkpoint(bytes: Vec<u8>) -> Result<WebSession, JsValue> {
        let header = crate::session::checkpoint::header(&bytes).map_err(js_error)?;
        header.config.model.check_built().map_err(js_error)?;
        crate::data::text::check_corpus(&header.config.data).map_err(js_error)?;
        let gpu = acquire_gpu().await.map_err(js_error)?;
        Self::wrap(Session::from_checkpoint(gpu, &bytes))
    }

    /// A run from an MLX-layout quantized file Kiln wrote: its config, step and dequantized weights.
    #[wasm_bindgen(js_name = fromQuantized)]
    pub async fn from_quantized(bytes: Vec<u8>) -> Result<WebSession, JsValue> {
        let gpu = acquire_gpu().await.map_err(js_error)?;
        Self::wrap(Session::from_quantized(gpu, &bytes))
    }

    /// Loads a checkpoint of the same model; on error the run is unchanged.
    pub fn load(&mut self, bytes: &[u8]) -> Result<(), JsValue> {
        self.session.load_checkpoint(bytes).map_err(js_error)
    }

    /// `QuantizeReport`: quantizes the current weights (`options`: a `QuantizeOptions` object or
    /// undefined) into a copy beside them, and scores both.
    pub async fn quantize(&mut self, options: JsValue) -> Result<JsValue, JsValue> {
        let opts: QuantizeOptions = options_or_default(&options, "options").map_err(js_error)?;
        numbers_to_js(&self.session.quantize(&opts).await.map_err(js_error)?)
    }

    /// The quantized copy as an MLX-layout safetensors file.
    #[wasm_bindgen(js_name = quantizedFile)]
    pub fn quantized_file(&self) -> Result<Uint8Array, JsValue> {
        Ok(Uint8Array::from(self.session.quantized_file().map_err(js_error)?.as_slice()))
    }
}
