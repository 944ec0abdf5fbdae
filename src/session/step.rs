//! The training step: each step samples its micro-batches, uploads them and submits one
//! clear / copy / compute pass per micro-batch (no readback); `read_metrics` maps the metrics
//! ring many steps at a time and stops a run whose loss stays non-finite.

use crate::data::batches::Batch;
use crate::error::{ensure, KilnError, Result};
use crate::gpu::{Command, Op};
use crate::kernels::embedding::check_tokens;
use crate::kernels::loss::check_targets;
use crate::session::{Session, StepMetrics, MAX_SKIPS_IN_A_ROW, METRIC_SLOTS};

impl Session {
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
        let row = t as usize % METRIC_SLOTS;
        self.record.set_row(&self.gpu, row)?;
        if let Some(scaler) = &self.loss_scale {
            scaler.prepare(&self.gpu, row)?;
        }
        for (micro, batch) in (0..micro_batches).zip(batches) {
            self.upload(batch)?;
            self.submit_micro(micro == 0, micro + 1 == micro_batches);
        }
        self.step = t;
        self.trained_here = true;
        self.snapshots.after_step(&self.gpu, &self.params, t, &self.rng);
        self.gpu.check_errors()
    }

    /// A micro-batch's forward, loss and backward in one submission; the first clears the
    /// gradients, the last keeps the weights before the update and runs the optimizer and the
    /// metrics record.
    fn submit_micro(&self, first: bool, last: bool) {
        let ops = self.pass.ops.iter();
        let update = if last { self.optimizer.ops().into_iter().chain(self.after_update()).collect() } else { vec![] };
        let pass: Vec<&Op> = ops.chain(update).collect();
        let (w, prev) = (&self.params.weights, &self.prev_weights);
        let clear = first.then_some(Command::Clear(&self.params.grads));
        let copy = last.then_some(Command::Copy { from: w, to: prev });
        let scale = self.loss_scale.iter().flat_map(|s| s.copies());
        let commands: Vec<Command<'_>> = clear.into_iter().chain(copy).chain(scale).chain([Command::Pass(&pass)]).collect();
        self.gpu.submit(&commands);
    }

    fn upload(&self, batch: &Batch) -> Result<()> {
        let outputs = self.cfg.model.outputs();
        match batch {
            Batch::Classes(x, labels) => {
                check_targets(labels, outputs)?;
                self.gpu.write(&self.pass.input, x)?;
                self.gpu.write(&self.targets, labels)
            }
            Batch::Values(x, y) => {
                self.gpu.write(&self.pass.input, x)?;
                self.gpu.write(&self.targets, y)
            }
            Batch::Tokens(x, y) => {
                check_tokens(x, outputs)?;
                self.gpu.write(&self.pass.input, x)?;
                self.gpu.write(&self.targets, y)
            }
        }
    }

    /// Loss and gradient norm of every step since the last call (at most METRIC_SLOTS).
    pub async fn read_metrics(&mut self) -> Result<Vec<StepMetrics>> {
        self.snapshots.before_read(&self.gpu, &self.params, self.step, &self.rng);
        let mut rings = match &self.loss_scale {
            Some(scaler) => self.gpu.read_many_f32(&[&self.metrics, &scaler.ring]).await?,
            None => vec![self.gpu.read_f32(&self.metrics).await?],
        };
        let scales = (rings.len() > 1).then(|| rings.pop()).flatten();
        let ring = rings.pop().unwrap_or_default();
        let stride = 2 + self.params.entries.len();
        let first = self.read_up_to.max(self.step.saturating_sub(METRIC_SLOTS as u64)) + 1;
        let out = (first..=self.step)
            .map(|step| {
                let row = &ring[(step as usize % METRIC_SLOTS) * stride..][..stride];
                let loss_scale = scales.as_ref().map(|s| s[step as usize % METRIC_SLOTS]);
                StepMetrics { step, loss: row[0], grad_norm: row[1], loss_scale, skipped: !row[1].is_finite() }
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

    /// After a checkpoint load: metrics start again from the loaded step.
    pub(super) fn reset_metrics_cursor(&mut self) {
        self.read_up_to = self.step;
        self.last_ratios.iter_mut().for_each(|r| *r = 0.0);
    }
}
