//! A Kiln config for a Hugging Face Llama folder Kiln did not write (no `kiln_config` in its
//! config.json): the model from Transformers' fields, the text from the folder's train.txt (and
//! validation.txt, held out), and llama-tiny's training settings with a constant learning rate
//! (the model arrives trained; a warmup from zero would mean nothing). The page, the npm package
//! and `kiln import` let the user change the settings afterwards.

use std::collections::HashMap;

use serde_json::Value;

use crate::config::{DataConfig, SessionConfig, TextData};
use crate::data::text::TextCorpus;
use crate::error::Result;
use crate::model::llama::LlamaConfig;
use crate::model::ModelConfig;
use crate::optim::Schedule;
use crate::presets::preset;
use crate::session::hf_import::refuse;

/// Longest training window an imported model gets (shorter when the text needs it).
const IMPORT_CONTEXT: usize = 128;

pub fn foreign_config(config: &Value, files: &HashMap<String, Vec<u8>>) -> Result<SessionConfig> {
    let text = |name: &str| -> Result<Option<String>> {
        files.get(name).map(|b| String::from_utf8(b.clone()).map_err(|_| refuse(name, "is not UTF-8 text"))).transpose()
    };
    let train = text("train.txt")?.ok_or_else(|| {
        refuse("train.txt", "is missing: a folder without Kiln's kiln_config needs the text to train on, as train.txt (and validation.txt) beside config.json")
    })?;
    let validation = text("validation.txt")?.unwrap_or_default();
    let (train_chars, val_chars) = (train.chars().count(), validation.chars().count());
    let validation_fraction = if val_chars == 0 { 0.1 } else { (val_chars as f64 / (train_chars + val_chars) as f64).clamp(0.05, 0.5) };
    let all = train + &validation;
    let number = |key: &str| -> Result<usize> {
        config.get(key).and_then(Value::as_u64).map(|v| v as usize).ok_or_else(|| refuse(&format!("config.json: {key}"), "is missing or not a whole number"))
    };
    let float = |value: Option<&Value>, default: f64| value.and_then(Value::as_f64).unwrap_or(default) as f32;
    let corpus = TextCorpus::new(&all, validation_fraction).map_err(|e| refuse("train.txt", e.to_string()))?;
    let max_positions = number("max_position_embeddings")?;
    let context = [IMPORT_CONTEXT, 64, 32, 16, 8]
        .into_iter()
        .filter(|&c| c <= max_positions)
        .find(|&c| corpus.check_context(c, validation_fraction).is_ok())
        .ok_or_else(|| refuse("train.txt", "is too short to hold a training window of 8 characters in each split"))?;
    let model = LlamaConfig {
        rope_theta: float(config.get("rope_theta").or_else(|| config.pointer("/rope_parameters/rope_theta")), 10_000.0),
        // Transformers' LlamaConfig default.
        norm_eps: float(config.get("rms_norm_eps"), 1e-6),
        ..LlamaConfig::new(
            number("vocab_size")?,
            number("hidden_size")?,
            number("num_attention_heads")?,
            number("num_hidden_layers")?,
            context,
            number("intermediate_size")?,
        )
    };
    let mut cfg = preset("llama-tiny").expect("llama-tiny is a preset");
    cfg.model = ModelConfig::Llama(model);
    cfg.data = DataConfig::Text(TextData { text: Some(all), validation_fraction });
    cfg.optimizer.schedule = Schedule::Constant;
    cfg.optimizer.lr = 1e-3;
    // Validated as any config (the model's limits name their fields).
    cfg.validate().map_err(|e| refuse("config.json", e.to_string()))?;
    Ok(cfg)
}
