//! Evaluation and predictions: a whole point split, or consecutive windows of a text split,
//! scored in f64 from one forward pass per training batch of examples.

use serde::Serialize;

use crate::error::{ensure, KilnError, Result};
use crate::gpu::Op;
use crate::model::params::ParamStore;
use crate::session::Session;

/// Scores of a whole split (up to `MAX_EVAL_TOKENS` tokens of text).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Evaluation {
    /// Mean cross-entropy (nats) or mean squared error.
    pub loss: f64,
    /// Fraction of correct classes or next tokens; null for regression.
    pub accuracy: Option<f64>,
    /// Points, or next-token predictions, scored.
    pub scored: usize,
    /// Points, or next tokens, in the split: `scored` is all of them unless a text split holds
    /// more than the evaluation's token budget (then its first whole windows are scored).
    pub available: usize,
}

/// Most next-token predictions one evaluation scores: the first windows of a longer split.
pub const MAX_EVAL_TOKENS: usize = 16_384;

/// Tokens an evaluation scores per submit, and the most logits one run may hold (16 MiB).
const EVAL_RUN_TOKENS: usize = 4096;
const EVAL_RUN_LOGITS: usize = 1 << 22;

impl Session {
    /// Model outputs (rows, outputs) for a batch of `examples` inputs: (examples, input_dim) f32
    /// points for an MLP, as the network sees them (standardized where the run is: apply
    /// `data.scaling()` to points as given), or (examples·context) u32 tokens for a Llama.
    pub async fn predict<T: bytemuck::Pod>(&self, examples: usize, inputs: &[T]) -> Result<Vec<f32>> {
        self.predict_with(&self.params, examples, inputs).await
    }

    /// `predict` with these weights (the run's, or its quantized copy).
    pub async fn predict_with<T: bytemuck::Pod>(&self, params: &ParamStore, examples: usize, inputs: &[T]) -> Result<Vec<f32>> {
        ensure(examples >= 1, "inputs", || "at least one example is needed".into())?;
        let net = self.cfg.model.build(&self.gpu, params, examples, false)?;
        self.gpu.write(&net.input, inputs)?;
        let ops: Vec<&Op> = net.forward.iter().collect();
        self.gpu.run(&ops)?;
        self.gpu.read_f32(&net.output).await
    }

    /// Loss and accuracy (none for regression) on the validation or training split: every point
    /// of a point set; for text, consecutive windows from the split's start, every token of the
    /// split up to `MAX_EVAL_TOKENS` (the result says how many).
    pub async fn evaluate(&self, validation: bool) -> Result<Evaluation> {
        self.evaluate_up_to(validation, MAX_EVAL_TOKENS).await
    }

    /// `evaluate` scoring at most `max_tokens` next tokens of text (at least one window): a
    /// page evaluating while it trains keeps this near one training batch, so that an
    /// evaluation costs about a step even on a CPU adapter.
    pub async fn evaluate_up_to(&self, validation: bool, max_tokens: usize) -> Result<Evaluation> {
        self.evaluate_with(&self.params, validation, max_tokens).await
    }

    /// `evaluate_up_to` with these weights (the run's, or its quantized copy).
    pub async fn evaluate_with(&self, params: &ParamStore, validation: bool, max_tokens: usize) -> Result<Evaluation> {
        ensure((1..=MAX_EVAL_TOKENS).contains(&max_tokens), "maxTokens", || format!("must be 1..={MAX_EVAL_TOKENS}, got {max_tokens}"))?;
        let outputs = self.cfg.model.outputs();
        if let Some(set) = self.data.points(validation) {
            ensure(!set.is_empty(), "data", || "the split is empty".into())?;
            let out = self.predict_with(params, set.len(), &set.inputs).await?;
            let e = if set.labels.is_empty() { mse(&out, &set.targets) } else { classify(&out, &set.labels, outputs) };
            return Ok(Evaluation { available: set.len(), ..e });
        }
        let (corpus, context) = (self.data.corpus().ok_or_else(|| KilnError::invalid("data", "text data expected"))?, self.cfg.model.rows_per_example());
        let most = max_tokens / context;
        let (x, y, windows) = corpus.windows(context, validation, most);
        // Runs of about EVAL_RUN_TOKENS tokens (each run is a submit and a readback: four
        // sequences at a time made the page's quantize report take over a minute on SwiftShader),
        // never fewer sequences than a training batch nor more logits than EVAL_RUN_LOGITS.
        let (rows, vocab) = (self.cfg.model.rows_per_example(), self.cfg.model.outputs());
        let per_run = (EVAL_RUN_TOKENS / rows).min(EVAL_RUN_LOGITS / (rows * vocab).max(1)).max(self.cfg.batch);
        let out = self.predict_in_runs(params, windows, &x, per_run).await?;
        let e = classify(&out, &y, outputs);
        Ok(Evaluation { available: corpus.range(validation).len() - 1, ..e })
    }

    /// `predict` for many examples through one net of `per_run` examples, run as often as needed
    /// (the last run padded with copies of the first example, whose outputs are dropped).
    async fn predict_in_runs<T: bytemuck::Pod>(&self, params: &ParamStore, examples: usize, inputs: &[T], per_run: usize) -> Result<Vec<f32>> {
        let per_run = per_run.clamp(1, examples.max(1));
        let stride = inputs.len() / examples.max(1);
        let row = self.cfg.model.rows_per_example() * self.cfg.model.outputs();
        let net = self.cfg.model.build(&self.gpu, params, per_run, false)?;
        let ops: Vec<&Op> = net.forward.iter().collect();
        let mut out = Vec::with_capacity(examples * row);
        for first in (0..examples).step_by(per_run) {
            let n = per_run.min(examples - first);
            let mut chunk = inputs[first * stride..(first + n) * stride].to_vec();
            chunk.extend((n * stride..per_run * stride).map(|i| inputs[i % stride]));
            self.gpu.write(&net.input, &chunk)?;
            self.gpu.run(&ops)?;
            out.extend_from_slice(&self.gpu.read_f32(&net.output).await?[..n * row]);
        }
        Ok(out)
    }
}

fn mse(out: &[f32], targets: &[f32]) -> Evaluation {
    let n = targets.len().max(1);
    let loss = out.iter().zip(targets).map(|(&o, &t)| (o as f64 - t as f64).powi(2)).sum::<f64>() / n as f64;
    Evaluation { loss, accuracy: None, scored: targets.len(), available: targets.len() }
}

/// Mean cross-entropy and accuracy of rows of logits, in f64.
fn classify(out: &[f32], labels: &[u32], classes: usize) -> Evaluation {
    let (mut loss, mut correct) = (0.0, 0usize);
    for (i, &label) in labels.iter().enumerate() {
        let row: Vec<f64> = out[i * classes..(i + 1) * classes].iter().map(|&x| x as f64).collect();
        let max = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = max + row.iter().map(|x| (x - max).exp()).sum::<f64>().ln();
        loss += lse - row[label as usize];
        let argmax = (0..classes).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap_or(0);
        correct += usize::from(argmax == label as usize);
    }
    let n = labels.len().max(1) as f64;
    Evaluation { loss: loss / n, accuracy: Some(correct as f64 / n), scored: labels.len(), available: labels.len() }
}
