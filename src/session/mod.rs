//! `Session`: one training run. It validates a config, builds the data, the model's training
//! pass and the optimizer once; then each step is a batch upload, a few uniform writes, and one
//! submission per micro-batch (step.rs). Metrics are read back asynchronously, many steps at a
//! time. Its parts, each a child module with `impl Session`: the training step (step.rs),
//! evaluation and predictions (evaluate.rs), in-memory snapshots (recovery.rs) and rebuilding
//! on a new device (recover.rs), checkpoints (checkpoint.rs), text generation (generate.rs), and
//! the views inside a model: the next-token view (next_tokens.rs), the input plane and every
//! neuron over it (plane.rs), attention maps (attention_maps.rs) and distributions (inspect.rs);
//! and a run leaving for PyTorch and Hugging Face and coming back (export.rs).

pub mod attention_maps;
pub mod checkpoint;
pub mod evaluate;
pub mod export;
pub mod generate;
pub mod hf_export;
pub mod hf_foreign;
pub mod hf_import;
pub mod inspect;
pub mod next_tokens;
pub mod plane;
pub mod quantize;
mod recover;
pub mod recovery;
mod step;
pub mod tokens;
pub mod torch_export;
pub mod torch_import;

use serde::Serialize;

use crate::config::SessionConfig;
use crate::data::batches::Batches;
use crate::error::Result;
use crate::fit::check_fits;
use crate::gpu::{Command, Gpu, Op, Tensor};
use crate::kernels::metrics::{record_metrics, MetricsBuffers, MetricsRecord};
use crate::loss_scale::LossScaler;
use crate::model::params::ParamStore;
use crate::model::training::TrainingPass;
use crate::model::ModelConfig;
use crate::optim::Optimizer;
use crate::rng::Rng;
use recovery::Snapshots;

/// Steps of metrics the GPU ring holds between two readbacks.
pub const METRIC_SLOTS: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepMetrics {
    pub step: u64,
    pub loss: f32,
    pub grad_norm: f32,
    /// Mixed precision: the loss scale the step used (None in fp32).
    pub loss_scale: Option<f32>,
    /// The gradient norm was not finite, so the GPU skipped this step's update.
    pub skipped: bool,
}

/// Non-finite steps in a row after which `read_metrics` stops the run with `Diverged`.
pub const MAX_SKIPS_IN_A_ROW: u64 = 8;

pub struct Session {
    pub gpu: Gpu,
    pub cfg: SessionConfig,
    pub params: ParamStore,
    pub data: Batches,
    /// One micro-batch's forward, loss and backward, as the model built it.
    pass: TrainingPass,
    optimizer: Optimizer,
    /// (rows) labels / next tokens, or (rows, 1) regression targets, of the current batch
    targets: Tensor,
    /// (METRIC_SLOTS, 2 + tensors) [loss, grad norm, update/weight ratio per tensor] per step,
    /// at row step % METRIC_SLOTS
    metrics: Tensor,
    /// (P) the flat weights before this step's update, for the update/weight ratios
    prev_weights: Tensor,
    record: MetricsRecord,
    /// Update/weight ratio of each parameter tensor at the last step read back.
    last_ratios: Vec<f32>,
    rng: Rng,
    step: u64,
    /// Whether this session has trained a step, so that the pass's input holds a batch.
    trained_here: bool,
    read_up_to: u64,
    /// Steps whose update the NaN guard skipped: in all, and in a row up to the last read.
    pub skipped_steps: u64,
    skipped_in_a_row: u64,
    /// In-memory snapshots of the whole state, for recovery from device loss.
    pub snapshots: Snapshots,
    /// The quantized copy of the weights, once `quantize` has made one.
    quantized: Option<quantize::Quantized>,
    /// Mixed precision's dynamic loss scale (None in fp32).
    loss_scale: Option<LossScaler>,
}

impl Session {
    pub async fn new(cfg: SessionConfig) -> Result<Session> {
        cfg.validate()?;
        cfg.model.check_built()?;
        Session::with_gpu(Gpu::new().await?, cfg)
    }

    pub fn with_gpu(gpu: Gpu, cfg: SessionConfig) -> Result<Session> {
        cfg.validate()?;
        cfg.model.check_built()?;
        let data = Batches::new(&cfg.data, cfg.model.rows_per_example(), cfg.model.outputs(), cfg.seed)?;
        check_fits(&gpu, &cfg, &data)?;
        let params = ParamStore::new(&gpu, cfg.model.param_specs(), cfg.seed, cfg.model.mixed())?;
        let rows = cfg.batch * cfg.model.rows_per_example();
        let regression = data.points(false).is_some_and(|p| p.labels.is_empty());
        // (rows) labels / next tokens, or (rows, 1) regression targets
        let targets = if regression { gpu.tensor("targets", &[rows, 1])? } else { gpu.tensor("targets", &[rows])? };
        // (1) mean loss of the current batch (finished by the optimizer's closing sum unless the
        // fused pass writes it), read by the metrics kernel
        let loss = gpu.tensor("loss", &[1])?;
        let mut pass = cfg.model.training_pass(&gpu, &params, cfg.batch, &targets, &loss, regression)?;
        let mut optimizer = Optimizer::new(&gpu, &params, cfg.optimizer.clone(), &loss, pass.loss_sum.as_ref())?;
        let loss_scale = match (&pass.d_output, cfg.model.mixed()) {
            (Some((d_output, backward_at)), true) => {
                let scaler = LossScaler::new(&gpu, d_output, &params.grads, &optimizer.norm_sq, METRIC_SLOTS)?;
                pass.ops.insert(*backward_at, scaler.scale_op.clone());
                optimizer.ops_before_update.insert(0, scaler.unscale_op.clone());
                Some(scaler)
            }
            _ => None,
        };
        let tensors = params.entries.len();
        let metrics = gpu.tensor("metrics ring", &[METRIC_SLOTS, 2 + tensors])?;
        let prev_weights = gpu.tensor("previous weights", &[params.total])?;
        // Before the first step the last update is zero.
        gpu.submit(&[Command::Copy { from: &params.weights, to: &prev_weights }]);
        let ranges: Vec<(usize, usize)> = params.entries.iter().map(|e| (e.offset, e.spec.shape.iter().product())).collect();
        let buffers = MetricsBuffers { weights: &params.weights, prev: &prev_weights, loss: &loss, norm_sq: &optimizer.norm_sq, ring: &metrics };
        let record = record_metrics(&gpu, &buffers, &ranges, 0)?;
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
            pass,
            optimizer,
            targets,
            metrics,
            prev_weights,
            record,
            last_ratios,
            rng,
            step: 0,
            trained_here: false,
            read_up_to: 0,
            skipped_steps: 0,
            skipped_in_a_row: 0,
            snapshots,
            quantized: None,
            loss_scale,
        })
    }

    pub fn step_count(&self) -> u64 {
        self.step
    }

    /// Dispatches per optimizer step (all micro-batches).
    pub fn dispatches_per_step(&self) -> usize {
        self.pass.ops.len() * self.cfg.optimizer.accumulation as usize + self.optimizer.ops().len() + self.after_update().len()
    }

    /// Every dispatch of one step with a single micro-batch, in order (for profiling).
    pub fn step_ops(&self) -> Vec<&Op> {
        self.pass.ops.iter().chain(self.optimizer.ops()).chain(self.after_update()).collect()
    }

    /// The dispatches after the optimizer's: the metrics record, and the loss-scale update.
    fn after_update(&self) -> Vec<&Op> {
        self.record.ops().chain(self.loss_scale.as_ref().map(|s| s.update_op())).collect()
    }

    /// Mixed precision: sets the loss scale the next step uses (and restarts its count of
    /// clean steps). Tests force an overflow with it; a no-op in fp32.
    #[doc(hidden)]
    pub fn set_loss_scale(&self, scale: f32) -> Result<()> {
        self.loss_scale.as_ref().map_or(Ok(()), |s| s.set(&self.gpu, scale))
    }

    pub fn model(&self) -> &ModelConfig {
        &self.cfg.model
    }
}
