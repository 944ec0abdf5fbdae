//! Models: fixed families with explicit forward and backward made of kernel calls, over
//! parameters kept in one flat `ParamStore`. Each family's config builds a `Net`: the
//! dispatches of one pass for a fixed batch, which a session replays every step.

pub mod llama;
mod llama_acts;
pub mod llama_pass;
pub mod mlp;
pub mod params;
pub mod training;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::gpu::Tensor;
use crate::gpu::{Gpu, Op};

/// One model's dispatches for a fixed batch.
pub struct Net {
    /// The batch's inputs: (B, input_dim) f32 for an MLP, (B·T) u32 tokens for a Llama
    pub input: Tensor,
    /// (rows, outputs): logits or regression predictions
    pub output: Tensor,
    /// (rows, outputs): d loss / d output, written by the loss kernels
    pub d_output: Tensor,
    pub forward: Vec<Op>,
    pub backward: Vec<Op>,
    /// Internal tensors the "look inside" views read (the ops above write them).
    pub taps: Taps,
}

/// A net's internal tensors, by the name of the layer whose parameters make them.
#[derive(Clone, Default)]
pub struct Taps {
    /// (rows, width) each layer's output: an MLP's hidden activations ("layer{l}"), a Llama
    /// block's residual stream after it ("blocks.{l}")
    pub layers: Vec<(String, Tensor)>,
    /// A Llama's blocks: (B·T, 3C) q, k (rotated) and v, and (B, H, T) each query's log-sum-exp
    pub attention: Vec<(Tensor, Tensor)>,
    /// Mixed precision: `layers` and the qkv of `attention` are packed f16 (half the words);
    /// `widened` gives f32 copies.
    pub packed: bool,
}

impl Taps {
    /// The taps as f32, and the dispatches that fill them (none unless `packed`): views run
    /// between steps, so widening a copy costs one small dispatch per tensor when asked.
    pub fn widened(&self, gpu: &Gpu) -> Result<(Taps, Vec<Op>)> {
        if !self.packed {
            return Ok((self.clone(), vec![]));
        }
        let mut ops = vec![];
        let mut widen = |t: &Tensor, name: &str| -> Result<Tensor> {
            let wide = gpu.tensor(name, &[t.len() * 2])?;
            ops.push(crate::kernels::quant::fp16_to_fp32(gpu, t, &wide)?);
            Ok(wide)
        };
        let layers = self.layers.iter().map(|(name, t)| Ok((name.clone(), widen(t, name)?))).collect::<Result<Vec<_>>>()?;
        let attention = self.attention.iter().map(|(qkv, lse)| Ok((widen(qkv, "qkv")?, lse.clone()))).collect::<Result<Vec<_>>>()?;
        Ok((Taps { layers, attention, packed: false }, ops))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum ModelConfig {
    Mlp(mlp::MlpConfig),
    Llama(llama::LlamaConfig),
}

impl ModelConfig {
    pub fn validate(&self) -> Result<()> {
        match self {
            ModelConfig::Mlp(m) => m.validate(),
            ModelConfig::Llama(l) => l.validate(),
        }
    }

    pub fn param_specs(&self) -> Vec<params::ParamSpec> {
        match self {
            ModelConfig::Mlp(m) => m.param_specs(),
            ModelConfig::Llama(l) => l.param_specs(),
        }
    }

    /// Mixed-precision training (a Llama's `precision: "mixed"`).
    pub fn mixed(&self) -> bool {
        matches!(self, ModelConfig::Llama(l) if l.mixed())
    }

    /// Rows of output per input row: 1 for an MLP, the context length for a Llama.
    pub fn rows_per_example(&self) -> usize {
        match self {
            ModelConfig::Mlp(_) => 1,
            ModelConfig::Llama(l) => l.context,
        }
    }

    /// Width of one output row: classes, regression outputs or vocabulary.
    pub fn outputs(&self) -> usize {
        match self {
            ModelConfig::Mlp(m) => m.output_dim,
            ModelConfig::Llama(l) => l.vocab,
        }
    }

    pub fn build(&self, gpu: &Gpu, p: &params::ParamStore, batch: usize, train: bool) -> Result<Net> {
        match self {
            ModelConfig::Mlp(m) => m.build(gpu, p, batch, train),
            ModelConfig::Llama(l) => l.build(gpu, p, batch, train),
        }
    }
}
