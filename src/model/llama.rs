//! A tiny Llama: token embedding; N blocks of RMSNorm → causal multi-head attention with RoPE
//! → residual → RMSNorm → SwiGLU MLP (fused SiLU gate) → residual; final RMSNorm; LM head.
//! Optionally a causal short convolution between each block's first RMSNorm and attention.
//! Written llm.c style (see `llama_pass.rs` for the dispatches); this file holds the config,
//! its validation and the parameter table.

use serde::{Deserialize, Serialize};

use crate::error::{ensure, shown, Result};
use crate::kernels::attention::MAX_HEAD_DIM;
use crate::model::params::{Init, ParamSpec};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(deny_unknown_fields)]
pub struct LlamaConfig {
    /// Token vocabulary: at least the distinct characters of the text.
    pub vocab: usize,
    pub d_model: usize,
    /// Must divide d_model; d_model / heads must be even.
    pub heads: usize,
    pub layers: usize,
    /// Tokens per sequence (the attention window).
    pub context: usize,
    /// Width of the SwiGLU hidden layer.
    pub hidden: usize,
    /// RoPE base, default 10000.
    #[serde(default = "default_theta")]
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub rope_theta: f32,
    /// RMSNorm epsilon, default 1e-5.
    #[serde(default = "default_eps")]
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub norm_eps: f32,
    /// A causal depthwise convolution of width 3 over each block's normed input, before
    /// attention (the "short conv" of recent hybrid models): each position mixes in the two
    /// before it. Its taps start as the identity. Default off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub short_conv: bool,
    /// How training stores numbers: `fp32` everywhere (the default), or `mixed`: the passes
    /// read an f16 copy of the weights and keep the activations the backward needs as f16,
    /// while the master weights, the optimizer state and the gradients stay fp32, with a
    /// dynamic loss scale (see `crate::loss_scale`).
    #[serde(default, skip_serializing_if = "Precision::is_fp32")]
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub precision: Precision,
}

/// Training precision of a Llama (`model.llama.precision`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    #[default]
    Fp32,
    Mixed,
}

impl Precision {
    pub fn is_fp32(&self) -> bool {
        *self == Precision::Fp32
    }
}

fn default_theta() -> f32 {
    10_000.0
}
fn default_eps() -> f32 {
    1e-5
}

pub const MAX_CONTEXT: usize = 1024;
pub const MAX_D_MODEL: usize = 4096;
pub const MAX_LAYERS: usize = 48;
pub const MAX_VOCAB: usize = 65_536;

impl LlamaConfig {
    /// A Llama of these sizes with the defaults: RoPE base 10000, RMSNorm ε 1e-5, no short
    /// conv, fp32.
    pub fn new(vocab: usize, d_model: usize, heads: usize, layers: usize, context: usize, hidden: usize) -> LlamaConfig {
        LlamaConfig {
            vocab,
            d_model,
            heads,
            layers,
            context,
            hidden,
            rope_theta: default_theta(),
            norm_eps: default_eps(),
            short_conv: false,
            precision: Precision::Fp32,
        }
    }

    pub fn validate(&self) -> Result<()> {
        let within = |v: usize, lo: usize, hi: usize, field: &str| ensure((lo..=hi).contains(&v), field, || format!("must be {lo}..={hi}, got {v}"));
        within(self.vocab, 2, MAX_VOCAB, "model.llama.vocab")?;
        within(self.d_model, 2, MAX_D_MODEL, "model.llama.d_model")?;
        within(self.heads, 1, self.d_model, "model.llama.heads")?;
        within(self.layers, 1, MAX_LAYERS, "model.llama.layers")?;
        within(self.context, 1, MAX_CONTEXT, "model.llama.context")?;
        within(self.hidden, 1, 4 * MAX_D_MODEL, "model.llama.hidden")?;
        ensure(self.d_model.is_multiple_of(self.heads), "model.llama.heads", || format!("must divide d_model ({}) evenly, got {}", self.d_model, self.heads))?;
        let hd = self.head_dim();
        ensure(hd.is_multiple_of(2) && hd <= MAX_HEAD_DIM, "model.llama.heads", || {
            format!("d_model/heads = {hd} must be even and at most {MAX_HEAD_DIM} (RoPE rotates pairs)")
        })?;
        ensure(self.rope_theta.is_finite() && self.rope_theta > 1.0, "model.llama.rope_theta", || format!("must be > 1, got {}", shown(self.rope_theta)))?;
        ensure(self.norm_eps.is_finite() && self.norm_eps > 0.0, "model.llama.norm_eps", || format!("must be > 0, got {}", shown(self.norm_eps)))
    }

    pub fn mixed(&self) -> bool {
        self.precision == Precision::Mixed
    }

    pub fn head_dim(&self) -> usize {
        self.d_model / self.heads.max(1)
    }

    pub fn param_specs(&self) -> Vec<ParamSpec> {
        let (c, f, v) = (self.d_model, self.hidden, self.vocab);
        let std = 0.02;
        // Residual projections start smaller so the stream's variance does not grow with depth.
        let resid_std = std / (2.0 * self.layers as f32).sqrt();
        let linear = |name: String, shape: Vec<usize>, s: f32| ParamSpec { name, shape, init: Init::Normal(s), decay: true, joins_next: false };
        let norm = |name: String| ParamSpec { name, shape: vec![c], init: Init::Constant(1.0), decay: false, joins_next: false };
        let mut specs = vec![linear("wte".into(), vec![v, c], std)];
        for l in 0..self.layers {
            specs.push(norm(format!("blocks.{l}.attn_norm")));
            if self.short_conv {
                // Taps (s−2, s−1, s) = (0, 0, 1): the block starts as it would without the conv.
                specs.push(ParamSpec { name: format!("blocks.{l}.conv"), shape: vec![c, 3], init: Init::CausalIdentity, decay: false, joins_next: false });
                specs.push(ParamSpec { name: format!("blocks.{l}.conv_bias"), shape: vec![c], init: Init::Constant(0.0), decay: false, joins_next: false });
            }
            specs.push(linear(format!("blocks.{l}.qkv"), vec![3 * c, c], std));
            specs.push(linear(format!("blocks.{l}.proj"), vec![c, c], resid_std));
            specs.push(norm(format!("blocks.{l}.mlp_norm")));
            // up and gate lie back to back: the MLP reads n2 once through a (2F, C) product.
            specs.push(ParamSpec { joins_next: true, ..linear(format!("blocks.{l}.up"), vec![f, c], std) });
            specs.push(linear(format!("blocks.{l}.gate"), vec![f, c], std));
            specs.push(linear(format!("blocks.{l}.down"), vec![c, f], resid_std));
        }
        specs.push(norm("final_norm".into()));
        specs.push(linear("lm_head".into(), vec![v, c], std));
        specs
    }
}
