//! Attention maps of a Llama: for a prompt, every layer's and head's causal attention
//! probabilities (query × key), from one forward pass and one `attention_probs` dispatch per
//! layer that recomputes them from the forward's q, k and log-sum-exp.

use serde::Serialize;

use crate::error::Result;
use crate::gpu::Op;
use crate::kernels::attention::AttentionDims;
use crate::kernels::inspect::attention_probs;
use crate::session::generate::PromptWindow;
use crate::session::Session;

/// Every head's attention over the prompt's last `context` characters.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct AttentionMaps {
    /// The characters shown, in order: queries are rows, keys columns.
    pub tokens: Vec<String>,
    pub layers: usize,
    pub heads: usize,
    /// (layers, heads, n, n) with n = tokens.length: row i is how much query i attends to each
    /// key 0..=i (it sums to 1); zero past the diagonal.
    pub probs: Vec<f32>,
}

impl Session {
    pub async fn attention_maps(&self, prompt: &str) -> Result<AttentionMaps> {
        let PromptWindow { cfg, corpus, tokens, input, last } = self.prompt_window(prompt, super::generate::ATTENTION_VIEW)?;
        let (t, h) = (cfg.context, cfg.heads);
        let n = last + 1;
        let net = self.cfg.model.build(&self.gpu, &self.params, 1, false)?;
        let dims = AttentionDims { batch: 1, seq: t, heads: h, head_dim: cfg.head_dim() };
        // (layers) × (1, H, T, T) each layer's probabilities over the whole window
        let maps = (0..cfg.layers).map(|l| self.gpu.tensor(&format!("attention map {l}"), &[1, h, t, t])).collect::<Result<Vec<_>>>()?;
        let mut widen = vec![];
        let attention = net.taps.attention_f32(&self.gpu, &mut widen)?;
        let ops = attention.iter().zip(&maps).map(|((qkv, lse), map)| attention_probs(&self.gpu, dims, qkv, lse, map)).collect::<Result<Vec<_>>>()?;
        self.gpu.write(&net.input, &input)?;
        self.gpu.run(&net.forward.iter().chain(&widen).chain(&ops).collect::<Vec<&Op>>())?;
        let mut probs = Vec::with_capacity(cfg.layers * h * n * n);
        for all in self.gpu.read_many_f32(&maps.iter().collect::<Vec<_>>()).await? {
            // Only the prompt's n × n corner: the padding after it is never attended to.
            for head in all.chunks_exact(t * t) {
                probs.extend(head.chunks_exact(t).take(n).flat_map(|row| &row[..n]));
            }
        }
        let shown = &tokens[tokens.len() - n..];
        Ok(AttentionMaps { tokens: shown.iter().map(|&tok| corpus.decode(&[tok])).collect(), layers: cfg.layers, heads: h, probs })
    }
}
