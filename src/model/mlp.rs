//! A multi-layer perceptron, written llm.c style: each layer's forward and backward are explicit
//! kernel calls, every buffer is allocated once for a fixed batch size, and backward accumulates
//! parameter gradients (the step clears them first).
//!
//! Layer l: lin = h_{l-1}·W_lᵀ (W_l is (out, in)), z = lin + b_l, h_l = act(z) except for the
//! last layer, whose z is the logits (classification) or the prediction (regression).

use serde::{Deserialize, Serialize};

use crate::error::{ensure, Result};
use crate::gpu::Tensor;
use crate::gpu::{Gpu, Op};
use crate::kernels::elementwise::Activation;
use crate::kernels::matmul::{matmul_ops_pending, matmul_unreduced, split_partials_len, Adapter, MatmulDesc};
use crate::kernels::mlp_fused::{mlp_fused, partials_len, FusedLayer, FusedLoss, FusedRows};
use crate::kernels::mlp_layer::LayerProduct::{self, Short};
use crate::kernels::mlp_layer::{activation_backward_sum, bias_activation, SHORT_K};
use crate::kernels::reduce::column_sum;
use crate::kernels::split_sums::PendingSums;
use crate::model::params::{Init, ParamSpec, ParamStore};
use crate::model::{Net, Taps};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(deny_unknown_fields)]
pub struct MlpConfig {
    /// 2 for the classification tasks, 1 for the regression tasks.
    pub input_dim: usize,
    /// Widths of the hidden layers, e.g. [16, 16].
    pub hidden: Vec<usize>,
    /// Classes (2; 2..=10 for your own points) or 1 for regression.
    pub output_dim: usize,
    pub activation: Activation,
}

/// Largest width of any layer: keeps a playground model within what a page can show.
pub const MAX_WIDTH: usize = 4096;
pub const MAX_LAYERS: usize = 16;

impl MlpConfig {
    pub fn validate(&self) -> Result<()> {
        ensure(self.input_dim >= 1 && self.input_dim <= MAX_WIDTH, "model.mlp.input_dim", || format!("must be 1..={MAX_WIDTH}, got {}", self.input_dim))?;
        ensure(self.output_dim >= 1 && self.output_dim <= MAX_WIDTH, "model.mlp.output_dim", || format!("must be 1..={MAX_WIDTH}, got {}", self.output_dim))?;
        ensure(self.hidden.len() < MAX_LAYERS, "model.mlp.hidden", || format!("at most {} hidden layers, got {}", MAX_LAYERS - 1, self.hidden.len()))?;
        for (i, &w) in self.hidden.iter().enumerate() {
            ensure((1..=MAX_WIDTH).contains(&w), &format!("model.mlp.hidden[{i}]"), || format!("width must be 1..={MAX_WIDTH}, got {w}"))?;
        }
        Ok(())
    }

    /// (in, out) of each layer.
    pub fn layer_dims(&self) -> Vec<(usize, usize)> {
        let mut dims = vec![self.input_dim];
        dims.extend(&self.hidden);
        dims.push(self.output_dim);
        dims.windows(2).map(|w| (w[0], w[1])).collect()
    }

    pub fn param_specs(&self) -> Vec<ParamSpec> {
        let mut specs = vec![];
        for (l, (fan_in, out)) in self.layer_dims().into_iter().enumerate() {
            specs.push(ParamSpec { name: format!("layer{l}.weight"), shape: vec![out, fan_in], init: Init::FanIn(fan_in), decay: true, joins_next: false });
            specs.push(ParamSpec { name: format!("layer{l}.bias"), shape: vec![out], init: Init::FanIn(fan_in), decay: false, joins_next: false });
        }
        specs
    }
}

impl MlpConfig {
    /// Whether every layer fits the fused training pass on this adapter (≤ 4 layers, widths
    /// ≤ 64 on a GPU, ≤ 32 on a CPU adapter).
    pub fn fusable(&self, adapter: Adapter) -> bool {
        FusedRows::for_adapter(adapter).fits(&self.layer_dims())
    }

    /// Floats of the fused pass's partial gradients for `batch` rows (the fit check counts them).
    pub fn fused_partials(&self, batch: usize, adapter: Adapter) -> usize {
        let params = self.param_specs().iter().map(|s| s.shape.iter().product::<usize>()).sum();
        partials_len(FusedRows::for_adapter(adapter), &self.layer_dims(), batch, params)
    }

    /// The whole training pass (forward, loss, backward) as the two dispatches of
    /// mlp_fused.wgsl, accumulating into `params.grads` and writing the mean loss (for a
    /// `fusable` config). `targets`: (rows) labels, or (rows, out) values for `regression`.
    pub fn fused_pass(&self, gpu: &Gpu, params: &ParamStore, input: &Tensor, targets: &Tensor, loss: &Tensor, regression: bool) -> Result<Vec<Op>> {
        let layers: Vec<FusedLayer> = self
            .layer_dims()
            .into_iter()
            .enumerate()
            .map(|(l, (fan_in, out))| FusedLayer {
                w: params.entry(&format!("layer{l}.weight")).offset,
                b: params.entry(&format!("layer{l}.bias")).offset,
                fan_in,
                out,
            })
            .collect();
        let kind = if regression { FusedLoss::Mse } else { FusedLoss::CrossEntropy };
        mlp_fused(gpu, FusedRows::for_gpu(gpu), &layers, self.activation, kind, &params.weights, input, targets, &params.grads, loss)
    }
}

/// One layer's activations for a fixed batch.
struct LayerActs {
    /// (B, out) lin + b: pre-activation, or the model output for the last layer
    z: Tensor,
    /// (B, out) act(z); None for the last layer
    h: Option<Tensor>,
}

impl MlpConfig {
    /// The forward dispatches for `batch` rows, and the backward ones when `train`.
    pub fn build(&self, gpu: &Gpu, params: &ParamStore, batch: usize, train: bool) -> Result<Net> {
        let cfg = self;
        let dims = cfg.layer_dims();
        let input = gpu.tensor("mlp input", &[batch, cfg.input_dim])?;
        let mut acts: Vec<LayerActs> = vec![];
        let mut forward = vec![];
        for (l, &(fan_in, out)) in dims.iter().enumerate() {
            let prev = if l == 0 { &input } else { acts[l - 1].h.as_ref().expect("hidden layers have h") };
            let z = gpu.tensor(&format!("layer{l}.z"), &[batch, out])?;
            let (w, bias) = (params.weight(&format!("layer{l}.weight")), params.weight(&format!("layer{l}.bias")));
            // Hidden layers: bias and activation in one dispatch; the output layer: the bias
            // alone. That dispatch also adds a split product's partials, or forms a short one.
            let h = (l + 1 < dims.len()).then(|| gpu.tensor(&format!("layer{l}.h"), &[batch, out])).transpose()?;
            let act = h.as_ref().map(|h| (cfg.activation, h));
            if fan_in <= SHORT_K {
                forward.push(bias_activation(gpu, act, Short { a: prev, w: &w, w_trans: true }, &bias, &z)?);
            } else {
                // (B, out) h_{l-1}·Wᵀ; unwritten when the product splits
                let lin = gpu.tensor(&format!("layer{l}.lin"), &[batch, out])?;
                let (product, lin) = matmul_unreduced(gpu, prev, &w, &lin, MatmulDesc::new(batch, out, fan_in).trans_b())?;
                forward.extend([product, bias_activation(gpu, act, LayerProduct::Computed(&lin), &bias, &z)?]);
            }
            acts.push(LayerActs { z, h });
        }
        let output = acts.last().expect("at least one layer").z.clone();
        let layers = acts.iter().enumerate().filter_map(|(l, a)| a.h.clone().map(|h| (format!("layer{l}"), h))).collect();
        let d_output = gpu.tensor("mlp d_output", &[batch, cfg.output_dim])?;
        let backward = if train { backward_ops(gpu, cfg, params, &input, &acts, &d_output, batch)? } else { vec![] };
        Ok(Net { input, output, d_output, forward, backward, taps: Taps { layers, ..Taps::default() } })
    }
}

/// The product dW (out, fan_in) += dzᵀ·h over the batch.
fn weight_grad((fan_in, out): (usize, usize), batch: usize) -> MatmulDesc {
    MatmulDesc::new(out, fan_in, batch).trans_a().accumulate()
}

impl MlpConfig {
    /// Floats of split-K partials the backward's weight gradients wait in (the fit check
    /// counts them too).
    pub fn backward_partials(&self, batch: usize, adapter: Adapter) -> usize {
        self.layer_dims().into_iter().map(|d| split_partials_len(adapter, &weight_grad(d, batch))).sum()
    }
}

/// dW_l += dz_lᵀ·h_{l-1}, db_l += Σ_rows dz_l, dh_{l-1} = dz_l·W_l, dz_{l-1} = dh_{l-1}·act'(z_{l-1}).
/// A hidden layer's dz and db come from one pass (`activation_backward_sum`), which also adds
/// a split dh's partials, or forms dh itself when it comes back over a short k (a few classes);
/// only the output layer's db is a plain column sum.
fn backward_ops(gpu: &Gpu, cfg: &MlpConfig, params: &ParamStore, input: &Tensor, acts: &[LayerActs], d_output: &Tensor, batch: usize) -> Result<Vec<Op>> {
    let dims = cfg.layer_dims();
    // The split weight gradients' sums: one dispatch at the end.
    let mut pending = PendingSums::new(gpu, cfg.backward_partials(batch, Adapter::of(gpu)))?;
    let last = dims.len() - 1;
    let mut ops = vec![column_sum(gpu, d_output, &params.grad(&format!("layer{last}.bias")), true)?];
    let mut dz = d_output.clone();
    for l in (0..dims.len()).rev() {
        let (fan_in, out) = dims[l];
        let prev = if l == 0 { input } else { acts[l - 1].h.as_ref().expect("hidden") };
        let (w, dw) = (params.weight(&format!("layer{l}.weight")), params.grad(&format!("layer{l}.weight")));
        ops.extend(matmul_ops_pending(gpu, &dz, prev, &dw, weight_grad(dims[l], batch), &mut pending)?);
        if l > 0 {
            let dz_prev = gpu.tensor(&format!("layer{}.dz", l - 1), &[batch, fan_in])?;
            let (z_prev, db_prev) = (&acts[l - 1].z, params.grad(&format!("layer{}.bias", l - 1)));
            let backward = |dh| activation_backward_sum(gpu, cfg.activation, dh, z_prev, &dz_prev, &db_prev, true);
            if out <= SHORT_K {
                ops.push(backward(Short { a: &dz, w: &w, w_trans: false })?);
            } else {
                let dh = gpu.tensor(&format!("layer{}.dh", l - 1), &[batch, fan_in])?;
                let (product, dh) = matmul_unreduced(gpu, &dz, &w, &dh, MatmulDesc::new(batch, fan_in, out))?;
                ops.extend([product, backward(LayerProduct::Computed(&dh))?]);
            }
            dz = dz_prev;
        }
    }
    ops.extend(pending.flush(gpu)?);
    Ok(ops)
}
