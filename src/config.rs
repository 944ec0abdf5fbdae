//! `SessionConfig`: everything that defines a training run, as JSON (the page, the npm package
//! and checkpoints all carry it). `validate` checks each field and the fields against each
//! other, and every error names the field and what is allowed.

use serde::{Deserialize, Serialize};

use crate::data::points::PointTask;
use crate::data::sequence::SequenceTask;
use crate::error::{ensure, Result};
use crate::model::ModelConfig;
use crate::optim::OptimConfig;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(deny_unknown_fields)]
pub struct PointData {
    /// A generated set, or `custom` for the points in `csv`.
    pub task: PointTask,
    /// Points to generate, 1..=100000 (not used by `custom`).
    #[serde(default = "default_points")]
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub points: usize,
    /// Gaussian noise on the generated points (standard deviation), 0..=1 (not used by `custom`).
    #[serde(default = "default_noise")]
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub noise: f64,
    /// Fraction held out for validation, 0.05..=0.5.
    pub validation_fraction: f64,
    /// The user's own points as CSV lines `x,y,label` (label 0..=9) or `x,target`: task `custom`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub csv: Option<String>,
    /// Standardize each input column by the training split's mean and standard deviation
    /// (data/scaling.rs); default false: the inputs as given.
    #[serde(default, skip_serializing_if = "is_false")]
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub standardize: bool,
}

fn is_false(b: &bool) -> bool {
    !b
}

fn default_points() -> usize {
    2000
}
fn default_noise() -> f64 {
    0.03
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(deny_unknown_fields)]
pub struct TextData {
    /// The user's own text (64 characters to 1 MiB, 2..=256 distinct characters); omitted: the
    /// shipped corpus, Genesis (KJV).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub text: Option<String>,
    /// Fraction at the end held out for validation, 0.05..=0.5.
    pub validation_fraction: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(deny_unknown_fields)]
pub struct SequenceData {
    pub task: SequenceTask,
    /// Examples generated (one per line).
    pub examples: usize,
    /// Longest number in an example.
    pub digits: usize,
    /// Fraction at the end held out for validation, 0.05..=0.5.
    pub validation_fraction: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum DataConfig {
    Points(PointData),
    Text(TextData),
    Sequence(SequenceData),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(deny_unknown_fields)]
pub struct SessionConfig {
    pub model: ModelConfig,
    pub data: DataConfig,
    /// Examples per micro-batch: points for an MLP, sequences for a Llama.
    pub batch: usize,
    /// Missing fields take their defaults (AdamW, lr 0.01, clip 1, constant schedule).
    #[serde(default)]
    #[cfg_attr(test, ts(as = "Option<_>", optional))]
    pub optimizer: OptimConfig,
    /// Seeds the data, the initial weights and the batch sampler.
    #[serde(default)]
    #[cfg_attr(test, ts(as = "Option<usize>", optional))]
    pub seed: u64,
}

pub const MAX_BATCH: usize = 65_536;

impl SessionConfig {
    /// Parses JSON, naming the offending field on error.
    pub fn from_json(json: &str) -> Result<SessionConfig> {
        Self::checked(crate::parse::from_json(json, "config")?)
    }

    fn checked(mut cfg: SessionConfig) -> Result<SessionConfig> {
        // Before `custom` existed, own points were a generated task plus `csv`: still accepted.
        if let DataConfig::Points(p) = &mut cfg.data {
            if p.csv.is_some() {
                p.task = PointTask::Custom;
            }
        }
        cfg.validate()?;
        Ok(cfg)
    }

    /// True for an MLP fitting a curve with MSE (after validation: one output).
    pub fn is_regression(&self) -> bool {
        matches!(&self.model, ModelConfig::Mlp(m) if m.output_dim == 1)
    }

    pub fn validate(&self) -> Result<()> {
        self.model.validate()?;
        self.optimizer.validate()?;
        ensure((1..=MAX_BATCH).contains(&self.batch), "batch", || format!("must be 1..={MAX_BATCH}, got {}", self.batch))?;
        match (&self.model, &self.data) {
            (ModelConfig::Mlp(m), DataConfig::Points(d)) => {
                mlp_fits_points(m, d)?;
                validation_fraction(d.validation_fraction, "points")
            }
            (ModelConfig::Llama(l), DataConfig::Text(TextData { validation_fraction: f, .. })) => {
                validation_fraction(*f, "text")?;
                let rows = self.batch * l.context;
                ensure(rows <= 1 << 20, "batch", || format!("batch × context = {rows} tokens; at most {} per step", 1 << 20))
            }
            (ModelConfig::Llama(l), DataConfig::Sequence(SequenceData { validation_fraction: f, .. })) => {
                validation_fraction(*f, "sequence")?;
                let rows = self.batch * l.context;
                ensure(rows <= 1 << 20, "batch", || format!("batch × context = {rows} tokens; at most {} per step", 1 << 20))
            }
            (ModelConfig::Mlp(_), _) => Err(crate::KilnError::invalid("data", "an MLP trains on points: use {\"points\": …}")),
            (ModelConfig::Llama(_), _) => Err(crate::KilnError::invalid("data", "a Llama trains on text: use {\"text\": …} or {\"sequence\": …}")),
        }
    }
}

fn validation_fraction(f: f64, kind: &str) -> Result<()> {
    ensure((0.05..=0.5).contains(&f), &format!("data.{kind}.validation_fraction"), || format!("must be in [0.05, 0.5], got {f}"))
}

/// The MLP's input and output widths against the task: generated sets have 2 classes (or one
/// target), own points 1-D targets (`x,target`) or 2-D points with labels 0..=9.
fn mlp_fits_points(m: &crate::model::mlp::MlpConfig, d: &PointData) -> Result<()> {
    let task = d.task;
    if task == PointTask::Custom {
        ensure(d.csv.is_some(), "data.points.csv", || "the custom task trains on your own points: give them as CSV (`x,y,label` or `x,target` lines)".into())?;
        ensure(m.input_dim == 1 || m.input_dim == 2, "model.mlp.input_dim", || {
            format!("your points are 1-D (`x,target`) or 2-D (`x,y,label`), got {}", m.input_dim)
        })?;
        let outputs = if m.input_dim == 1 { 1..=1 } else { 2..=10 };
        return ensure(outputs.contains(&m.output_dim), "model.mlp.output_dim", || {
            format!("your {}-D points need {}..={} outputs, got {}", m.input_dim, outputs.start(), outputs.end(), m.output_dim)
        });
    }
    let name = serde_json::to_value(task).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
    ensure(m.input_dim == task.input_dim(), "model.mlp.input_dim", || format!("{name} has {}-D inputs, got {}", task.input_dim(), m.input_dim))?;
    let outputs = if task.is_regression() { 1 } else { 2 };
    ensure(m.output_dim == outputs, "model.mlp.output_dim", || {
        format!("{name} needs {outputs} output{}, got {}", if outputs == 1 { "" } else { "s" }, m.output_dim)
    })
}
