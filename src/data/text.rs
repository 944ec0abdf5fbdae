//! Character-level text: the shipped corpus (data/genesis.txt) or the user's own text, a
//! tokenizer over its characters, and seeded batches of windows from the train/validation split.

use crate::error::{ensure, KilnError, Result};
use crate::rng::Rng;

/// The Book of Genesis (KJV, public domain), one verse per line (data/README.md): the text a
/// text run trains on when it brings none of its own. Built in with the `genesis` feature
/// (native builds, the npm package); a build without it (the page's) has it handed over by
/// `provide_genesis` and fails with `CorpusMissing` until then.
pub fn genesis() -> Result<&'static str> {
    #[cfg(feature = "genesis")]
    return Ok(include_str!("../../data/genesis.txt"));
    #[cfg(not(feature = "genesis"))]
    PROVIDED.get().map(String::as_str).ok_or(KilnError::CorpusMissing)
}

/// `CorpusMissing` when `data` trains on the built-in text and this build has not been given
/// it yet: checked before a device is acquired for a run that could not be built.
pub fn check_corpus(data: &crate::config::DataConfig) -> Result<()> {
    if matches!(data, crate::config::DataConfig::Text(t) if t.text.is_none()) {
        genesis()?;
    }
    Ok(())
}

/// The corpus as `provide_genesis` received it (builds without the `genesis` feature).
#[cfg(not(feature = "genesis"))]
static PROVIDED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Gives a build without the built-in corpus its text: data/genesis.txt as served, refused
/// unless byte for byte that file (a build with the corpus checks it the same way and keeps
/// its own copy).
pub fn provide_genesis(text: String) -> Result<()> {
    check_genesis(&text)?;
    #[cfg(not(feature = "genesis"))]
    let _ = PROVIDED.set(text); // a second, identical text changes nothing
    Ok(())
}

/// Whether `text` is data/genesis.txt: its FNV-1a 64-bit hash against the one build.rs took.
pub fn check_genesis(text: &str) -> Result<()> {
    let want = env!("KILN_GENESIS_FNV1A");
    let got = format!("{:016x}", fnv1a(text.as_bytes()));
    ensure(got == want, "genesis.txt", || {
        format!("is not Kiln's corpus ({} bytes, FNV-1a {got}, expected {want}): serve data/genesis.txt unchanged", text.len())
    })
}

/// FNV-1a, 64 bits (build.rs hashes data/genesis.txt the same way).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

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
        let tokens: Vec<u32> = text.chars().filter(|c| *c != '\r').map(|c| chars.binary_search(&c).map(|i| i as u32).unwrap_or(0)).collect();
        ensure(tokens.len() >= 64, "text", || format!("has {} characters; at least 64 needed", tokens.len()))?;
        let split = split_point(tokens.len(), val_fraction);
        Ok(TextCorpus { chars, tokens, split })
    }

    /// Both splits must hold a whole window (`context` inputs and the next token) so that no
    /// window crosses from training into validation text; refused otherwise, naming the
    /// shortest text that would work.
    pub fn check_context(&self, context: usize, val_fraction: f64) -> Result<()> {
        let (train, val) = (self.split, self.tokens.len() - self.split);
        if train > context && val > context {
            return Ok(());
        }
        let need = (context + 1..).find(|&n| n - split_point(n, val_fraction) > context && split_point(n, val_fraction) > context).unwrap_or(usize::MAX);
        Err(KilnError::invalid(
            "model.llama.context",
            format!(
                "a window of {context} characters needs {} in each split, but the text's {} characters split into {train} for training and {val} for validation: use a context of at most {}, or a text of at least {need} characters",
                context + 1,
                self.tokens.len(),
                train.min(val).saturating_sub(1).max(1),
            ),
        ))
    }

    pub fn vocab(&self) -> usize {
        self.chars.len()
    }

    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        text.chars()
            .enumerate()
            .map(|(i, c)| {
                self.chars
                    .binary_search(&c)
                    .map(|t| t as u32)
                    .map_err(|_| KilnError::invalid("prompt", format!("character {c:?} at position {i} is not in the training text")))
            })
            .collect()
    }

    pub fn decode(&self, tokens: &[u32]) -> String {
        tokens.iter().map(|&t| self.chars.get(t as usize).copied().unwrap_or('?')).collect()
    }

    /// Token range of the training (or validation) split.
    pub fn range(&self, validation: bool) -> std::ops::Range<usize> {
        if validation {
            self.split..self.tokens.len()
        } else {
            0..self.split
        }
    }

    /// `batch` random windows of `context + 1` tokens, each wholly inside the train (or
    /// validation) split (`check_context` guarantees one fits): inputs (batch, context) and
    /// next-token targets (batch, context).
    pub fn batch(&self, rng: &mut Rng, batch: usize, context: usize, validation: bool) -> (Vec<u32>, Vec<u32>) {
        let range = self.range(validation);
        let starts = (range.len().saturating_sub(context + 1)).max(1);
        let mut inputs = Vec::with_capacity(batch * context);
        let mut targets = Vec::with_capacity(batch * context);
        for _ in 0..batch {
            let start = range.start + rng.below(starts);
            inputs.extend_from_slice(&self.tokens[start..start + context]);
            targets.extend_from_slice(&self.tokens[start + 1..start + context + 1]);
        }
        (inputs, targets)
    }

    /// Consecutive non-overlapping windows over the split, from its start, at most `max_windows`:
    /// inputs (n, context), targets (n, context) and n.
    pub fn windows(&self, context: usize, validation: bool, max_windows: usize) -> (Vec<u32>, Vec<u32>, usize) {
        let range = self.range(validation);
        let n = ((range.len().saturating_sub(1)) / context).clamp(1, max_windows.max(1));
        let mut inputs = Vec::with_capacity(n * context);
        let mut targets = Vec::with_capacity(n * context);
        for w in 0..n {
            let start = range.start + w * context;
            inputs.extend_from_slice(&self.tokens[start..start + context]);
            targets.extend_from_slice(&self.tokens[start + 1..start + context + 1]);
        }
        (inputs, targets, n)
    }
}

/// Tokens before this index train; the last `val_fraction` (at most half) validates.
fn split_point(len: usize, val_fraction: f64) -> usize {
    ((len as f64) * (1.0 - val_fraction.clamp(0.0, 0.5))) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_shipped_corpus_is_taken_as_genesis() {
        let shipped = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/genesis.txt")).unwrap();
        provide_genesis(shipped.clone()).unwrap();
        // This build's own copy (feature `genesis`), unchanged by the handover.
        assert_eq!(genesis().unwrap(), shipped);
        // One character changed, or an HTML error page served in its place, is refused by name.
        let altered = shipped.replacen("God", "Dog", 1);
        for wrong in [altered, "<html>404</html>".to_string()] {
            let err = provide_genesis(wrong).unwrap_err();
            assert_eq!(err.field(), Some("genesis.txt"));
            assert!(err.to_string().contains("not Kiln's corpus"), "{err}");
        }
    }

    #[test]
    fn windows_stay_inside_their_split_and_short_splits_are_refused() {
        let text: String = (0..400).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        let corpus = TextCorpus::new(&text, 0.1).unwrap();
        assert_eq!(corpus.split, 360);
        corpus.check_context(32, 0.1).unwrap();
        let mut rng = Rng::new(3);
        let (x, y) = corpus.batch(&mut rng, 64, 32, true);
        // Validation windows use only tokens from 360..400: every input is one of them.
        assert!(x.iter().chain(&y).all(|t| corpus.tokens[360..].contains(t)));
        let (x, _) = corpus.batch(&mut rng, 64, 32, false);
        assert_eq!(x.len(), 64 * 32);
        let err = corpus.check_context(40, 0.1).unwrap_err().to_string();
        assert!(err.contains("`model.llama.context`") && err.contains("at most 39") && err.contains("at least 401 characters"), "{err}");
        let (x, y, n) = corpus.windows(8, true, 100);
        assert_eq!((n, x.len(), y[0]), (4, 32, corpus.tokens[361]));
    }
}
