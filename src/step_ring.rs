//! Many training steps in one submission. Submitting is the costly part of a small model's
//! step (natively and even more so through a browser), so `Session::train` encodes up to
//! `STEPS_PER_SUBMIT` steps into one command buffer. What differs from step to step travels
//! ahead of them: every step's batch and every step's uniforms (learning rate and bias
//! correction, the metrics ring row) are written once into rings, and each step begins with
//! copies from its ring slot into the buffers the step's kernels bind. The kernels, their
//! order and the data are those of `train_on`, so the results are bit-identical.

use crate::data::batches::Batch;
use crate::error::{KilnError, Result};
use crate::gpu::Gpu;
use crate::kernels::embedding::check_tokens;
use crate::kernels::loss::check_targets;
use crate::kernels::metrics::MetricsParams;
use crate::tensor::Tensor;
use crate::train::{Session, METRIC_SLOTS};

/// Most steps encoded into one submission.
pub const STEPS_PER_SUBMIT: usize = 32;

pub struct StepRing {
    /// (STEPS_PER_SUBMIT, input words): each step's inputs (f32 points or u32 tokens)
    inputs: Tensor,
    /// (STEPS_PER_SUBMIT, target words): each step's labels, targets or next tokens
    targets: Tensor,
    /// (STEPS_PER_SUBMIT, slot bytes), COPY_SRC | COPY_DST: each step's uniform structs, in
    /// the order of `Session::step_uniforms`
    uniforms: wgpu::Buffer,
    slot_bytes: u64,
}

impl StepRing {
    /// Rings for steps whose inputs and targets have these lengths (in 32-bit words) and whose
    /// uniforms take `slot_bytes` (a multiple of 4).
    pub fn new(gpu: &Gpu, input_words: usize, target_words: usize, slot_bytes: u64) -> Result<StepRing> {
        let inputs = gpu.tensor("step ring inputs", &[STEPS_PER_SUBMIT, input_words])?;
        let targets = gpu.tensor("step ring targets", &[STEPS_PER_SUBMIT, target_words])?;
        let uniforms = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("step ring uniforms"),
            size: (STEPS_PER_SUBMIT as u64 * slot_bytes).max(4),
            usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Ok(StepRing { inputs, targets, uniforms, slot_bytes })
    }
}

/// A batch's input and target words, checked like `Session::upload` checks them.
fn batch_words<'a>(batch: &'a Batch, outputs: usize) -> Result<(&'a [u8], &'a [u8])> {
    Ok(match batch {
        Batch::Classes(x, labels) => {
            check_targets(labels, outputs)?;
            (bytemuck::cast_slice(x), bytemuck::cast_slice(labels))
        }
        Batch::Values(x, y) => (bytemuck::cast_slice(x), bytemuck::cast_slice(y)),
        Batch::Tokens(x, y) => {
            check_tokens(x, outputs)?;
            (bytemuck::cast_slice(x), bytemuck::cast_slice(y))
        }
    })
}

impl Session {
    /// Trains `batches.len()` (at most STEPS_PER_SUBMIT) steps of one micro-batch each in a
    /// single submission.
    pub(crate) fn train_submission(&mut self, batches: &[Batch]) -> Result<()> {
        let steps = batches.len();
        if steps == 0 || steps > STEPS_PER_SUBMIT {
            return Err(KilnError::invalid("batches", format!("1..={STEPS_PER_SUBMIT} steps per submission, got {steps}")));
        }
        let outputs = self.cfg.model.outputs();
        let (input_bytes, target_bytes) = (self.net.input.bytes(), self.targets.bytes());
        let (mut inputs, mut targets, mut uniforms) = (vec![], vec![], vec![]);
        let mut layout = vec![];
        for (i, batch) in batches.iter().enumerate() {
            let (x, y) = batch_words(batch, outputs)?;
            if x.len() as u64 != input_bytes || y.len() as u64 != target_bytes {
                return Err(KilnError::invalid("batch", format!("step {i}'s batch does not match the model's input or targets")));
            }
            inputs.extend_from_slice(x);
            targets.extend_from_slice(y);
            layout = self.step_uniforms(self.step + 1 + i as u64)?;
            for (_, bytes) in &layout {
                uniforms.extend_from_slice(bytes);
            }
        }
        let ring = &self.ring;
        self.gpu.queue.write_buffer(ring.inputs.buffer(), ring.inputs.offset(), &inputs);
        self.gpu.queue.write_buffer(ring.targets.buffer(), ring.targets.offset(), &targets);
        self.gpu.queue.write_buffer(&ring.uniforms, 0, &uniforms);

        let mut encoder = self.gpu.device.create_command_encoder(&Default::default());
        for i in 0..steps as u64 {
            encoder.copy_buffer_to_buffer(ring.inputs.buffer(), ring.inputs.offset() + i * input_bytes, self.net.input.buffer(), self.net.input.offset(), input_bytes);
            encoder.copy_buffer_to_buffer(ring.targets.buffer(), ring.targets.offset() + i * target_bytes, self.targets.buffer(), self.targets.offset(), target_bytes);
            let mut at = i * ring.slot_bytes;
            for (target, bytes) in &layout {
                encoder.copy_buffer_to_buffer(&ring.uniforms, at, target, 0, bytes.len() as u64);
                at += bytes.len() as u64;
            }
            self.encode_step(&mut encoder);
        }
        self.gpu.queue.submit([encoder.finish()]);
        self.step += steps as u64;
        self.gpu.check_errors()
    }

    /// Every uniform one step writes, with its bytes: the optimizer's, then the metrics row.
    pub(crate) fn step_uniforms(&self, t: u64) -> Result<Vec<(wgpu::Buffer, Vec<u8>)>> {
        let mut out = self.optimizer.step_uniforms(t)?;
        let tensors = self.params.entries.len() as u32;
        let row = MetricsParams { tensors, row: (t as usize % METRIC_SLOTS) as u32, stride: 2 + tensors, pad: 0 };
        out.push((self.record.params.clone(), bytemuck::bytes_of(&row).to_vec()));
        Ok(out)
    }
}
