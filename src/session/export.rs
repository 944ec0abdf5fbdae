//! A run leaving Kiln, and coming back: `export_files` writes a Llama as a Hugging Face folder
//! (hf_export.rs) and an MLP as a PyTorch nn.Sequential (torch_export.rs), each with
//! kiln_reference.json — Kiln's own outputs on a few inputs, so another implementation (NumPy
//! in tests/python, Transformers or PyTorch on a GPU machine) can check the folder against
//! them. `from_export` reads either kind of folder back (hf_import.rs, torch_import.rs). The
//! CLI, the wasm API and the page all go through these two.

use std::collections::HashMap;

use serde_json::json;

use crate::error::{KilnError, Result};
use crate::gpu::Gpu;
use crate::model::ModelConfig;
use crate::session::generate::GenerateOptions;
use crate::session::hf_export::File;
use crate::session::Session;

/// The files `from_export` reads from a folder (the others are for PyTorch and people).
pub const IMPORT_FILES: &[&str] = &["config.json", "model.safetensors", "tokenizer.json", "train.txt", "validation.txt", "kiln_config.json"];

/// Validation points whose outputs an MLP's kiln_reference.json holds.
const MLP_REFERENCE_POINTS: usize = 64;

impl Session {
    /// Every file of the run's export folder (see the module notes), in memory.
    pub async fn export_files(&self) -> Result<Vec<File>> {
        let (mut files, reference) = match self.model() {
            ModelConfig::Llama(_) => (self.export_hf().await?, self.llama_reference().await?),
            ModelConfig::Mlp(_) => (self.export_torch().await?, self.mlp_reference().await?),
        };
        files.push(("kiln_reference.json", serde_json::to_vec(&reference).map_err(|e| KilnError::Gpu(e.to_string()))?));
        Ok(files)
    }

    /// A run from an export folder's files (name → bytes): a Hugging Face Llama folder (Kiln's,
    /// or another char-level Llama with train.txt beside it) or Kiln's MLP export.
    pub fn from_export(gpu: Gpu, files: &HashMap<String, Vec<u8>>) -> Result<Session> {
        if files.contains_key("config.json") {
            Session::from_hf(gpu, files)
        } else if files.contains_key("kiln_config.json") {
            Session::from_torch(gpu, files)
        } else {
            Err(KilnError::invalid(
                "config.json",
                "is missing: a Hugging Face Llama folder has config.json (and model.safetensors, tokenizer.json); Kiln's MLP export has kiln_config.json",
            ))
        }
    }

    /// Three prompts from the text (its start, its middle, the validation split's start): their
    /// tokens, Kiln's logits at every position, and Kiln's greedy continuation.
    async fn llama_reference(&self) -> Result<serde_json::Value> {
        let corpus = self.data.corpus().ok_or_else(|| KilnError::invalid("data", "text expected"))?;
        let context = self.model().rows_per_example();
        let n = (context / 3).clamp(1, 24);
        let greedy_tokens = (context - n).min(32);
        let mut cases = vec![];
        for start in [0, corpus.tokens.len() / 2, corpus.split] {
            let tokens = &corpus.tokens[start.min(corpus.tokens.len() - n)..][..n];
            let mut window = tokens.to_vec();
            window.resize(context, 0);
            let logits = self.predict(1, &window).await?;
            let vocab = logits.len() / context;
            let rows: Vec<&[f32]> = logits.chunks_exact(vocab).take(n).collect();
            let prompt = corpus.decode(tokens);
            let greedy =
                self.generate(&prompt, &GenerateOptions { max_tokens: greedy_tokens, temperature: 0.0, top_k: 1, ..GenerateOptions::default() }).await?;
            cases.push(json!({ "prompt": prompt, "tokens": tokens, "logits": rows, "greedy": greedy }));
        }
        Ok(json!({ "prompts": cases }))
    }

    /// The first validation points: their inputs (N, d) and Kiln's outputs (N, outputs) —
    /// class logits, or the prediction.
    async fn mlp_reference(&self) -> Result<serde_json::Value> {
        let expected = || KilnError::invalid("data", "points expected");
        // The inputs as given (model.py standardizes them as Kiln did, if the run does).
        let (points, seen) = (self.data.given_points(true).ok_or_else(expected)?, self.data.points(true).ok_or_else(expected)?);
        let n = points.len().min(MLP_REFERENCE_POINTS);
        let inputs = &points.inputs[..n * points.input_dim];
        let outputs = self.predict(n, &seen.inputs[..n * points.input_dim]).await?;
        let width = outputs.len() / n;
        let rows = |v: &[f32], w: usize| v.chunks_exact(w).map(<[f32]>::to_vec).collect::<Vec<_>>();
        Ok(json!({ "inputs": rows(inputs, points.input_dim), "outputs": rows(&outputs, width) }))
    }
}
