//! A Llama run as a Hugging Face `LlamaForCausalLM` folder that `from_pretrained` loads with
//! no custom code: config.json, model.safetensors under Transformers' tensor names,
//! generation_config.json, and a character-level tokenizer (tokenizer.json + its config).
//!
//! The math is the same: RMSNorm, NeoX-style RoPE (Transformers' `rotate_half`), causal
//! attention scaled by 1/sqrt(head_dim), SwiGLU, untied head. Two names move: Kiln's fused
//! `qkv` (3C, C) splits into q_proj, k_proj, v_proj (rows [0, C), [C, 2C), [2C, 3C)); and Kiln
//! computes silu(up)·gate, which is Transformers' silu(gate_proj)·up_proj, so Kiln's `up` is
//! `gate_proj` and Kiln's `gate` is `up_proj`. The tokenizer is a BPE model with one token
//! per character and no merges (so every character is its own token, id = its index in the
//! text's sorted characters) and a `Fuse` decoder that joins them back without spaces. The
//! folder also carries the run's data (train.txt, validation.txt) and python/train.py, which
//! keeps training it with PyTorch (DistributedDataParallel under torchrun) and writes a folder
//! that `from_hf` (hf_import.rs) reads back.

use std::collections::HashMap;

use safetensors::tensor::{Dtype, TensorView};
use serde_json::json;

use crate::error::{KilnError, Result};
use crate::model::llama::LlamaConfig;
use crate::model::ModelConfig;
use crate::session::Session;

/// python/train.py: continues training an export folder (a Llama or an MLP) with PyTorch, under torchrun if wanted.
pub const TRAIN_PY: &str = include_str!("../../python/train.py");

/// One file of the folder: its name and bytes.
pub type File = (&'static str, Vec<u8>);

impl Session {
    /// The run as a Hugging Face folder (see the module notes), in memory.
    pub async fn export_hf(&self) -> Result<Vec<File>> {
        let ModelConfig::Llama(cfg) = &self.cfg.model else {
            return Err(KilnError::invalid("model", "a Hugging Face Llama folder needs a Llama run (an MLP exports as a PyTorch state dict)"));
        };
        if cfg.short_conv {
            return Err(KilnError::invalid(
                "model.llama.short_conv",
                "Transformers' LlamaForCausalLM has no short convolution: export a run trained without it",
            ));
        }
        let corpus = self.data.corpus().ok_or_else(|| KilnError::invalid("data", "the tokenizer needs the run's text"))?;
        let weights = self.gpu.read_f32(&self.params.weights).await?;
        let tensor = |name: &str| {
            let e = self.params.entry(name);
            &weights[e.offset..e.offset + e.elements()]
        };
        let mut tensors: Vec<(String, Vec<usize>, &[f32])> = vec![
            ("model.embed_tokens.weight".into(), vec![cfg.vocab, cfg.d_model], tensor("wte")),
            ("model.norm.weight".into(), vec![cfg.d_model], tensor("final_norm")),
            ("lm_head.weight".into(), vec![cfg.vocab, cfg.d_model], tensor("lm_head")),
        ];
        let (c, f) = (cfg.d_model, cfg.hidden);
        for l in 0..cfg.layers {
            let k = |s: &str| format!("blocks.{l}.{s}");
            let hf = |s: &str| format!("model.layers.{l}.{s}.weight");
            let qkv = tensor(&k("qkv"));
            tensors.extend([
                (hf("input_layernorm"), vec![c], tensor(&k("attn_norm"))),
                (hf("self_attn.q_proj"), vec![c, c], &qkv[..c * c]),
                (hf("self_attn.k_proj"), vec![c, c], &qkv[c * c..2 * c * c]),
                (hf("self_attn.v_proj"), vec![c, c], &qkv[2 * c * c..]),
                (hf("self_attn.o_proj"), vec![c, c], tensor(&k("proj"))),
                (hf("post_attention_layernorm"), vec![c], tensor(&k("mlp_norm"))),
                (hf("mlp.gate_proj"), vec![f, c], tensor(&k("up"))),
                (hf("mlp.up_proj"), vec![f, c], tensor(&k("gate"))),
                (hf("mlp.down_proj"), vec![c, f], tensor(&k("down"))),
            ]);
        }
        let views = tensors
            .iter()
            .map(|(name, shape, values)| {
                Ok((name.clone(), TensorView::new(Dtype::F32, shape.clone(), bytemuck::cast_slice(values)).map_err(|e| KilnError::Gpu(e.to_string()))?))
            })
            .collect::<Result<Vec<_>>>()?;
        let metadata: HashMap<String, String> = HashMap::from([("format".to_string(), "pt".to_string())]);
        let model = safetensors::serialize(views, Some(metadata.into_iter().collect())).map_err(|e| KilnError::Gpu(e.to_string()))?;
        let text = |v: serde_json::Value| serde_json::to_vec_pretty(&v).expect("JSON values serialize");
        Ok(vec![
            ("config.json", text(config_json(cfg, &self.cfg, self.step))),
            ("generation_config.json", text(generation_json(cfg, corpus.chars.len()))),
            ("model.safetensors", model),
            ("tokenizer.json", text(tokenizer_json(&corpus.chars))),
            (
                "tokenizer_config.json",
                text(json!({ "tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": false, "model_max_length": cfg.context })),
            ),
            // The run's data as its two splits, and the script that keeps training on them.
            ("train.txt", corpus.decode(&corpus.tokens[..corpus.split]).into_bytes()),
            ("validation.txt", corpus.decode(&corpus.tokens[corpus.split..]).into_bytes()),
            ("train.py", TRAIN_PY.as_bytes().to_vec()),
        ])
    }
}

/// Transformers' fields, and Kiln's own config and step (kept by Transformers when it saves the
/// folder again), so the folder can come back into Kiln (hf_import.rs).
fn config_json(cfg: &LlamaConfig, session: &crate::config::SessionConfig, step: u64) -> serde_json::Value {
    json!({
        "kiln_config": session,
        "kiln_step": step,
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": cfg.vocab,
        "hidden_size": cfg.d_model,
        "intermediate_size": cfg.hidden,
        "num_hidden_layers": cfg.layers,
        "num_attention_heads": cfg.heads,
        "num_key_value_heads": cfg.heads,
        "head_dim": cfg.head_dim(),
        "max_position_embeddings": cfg.context,
        "rms_norm_eps": cfg.norm_eps,
        "rope_theta": cfg.rope_theta,
        "hidden_act": "silu",
        "attention_bias": false,
        "mlp_bias": false,
        "tie_word_embeddings": false,
        "torch_dtype": "float32",
    })
}

/// Greedy, never choosing an id past the text's characters (the vocabulary
/// may be larger than the text needs; Kiln samples only characters the text has).
fn generation_json(cfg: &LlamaConfig, chars: usize) -> serde_json::Value {
    let unused: Vec<usize> = (chars..cfg.vocab).collect();
    let mut g = json!({ "do_sample": false });
    if !unused.is_empty() {
        g["suppress_tokens"] = json!(unused);
    }
    g
}

/// One token per character, id = its index in the sorted characters; no merges, no
/// normalization, no pre-tokenization; decoding joins the tokens as they are.
fn tokenizer_json(chars: &[char]) -> serde_json::Value {
    let vocab: serde_json::Map<String, serde_json::Value> = chars.iter().enumerate().map(|(i, c)| (c.to_string(), json!(i))).collect();
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": null,
        "pre_tokenizer": null,
        "post_processor": null,
        "decoder": { "type": "Fuse" },
        "model": {
            "type": "BPE",
            "dropout": null,
            "unk_token": null,
            "continuing_subword_prefix": null,
            "end_of_word_suffix": null,
            "fuse_unk": false,
            "byte_fallback": false,
            "ignore_merges": false,
            "vocab": vocab,
            "merges": [],
        },
    })
}
