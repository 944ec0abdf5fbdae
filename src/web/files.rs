//! A run's checkpoint, written (`save`), as a wasm binding of `Session` beside web.rs's: every
//! build has it, since the page keeps its runs across reloads as checkpoints. Reading files and
//! quantizing are reading.rs's.

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;

use super::{js_error, object_json, WebSession};
use crate::session::checkpoint::CheckpointDtype;

#[wasm_bindgen(js_class = Session)]
impl WebSession {
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
}
