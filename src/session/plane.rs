//! An MLP over its input plane: the decision boundary (class probabilities on a grid) or the
//! fitted curve, and every neuron's output over the same points from the same single forward
//! pass, for the network view. 2-D classifiers use a size×size grid of cell centres over a
//! `PlaneBox` [xmin, xmax] × [ymin, ymax] (row-major, first row at the top, y = ymax side);
//! 1-D regression uses `size` evenly spaced x from xmin to xmax (both ends).

use serde::Serialize;

use crate::error::{KilnError, Result};
use crate::gpu::{Op, Tensor};
use crate::model::mlp::MlpConfig;
use crate::model::params::ParamStore;
use crate::model::ModelConfig;
use crate::session::Session;

/// Largest side of a decision-boundary grid, and most x values of a fitted curve.
pub const MAX_GRID: usize = 512;
pub const MAX_CURVE: usize = 65_536;
/// Most values one `neuron_outputs` returns (neurons × points): 16 MB of f32.
pub const MAX_NEURON_VALUES: usize = 1 << 22;

/// Largest |coordinate| a plane box may reach: ten times the ±1e6 of a CSV's points, so a view
/// around any of them fits with its margin.
pub const MAX_COORD: f64 = 1e7;

/// The part of the input plane a grid or curve covers: x from `xmin` to `xmax`, y from `ymin`
/// to `ymax` (a curve uses x alone). Only `PlaneBox::new` makes one, so every box is checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlaneBox {
    xmin: f64,
    xmax: f64,
    ymin: f64,
    ymax: f64,
}

impl PlaneBox {
    /// From `[e]` (the square [-e, e]²), `[xmin, xmax]` (y over the same range) or
    /// `[xmin, xmax, ymin, ymax]`; errors name `extent` and the value at fault.
    pub fn new(values: &[f64]) -> Result<Self> {
        if let Some((i, v)) = values.iter().enumerate().find(|(_, v)| !(v.is_finite() && v.abs() <= MAX_COORD)) {
            return Err(KilnError::invalid(format!("extent[{i}]"), format!("must be a finite number within ±{MAX_COORD}, got {v}")));
        }
        let [xmin, xmax, ymin, ymax] = match *values {
            [e] if e > 0.0 => [-e, e, -e, e],
            [e] => return Err(KilnError::invalid("extent", format!("a half-width must be above 0, got {e}"))),
            [lo, hi] => [lo, hi, lo, hi],
            [x0, x1, y0, y1] => [x0, x1, y0, y1],
            _ => {
                let n = values.len();
                let allowed = "a half-width e (the square [-e, e]²), [xmin, xmax] or [xmin, xmax, ymin, ymax]";
                return Err(KilnError::invalid("extent", format!("must be {allowed}; got {n} numbers")));
            }
        };
        for (axis, lo, hi) in [("x", xmin, xmax), ("y", ymin, ymax)] {
            if lo >= hi {
                return Err(KilnError::invalid("extent", format!("{axis}min ({lo}) must be below {axis}max ({hi})")));
            }
        }
        Ok(PlaneBox { xmin, xmax, ymin, ymax })
    }

    /// The square [-e, e]².
    pub fn square(e: f64) -> Result<Self> {
        Self::new(&[e])
    }

    /// [xmin, xmax, ymin, ymax].
    pub fn bounds(&self) -> [f64; 4] {
        [self.xmin, self.xmax, self.ymin, self.ymax]
    }
}

/// One layer of the network view.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct NeuronLayer {
    /// "input", "layer0" … (hidden layers, after the activation) or "output".
    pub name: String,
    pub neurons: usize,
    /// (neurons, points): each neuron's output at every point, neuron by neuron. The output
    /// layer holds class probabilities (classification) or the prediction (regression).
    pub values: Vec<f32>,
}

/// Every neuron's output over the plane's points.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct NeuronOutputs {
    /// size (a curve's x values, or a grid's side).
    pub size: usize,
    /// Points per neuron: size² for a grid, size for a curve.
    pub points: usize,
    pub layers: Vec<NeuronLayer>,
}

impl Session {
    /// Class probabilities (size, size, classes) on the grid, or the curve's predictions (size).
    pub async fn predict_grid(&self, size: usize, extent: &PlaneBox) -> Result<Vec<f32>> {
        self.predict_grid_with(&self.params, size, extent).await
    }

    /// `predict_grid` with these weights (the run's, or its quantized copy).
    pub async fn predict_grid_with(&self, params: &ParamStore, size: usize, extent: &PlaneBox) -> Result<Vec<f32>> {
        let (mlp, inputs) = self.plane(size, extent)?;
        let out = self.predict_with(params, inputs.len() / mlp.input_dim, &inputs).await?;
        Ok(if self.cfg.is_regression() { out } else { out.chunks_exact(mlp.output_dim).flat_map(softmax).collect() })
    }

    /// Every neuron's output at the plane's points, from one forward pass: the inputs (as the
    /// network sees them: standardized, when the run is), each hidden layer's activations and
    /// the outputs (probabilities, or the prediction).
    pub async fn neuron_outputs(&self, size: usize, extent: &PlaneBox) -> Result<NeuronOutputs> {
        let (mlp, inputs) = self.plane(size, extent)?;
        let points = inputs.len() / mlp.input_dim;
        let neurons = mlp.input_dim + mlp.hidden.iter().sum::<usize>() + mlp.output_dim;
        if neurons * points > MAX_NEURON_VALUES {
            return Err(KilnError::invalid("size", format!("{neurons} neurons × {points} points is over {MAX_NEURON_VALUES} values; use a smaller size")));
        }
        let net = self.cfg.model.build(&self.gpu, &self.params, points, false)?;
        self.gpu.write(&net.input, &inputs)?;
        self.gpu.run(&net.forward.iter().collect::<Vec<&Op>>())?;
        // Every hidden layer and the output in one readback.
        let tapped: Vec<&Tensor> = net.taps.layers.iter().map(|(_, h)| h).chain([&net.output]).collect();
        let mut read = self.gpu.read_many_f32(&tapped).await?;
        let out = read.pop().expect("the output was read");
        let mut layers = vec![neuron_major("input", &inputs, mlp.input_dim)];
        for ((name, h), values) in net.taps.layers.iter().zip(&read) {
            layers.push(neuron_major(name, values, h.shape()[1]));
        }
        let out = if self.cfg.is_regression() { out } else { out.chunks_exact(mlp.output_dim).flat_map(softmax).collect() };
        layers.push(neuron_major("output", &out, mlp.output_dim));
        Ok(NeuronOutputs { size, points, layers })
    }

    /// The MLP and its inputs over the plane: (points, input_dim) f32.
    fn plane(&self, size: usize, b: &PlaneBox) -> Result<(&MlpConfig, Vec<f32>)> {
        let ModelConfig::Mlp(mlp) = &self.cfg.model else {
            return Err(KilnError::invalid("model", "the input plane is an MLP's; a Llama predicts text (use generate)"));
        };
        // Cell centres: the grid's cells split each range into `size` equal parts.
        let centre = |lo: f64, hi: f64, i: usize| lo + (i as f64 + 0.5) * (hi - lo) / size as f64;
        let mut inputs: Vec<f32> = match (self.cfg.is_regression(), mlp.input_dim) {
            (true, 1) => {
                if !(2..=MAX_CURVE).contains(&size) {
                    return Err(KilnError::invalid("size", format!("must be 2..={MAX_CURVE} for a regression curve, got {size}")));
                }
                (0..size).map(|i| (b.xmin + i as f64 * (b.xmax - b.xmin) / (size - 1) as f64) as f32).collect()
            }
            (false, 2) => {
                if !(1..=MAX_GRID).contains(&size) {
                    return Err(KilnError::invalid("size", format!("must be 1..={MAX_GRID} for a 2-D grid, got {size}")));
                }
                // Rows count down from ymax: the first row is the top.
                (0..size * size).flat_map(|i| [centre(b.xmin, b.xmax, i % size) as f32, centre(b.ymax, b.ymin, i / size) as f32]).collect()
            }
            (_, d) => {
                return Err(KilnError::invalid(
                    "model",
                    format!("the input plane needs 2-D classification or 1-D regression points; this MLP takes {d}-D inputs"),
                ))
            }
        };
        // The box is in the points' coordinates; the network sees them standardized.
        if let Some(scaling) = self.data.scaling() {
            scaling.apply(&mut inputs);
        }
        Ok((mlp, inputs))
    }
}

/// (points, width) row-major values as (width, points).
fn neuron_major(name: &str, values: &[f32], width: usize) -> NeuronLayer {
    let points = values.len() / width;
    let values = (0..width).flat_map(|n| (0..points).map(move |p| values[p * width + n])).collect();
    NeuronLayer { name: name.into(), neurons: width, values }
}

/// softmax(row), computed stably in f64; NaN everywhere when the logits are not finite.
fn softmax(row: &[f32]) -> Vec<f32> {
    let max = row.iter().map(|&x| x as f64).fold(f64::NEG_INFINITY, f64::max);
    let exps: Vec<f64> = row.iter().map(|&x| (x as f64 - max).exp()).collect();
    let sum: f64 = exps.iter().sum();
    exps.iter().map(|e| if sum.is_finite() && sum > 0.0 { (e / sum) as f32 } else { f32::NAN }).collect()
}
