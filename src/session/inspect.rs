//! Distributions over training: for every parameter tensor, a histogram and quantiles of its
//! weights, gradients and last AdamW update, and for every layer its gradient RMS and its
//! activation distribution. Computed on the GPU from the buffers the last step left
//! (`tensor_stats` + `tensor_histogram`: two dispatches for all tensors, two per activation); a
//! few thousand numbers come back, never a whole buffer. The fused MLP pass keeps no
//! activations, so for it the last batch runs once more through the layer-by-layer forward;
//! before a session's first step (a new run, or one restored from a checkpoint), an MLP's
//! activations are those of the next batch, and a Llama has none yet.

use serde::Serialize;

use crate::data::batches::Batch;
use crate::error::{ensure, Result};
use crate::gpu::{Command, Op, Tensor};
use crate::kernels::inspect::{tensor_distributions, StatsInputs, MAX_BINS, STATS_WIDTH};
use crate::model::{ModelConfig, Net};
use crate::session::Session;

/// The fractions below which the quantiles lie: those a normal distribution has below −∞,
/// −1.5σ, −σ, −σ/2, 0, σ/2, σ, 1.5σ and +∞, so a healthy tensor's bands look evenly spaced.
pub const QUANTILES: [f64; 9] = [0.0, 0.0668, 0.1587, 0.3085, 0.5, 0.6915, 0.8413, 0.9332, 1.0];

/// One tensor's values at one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Distribution {
    /// Smallest and largest finite value (NaN when none is finite).
    pub min: f32,
    pub max: f32,
    /// sqrt(mean of squares) of the finite values.
    pub rms: f32,
    /// Elements that are NaN or ±Inf, left out of everything else.
    pub non_finite: u32,
    /// Counts in equal-width bins from `min` to `max`.
    pub counts: Vec<u32>,
    /// The values at `QUANTILES` of the finite elements, interpolated within a bin.
    pub quantiles: Vec<f32>,
}

/// A parameter tensor's weights, gradients (of the last micro-batch's step) and last update.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TensorDistributions {
    pub name: String,
    pub weights: Distribution,
    pub grads: Distribution,
    /// Weights after the last step minus before it: zero before the first step.
    pub updates: Distribution,
}

/// One layer: its parameters' gradient RMS, and its output's distribution where it is kept.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct LayerStats {
    /// The parameter names' prefix: "layer0" (MLP), "blocks.0", "wte", "lm_head" (Llama).
    pub name: String,
    /// RMS over every gradient element of the layer's parameters.
    pub grad_rms: f32,
    /// The layer's output on the last training micro-batch: an MLP's hidden activations (under
    /// the weights before the last update, or after it where the fused pass recomputes them), a
    /// Llama block's residual stream; before this session's first step (a new run, or one
    /// restored from a checkpoint) an MLP's on the batch the next step will draw. Null for
    /// layers with no such output (an MLP's output layer, the Llama's embedding and head), and
    /// for a Llama before this session's first step.
    pub activation: Option<Distribution>,
}

/// Everything the distribution views show for one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Inspection {
    pub step: u64,
    pub tensors: Vec<TensorDistributions>,
    pub layers: Vec<LayerStats>,
}

/// A parameter's layer: its name up to the last dot ("blocks.0.qkv" → "blocks.0").
pub fn layer_of(name: &str) -> &str {
    name.rsplit_once('.').map_or(name, |(layer, _)| layer)
}

impl Session {
    /// The distributions of the state the last step left, in `bins` bins (1..=64): every
    /// dispatch in one submission, every result in one readback.
    pub async fn inspect(&self, bins: usize) -> Result<Inspection> {
        ensure((1..=MAX_BINS).contains(&bins), "bins", || format!("must be 1..={MAX_BINS}, got {bins}"))?;
        let entries = &self.params.entries;
        let table: Vec<u32> = entries.iter().flat_map(|e| [e.offset as u32, e.elements() as u32]).collect();
        // (tensors, 2) [offset, len] of each parameter tensor in the flat buffers
        let table = self.gpu.tensor_from("inspect table", &[entries.len(), 2], &table)?;
        let params = StatsInputs { values: &self.params.weights, prev_and_grads: Some((&self.prev_weights, &self.params.grads)), table: &table };
        let mut groups = vec![self.distribution_ops(&params, bins)?];
        let mut widen = vec![];
        let recomputed = self.recompute_activations()?;
        let taps = recomputed.as_ref().map_or(&self.pass.taps, |net| &net.taps);
        // A Llama's taps hold nothing before this session's first step: no activations, not zeros.
        let layers = if recomputed.is_some() || self.trained_here { taps.layers_f32(&self.gpu, &mut widen)? } else { vec![] };
        let forward = recomputed.iter().flat_map(|net| &net.forward);
        // (1, 2) each activation tensor as one range
        let wholes = layers.iter().map(|(_, a)| self.gpu.tensor_from("activation table", &[1, 2], &[0u32, a.len() as u32])).collect::<Result<Vec<_>>>()?;
        for ((_, activation), whole) in layers.iter().zip(&wholes) {
            groups.push(self.distribution_ops(&StatsInputs { values: activation, prev_and_grads: None, table: whole }, bins)?);
        }
        self.gpu.run(&forward.chain(&widen).chain(groups.iter().flat_map(|g| &g.ops)).collect::<Vec<&Op>>())?;
        let outputs: Vec<&Tensor> = groups.iter().flat_map(|g| [&g.stats, &g.counts]).collect();
        let read = self.gpu.read_many(&outputs).await?;
        let mut found = read.chunks_exact(2).map(|pair| distributions(&bytemuck::pod_collect_to_vec(&pair[0]), &bytemuck::pod_collect_to_vec(&pair[1]), bins));
        let mut all = found.next().unwrap_or_default().into_iter();
        let n = entries.len();
        let mut take = || all.by_ref().take(n).collect::<Vec<_>>();
        let (weights, grads, updates) = (take(), take(), take());
        let activations: Vec<(&str, Distribution)> = layers.iter().zip(found).filter_map(|((name, _), mut d)| d.pop().map(|d| (name.as_str(), d))).collect();
        let layers = layer_stats(entries.iter().map(|e| (e.spec.name.as_str(), e.elements())).zip(&grads), &activations);
        let tensors = entries
            .iter()
            .zip(weights.into_iter().zip(grads).zip(updates))
            .map(|(e, ((weights, grads), updates))| TensorDistributions { name: e.spec.name.clone(), weights, grads, updates })
            .collect();
        Ok(Inspection { step: self.step, tensors, layers })
    }

    /// For an MLP: a layer-by-layer forward net with its input filled in, whose `forward` fills
    /// the taps. The input is the last micro-batch trained, which the fused pass keeps no
    /// activations of; or, before any step of this session (new, restored or recovered: its
    /// input buffer is still zero), the batch the next step will draw, drawn from a copy of
    /// the sampler so that training is unchanged. None where the training pass's own taps
    /// already hold the last batch's activations.
    fn recompute_activations(&self) -> Result<Option<Net>> {
        let ModelConfig::Mlp(mlp) = &self.cfg.model else { return Ok(None) };
        if mlp.hidden.is_empty() || (!self.pass.taps.layers.is_empty() && self.trained_here) {
            return Ok(None);
        }
        let net = self.cfg.model.build(&self.gpu, &self.params, self.pass.input.shape()[0], false)?;
        if self.trained_here {
            self.gpu.submit(&[Command::Copy { from: &self.pass.input, to: &net.input }]);
            return Ok(Some(net));
        }
        match self.data.sample(&mut self.rng.clone(), self.cfg.batch, false) {
            Batch::Classes(x, _) | Batch::Values(x, _) => self.gpu.write(&net.input, &x)?,
            Batch::Tokens(..) => return Ok(None), // a Llama's batch: never an MLP's
        }
        Ok(Some(net))
    }

    /// The two kernels over `inputs` and the tensors they write.
    fn distribution_ops(&self, inputs: &StatsInputs<'_>, bins: usize) -> Result<DistributionOps> {
        let rows = inputs.sources() * (inputs.table.len() / 2);
        // (rows, 4) [min, max, Σx², non-finite] and (rows, bins) counts
        let stats = self.gpu.tensor("inspect stats", &[rows, STATS_WIDTH])?;
        let counts = self.gpu.tensor("inspect counts", &[rows, bins])?;
        let ops = tensor_distributions(&self.gpu, inputs, bins, &stats, &counts)?.into();
        Ok(DistributionOps { ops, stats, counts })
    }
}

/// One group of statistics: its dispatches and their outputs.
struct DistributionOps {
    ops: Vec<Op>,
    /// (rows, 4) [min, max, Σx², non-finite]
    stats: Tensor,
    /// (rows, bins) u32
    counts: Tensor,
}

/// Every row's distribution from the kernels' stats (rows, 4) and counts (rows, bins).
fn distributions(stats: &[f32], counts: &[u32], bins: usize) -> Vec<Distribution> {
    (0..stats.len() / STATS_WIDTH).map(|r| distribution(&stats[r * STATS_WIDTH..][..STATS_WIDTH], &counts[r * bins..][..bins])).collect()
}

/// Each layer's gradient RMS over all its tensors' elements, in order of first appearance, with its
/// activation where one is kept.
fn layer_stats<'a>(tensors: impl Iterator<Item = ((&'a str, usize), &'a Distribution)>, activations: &[(&str, Distribution)]) -> Vec<LayerStats> {
    // (name, Σ squares, elements) per layer
    let mut sums: Vec<(&str, f64, usize)> = vec![];
    for ((name, len), g) in tensors {
        let sq = (g.rms as f64).powi(2) * len as f64;
        // Decayed tensors come first in the flat buffers: a layer's biases and norms come later.
        match sums.iter_mut().find(|(layer, ..)| *layer == layer_of(name)) {
            Some((_, s, n)) => (*s, *n) = (*s + sq, *n + len),
            None => sums.push((layer_of(name), sq, len)),
        }
    }
    sums.into_iter()
        .map(|(name, sq, len)| LayerStats {
            name: name.to_string(),
            grad_rms: (sq / len.max(1) as f64).sqrt() as f32,
            activation: activations.iter().find(|(a, _)| *a == name).map(|(_, d)| d.clone()),
        })
        .collect()
}

/// A distribution from its kernel row [min, max, Σx², non-finite] and bin counts.
fn distribution(stats: &[f32], counts: &[u32]) -> Distribution {
    let finite: u64 = counts.iter().map(|&c| c as u64).sum();
    let (min, max) = if finite > 0 { (stats[0], stats[1]) } else { (f32::NAN, f32::NAN) };
    let rms = if finite > 0 { (stats[2] as f64 / finite as f64).sqrt() as f32 } else { f32::NAN };
    Distribution { min, max, rms, non_finite: stats[3] as u32, counts: counts.to_vec(), quantiles: quantiles(min, max, counts) }
}

/// The values at `QUANTILES`, assuming values spread evenly within each bin.
pub fn quantiles(min: f32, max: f32, counts: &[u32]) -> Vec<f32> {
    let total: u64 = counts.iter().map(|&c| c as u64).sum();
    if total == 0 {
        return vec![f32::NAN; QUANTILES.len()];
    }
    let width = (max as f64 - min as f64) / counts.len() as f64;
    QUANTILES
        .iter()
        .map(|&q| {
            let target = q * total as f64;
            let mut below = 0.0;
            for (b, &c) in counts.iter().enumerate() {
                let c = c as f64;
                if c > 0.0 && below + c >= target {
                    let within = ((target - below) / c).clamp(0.0, 1.0);
                    return (min as f64 + (b as f64 + within) * width).clamp(min as f64, max as f64) as f32;
                }
                below += c;
            }
            max
        })
        .collect()
}
