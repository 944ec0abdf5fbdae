//! A Hugging Face Llama folder into a Kiln run: the folders `hf_export.rs` writes, trained
//! further anywhere (Transformers keeps config.json's `kiln_config` and `kiln_step`), and other
//! char-level Llamas with their text beside them as train.txt (hf_foreign.rs builds their
//! config). Kiln must be able to represent the model: SiLU, no biases, one key/value head per
//! query head (no grouped-query attention), no RoPE scaling, a vocabulary of at most 256 whose
//! tokens include every character of the text (tokens.rs maps the file's ids onto Kiln's).
//! Anything else is refused naming the field or tensor. Every check runs before the run is built.

use std::collections::HashMap;

use safetensors::tensor::Dtype;
use safetensors::SafeTensors;
use serde_json::Value;

use crate::config::SessionConfig;
use crate::error::{KilnError, Result};
use crate::gpu::{Command, Gpu};
use crate::kernels::quant::reference::f16_to_f32;
use crate::model::llama::LlamaConfig;
use crate::model::ModelConfig;
use crate::session::hf_foreign::foreign_config;
use crate::session::tokens::token_order;
use crate::session::Session;

/// Largest vocabulary Kiln imports (its tokens are characters).
pub const MAX_IMPORT_VOCAB: usize = 256;

pub(crate) fn refuse(file: &str, message: impl Into<String>) -> KilnError {
    KilnError::invalid(file, message)
}

impl Session {
    /// A run from the folder's files (name → bytes): its config, step and weights.
    pub fn from_hf(gpu: Gpu, files: &HashMap<String, Vec<u8>>) -> Result<Session> {
        let file = |name: &str| files.get(name).ok_or_else(|| refuse(name, "is missing from the folder"));
        let config: Value = serde_json::from_slice(file("config.json")?).map_err(|e| refuse("config.json", format!("is not JSON: {e}")))?;
        check_architecture(&config)?;
        let cfg = match config.get("kiln_config") {
            Some(kiln) => kiln_config(kiln)?,
            None => foreign_config(&config, files)?,
        };
        let ModelConfig::Llama(llama) = &cfg.model else { return Err(refuse("config.json: kiln_config", "holds an MLP, not a Llama")) };
        check_shapes(&config, llama)?;
        let llama = llama.clone();
        let mut s = Session::with_gpu(gpu, cfg)?;
        let corpus = s.data.corpus().ok_or_else(|| refuse("config.json: kiln_config", "has no text"))?;
        let order = token_order(file("tokenizer.json")?, &corpus.chars, llama.vocab)?;
        let tensors =
            SafeTensors::deserialize(file("model.safetensors")?).map_err(|e| refuse("model.safetensors", format!("is not a valid safetensors file: {e}")))?;
        let tied = config.get("tie_word_embeddings").and_then(Value::as_bool).unwrap_or(false);
        let weights = kiln_weights(&tensors, &llama, &order, tied)?;
        s.install_weights(&weights, config["kiln_step"].as_u64().unwrap_or(0))?;
        Ok(s)
    }

    /// Writes imported weights (Kiln's tensor names) and starts the run's metrics at `step`.
    pub(crate) fn install_weights(&mut self, weights: &[(String, Vec<f32>)], step: u64) -> Result<()> {
        for (name, values) in weights {
            self.gpu.write(&self.params.weight(name), values)?;
        }
        self.gpu.submit(&[Command::Copy { from: &self.params.weights, to: &self.prev_weights }]);
        self.step = step;
        self.reset_metrics_cursor();
        self.gpu.check_errors()
    }
}

/// The Kiln config the export wrote into config.json, checked like any config.
fn kiln_config(kiln: &Value) -> Result<SessionConfig> {
    SessionConfig::from_json(&kiln.to_string()).map_err(|e| refuse("config.json: kiln_config", e.to_string()))
}

/// The Transformers fields must describe a Llama Kiln can build.
fn check_architecture(config: &Value) -> Result<()> {
    let number = |key: &str| config.get(key).and_then(Value::as_u64);
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
    // Transformers 5 writes RoPE's settings as rope_parameters {rope_theta, rope_type}.
    if let Some(kind) = config.pointer("/rope_parameters/rope_type").and_then(Value::as_str).filter(|&t| t != "default") {
        return Err(refuse(&field("rope_parameters.rope_type"), format!("is \"{kind}\": only plain RoPE (\"default\") is supported")));
    }
    if let (Some(kv), Some(h)) = (number("num_key_value_heads"), number("num_attention_heads")) {
        if kv != h {
            return Err(refuse(&field("num_key_value_heads"), format!("{kv} key/value heads for {h} query heads: grouped-query attention is not supported")));
        }
    }
    if let Some(v) = number("vocab_size").filter(|&v| v as usize > MAX_IMPORT_VOCAB) {
        return Err(refuse(&field("vocab_size"), format!("{v} tokens; Kiln's tokens are characters, at most {MAX_IMPORT_VOCAB}")));
    }
    Ok(())
}

/// The Transformers fields must match the Llama Kiln builds from kiln_config.
fn check_shapes(config: &Value, llama: &LlamaConfig) -> Result<()> {
    let expected = [
        ("vocab_size", llama.vocab),
        ("hidden_size", llama.d_model),
        ("intermediate_size", llama.hidden),
        ("num_hidden_layers", llama.layers),
        ("num_attention_heads", llama.heads),
    ];
    for (key, want) in expected {
        if config.get(key).and_then(Value::as_u64) != Some(want as u64) {
            return Err(refuse(&format!("config.json: {key}"), format!("is {}, but kiln_config's model has {want}", config[key])));
        }
    }
    match config.get("head_dim").and_then(Value::as_u64) {
        Some(h) if h as usize != llama.head_dim() => {
            Err(refuse("config.json: head_dim", format!("is {h}; Kiln's heads are hidden_size / num_attention_heads = {} wide", llama.head_dim())))
        }
        _ => Ok(()),
    }
}

/// A tensor's values as f32: F32 as stored, F16 and BF16 widened exactly.
pub(crate) fn read_tensor(t: &SafeTensors<'_>, file: &str, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
    let view = t.tensor(name).map_err(|_| refuse(file, format!("tensor `{name}` is missing")))?;
    if view.shape() != shape {
        return Err(refuse(file, format!("tensor `{name}` has shape {:?}; Kiln needs {shape:?}", view.shape())));
    }
    let halves = || view.data().chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let values: Vec<f32> = match view.dtype() {
        Dtype::F32 => bytemuck::pod_collect_to_vec(view.data()),
        Dtype::F16 => halves().map(f16_to_f32).collect(),
        Dtype::BF16 => halves().map(|h| f32::from_bits((h as u32) << 16)).collect(),
        other => return Err(refuse(file, format!("tensor `{name}` is {other:?}; Kiln reads F32, F16 or BF16"))),
    };
    if let Some(i) = values.iter().position(|x| !x.is_finite()) {
        return Err(refuse(file, format!("tensor `{name}` holds a non-finite value at index {i}")));
    }
    Ok(values)
}

/// Kiln's tensors from Transformers' (q, k, v joined into qkv; gate_proj is Kiln's `up`,
/// up_proj its `gate`; embedding and head rows in Kiln's token order, `order[kiln id]` = the
/// file's id); every tensor of the file must be used. A tied head is the embedding's copy.
fn kiln_weights(t: &SafeTensors<'_>, cfg: &LlamaConfig, order: &[usize], tied: bool) -> Result<Vec<(String, Vec<f32>)>> {
    let (c, f, v) = (cfg.d_model, cfg.hidden, cfg.vocab);
    let mut used = vec![];
    let mut read = |name: String, shape: &[usize]| -> Result<Vec<f32>> {
        let values = read_tensor(t, "model.safetensors", &name, shape)?;
        used.push(name);
        Ok(values)
    };
    let reorder = |rows: Vec<f32>| -> Vec<f32> { order.iter().flat_map(|&id| rows[id * c..(id + 1) * c].to_vec()).collect() };
    let embed = read("model.embed_tokens.weight".into(), &[v, c])?;
    let head = if tied && t.tensor("lm_head.weight").is_err() { embed.clone() } else { read("lm_head.weight".into(), &[v, c])? };
    let mut out =
        vec![("wte".to_string(), reorder(embed)), ("final_norm".to_string(), read("model.norm.weight".into(), &[c])?), ("lm_head".to_string(), reorder(head))];
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
    // Older Transformers saved each layer's RoPE table as a buffer; it is recomputed, not read.
    let extra = t.names().into_iter().find(|n| !used.iter().any(|u| u == *n) && !n.ends_with("rotary_emb.inv_freq"));
    if let Some(extra) = extra {
        let why = if extra.ends_with(".bias") { "biases are not supported" } else { "Kiln's Llama has no such tensor" };
        return Err(refuse("model.safetensors", format!("tensor `{extra}`: {why}")));
    }
    Ok(out)
}
