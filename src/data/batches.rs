//! `Batches`: a run's training and validation data and the seeded sampler that cuts it into
//! batches: points for an MLP, windows of tokens for a Llama.

use crate::config::DataConfig;
use crate::data::points::{from_csv, generate, Points};
use crate::data::scaling::InputScaling;
use crate::data::sequence::generate_text;
use crate::data::text::{genesis, TextCorpus};
use crate::error::{ensure, Result};
use crate::rng::Rng;

pub enum Batches {
    /// `train` and `val` as the model sees them: standardized when `scaled` is set, which then
    /// keeps the scaling and the points as given.
    Points {
        train: Points,
        val: Points,
        scaled: Option<Box<Scaled>>,
    },
    Text {
        corpus: TextCorpus,
        context: usize,
    },
}

/// A run's standardized inputs: the scaling, and both splits as given.
pub struct Scaled {
    pub scaling: InputScaling,
    pub train: Points,
    pub val: Points,
}

/// One batch, ready to upload.
pub enum Batch {
    /// inputs (B, d) and class labels (B)
    Classes(Vec<f32>, Vec<u32>),
    /// inputs (B, d) and regression targets (B)
    Values(Vec<f32>, Vec<f32>),
    /// tokens (B·T) and next tokens (B·T)
    Tokens(Vec<u32>, Vec<u32>),
}

impl Batches {
    /// `context` is tokens per text window; `outputs` the model's output width.
    pub fn new(cfg: &DataConfig, context: usize, outputs: usize, seed: u64) -> Result<Batches> {
        Ok(match cfg {
            DataConfig::Points(d) => {
                let all = match &d.csv {
                    Some(csv) => from_csv(csv, outputs == 1)?,
                    None => generate(d.task, d.points, d.noise, seed)?,
                };
                ensure(all.classes <= outputs, "model.mlp.output_dim", || {
                    format!("the points use {} classes; output_dim must be at least that, got {outputs}", all.classes)
                })?;
                let field = if d.csv.is_some() { "data.points.csv" } else { "data.points.points" };
                ensure(all.len() >= 4, field, || format!("at least 4 points are needed, got {}", all.len()))?;
                let (train, val) = all.split(d.validation_fraction, seed ^ 1);
                if !d.standardize {
                    return Ok(Batches::Points { train, val, scaled: None });
                }
                let scaling = InputScaling::of(&train);
                let (model_train, model_val) = (scaling.standardized(&train), scaling.standardized(&val));
                Batches::Points { train: model_train, val: model_val, scaled: Some(Box::new(Scaled { scaling, train, val })) }
            }
            DataConfig::Text(t) => {
                let text: &str = match &t.text {
                    Some(own) => own,
                    None => genesis()?,
                };
                Self::text(TextCorpus::new(text, t.validation_fraction)?, context, t.validation_fraction)?
            }
            DataConfig::Sequence(q) => {
                Self::text(TextCorpus::new(&generate_text(q.task, q.examples, q.digits, seed)?, q.validation_fraction)?, context, q.validation_fraction)?
            }
        })
    }

    fn text(corpus: TextCorpus, context: usize, val_fraction: f64) -> Result<Batches> {
        corpus.check_context(context, val_fraction)?;
        Ok(Batches::Text { corpus, context })
    }

    pub fn sample(&self, rng: &mut Rng, batch: usize, validation: bool) -> Batch {
        match self {
            Batches::Points { train, val, .. } => {
                let set = if validation { val } else { train };
                let d = set.input_dim;
                let picks: Vec<usize> = (0..batch).map(|_| rng.below(set.len())).collect();
                let inputs = picks.iter().flat_map(|&i| set.inputs[i * d..(i + 1) * d].iter().copied()).collect();
                if set.labels.is_empty() {
                    Batch::Values(inputs, picks.iter().map(|&i| set.targets[i]).collect())
                } else {
                    Batch::Classes(inputs, picks.iter().map(|&i| set.labels[i]).collect())
                }
            }
            Batches::Text { corpus, context } => {
                let (x, y) = corpus.batch(rng, batch, *context, validation);
                Batch::Tokens(x, y)
            }
        }
    }

    pub fn corpus(&self) -> Option<&TextCorpus> {
        match self {
            Batches::Text { corpus, .. } => Some(corpus),
            Batches::Points { .. } => None,
        }
    }

    /// A split as the model sees it (standardized, when the run asks).
    pub fn points(&self, validation: bool) -> Option<&Points> {
        match self {
            Batches::Points { train, val, .. } => Some(if validation { val } else { train }),
            Batches::Text { .. } => None,
        }
    }

    /// A split as given: before any standardization, for showing and exporting the points.
    pub fn given_points(&self, validation: bool) -> Option<&Points> {
        match self {
            Batches::Points { scaled: Some(s), .. } => Some(if validation { &s.val } else { &s.train }),
            _ => self.points(validation),
        }
    }

    /// The standardization of the inputs, if the run has one.
    pub fn scaling(&self) -> Option<&InputScaling> {
        match self {
            Batches::Points { scaled: Some(s), .. } => Some(&s.scaling),
            _ => None,
        }
    }
}
