//! Does a config fit the device? Checked before anything is allocated: the largest single
//! buffer against the device's per-binding limit, and the estimated total against a memory
//! budget (WebGPU does not tell how much memory a device has; four of its largest buffers is
//! the budget). When a config does not fit, the message says what would: the largest batch
//! that does, or that the model itself must shrink.

use crate::config::SessionConfig;
use crate::data::batches::Batches;
use crate::error::{KilnError, Result};
use crate::gpu::Gpu;
use crate::kernels::matmul::{Adapter, MatmulDesc};
use crate::kernels::matmul_swiglu;
use crate::model::llama_pass::pending_partials;
use crate::model::ModelConfig;

/// Estimated bytes of one training run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Footprint {
    /// Parameters with gradients, optimizer state, previous weights and recovery staging
    /// (8 flat buffers), plus every activation and its gradient.
    pub total: u64,
    /// The largest single buffer.
    pub largest: u64,
}

/// u64 throughout: on wasm32 `usize` is 32 bits and the largest configs overflow it.
pub fn footprint(model: &ModelConfig, batch: usize) -> Footprint {
    let params: u64 = model.param_specs().iter().map(|s| s.shape.iter().map(|&d| d as u64).product::<u64>()).sum();
    let b = batch as u64;
    let (acts, widest) = match model {
        ModelConfig::Mlp(m) => {
            let outs: u64 = m.layer_dims().iter().map(|&(_, out)| out as u64).sum();
            let widest = m.layer_dims().iter().map(|&(i, o)| i.max(o) as u64).max().unwrap_or(1);
            // input; lin, z, h and two gradients per layer (an upper bound: a short product has no
            // lin or dh); the fused pass's partial gradients,
            // or the split weight gradients' partials when the training pass is not the fused one
            let partials = if m.fusable(Adapter::Gpu) { m.fused_partials(batch, Adapter::Gpu) } else { m.backward_partials(batch, Adapter::Gpu) } as u64;
            (b * (m.input_dim as u64 + 5 * outs) + partials, b * widest)
        }
        ModelConfig::Llama(l) => {
            let n = b * l.context as u64;
            let (c, f, h, v, layers) = (l.d_model as u64, l.hidden as u64, l.heads as u64, l.vocab as u64, l.layers as u64);
            let conv = l.short_conv as u64;
            let blocks = if l.mixed() {
                // Per block two f16 stashes ((x, qkv, att) and (x1, up_gate): 3C + F words per
                // row) and its lse; one block of f32 scratch shared by all (llama_acts.rs).
                // stream [x | att] 2C, block max(qkv 3C, [x1 | up_gate] C + 2F), n1, proj, n2,
                // down (+ the conv) and g
                let scratch = n * (2 * c + (3 * c).max(c + 2 * f) + (4 + conv) * c + f);
                layers * (n * (3 * c + f) + n * h) + scratch
            } else {
                layers * (n * (c * (9 + conv) + f * 3) + 2 * n * h)
            };
            // The largest single buffer: logits, qkv or the MLP's (N, 2F) [up | gate], or mixed
            // precision's block scratch.
            let widest = n * v.max(3 * c).max(2 * f).max(if l.mixed() { c + 2 * f } else { 0 });
            // The backward's split-K partials waiting for their sums (not the shared scratch,
            // which holds one product's partials at a time: the estimate never counted it).
            let pending = pending_partials(l, n as usize, Adapter::Gpu) as u64;
            // dg (N, F), where down's input gradient does not fuse with the SwiGLU backward.
            let dg = if matmul_swiglu::fuses(&MatmulDesc::new(n as usize, l.hidden, l.d_model), Adapter::Gpu) { 0 } else { n * f };
            (n * (c * 4 + v * 2) + blocks + n * (3 * c + 2 * f) + dg + pending, widest)
        }
    };
    // Mixed precision adds the weights' f16 copy: half a word per parameter.
    let copies = if model.mixed() { 8 * params + params.div_ceil(2) } else { 8 * params };
    Footprint { total: 4 * (copies + acts), largest: 4 * params.max(widest) }
}

/// Refuses, before any allocation, a Llama whose vocabulary is smaller than the text's, and a
/// run whose buffers would not fit the device.
pub fn check_fits(gpu: &Gpu, cfg: &SessionConfig, data: &Batches) -> Result<()> {
    if let (ModelConfig::Llama(l), Some(corpus)) = (&cfg.model, data.corpus()) {
        if l.vocab < corpus.vocab() {
            let message = format!("the text has {} distinct characters; vocab must be at least that, got {}", corpus.vocab(), l.vocab);
            return Err(KilnError::invalid("model.llama.vocab", message));
        }
    }
    let limits = gpu.limits();
    let binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
    let budget = limits.max_buffer_size.saturating_mul(4);
    let fits = |batch: usize| {
        let f = footprint(&cfg.model, batch);
        f.largest <= binding && f.total <= budget
    };
    if fits(cfg.batch) {
        return Ok(());
    }
    let f = footprint(&cfg.model, cfg.batch);
    let problem = if f.largest > binding {
        format!("its largest buffer needs {} but this device binds at most {} per buffer", mib(f.largest), mib(binding))
    } else {
        format!("it needs about {} in all but this device allows about {}", mib(f.total), mib(budget))
    };
    // Memory grows with the batch, so the largest batch that fits is a binary search away.
    let (mut lo, mut hi) = (0, cfg.batch);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Err(match lo {
        0 => KilnError::invalid("model", format!("{problem}, even with a batch of 1: use fewer or narrower layers (or a smaller vocab or context)")),
        best => KilnError::invalid("batch", format!("{problem}: a batch of at most {best} fits (got {})", cfg.batch)),
    })
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}
