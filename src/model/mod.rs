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

use crate::error::{KilnError, Result};
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
    /// `layers_f32` and `attention_f32` give f32 copies.
    pub packed: bool,
}

impl Taps {
    /// Each layer's output as f32, and in `ops` the dispatches that fill them (none unless
    /// `packed`): the views run between steps, so a copy costs one small dispatch per tensor.
    pub fn layers_f32(&self, gpu: &Gpu, ops: &mut Vec<Op>) -> Result<Vec<(String, Tensor)>> {
        self.layers.iter().map(|(name, t)| Ok((name.clone(), self.widen(gpu, t, name, ops)?))).collect()
    }

    /// Each block's (qkv as f32, lse), and in `ops` the dispatches that fill them.
    pub fn attention_f32(&self, gpu: &Gpu, ops: &mut Vec<Op>) -> Result<Vec<(Tensor, Tensor)>> {
        self.attention.iter().map(|(qkv, lse)| Ok((self.widen(gpu, qkv, "qkv", ops)?, lse.clone()))).collect()
    }

    fn widen(&self, gpu: &Gpu, t: &Tensor, name: &str, ops: &mut Vec<Op>) -> Result<Tensor> {
        if !self.packed {
            return Ok(t.clone());
        }
        let wide = gpu.tensor(name, &[t.len() * 2])?;
        ops.push(crate::kernels::quant::fp16_to_fp32(gpu, t, &wide)?);
        Ok(wide)
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

    /// The same model trained in fp32: what a checkpoint of either precision must match.
    pub fn in_fp32(&self) -> ModelConfig {
        match self {
            ModelConfig::Llama(l) => ModelConfig::Llama(llama::LlamaConfig { precision: llama::Precision::Fp32, ..l.clone() }),
            other => other.clone(),
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
            ModelConfig::Llama(_) => self.as_llama().ok_or(KilnError::LlamaMissing)?.build(gpu, p, batch, train),
        }
    }

    /// The Llama's config, where this build trains Llamas (the Cargo feature `llama`). Every
    /// path to a Llama's passes and views goes through here, so a build without the feature
    /// (the page's first wasm) leaves their code and shaders out: `None` is all it can return.
    pub fn as_llama(&self) -> Option<&llama::LlamaConfig> {
        match self {
            #[cfg(feature = "llama")]
            ModelConfig::Llama(l) => Some(l),
            _ => None,
        }
    }

    /// `LlamaMissing` for a Llama in a build without the `llama` feature: checked before a run
    /// acquires a device or reads its data.
    pub fn check_built(&self) -> Result<()> {
        match self {
            ModelConfig::Llama(_) if self.as_llama().is_none() => Err(KilnError::LlamaMissing),
            _ => Ok(()),
        }
    }
}
