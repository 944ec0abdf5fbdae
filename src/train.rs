//! `Session`: one training run. It validates a config, builds the data, the model's `Net` and
//! the optimizer once; then each step is a batch upload, a few uniform writes, and one encoder
//! with one compute pass per micro-batch (plus two 4-byte copies of loss and gradient norm into
//! the metrics ring). Metrics are read back asynchronously, many steps at a time.

use serde::Serialize;

use crate::config::SessionConfig;
use crate::data::batches::{Batch, Batches};
use crate::error::{ensure, KilnError, Result};
use crate::fit::check_fits;
use crate::gpu::{Gpu, Op};
use crate::kernels::embedding::check_tokens;
use crate::kernels::loss::{check_targets, cross_entropy, mse_loss, mse_loss_backward};
use crate::kernels::metrics::{record_metrics, MetricsBuffers, MetricsParams};
use crate::kernels::optimizer::UniformOp;
use crate::model::params::ParamStore;
use crate::model::{ModelConfig, Net};
use crate::optim::Optimizer;
use crate::recovery::Snapshots;
use crate::rng::Rng;
use crate::tensor::Tensor;

/// Steps of metrics the GPU ring holds between two readbacks.
pub const METRIC_SLOTS: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepMetrics {
    pub step: u64,
    pub loss: f32,
    pub grad_norm: f32,
    /// The gradient norm was not finite, so the GPU skipped this step's update.
    pub skipped: bool,
}

/// Non-finite steps in a row after which `read_metrics` stops the run with `Diverged`.
pub const MAX_SKIPS_IN_A_ROW: u64 = 8;

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
    /// more than 4 batches of windows or 16,384 tokens (then its first windows are scored).
    pub available: usize,
}

/// Most next-token predictions one evaluation scores: the first windows of a longer split.
pub const MAX_EVAL_TOKENS: usize = 16_384;
/// Most training batches of windows one evaluation scores (so it costs about one step).
pub const EVAL_BATCHES: usize = 4;

pub struct Session {
    pub gpu: Gpu,
    pub cfg: SessionConfig,
    pub params: ParamStore,
    pub data: Batches,
    net: Net,
    loss_ops: Vec<Op>,
    optimizer: Optimizer,
    /// (rows) labels / next tokens, or (rows, 1) regression targets, of the current batch
    targets: Tensor,
    /// (METRIC_SLOTS, 2 + tensors) [loss, grad norm, update/weight ratio per tensor] per step,
    /// at row step % METRIC_SLOTS
    metrics: Tensor,
    /// (P) the flat weights before this step's update, for the update/weight ratios
    prev_weights: Tensor,
    record: UniformOp<MetricsParams>,
    /// Update/weight ratio of each parameter tensor at the last step read back.
    last_ratios: Vec<f32>,
    pub(crate) rng: Rng,
    pub(crate) step: u64,
    read_up_to: u64,
    /// Steps whose update the NaN guard skipped: in all, and in a row up to the last read.
    pub skipped_steps: u64,
    skipped_in_a_row: u64,
    /// In-memory snapshots of the whole state, for recovery from device loss.
    pub snapshots: Snapshots,
}

impl Session {
    pub async fn new(cfg: SessionConfig) -> Result<Session> {
        cfg.validate()?;
        Session::with_gpu(Gpu::new().await?, cfg)
    }

    pub fn with_gpu(gpu: Gpu, cfg: SessionConfig) -> Result<Session> {
        cfg.validate()?;
        let data = Batches::new(&cfg.data, cfg.model.rows_per_example(), cfg.model.outputs(), cfg.seed)?;
        check_fits(&gpu, &cfg, &data)?;
        let params = ParamStore::new(&gpu, cfg.model.param_specs(), cfg.seed)?;
        let rows = cfg.batch * cfg.model.rows_per_example();
        let regression = data.points(false).is_some_and(|p| p.labels.is_empty());
        // (rows) labels / next tokens, or (rows, 1) regression targets
        let targets = if regression { gpu.tensor("targets", &[rows, 1])? } else { gpu.tensor("targets", &[rows])? };
        // (1) mean loss of the current batch, read by the metrics kernel
        let loss = gpu.tensor("loss", &[1])?;
        // A small MLP trains through two fused dispatches; anything else layer by layer.
        let fused = match &cfg.model {
            ModelConfig::Mlp(m) if m.fusable() => Some(m),
            _ => None,
        };
        let mut net = cfg.model.build(&gpu, &params, cfg.batch, fused.is_none())?;
        let loss_ops = match fused {
            Some(m) => {
                net.forward.clear();
                m.fused_pass(&gpu, &params, &net.input, &targets, &loss, regression)?
            }
            None => {
                if regression {
                    let dloss = gpu.tensor_from("dloss", &[1], &[1.0f32])?;
                    let mut ops = mse_loss(&gpu, &net.output, &targets, &loss)?;
                    ops.push(mse_loss_backward(&gpu, &net.output, &targets, &dloss, &net.d_output)?);
                    ops
                } else {
                    let row_loss = gpu.tensor("row loss", &[rows])?;
                    cross_entropy(&gpu, &net.output, &targets, &row_loss, &loss, &net.d_output)?
                }
            }
        };
        let mut optimizer = Optimizer::new(&gpu, &params, cfg.optimizer.clone())?;
        optimizer.guard_loss(&gpu, &loss)?;
        let tensors = params.entries.len();
        let metrics = gpu.tensor("metrics ring", &[METRIC_SLOTS, 2 + tensors])?;
        let prev_weights = gpu.tensor("previous weights", &[params.total])?;
        let table: Vec<u32> = params.entries.iter().flat_map(|e| [e.offset as u32, e.spec.shape.iter().product::<usize>() as u32]).collect();
        let table = gpu.tensor_from("parameter table", &[tensors, 2], &table)?;
        let buffers = MetricsBuffers { weights: &params.weights, prev: &prev_weights, table: &table, loss: &loss, norm_sq: &optimizer.norm_sq, ring: &metrics };
        let record = record_metrics(&gpu, &buffers, tensors, 0)?;
        let rng = Rng::new(cfg.seed ^ 2);
        let last_ratios = vec![0.0; tensors];
        let snapshots = Snapshots::new(&gpu, &params);
        // A device out of memory reports it here, as a typed error, rather than at the first step.
        gpu.check_errors()?;
        Ok(Session {
            gpu,
            cfg,
            params,
            data,
            net,
            loss_ops,
            optimizer,
            targets,
            metrics,
            prev_weights,
            record,
            last_ratios,
            rng,
            step: 0,
            read_up_to: 0,
            skipped_steps: 0,
            skipped_in_a_row: 0,
            snapshots,
        })
    }

    pub fn step_count(&self) -> u64 {
        self.step
    }

    /// Dispatches per optimizer step (all micro-batches).
    pub fn dispatches_per_step(&self) -> usize {
        let micro = self.net.forward.len() + self.loss_ops.len() + self.net.backward.len();
        micro * self.cfg.optimizer.accumulation as usize + self.optimizer.ops().len()
    }

    /// Every dispatch of one step with a single micro-batch, in order (for profiling).
    pub fn step_ops(&self) -> Vec<&Op> {
        let ops = self.net.forward.iter().chain(&self.loss_ops).chain(&self.net.backward);
        ops.chain(self.optimizer.ops()).chain([&self.record.op]).collect()
    }

    /// Runs `n` training steps on sampled batches without waiting for the GPU. Fails with
    /// `DeviceLost` once the device is gone (then `recover` carries on).
    pub fn train(&mut self, n: u64) -> Result<()> {
        if let Some(why) = self.gpu.lost() {
            return Err(KilnError::DeviceLost(why));
        }
        for _ in 0..n {
            let micro = self.cfg.optimizer.accumulation as usize;
            let batches: Vec<Batch> = (0..micro).map(|_| self.sample_batch()).collect();
            self.train_on(&batches)?;
        }
        Ok(())
    }

    /// The next training batch, drawn as `train` draws it (the sampler advances).
    pub fn sample_batch(&mut self) -> Batch {
        self.data.sample(&mut self.rng, self.cfg.batch, false)
    }

    /// One optimizer step on the given micro-batches (as many as `optimizer.accumulation`).
    pub fn train_on(&mut self, batches: &[Batch]) -> Result<()> {
        let micro_batches = self.cfg.optimizer.accumulation;
        ensure(batches.len() == micro_batches as usize, "batches", || format!("one step takes {micro_batches} micro-batches, got {}", batches.len()))?;
        let t = self.step + 1;
        self.optimizer.prepare(&self.gpu, t)?;
        let tensors = self.params.entries.len() as u32;
        let row = MetricsParams { tensors, row: (t as usize % METRIC_SLOTS) as u32, stride: 2 + tensors, pad: 0 };
        self.record.set(&self.gpu, &row)?;
        for (micro, batch) in (0..micro_batches).zip(batches) {
            self.upload(batch)?;
            let mut encoder = self.gpu.device.create_command_encoder(&Default::default());
            self.encode_micro(&mut encoder, micro == 0, micro + 1 == micro_batches);
            self.gpu.queue.submit([encoder.finish()]);
        }
        self.step = t;
        self.snapshots.after_step(&self.gpu, &self.params, t, &self.rng);
        self.gpu.check_errors()
    }

    /// A micro-batch's forward, loss and backward; the first clears the gradients, the last
    /// keeps the weights before the update and runs the optimizer and the metrics record.
    fn encode_micro(&self, encoder: &mut wgpu::CommandEncoder, first: bool, last: bool) {
        if first {
            encoder.clear_buffer(self.params.grads.buffer(), 0, None);
        }
        if last {
            let (w, prev) = (&self.params.weights, &self.prev_weights);
            encoder.copy_buffer_to_buffer(w.buffer(), w.offset(), prev.buffer(), prev.offset(), w.bytes());
        }
        let mut pass = encoder.begin_compute_pass(&Default::default());
        let ops = self.net.forward.iter().chain(&self.loss_ops).chain(&self.net.backward);
        let update = if last { self.optimizer.ops().into_iter().chain([&self.record.op]).collect() } else { vec![] };
        for op in ops.chain(update) {
            op.encode(&mut pass);
        }
    }

    fn upload(&self, batch: &Batch) -> Result<()> {
        let outputs = self.cfg.model.outputs();
        match batch {
            Batch::Classes(x, labels) => {
                check_targets(labels, outputs)?;
                self.gpu.write(&self.net.input, x)?;
                self.gpu.write(&self.targets, labels)
            }
            Batch::Values(x, y) => {
                self.gpu.write(&self.net.input, x)?;
                self.gpu.write(&self.targets, y)
            }
            Batch::Tokens(x, y) => {
                check_tokens(x, outputs)?;
                self.gpu.write(&self.net.input, x)?;
                self.gpu.write(&self.targets, y)
            }
        }
    }

    /// Loss and gradient norm of every step since the last call (at most METRIC_SLOTS).
    pub async fn read_metrics(&mut self) -> Result<Vec<StepMetrics>> {
        self.snapshots.before_read(&self.gpu, &self.params, self.step, &self.rng);
        let ring = self.gpu.read_f32(&self.metrics).await?;
        let stride = 2 + self.params.entries.len();
        let first = self.read_up_to.max(self.step.saturating_sub(METRIC_SLOTS as u64)) + 1;
        let out = (first..=self.step)
            .map(|step| {
                let row = &ring[(step as usize % METRIC_SLOTS) * stride..][..stride];
                StepMetrics { step, loss: row[0], grad_norm: row[1], skipped: !row[1].is_finite() }
            })
            .collect::<Vec<_>>();
        for m in &out {
            self.skipped_steps += u64::from(m.skipped);
            self.skipped_in_a_row = if m.skipped { self.skipped_in_a_row + 1 } else { 0 };
        }
        if self.step > self.read_up_to {
            let row = (self.step as usize % METRIC_SLOTS) * stride;
            self.last_ratios = ring[row + 2..row + stride].to_vec();
        }
        self.read_up_to = self.step;
        if self.skipped_in_a_row >= MAX_SKIPS_IN_A_ROW {
            return Err(KilnError::Diverged(format!(
                "the loss or gradient was not finite for the last {} steps (NaN guard: those updates were skipped, \
                 so the weights are still those before them). Lower the learning rate (now {}), turn on gradient \
                 clipping, or reset.",
                self.skipped_in_a_row, self.cfg.optimizer.lr
            )));
        }
        Ok(out)
    }

    /// Each parameter tensor's update/weight ratio ||Δw||/||w|| at the last step read back by
    /// `read_metrics` (computed on the GPU every step).
    pub fn update_ratios(&self) -> Vec<(String, f32)> {
        self.params.entries.iter().map(|e| e.spec.name.clone()).zip(self.last_ratios.iter().copied()).collect()
    }

    /// Model outputs (rows, outputs) for a batch of `examples` inputs: (examples, input_dim) f32
    /// points for an MLP, (examples·context) u32 tokens for a Llama.
    pub async fn predict<T: bytemuck::Pod>(&self, examples: usize, inputs: &[T]) -> Result<Vec<f32>> {
        ensure(examples >= 1, "inputs", || "at least one example is needed".into())?;
        let net = self.cfg.model.build(&self.gpu, &self.params, examples, false)?;
        self.gpu.write(&net.input, inputs)?;
        let ops: Vec<&Op> = net.forward.iter().collect();
        self.gpu.run(&ops)?;
        self.gpu.read_f32(&net.output).await
    }

    /// Loss and accuracy (none for regression) on the validation or training split: every point
    /// of a point set; for text, consecutive windows from the split's start, every token of
    /// the split up to `EVAL_BATCHES` batches and `MAX_EVAL_TOKENS` (the result says how many).
    pub async fn evaluate(&self, validation: bool) -> Result<Evaluation> {
        let outputs = self.cfg.model.outputs();
        if let Some(set) = self.data.points(validation) {
            ensure(!set.is_empty(), "data", || "the split is empty".into())?;
            let out = self.predict(set.len(), &set.inputs).await?;
            let e = if set.labels.is_empty() { mse(&out, &set.targets) } else { classify(&out, &set.labels, outputs) };
            return Ok(Evaluation { scored: set.len(), available: set.len(), ..e });
        }
        let (corpus, context) = (self.data.corpus().ok_or_else(|| KilnError::invalid("data", "text data expected"))?, self.cfg.model.rows_per_example());
        // At most four training batches of windows: an evaluation costs about one training step.
        let most = (MAX_EVAL_TOKENS / context).min(EVAL_BATCHES * self.cfg.batch);
        let (x, y, windows) = corpus.windows(context, validation, most);
        let out = self.predict_in_runs(windows, &x, self.cfg.batch).await?;
        let e = classify(&out, &y, outputs);
        Ok(Evaluation { scored: y.len(), available: corpus.range(validation).len() - 1, ..e })
    }

    /// `predict` for many examples through one net of `per_run` examples, run as often as needed
    /// (the last run padded with copies of the first example, whose outputs are dropped).
    async fn predict_in_runs<T: bytemuck::Pod>(&self, examples: usize, inputs: &[T], per_run: usize) -> Result<Vec<f32>> {
        let per_run = per_run.clamp(1, examples.max(1));
        let stride = inputs.len() / examples.max(1);
        let row = self.cfg.model.rows_per_example() * self.cfg.model.outputs();
        let net = self.cfg.model.build(&self.gpu, &self.params, per_run, false)?;
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

    /// After a checkpoint load: metrics start again from the loaded step.
    pub(crate) fn reset_metrics_cursor(&mut self) {
        self.read_up_to = self.step;
        self.last_ratios.iter_mut().for_each(|r| *r = 0.0);
    }

    pub fn model(&self) -> &ModelConfig {
        &self.cfg.model
    }
}

fn mse(out: &[f32], targets: &[f32]) -> Evaluation {
    let n = targets.len().max(1);
    let loss = out.iter().zip(targets).map(|(&o, &t)| (o as f64 - t as f64).powi(2)).sum::<f64>() / n as f64;
    Evaluation { loss, accuracy: None, scored: 0, available: 0 }
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
    Evaluation { loss: loss / n, accuracy: Some(correct as f64 / n), scored: 0, available: 0 }
}
