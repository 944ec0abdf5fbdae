//! Helpers of the export and import tests (tests/hf_export.rs, tests/hf_import.rs): a small
//! run, the tiny text Llama both use, and editing a JSON file of a folder held in memory.
#![allow(dead_code)] // each test binary uses some of them

use std::collections::HashMap;

use kiln::config::{DataConfig, SessionConfig, TextData};
use kiln::model::llama::LlamaConfig;
use kiln::model::ModelConfig;
use kiln::session::Session;
use kiln::Gpu;

/// An export folder in memory: file name → bytes.
pub type Files = HashMap<String, Vec<u8>>;

/// A run of `model` on `data`, batch 4, default optimizer.
pub fn session(model: ModelConfig, data: DataConfig, seed: u64) -> Session {
    let cfg = SessionConfig { model, data, batch: 4, optimizer: Default::default(), seed };
    pollster::block_on(async { Session::with_gpu(Gpu::new().await.expect("GPU"), cfg) }).expect("valid")
}

/// A Llama of d_model 16 (2 heads, context 16, SwiGLU 32, vocabulary 40) on a pangram repeated.
pub fn text_llama(layers: usize, seed: u64) -> Session {
    let text = "the quick brown fox jumps over the lazy dog.\n".repeat(20);
    let model = LlamaConfig::new(40, 16, 2, layers, 16, 32);
    session(ModelConfig::Llama(model), DataConfig::Text(TextData { text: Some(text), validation_fraction: 0.1 }), seed)
}

/// Rewrites the JSON file `name` of `files` through `change`.
pub fn edit_json(files: &mut Files, name: &str, change: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value = serde_json::from_slice(&files[name]).unwrap();
    change(&mut v);
    files.insert(name.into(), serde_json::to_vec(&v).unwrap());
}
