//! `Session`: one training run. It validates a config, builds the model, the data and the
//! optimizer once, then each `step` is a batch upload, a few uniform writes, and one encoder
//! with one compute pass (plus two tiny copies of loss and gradient norm into the metrics
//! ring). Metrics are read back asynchronously, many steps at a time.

use serde::{Deserialize, Serialize};

use crate::data::points::{generate, PointTask, Points};
use crate::error::{ensure, KilnError, Result};
use crate::gpu::{Gpu, Op};
use crate::kernels::loss::{check_targets, cross_entropy, mse_loss, mse_loss_backward};
use crate::model::mlp::{MlpConfig, MlpPass};
use crate::model::params::ParamStore;
use crate::optim::{OptimConfig, Optimizer};
use crate::rng::Rng;
use crate::tensor::Tensor;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointData {
    pub task: PointTask,
    pub points: usize,
    pub noise: f64,
    pub validation_fraction: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionConfig {
    pub mlp: MlpConfig,
    pub data: PointData,
    pub batch: usize,
    pub optimizer: OptimConfig,
    pub seed: u64,
}

pub const MAX_BATCH: usize = 65_536;
/// Steps of metrics the GPU ring holds between two readbacks.
pub const METRIC_SLOTS: usize = 1024;

impl SessionConfig {
    pub fn validate(&self) -> Result<()> {
        self.mlp.validate()?;
        self.optimizer.validate()?;
        ensure((1..=MAX_BATCH).contains(&self.batch), "batch", || format!("must be 1..={MAX_BATCH}, got {}", self.batch))?;
        let task = self.data.task;
        ensure(self.mlp.input_dim == task.input_dim(), "mlp.input_dim", || format!("{task:?} has {}-D inputs, got {}", task.input_dim(), self.mlp.input_dim))?;
        let outputs = if task.is_regression() { 1 } else { 2 };
        ensure(self.mlp.output_dim == outputs, "mlp.output_dim", || format!("{task:?} needs {outputs} outputs, got {}", self.mlp.output_dim))?;
        let f = self.data.validation_fraction;
        ensure((0.05..=0.5).contains(&f), "data.validation_fraction", || format!("must be in [0.05, 0.5], got {f}"))?;
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepMetrics {
    pub step: u64,
    pub loss: f32,
    pub grad_norm: f32,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Evaluation {
    pub loss: f64,
    /// Fraction of correct classes; None for regression.
    pub accuracy: Option<f64>,
}

pub struct Session {
    pub gpu: Gpu,
    pub cfg: SessionConfig,
    pub params: ParamStore,
    train: MlpPass,
    loss_ops: Vec<Op>,
    optimizer: Optimizer,
    /// (B) class ids or (B, 1) regression targets for the current batch
    targets: Tensor,
    /// (1) mean loss of the current batch
    loss: Tensor,
    /// (METRIC_SLOTS, 2) [loss, grad norm²] per step, indexed by step % METRIC_SLOTS
    metrics: Tensor,
    train_set: Points,
    val_set: Points,
    rng: Rng,
    step: u64,
    read_up_to: u64,
}

impl Session {
    pub async fn new(cfg: SessionConfig) -> Result<Session> {
        cfg.validate()?;
        let gpu = Gpu::new().await?;
        Session::with_gpu(gpu, cfg)
    }

    pub fn with_gpu(gpu: Gpu, cfg: SessionConfig) -> Result<Session> {
        cfg.validate()?;
        let all = generate(cfg.data.task, cfg.data.points, cfg.data.noise, cfg.seed)?;
        let (train_set, val_set) = all.split(cfg.data.validation_fraction, cfg.seed ^ 1);
        let params = ParamStore::new(&gpu, cfg.mlp.param_specs(), cfg.seed)?;
        let train = MlpPass::new(&gpu, &cfg.mlp, &params, cfg.batch, true)?;
        let loss = gpu.tensor("loss", &[1])?;
        let regression = cfg.data.task.is_regression();
        let (targets, loss_ops) = if regression {
            let targets = gpu.tensor("targets", &[cfg.batch, 1])?;
            let dloss = gpu.tensor_from("dloss", &[1], &[1.0f32])?;
            let mut ops = mse_loss(&gpu, &train.output, &targets, &loss)?;
            ops.push(mse_loss_backward(&gpu, &train.output, &targets, &dloss, &train.d_output)?);
            (targets, ops)
        } else {
            let targets = gpu.tensor("targets", &[cfg.batch])?;
            let row_loss = gpu.tensor("row loss", &[cfg.batch])?;
            (targets.clone(), cross_entropy(&gpu, &train.output, &targets, &row_loss, &loss, &train.d_output)?)
        };
        let optimizer = Optimizer::new(&gpu, &params, cfg.optimizer.clone())?;
        let metrics = gpu.tensor("metrics ring", &[METRIC_SLOTS, 2])?;
        let rng = Rng::new(cfg.seed ^ 2);
        Ok(Session { gpu, cfg, params, train, loss_ops, optimizer, targets, loss, metrics, train_set, val_set, rng, step: 0, read_up_to: 0 })
    }

    pub fn step_count(&self) -> u64 {
        self.step
    }

    /// Dispatches per optimizer step (all micro-batches).
    pub fn dispatches_per_step(&self) -> usize {
        let micro = self.train.forward.len() + self.loss_ops.len() + self.train.backward.len();
        micro * self.cfg.optimizer.accumulation as usize + self.optimizer.ops().len()
    }

    /// Runs `n` training steps without waiting for the GPU.
    pub fn train(&mut self, n: u64) -> Result<()> {
        for _ in 0..n {
            self.step_once()?;
        }
        Ok(())
    }

    fn step_once(&mut self) -> Result<()> {
        let t = self.step + 1;
        self.optimizer.prepare(&self.gpu, t)?;
        let micro_batches = self.cfg.optimizer.accumulation;
        for micro in 0..micro_batches {
            self.upload_batch()?;
            let last = micro + 1 == micro_batches;
            let mut encoder = self.gpu.device.create_command_encoder(&Default::default());
            if micro == 0 {
                encoder.clear_buffer(self.params.grads.buffer(), 0, None);
            }
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                let ops = self.train.forward.iter().chain(&self.loss_ops).chain(&self.train.backward);
                for op in ops {
                    op.encode(&mut pass);
                }
                if last {
                    for op in self.optimizer.ops() {
                        op.encode(&mut pass);
                    }
                }
            }
            if last {
                let slot = (t as usize % METRIC_SLOTS) as u64 * 8;
                encoder.copy_buffer_to_buffer(self.loss.buffer(), self.loss.offset(), self.metrics.buffer(), slot, 4);
                let norm = &self.optimizer.norm_sq;
                encoder.copy_buffer_to_buffer(norm.buffer(), norm.offset(), self.metrics.buffer(), slot + 4, 4);
            }
            self.gpu.queue.submit([encoder.finish()]);
        }
        self.step = t;
        self.gpu.check_errors()
    }

    fn upload_batch(&mut self) -> Result<()> {
        let b = self.cfg.batch;
        let d = self.train_set.input_dim;
        let n = self.train_set.len();
        let mut inputs = Vec::with_capacity(b * d);
        let mut labels = Vec::with_capacity(b);
        let mut values = Vec::with_capacity(b);
        for _ in 0..b {
            let i = self.rng.below(n);
            inputs.extend_from_slice(&self.train_set.inputs[i * d..(i + 1) * d]);
            if self.cfg.data.task.is_regression() {
                values.push(self.train_set.targets[i]);
            } else {
                labels.push(self.train_set.labels[i]);
            }
        }
        self.gpu.write(&self.train.input, &inputs)?;
        if self.cfg.data.task.is_regression() {
            self.gpu.write(&self.targets, &values)
        } else {
            check_targets(&labels, self.cfg.mlp.output_dim)?;
            self.gpu.write(&self.targets, &labels)
        }
    }

    /// Loss and gradient norm of every step since the last call (at most METRIC_SLOTS).
    pub async fn read_metrics(&mut self) -> Result<Vec<StepMetrics>> {
        let ring = self.gpu.read_f32(&self.metrics).await?;
        let first = self.read_up_to.max(self.step.saturating_sub(METRIC_SLOTS as u64)) + 1;
        let out = (first..=self.step)
            .map(|step| {
                let slot = step as usize % METRIC_SLOTS;
                StepMetrics { step, loss: ring[slot * 2], grad_norm: ring[slot * 2 + 1].sqrt() }
            })
            .collect();
        self.read_up_to = self.step;
        Ok(out)
    }

    /// Model outputs for `inputs` (N, input_dim), computed in chunks of the training batch.
    pub async fn predict(&self, inputs: &[f32]) -> Result<Vec<f32>> {
        let d = self.cfg.mlp.input_dim;
        ensure(inputs.len() % d == 0, "inputs", || format!("length {} is not a multiple of input_dim {d}", inputs.len()))?;
        let n = inputs.len() / d;
        let pass = MlpPass::new(&self.gpu, &self.cfg.mlp, &self.params, n.max(1), false)?;
        self.gpu.write(&pass.input, inputs)?;
        let ops: Vec<&Op> = pass.forward.iter().collect();
        self.gpu.run(&ops)?;
        self.gpu.read_f32(&pass.output).await
    }

    /// Loss (and accuracy for classification) on the validation or training split.
    pub async fn evaluate(&self, validation: bool) -> Result<Evaluation> {
        let set = if validation { &self.val_set } else { &self.train_set };
        if set.is_empty() {
            return Err(KilnError::invalid("data", "the split is empty"));
        }
        let out = self.predict(&set.inputs).await?;
        Ok(evaluate_outputs(set, &out, self.cfg.mlp.output_dim))
    }
}

/// Mean cross-entropy and accuracy, or mean squared error, in f64 on the CPU.
fn evaluate_outputs(set: &Points, out: &[f32], classes: usize) -> Evaluation {
    let n = set.len();
    if set.labels.is_empty() {
        let mse = (0..n).map(|i| (out[i] as f64 - set.targets[i] as f64).powi(2)).sum::<f64>() / n as f64;
        return Evaluation { loss: mse, accuracy: None };
    }
    let (mut loss, mut correct) = (0.0, 0usize);
    for i in 0..n {
        let row: Vec<f64> = out[i * classes..(i + 1) * classes].iter().map(|&x| x as f64).collect();
        let max = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = max + row.iter().map(|x| (x - max).exp()).sum::<f64>().ln();
        let label = set.labels[i] as usize;
        loss += lse - row[label];
        let argmax = (0..classes).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap_or(0);
        correct += usize::from(argmax == label);
    }
    Evaluation { loss: loss / n as f64, accuracy: Some(correct as f64 / n as f64) }
}
