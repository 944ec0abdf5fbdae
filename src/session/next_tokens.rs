//! The next-token view of a Llama: for each position of a prompt, the model's k most likely
//! next characters and their probabilities, from one forward pass with the seed's `softmax`
//! and `top_k` kernels on the GPU (only the (T, k) winners are read back, not the logits).

use serde::Serialize;

use crate::error::Result;
use crate::gpu::Op;
use crate::kernels::sampling::top_k;
use crate::kernels::softmax::{softmax, Mask};
use crate::session::generate::PromptWindow;
use crate::session::Session;

/// One guess: a character and the probability the model gives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TokenGuess {
    /// The character ("?" for a token of the vocabulary the text does not use).
    pub text: String,
    pub probability: f32,
}

/// The model's guesses after one position of the prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PositionGuesses {
    /// The prompt's character at this position: the guesses are for the one after it.
    pub text: String,
    /// The k most likely next characters, most likely first (ties: the lower token first).
    pub next: Vec<TokenGuess>,
}

impl Session {
    /// For each of the prompt's last `context` characters, the k most likely next ones.
    pub async fn next_tokens(&self, prompt: &str, k: usize) -> Result<Vec<PositionGuesses>> {
        let PromptWindow { cfg, corpus, tokens, input, last } = self.prompt_window(prompt, super::generate::NEXT_TOKENS_VIEW)?;
        let (t, v) = (cfg.context, cfg.vocab);
        let net = self.cfg.model.build(&self.gpu, &self.params, 1, false)?;
        // (T, V) probabilities; (T, k) the winners' tokens and probabilities
        let probs = self.gpu.tensor("next-token probabilities", &[t, v])?;
        let indices = self.gpu.tensor("next-token indices", &[t, k.max(1)])?;
        let values = self.gpu.tensor("next-token values", &[t, k.max(1)])?;
        let ops = [softmax(&self.gpu, &net.output, &probs, v, Mask::None)?, top_k(&self.gpu, &probs, v, k, &indices, &values)?];
        self.gpu.write(&net.input, &input)?;
        let pass: Vec<&Op> = net.forward.iter().chain(&ops).collect();
        self.gpu.run(&pass)?;
        let (indices, values) = (self.gpu.read_u32(&indices).await?, self.gpu.read_f32(&values).await?);
        let shown = &tokens[tokens.len() - (last + 1)..];
        Ok((0..=last)
            .map(|p| PositionGuesses {
                text: corpus.decode(&shown[p..p + 1]),
                next: (0..k).map(|j| TokenGuess { text: corpus.decode(&[indices[p * k + j]]), probability: values[p * k + j] }).collect(),
            })
            .collect())
    }
}
