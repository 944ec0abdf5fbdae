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
#[serde(deny_unknown_fields)]
pub struct PointData {
    pub task: PointTask,
    pub points: usize,
    pub noise: f64,
    pub validation_fraction: f64,
    /// The user's own points as CSV (`x,y,label` or `x,target`); replaces the generated ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csv: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextData {
    /// The user's own text; None trains on the shipped corpus (data/genesis.txt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    pub validation_fraction: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequenceData {
    pub task: SequenceTask,
    /// Examples generated (one per line).
    pub examples: usize,
    /// Longest number in an example.
    pub digits: usize,
    pub validation_fraction: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataConfig {
    Points(PointData),
    Text(TextData),
    Sequence(SequenceData),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionConfig {
    pub model: ModelConfig,
    pub data: DataConfig,
    /// Examples per micro-batch: points for an MLP, sequences for a Llama.
    pub batch: usize,
    #[serde(default)]
    pub optimizer: OptimConfig,
    #[serde(default)]
    pub seed: u64,
}

pub const MAX_BATCH: usize = 65_536;

impl SessionConfig {
    /// Parses JSON, naming the offending field on error.
    pub fn from_json(json: &str) -> Result<SessionConfig> {
        let cfg: SessionConfig = serde_json::from_str(json).map_err(|e| crate::KilnError::invalid("config", e.to_string()))?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn validate(&self) -> Result<()> {
        self.model.validate()?;
        self.optimizer.validate()?;
        ensure((1..=MAX_BATCH).contains(&self.batch), "batch", || format!("must be 1..={MAX_BATCH}, got {}", self.batch))?;
        match (&self.model, &self.data) {
            (ModelConfig::Mlp(m), DataConfig::Points(d)) => {
                let task = d.task;
                ensure(m.input_dim == task.input_dim(), "model.mlp.input_dim", || format!("{task:?} has {}-D inputs, got {}", task.input_dim(), m.input_dim))?;
                // Generated sets have 2 classes; a CSV may use labels 0..=9 (checked when loaded).
                let outputs = match (task.is_regression(), &d.csv) {
                    (true, _) => 1..=1,
                    (false, None) => 2..=2,
                    (false, Some(_)) => 2..=10,
                };
                ensure(outputs.contains(&m.output_dim), "model.mlp.output_dim", || {
                    format!("{task:?} needs {}..={} outputs, got {}", outputs.start(), outputs.end(), m.output_dim)
                })?;
                validation_fraction(d.validation_fraction)
            }
            (ModelConfig::Llama(l), DataConfig::Text(TextData { validation_fraction: f, .. }) | DataConfig::Sequence(SequenceData { validation_fraction: f, .. })) => {
                validation_fraction(*f)?;
                let rows = self.batch * l.context;
                ensure(rows <= 1 << 20, "batch", || format!("batch × context = {rows} tokens; at most {} per step", 1 << 20))
            }
            (ModelConfig::Mlp(_), _) => Err(crate::KilnError::invalid("data", "an MLP trains on points: use {\"points\": …}")),
            (ModelConfig::Llama(_), _) => Err(crate::KilnError::invalid("data", "a Llama trains on text: use {\"text\": …} or {\"sequence\": …}")),
        }
    }
}

fn validation_fraction(f: f64) -> Result<()> {
    ensure((0.05..=0.5).contains(&f), "data.validation_fraction", || format!("must be in [0.05, 0.5], got {f}"))
}
