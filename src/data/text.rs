//! Character-level text: the shipped corpus (data/genesis.txt) or the user's own text, a
//! tokenizer over its characters, and seeded batches of windows from the train/validation split.

use crate::error::{ensure, KilnError, Result};
use crate::rng::Rng;

/// The Book of Genesis (KJV, public domain), one verse per line. See data/README.md.
pub const GENESIS: &str = include_str!("../../data/genesis.txt");

/// Largest user text accepted, in bytes.
pub const MAX_TEXT_BYTES: usize = 1 << 20;
/// Largest vocabulary: distinct characters of a text.
pub const MAX_VOCAB: usize = 256;

#[derive(Debug, Clone, PartialEq)]
pub struct TextCorpus {
    /// Sorted distinct characters; a token is an index into this list.
    pub chars: Vec<char>,
    /// (len) token ids of the whole text
    pub tokens: Vec<u32>,
    /// Tokens before this index train; the rest validate.
    pub split: usize,
}

impl TextCorpus {
    /// Validates `text` and tokenizes it; the last `val_fraction` validates.
    pub fn new(text: &str, val_fraction: f64) -> Result<TextCorpus> {
        ensure(text.len() <= MAX_TEXT_BYTES, "text", || format!("is {} bytes; at most {MAX_TEXT_BYTES} allowed", text.len()))?;
        let mut chars: Vec<char> = text.chars().collect::<std::collections::BTreeSet<_>>().into_iter().collect();
        chars.retain(|c| *c != '\r');
        ensure(chars.len() >= 2, "text", || "needs at least 2 distinct characters".into())?;
        ensure(chars.len() <= MAX_VOCAB, "text", || format!("has {} distinct characters; at most {MAX_VOCAB}", chars.len()))?;
        let tokens: Vec<u32> = text
            .chars()
            .filter(|c| *c != '\r')
            .map(|c| chars.binary_search(&c).map(|i| i as u32).unwrap_or(0))
            .collect();
        ensure(tokens.len() >= 64, "text", || format!("has {} characters; at least 64 needed", tokens.len()))?;
        let split = ((tokens.len() as f64) * (1.0 - val_fraction.clamp(0.0, 0.5))) as usize;
        Ok(TextCorpus { chars, tokens, split })
    }

    pub fn genesis() -> TextCorpus {
        TextCorpus::new(GENESIS, 0.1).expect("the shipped corpus is valid")
    }

    pub fn vocab(&self) -> usize {
        self.chars.len()
    }

    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        text.chars()
            .enumerate()
            .map(|(i, c)| {
                self.chars.binary_search(&c).map(|t| t as u32).map_err(|_| {
                    KilnError::invalid("prompt", format!("character {c:?} at position {i} is not in the training text"))
                })
            })
            .collect()
    }

    pub fn decode(&self, tokens: &[u32]) -> String {
        tokens.iter().map(|&t| self.chars.get(t as usize).copied().unwrap_or('?')).collect()
    }

    /// `batch` random windows of `context + 1` tokens from the train (or validation) part:
    /// inputs (batch, context) and next-token targets (batch, context).
    pub fn batch(&self, rng: &mut Rng, batch: usize, context: usize, validation: bool) -> (Vec<u32>, Vec<u32>) {
        let (lo, hi) = if validation { (self.split, self.tokens.len()) } else { (0, self.split) };
        let span = (hi - lo).saturating_sub(context + 1).max(1);
        let mut inputs = Vec::with_capacity(batch * context);
        let mut targets = Vec::with_capacity(batch * context);
        for _ in 0..batch {
            let start = lo + rng.below(span);
            for t in 0..context {
                let i = (start + t).min(self.tokens.len() - 2);
                inputs.push(self.tokens[i]);
                targets.push(self.tokens[i + 1]);
            }
        }
        (inputs, targets)
    }
}
