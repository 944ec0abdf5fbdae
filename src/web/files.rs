//! The files a run reads and writes, as wasm bindings of `Session` (beside web.rs's): checkpoints
//! (F32 or F16) and the MLX-layout quantized copy. The export folder is export.rs's.

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;

use super::{acquire_gpu, js_error, numbers_to_js, object_json, options_json, WebSession};
use crate::quantize::QuantizeOptions;
use crate::session::checkpoint::CheckpointDtype;
use crate::session::Session;

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

    /// `QuantizeReport`: quantizes the current weights (`options`: a `QuantizeOptions` object or
    /// undefined) into a copy beside them, and scores both.
    pub async fn quantize(&mut self, options: JsValue) -> Result<JsValue, JsValue> {
        let opts: QuantizeOptions = match options_json(&options, "options").map_err(js_error)? {
            None => QuantizeOptions::default(),
            Some(json) => crate::parse::from_json(&json, "options").map_err(js_error)?,
        };
        numbers_to_js(&self.session.quantize(&opts).await.map_err(js_error)?)
    }

    /// The quantized copy as an MLX-layout safetensors file.
    #[wasm_bindgen(js_name = quantizedFile)]
    pub fn quantized_file(&self) -> Result<Uint8Array, JsValue> {
        Ok(Uint8Array::from(self.session.quantized_file().map_err(js_error)?.as_slice()))
    }

    /// A safetensors checkpoint: weights, optimizer state, config, step, sampler state.
    /// `dtype`: a `CheckpointDtype` ('f32', the default, or 'f16': half the file; see
    /// session/checkpoint.rs).
    pub async fn save(&self, dtype: JsValue) -> Result<Uint8Array, JsValue> {
        let dtype: CheckpointDtype = if dtype.is_undefined() {
            CheckpointDtype::F32
        } else {
            crate::parse::from_json(&object_json(&dtype, "dtype").map_err(js_error)?, "dtype").map_err(js_error)?
        };
        let bytes = self.session.save_checkpoint_as(dtype).await.map_err(js_error)?;
        Ok(Uint8Array::from(bytes.as_slice()))
    }

    /// Loads a checkpoint of the same model; on error the run is unchanged.
    pub fn load(&mut self, bytes: &[u8]) -> Result<(), JsValue> {
        self.session.load_checkpoint(bytes).map_err(js_error)
    }
}
