//! Text generation from a trained Llama: the prompt (or a newline) fills a window of `context`
//! tokens, one forward pass gives the next token's logits, and a token is drawn from the top-k
//! of softmax(logits / temperature) with a seeded generator. Temperature 0 is greedy.

use serde::{Deserialize, Serialize};

use crate::error::{ensure, KilnError, Result};
use crate::gpu::Op;
use crate::rng::Rng;
use crate::session::Session;

/// How to continue a prompt; every field may be left out (JS names them in camelCase).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct GenerateOptions {
    /// Characters to generate, 1..=4096 (default 200).
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub max_tokens: usize,
    /// Softmax temperature, 0..=10; 0 is greedy (default 0.8).
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub temperature: f32,
    /// Sample from the k most likely characters (default 20).
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub top_k: usize,
    /// Sampler seed (default 0): the same seed gives the same text.
    #[cfg_attr(test, ts(as = "Option<usize>", optional))]
    pub seed: u64,
    /// Sample from the quantized copy (after `quantize`) instead of the run's weights (default
    /// false).
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub quantized: bool,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions { max_tokens: 200, temperature: 0.8, top_k: 20, seed: 0, quantized: false }
    }
}

pub const MAX_GENERATED: usize = 4096;

/// The Llama views, as their errors name them.
pub const GENERATION: &str = "text generation";
pub const NEXT_TOKENS_VIEW: &str = "the next-token view";
pub const ATTENTION_VIEW: &str = "the attention-map view";

/// A Llama view (`what`) asked of a model that is not one.
pub fn needs_llama(what: &str) -> KilnError {
    KilnError::invalid("model", format!("{what} needs a Llama model"))
}

impl GenerateOptions {
    pub fn validate(&self) -> Result<()> {
        ensure((1..=MAX_GENERATED).contains(&self.max_tokens), "maxTokens", || format!("must be 1..={MAX_GENERATED}, got {}", self.max_tokens))?;
        ensure(self.temperature.is_finite() && (0.0..=10.0).contains(&self.temperature), "temperature", || {
            format!("must be in [0, 10], got {}", self.temperature)
        })?;
        ensure(self.top_k >= 1, "topK", || format!("must be >= 1, got {}", self.top_k))
    }
}

/// Index drawn from the top `k` of softmax(logits / temperature), or the argmax at temperature 0.
pub fn sample(logits: &[f32], temperature: f32, k: usize, rng: &mut Rng) -> usize {
    let mut order: Vec<usize> = (0..logits.len()).collect();
    order.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]).then(a.cmp(&b)));
    if temperature == 0.0 {
        return order[0];
    }
    order.truncate(k.clamp(1, logits.len()));
    let top = logits[order[0]] as f64;
    let weights: Vec<f64> = order.iter().map(|&i| ((logits[i] as f64 - top) / temperature as f64).exp()).collect();
    let mut u = rng.uniform() * weights.iter().sum::<f64>();
    for (w, &i) in weights.iter().zip(&order) {
        if u < *w {
            return i;
        }
        u -= w;
    }
    *order.last().expect("k >= 1")
}

impl Session {
    /// Continues `prompt` by up to `opts.max_tokens` characters, from the run's weights or
    /// (`opts.quantized`) its quantized copy.
    pub async fn generate(&self, prompt: &str, opts: &GenerateOptions) -> Result<String> {
        let cfg = self.llama_view(GENERATION)?;
        opts.validate()?;
        let params = self.weights_for(opts.quantized)?;
        let corpus = self.data.corpus().ok_or_else(|| KilnError::invalid("data", format!("{GENERATION} needs text data")))?;
        let mut tokens = corpus.encode(prompt)?;
        if tokens.is_empty() {
            tokens = corpus.encode("\n").unwrap_or_else(|_| vec![0]);
        }
        let prompt_len = tokens.len();
        let net = self.cfg.model.build(&self.gpu, params, 1, false)?;
        let ops: Vec<&Op> = net.forward.iter().collect();
        let mut rng = Rng::new(opts.seed);
        let (t, v) = (cfg.context, cfg.vocab);
        for _ in 0..opts.max_tokens {
            let (input, last) = window(&tokens, t);
            self.gpu.write(&net.input, &input)?;
            self.gpu.run(&ops)?;
            let logits = self.gpu.read_f32(&net.output).await?;
            // Only the characters the text uses can be drawn (vocab may exceed them).
            let row = &logits[last * v..last * v + corpus.vocab()];
            tokens.push(sample(row, opts.temperature, opts.top_k, &mut rng) as u32);
        }
        Ok(corpus.decode(&tokens[prompt_len..]))
    }
}

/// A prompt read by a Llama view: the model, the text, the prompt's tokens, and its last
/// `context` tokens as a window (`window`) with the window position of the last one.
pub(super) struct PromptWindow<'a> {
    pub cfg: &'a crate::model::llama::LlamaConfig,
    pub corpus: &'a crate::data::text::TextCorpus,
    pub tokens: Vec<u32>,
    pub input: Vec<u32>,
    pub last: usize,
}

impl Session {
    /// The Llama's config for the view `what` (a `*_VIEW` name), or the error that names it.
    pub fn llama_view(&self, what: &str) -> Result<&crate::model::llama::LlamaConfig> {
        self.cfg.model.as_llama().ok_or_else(|| needs_llama(what))
    }

    /// The prompt as a Llama view needs it; `what` names the view in the errors.
    pub(super) fn prompt_window(&self, prompt: &str, what: &str) -> Result<PromptWindow<'_>> {
        let cfg = self.llama_view(what)?;
        let corpus = self.data.corpus().ok_or_else(|| KilnError::invalid("data", format!("{what} needs text data")))?;
        let tokens = corpus.encode(prompt)?;
        ensure(!tokens.is_empty(), "prompt", || "needs at least one character".into())?;
        let (input, last) = window(&tokens, cfg.context);
        Ok(PromptWindow { cfg, corpus, tokens, input, last })
    }
}

/// The last `context` of `tokens`, left-aligned in a window of `context` (causal attention
/// ignores the padding after them), and the window position of the last token.
pub(super) fn window(tokens: &[u32], context: usize) -> (Vec<u32>, usize) {
    let start = tokens.len().saturating_sub(context);
    let mut window = tokens[start..].to_vec();
    let last = window.len().saturating_sub(1);
    window.resize(context, 0);
    (window, last)
}
