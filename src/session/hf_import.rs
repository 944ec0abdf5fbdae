//! A Hugging Face Llama folder back into a Kiln run: the folders `hf_export.rs` writes, trained
//! further anywhere (Transformers keeps config.json's `kiln_config` and `kiln_step`), as long as
//! Kiln can represent them: a Llama with SiLU, no biases, one key/value head per query head
//! (no grouped-query attention), no RoPE scaling, a vocabulary of at most 256 and the run's own
//! one-token-per-character tokenizer. Anything else is refused naming the field or tensor.
//! Every check runs before the run is built.

use std::collections::HashMap;

use safetensors::tensor::Dtype;
use safetensors::SafeTensors;
use serde_json::Value;

use crate::config::SessionConfig;
use crate::error::{KilnError, Result};
use crate::gpu::{Command, Gpu};
use crate::model::llama::LlamaConfig;
use crate::model::ModelConfig;
use crate::session::Session;

/// Largest vocabulary Kiln imports (its tokens are characters).
pub const MAX_IMPORT_VOCAB: usize = 256;

fn refuse(file: &str, message: impl Into<String>) -> KilnError {
    KilnError::invalid(file, message)
}

impl Session {
    /// A run from the folder's files (name → bytes): its config, step and weights.
    pub fn from_hf(gpu: Gpu, files: &HashMap<String, Vec<u8>>) -> Result<Session> {
        let file = |name: &str| files.get(name).ok_or_else(|| refuse(name, "is missing from the folder"));
        let config: Value = serde_json::from_slice(file("config.json")?).map_err(|e| refuse("config.json", format!("is not JSON: {e}")))?;
        let cfg = session_config(&config)?;
        let ModelConfig::Llama(llama) = &cfg.model else { return Err(refuse("config.json: kiln_config", "holds an MLP, not a Llama")) };
        check_architecture(&config, llama)?;
        let mut s = Session::with_gpu(gpu, cfg.clone())?;
        let corpus = s.data.corpus().ok_or_else(|| refuse("config.json: kiln_config", "has no text"))?;
        check_tokenizer(file("tokenizer.json")?, &corpus.chars)?;
        let tensors =
            SafeTensors::deserialize(file("model.safetensors")?).map_err(|e| refuse("model.safetensors", format!("is not a valid safetensors file: {e}")))?;
        let weights = kiln_weights(&tensors, llama)?;
        for (name, values) in &weights {
            s.gpu.write(&s.params.weight(name), values)?;
        }
        s.gpu.submit(&[Command::Copy { from: &s.params.weights, to: &s.prev_weights }]);
        s.step = config["kiln_step"].as_u64().unwrap_or(0);
        s.reset_metrics_cursor();
        s.gpu.check_errors()?;
        Ok(s)
    }
}

/// The Kiln config the export wrote into config.json, checked like any config.
fn session_config(config: &Value) -> Result<SessionConfig> {
    let kiln = config.get("kiln_config").ok_or_else(|| {
        refuse("config.json: kiln_config", "is missing: Kiln imports folders it exported (the config carries the training text and settings)")
    })?;
    SessionConfig::from_json(&kiln.to_string()).map_err(|e| refuse("config.json: kiln_config", e.to_string()))
}

/// The Transformers fields must describe exactly the Llama Kiln builds.
fn check_architecture(config: &Value, llama: &LlamaConfig) -> Result<()> {
    let number = |key: &str| config.get(key).and_then(Value::as_u64).map(|v| v as usize);
    let field = |key: &str| format!("config.json: {key}");
    if config["model_type"] != "llama" {
        return Err(refuse(&field("model_type"), format!("must be \"llama\", got {}", config["model_type"])));
    }
    for key in ["attention_bias", "mlp_bias"] {
        if config.get(key).and_then(Value::as_bool).unwrap_or(false) {
            return Err(refuse(&field(key), "biases are not supported (Kiln's Llama has none)"));
        }
    }
    if config.get("hidden_act").and_then(Value::as_str).unwrap_or("silu") != "silu" {
        return Err(refuse(&field("hidden_act"), format!("must be \"silu\", got {}", config["hidden_act"])));
    }
    if !config.get("rope_scaling").unwrap_or(&Value::Null).is_null() {
        return Err(refuse(&field("rope_scaling"), "RoPE scaling is not supported"));
    }
    let heads = number("num_attention_heads");
    if let (Some(kv), Some(h)) = (number("num_key_value_heads"), heads) {
        if kv != h {
            return Err(refuse(&field("num_key_value_heads"), format!("{kv} key/value heads for {h} query heads: grouped-query attention is not supported")));
        }
    }
    if let Some(v) = number("vocab_size").filter(|&v| v > MAX_IMPORT_VOCAB) {
        return Err(refuse(&field("vocab_size"), format!("{v} tokens; Kiln's tokens are characters, at most {MAX_IMPORT_VOCAB}")));
    }
    let expected = [
        ("vocab_size", llama.vocab),
        ("hidden_size", llama.d_model),
        ("intermediate_size", llama.hidden),
        ("num_hidden_layers", llama.layers),
        ("num_attention_heads", llama.heads),
    ];
    for (key, want) in expected {
        if number(key) != Some(want) {
            return Err(refuse(&field(key), format!("is {}, but kiln_config's model has {want}", config[key])));
        }
    }
    Ok(())
}

/// The tokenizer must be the run's own: one token per character, id = its index.
fn check_tokenizer(bytes: &[u8], chars: &[char]) -> Result<()> {
    let t: Value = serde_json::from_slice(bytes).map_err(|e| refuse("tokenizer.json", format!("is not JSON: {e}")))?;
    let vocab = t["model"]["vocab"].as_object().ok_or_else(|| refuse("tokenizer.json: model.vocab", "is missing"))?;
    let same = vocab.len() == chars.len() && chars.iter().enumerate().all(|(i, c)| vocab.get(&c.to_string()).and_then(Value::as_u64) == Some(i as u64));
    let merges = t["model"]["merges"].as_array().map_or(0, Vec::len);
    if !same || merges > 0 {
        return Err(refuse(
            "tokenizer.json",
            "is another tokenizer: Kiln's has one token per character of the training text (id = its index in the sorted characters) and no merges",
        ));
    }
    Ok(())
}

/// Kiln's tensors from Transformers' (q, k, v joined into qkv; gate_proj is Kiln's `up`,
/// up_proj its `gate`); every tensor of the file must be used.
fn kiln_weights(t: &SafeTensors<'_>, cfg: &LlamaConfig) -> Result<Vec<(String, Vec<f32>)>> {
    let (c, f, v) = (cfg.d_model, cfg.hidden, cfg.vocab);
    let mut used = vec![];
    let mut read = |name: String, shape: &[usize]| -> Result<Vec<f32>> {
        let view = t.tensor(&name).map_err(|_| refuse("model.safetensors", format!("tensor `{name}` is missing")))?;
        if view.dtype() != Dtype::F32 || view.shape() != shape {
            return Err(refuse("model.safetensors", format!("tensor `{name}` is {:?} {:?}; Kiln needs F32 {shape:?}", view.dtype(), view.shape())));
        }
        let values: Vec<f32> = bytemuck::pod_collect_to_vec(view.data());
        if let Some(i) = values.iter().position(|x| !x.is_finite()) {
            return Err(refuse("model.safetensors", format!("tensor `{name}` holds a non-finite value at index {i}")));
        }
        used.push(name);
        Ok(values)
    };
    let mut out = vec![
        ("wte".to_string(), read("model.embed_tokens.weight".into(), &[v, c])?),
        ("final_norm".to_string(), read("model.norm.weight".into(), &[c])?),
        ("lm_head".to_string(), read("lm_head.weight".into(), &[v, c])?),
    ];
    for l in 0..cfg.layers {
        let hf = |s: &str| format!("model.layers.{l}.{s}.weight");
        let k = |s: &str| format!("blocks.{l}.{s}");
        let mut qkv = read(hf("self_attn.q_proj"), &[c, c])?;
        qkv.extend(read(hf("self_attn.k_proj"), &[c, c])?);
        qkv.extend(read(hf("self_attn.v_proj"), &[c, c])?);
        out.extend([
            (k("attn_norm"), read(hf("input_layernorm"), &[c])?),
            (k("qkv"), qkv),
            (k("proj"), read(hf("self_attn.o_proj"), &[c, c])?),
            (k("mlp_norm"), read(hf("post_attention_layernorm"), &[c])?),
            (k("up"), read(hf("mlp.gate_proj"), &[f, c])?),
            (k("gate"), read(hf("mlp.up_proj"), &[f, c])?),
            (k("down"), read(hf("mlp.down_proj"), &[c, f])?),
        ]);
    }
    if let Some(extra) = t.names().into_iter().find(|n| !used.iter().any(|u| u == *n)) {
        let why = if extra.ends_with(".bias") { "biases are not supported" } else { "Kiln's Llama has no such tensor" };
        return Err(refuse("model.safetensors", format!("tensor `{extra}`: {why}")));
    }
    Ok(out)
}
