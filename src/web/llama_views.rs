//! A Llama's views as wasm bindings of `Session`: generation, next-token guesses, attention
//! maps. In a build without Llamas (the page's first wasm, whose runs are MLPs) each is only the
//! error a view of an MLP gets: a shut door inside an async binding would not drop the view's
//! code, as the future's later states stay reachable for the optimizer (≈ 11 KB gzipped).

use wasm_bindgen::prelude::*;

use super::{js_error, WebSession};
#[cfg(not(feature = "llama"))]
use crate::session::generate::{needs_llama, ATTENTION_VIEW, GENERATION, NEXT_TOKENS_VIEW};

#[cfg(feature = "llama")]
#[wasm_bindgen(js_class = Session)]
impl WebSession {
    /// Continues `prompt`; `options` is a `GenerateOptions` object (or undefined).
    pub async fn generate(&self, prompt: String, options: JsValue) -> Result<String, JsValue> {
        let opts: crate::session::generate::GenerateOptions = super::options_or_default(&options, "options").map_err(js_error)?;
        self.session.generate(&prompt, &opts).await.map_err(js_error)
    }

    /// `PositionGuesses[]`: for each of the prompt's last `context` characters, the `k` most
    /// likely next characters and their probabilities (softmax and top-k on the GPU).
    #[wasm_bindgen(js_name = nextTokens)]
    pub async fn next_tokens(&self, prompt: String, k: u32) -> Result<JsValue, JsValue> {
        super::numbers_to_js(&self.session.next_tokens(&prompt, k as usize).await.map_err(js_error)?)
    }

    /// `AttentionMaps`: every layer's and head's attention over the prompt (a Llama).
    #[wasm_bindgen(js_name = attentionMaps)]
    pub async fn attention_maps(&self, prompt: String) -> Result<JsValue, JsValue> {
        super::numbers_to_js(&self.session.attention_maps(&prompt).await.map_err(js_error)?)
    }
}

#[cfg(not(feature = "llama"))]
#[wasm_bindgen(js_class = Session)]
impl WebSession {
    pub fn generate(&self, _prompt: String, _options: JsValue) -> Result<String, JsValue> {
        Err(js_error(needs_llama(GENERATION)))
    }

    #[wasm_bindgen(js_name = nextTokens)]
    pub fn next_tokens(&self, _prompt: String, _k: u32) -> Result<JsValue, JsValue> {
        Err(js_error(needs_llama(NEXT_TOKENS_VIEW)))
    }

    #[wasm_bindgen(js_name = attentionMaps)]
    pub fn attention_maps(&self, _prompt: String) -> Result<JsValue, JsValue> {
        Err(js_error(needs_llama(ATTENTION_VIEW)))
    }
}
