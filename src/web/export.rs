//! The export folder for PyTorch and Hugging Face, as wasm bindings of `Session` (`exportFiles`,
//! `fromExport`: file name → bytes; the page zips and unzips it, fflate). Only in builds with the
//! Cargo feature `formats`: the page's first-load wasm leaves them out, and js/full.js runs
//! them in its second wasm (kiln_full): an MLP run of the first crosses over as a checkpoint to
//! be exported, and a run opened from a folder lives there.

use std::collections::HashMap;

use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::{acquire_gpu, js_error, set, WebSession};
use crate::error::KilnError;
use crate::session::Session;

#[wasm_bindgen(js_class = Session)]
impl WebSession {
    /// The run's export folder (a Llama as a Hugging Face folder, an MLP as a PyTorch
    /// nn.Sequential; see session/export.rs) as an object of file name → Uint8Array.
    #[wasm_bindgen(js_name = exportFiles)]
    pub async fn export_files(&self) -> Result<Object, JsValue> {
        let out = Object::new();
        for (name, bytes) in self.session.export_files().await.map_err(js_error)? {
            set(&out, name, &Uint8Array::from(bytes.as_slice()))?;
        }
        Ok(out)
    }

    /// A run from an export folder's files (an object of file name → Uint8Array): Kiln's own
    /// export trained on anywhere, or another char-level Hugging Face Llama with train.txt.
    #[wasm_bindgen(js_name = fromExport)]
    pub async fn from_export(files: Object) -> Result<WebSession, JsValue> {
        let mut map = HashMap::new();
        for name in Object::keys(&files).iter() {
            let name = name.as_string().unwrap_or_default();
            let value = Reflect::get(&files, &JsValue::from_str(&name))?;
            let bytes = value.dyn_into::<Uint8Array>().map_err(|_| js_error(KilnError::invalid(&name, "must be a Uint8Array of the file's bytes")))?;
            map.insert(name, bytes.to_vec());
        }
        let gpu = acquire_gpu().await.map_err(js_error)?;
        Self::wrap(Session::from_export(gpu, &map))
    }
}
