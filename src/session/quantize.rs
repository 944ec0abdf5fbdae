//! Quantizing a run: every weight matrix to 8 or 4 bits in MLX's layout (src/quantize.rs), the
//! quantized copy built on the GPU through the seed's `affine_dequantize` (and its 4-bit
//! sibling) beside the run's own weights, which stay as they are. The copy evaluates, predicts
//! and samples like the run (`*_with`), exports as an MLX safetensors file (src/mlx.rs), and such
//! a file loads back into a new run.

use serde::Serialize;

use crate::error::{KilnError, Result};
use crate::gpu::{Command, Gpu, Op, Tensor};
use crate::kernels::quant::affine_dequantize_bits;
use crate::mlx::{self, QuantizedModel, Stored};
use crate::model::params::ParamStore;
use crate::quantize::{quantize, QuantizeOptions};
use crate::session::evaluate::Evaluation;
use crate::session::Session;

/// Tokens of text the report scores each copy on: enough to compare two losses, and a quarter
/// of a full evaluation's wait (the page's report took 52 s on SwiftShader at 16,384).
const QUANTIZE_EVAL_TOKENS: usize = 4096;

/// What quantizing did to one parameter tensor.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TensorQuantization {
    pub name: String,
    pub shape: Vec<usize>,
    pub quantized: bool,
    /// Why the tensor stays in f32 (null when it is quantized).
    pub kept_because: Option<String>,
    /// ‖w − dequantized w‖ / ‖w‖ (0 for a tensor kept in f32).
    pub relative_error: f64,
    pub bytes_before: usize,
    pub bytes_after: usize,
}

/// The quantized copy against the run's weights.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct QuantizeReport {
    pub bits: u32,
    pub group_size: usize,
    /// The step whose weights were quantized.
    #[cfg_attr(test, ts(type = "number"))]
    pub step: u64,
    pub tensors: Vec<TensorQuantization>,
    pub bytes_before: usize,
    pub bytes_after: usize,
    /// The validation split scored with the run's weights and with the quantized copy.
    pub full: Evaluation,
    pub quantized: Evaluation,
}

/// A run's quantized copy: the model as stored, and its dequantized weights on the GPU.
pub struct Quantized {
    pub model: QuantizedModel,
    pub params: ParamStore,
}

impl Session {
    /// Quantizes the current weights (kept as they are) and scores the copy against them.
    pub async fn quantize(&mut self, opts: &QuantizeOptions) -> Result<QuantizeReport> {
        opts.validate()?;
        let weights = self.gpu.read_f32(&self.params.weights).await?;
        let tensors = self
            .params
            .entries
            .iter()
            .map(|e| {
                let values = &weights[e.offset..e.offset + e.elements()];
                let stored = if opts.kept_because(&e.spec.shape).is_some() { Stored::Full(values.to_vec()) } else { Stored::Quantized(quantize(values, opts)) };
                (e.spec.clone(), stored)
            })
            .collect();
        let model = QuantizedModel { config: self.cfg.clone(), step: self.step, opts: *opts, tensors };
        // (total) the quantized copy, laid out like the run's weights
        let copy = self.gpu.tensor("quantized weights", &[self.params.total])?;
        self.dequantize_into(&model, &copy)?;
        // Its own f16 copy in mixed precision, so evaluating it never touches the run's.
        let weights16 = match &self.params.weights16 {
            Some(w) => Some(self.gpu.tensor("quantized weights (f16)", &[w.len()])?),
            None => None,
        };
        let params = ParamStore { weights: copy, weights16, ..self.params.clone() };
        let back = self.gpu.read_f32(&params.weights).await?;
        let tensors: Vec<TensorQuantization> =
            self.params.entries.iter().map(|e| tensor_report(e.offset, e.elements(), &e.spec.name, &e.spec.shape, opts, &weights, &back)).collect();
        let report = QuantizeReport {
            bits: opts.bits,
            group_size: opts.group_size,
            step: self.step,
            bytes_before: tensors.iter().map(|t| t.bytes_before).sum(),
            bytes_after: tensors.iter().map(|t| t.bytes_after).sum(),
            tensors,
            full: self.evaluate_with(&self.params, true, QUANTIZE_EVAL_TOKENS).await?,
            quantized: self.evaluate_with(&params, true, QUANTIZE_EVAL_TOKENS).await?,
        };
        self.quantized = Some(Quantized { model, params });
        Ok(report)
    }

    /// The weights to use: the run's, or (when `quantized`) the copy `quantize` made.
    pub fn weights_for(&self, quantized: bool) -> Result<&ParamStore> {
        if !quantized {
            return Ok(&self.params);
        }
        self.quantized.as_ref().map(|q| &q.params).ok_or_else(|| KilnError::invalid("quantized", "this run has no quantized copy yet: quantize it first"))
    }

    /// The quantized copy as an MLX-layout safetensors file.
    pub fn quantized_file(&self) -> Result<Vec<u8>> {
        let q = self.quantized.as_ref().ok_or_else(|| KilnError::invalid("quantized", "this run has no quantized copy yet: quantize it first"))?;
        mlx::encode(&q.model)
    }

    /// A new run from an MLX file Kiln wrote: its config, its step, and the dequantized
    /// weights as the run's own (it evaluates, samples and keeps training from them).
    pub fn from_quantized(gpu: Gpu, bytes: &[u8]) -> Result<Session> {
        let model = mlx::decode(bytes)?;
        let mut s = Session::with_gpu(gpu, model.config.clone())?;
        s.dequantize_into(&model, &s.params.weights)?;
        s.gpu.submit(&[Command::Copy { from: &s.params.weights, to: &s.prev_weights }]);
        s.step = model.step;
        s.reset_metrics_cursor();
        s.quantized = Some(Quantized { model, params: s.params.clone() });
        s.gpu.check_errors()?;
        Ok(s)
    }

    /// Writes the model's tensors into `flat` (laid out like the run's weights): f32 ones
    /// uploaded, quantized ones dequantized on the GPU. A tensor that starts off the storage
    /// alignment (the second of a joined pair, `ParamSpec::joins_next`) cannot be bound there:
    /// it is dequantized into a tensor of its own and copied into place.
    fn dequantize_into(&self, model: &QuantizedModel, flat: &Tensor) -> Result<()> {
        let align = self.gpu.limits().min_storage_buffer_offset_alignment as usize / 4;
        let (mut ops, mut moves): (Vec<Op>, Vec<(Tensor, Tensor)>) = (vec![], vec![]);
        for (spec, stored) in &model.tensors {
            let e = self.params.entry(&spec.name);
            let target = flat.view(&spec.name, e.offset, spec.shape.clone());
            match stored {
                Stored::Full(values) => self.gpu.write(&target, values)?,
                Stored::Quantized(p) => {
                    let words = self.gpu.tensor_from(&format!("{} codes", spec.name), &[p.words.len()], &p.words)?;
                    let scales = self.gpu.tensor_from(&format!("{} scales", spec.name), &[p.scales.len()], &p.scales)?;
                    let biases = self.gpu.tensor_from(&format!("{} biases", spec.name), &[p.biases.len()], &p.biases)?;
                    let bindable = (e.offset + flat.offset() as usize / 4).is_multiple_of(align);
                    let out = if bindable { target.clone() } else { self.gpu.tensor(&spec.name, &spec.shape)? };
                    ops.push(affine_dequantize_bits(&self.gpu, model.opts.bits, &words, &scales, &biases, model.opts.group_size, &out)?);
                    if !bindable {
                        moves.push((out, target));
                    }
                }
            }
        }
        let pass = ops.iter().collect::<Vec<_>>();
        let copies = moves.iter().map(|(from, to)| Command::Copy { from, to });
        self.gpu.submit(&std::iter::once(Command::Pass(&pass)).chain(copies).collect::<Vec<_>>());
        self.gpu.check_errors()
    }
}

/// One tensor's line of the report, from the run's weights and the dequantized copy.
fn tensor_report(offset: usize, len: usize, name: &str, shape: &[usize], opts: &QuantizeOptions, before: &[f32], after: &[f32]) -> TensorQuantization {
    let kept_because = opts.kept_because(shape);
    let (w, q) = (&before[offset..offset + len], &after[offset..offset + len]);
    let diff: f64 = w.iter().zip(q).map(|(&a, &b)| (a as f64 - b as f64).powi(2)).sum();
    let norm: f64 = w.iter().map(|&a| (a as f64).powi(2)).sum();
    TensorQuantization {
        name: name.to_string(),
        shape: shape.to_vec(),
        quantized: kept_because.is_none(),
        bytes_after: if kept_because.is_some() { 4 * len } else { opts.bytes(len) },
        kept_because,
        relative_error: if norm > 0.0 { (diff / norm).sqrt() } else { 0.0 },
        bytes_before: 4 * len,
    }
}
