//! The shapes the JS API returns (npm package `kiln-gpu`, the page) and the queries behind
//! them that are not training itself. `src/web.rs` hands these to JS as objects; the test at
//! the end generates their TypeScript (js/kiln-types.d.ts) from the same structs.

use serde::Serialize;

use crate::config::{DataConfig, SessionConfig};
use crate::error::{KilnError, Result};
use crate::gpu::AdapterSummary;
use crate::model::ModelConfig;
use crate::session::Session;

/// One built-in preset.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PresetInfo {
    pub name: String,
    pub description: String,
}

/// What a run is: its size, the device it runs on and its validated config.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct RunInfo {
    /// Trainable parameters.
    pub parameters: usize,
    /// GPU dispatches per optimizer step.
    pub dispatches_per_step: usize,
    pub adapter: AdapterSummary,
    #[cfg_attr(test, ts(type = "'mlp' | 'llama'"))]
    pub model: &'static str,
    /// The point task or sequence task, or 'text' for a Llama on text.
    #[cfg_attr(test, ts(type = "PointTask | SequenceTask | 'text'"))]
    pub task: String,
    /// True for an MLP fitting a curve (MSE).
    pub regression: bool,
    /// Output classes (the vocabulary for a Llama); 0 for regression.
    pub classes: usize,
    pub batch: usize,
    /// batch × accumulation.
    pub examples_per_step: usize,
    /// examplesPerStep × context (= examplesPerStep for an MLP).
    pub tokens_per_step: usize,
    /// The validated config, every default filled in.
    pub config: SessionConfig,
}

impl RunInfo {
    pub fn of(s: &Session) -> RunInfo {
        let (model, context) = match &s.cfg.model {
            ModelConfig::Mlp(_) => ("mlp", 1),
            ModelConfig::Llama(l) => ("llama", l.context),
        };
        let name = |v: serde_json::Result<serde_json::Value>| v.ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        let task = match &s.cfg.data {
            DataConfig::Points(p) => name(serde_json::to_value(p.task)),
            DataConfig::Text(_) => "text".into(),
            DataConfig::Sequence(q) => name(serde_json::to_value(q.task)),
        };
        let regression = s.cfg.is_regression();
        let examples_per_step = s.cfg.batch * s.cfg.optimizer.accumulation as usize;
        RunInfo {
            parameters: s.params.count(),
            dispatches_per_step: s.dispatches_per_step(),
            adapter: s.gpu.summary(),
            model,
            task,
            regression,
            classes: if regression { 0 } else { s.cfg.model.outputs() },
            batch: s.cfg.batch,
            examples_per_step,
            tokens_per_step: examples_per_step * context,
            config: s.cfg.clone(),
        }
    }
}

/// Largest side of a decision-boundary grid, and most x values of a fitted curve.
pub const MAX_GRID: usize = 512;
pub const MAX_CURVE: usize = 65_536;

impl Session {
    /// A 2-D classifier's class probabilities on a `size`×`size` grid of cell centres over
    /// [-extent, extent]² ((size, size, classes), row-major, first row at y = +extent), or a
    /// regression MLP's predictions at `size` evenly spaced x in [-extent, extent] (both ends).
    pub async fn predict_grid(&self, size: usize, extent: f64) -> Result<Vec<f32>> {
        let ModelConfig::Mlp(mlp) = &self.cfg.model else {
            return Err(KilnError::invalid("model", "predictGrid needs an MLP; a Llama predicts text (use generate)"));
        };
        if !(extent.is_finite() && extent > 0.0 && extent <= 1e6) {
            return Err(KilnError::invalid("extent", format!("must be a number in (0, 1e6], got {extent}")));
        }
        let at = |i: usize, n: usize| -extent + (i as f64 + 0.5) * 2.0 * extent / n as f64;
        match (self.cfg.is_regression(), mlp.input_dim) {
            (true, 1) => {
                if !(2..=MAX_CURVE).contains(&size) {
                    return Err(KilnError::invalid("size", format!("must be 2..={MAX_CURVE} for a regression curve, got {size}")));
                }
                let xs: Vec<f32> = (0..size).map(|i| (-extent + i as f64 * 2.0 * extent / (size - 1) as f64) as f32).collect();
                self.predict(size, &xs).await
            }
            (false, 2) => {
                if !(1..=MAX_GRID).contains(&size) {
                    return Err(KilnError::invalid("size", format!("must be 1..={MAX_GRID} for a 2-D grid, got {size}")));
                }
                let inputs: Vec<f32> = (0..size * size).flat_map(|i| [at(i % size, size) as f32, -at(i / size, size) as f32]).collect();
                let logits = self.predict(size * size, &inputs).await?;
                Ok(logits.chunks_exact(mlp.output_dim).flat_map(softmax).collect())
            }
            (_, d) => Err(KilnError::invalid("model", format!("predictGrid needs 2-D classification or 1-D regression points; this MLP takes {d}-D inputs"))),
        }
    }
}

/// softmax(row), computed stably in f64; NaN everywhere when the logits are not finite.
fn softmax(row: &[f32]) -> Vec<f32> {
    let max = row.iter().map(|&x| x as f64).fold(f64::NEG_INFINITY, f64::max);
    let exps: Vec<f64> = row.iter().map(|&x| (x as f64 - max).exp()).collect();
    let sum: f64 = exps.iter().sum();
    exps.iter().map(|e| if sum.is_finite() && sum > 0.0 { (e / sum) as f32 } else { f32::NAN }).collect()
}

#[cfg(test)]
mod typescript {
    //! js/kiln-types.d.ts is generated from the Rust types: `make types` writes it, and this
    //! test fails while the committed file differs from what the structs say.
    use ts_rs::TS;

    use super::*;

    const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/js/kiln-types.d.ts");

    fn generated() -> String {
        use crate::session::{checkpoint, evaluate, generate, next_tokens, recovery};
        use crate::{config, data, error, kernels, model, optim, param_layout, share};
        let decls = [
            error::ErrorCode::decl(),
            kernels::elementwise::Activation::decl(),
            model::mlp::MlpConfig::decl(),
            model::llama::LlamaConfig::decl(),
            model::ModelConfig::decl(),
            data::PointTask::decl(),
            data::sequence::SequenceTask::decl(),
            config::PointData::decl(),
            config::TextData::decl(),
            config::SequenceData::decl(),
            config::DataConfig::decl(),
            optim::OptimizerKind::decl(),
            optim::Schedule::decl(),
            optim::OptimConfig::decl(),
            config::SessionConfig::decl(),
            generate::GenerateOptions::decl(),
            next_tokens::TokenGuess::decl(),
            next_tokens::PositionGuesses::decl(),
            PresetInfo::decl(),
            AdapterSummary::decl(),
            RunInfo::decl(),
            evaluate::Evaluation::decl(),
            param_layout::TensorSlot::decl(),
            param_layout::UpdateRatio::decl(),
            recovery::Recovered::decl(),
            share::Shared::decl(),
            checkpoint::CheckpointInfo::decl(),
        ];
        let mut out = String::from(
            "// GENERATED by `make types` from the Rust structs (src/api.rs, ts-rs): do not edit.\n\
             // The config types are the serde JSON of `SessionConfig` (snake_case, externally tagged\n\
             // enums); the result types are camelCase.\n\n",
        );
        for d in decls {
            out.push_str("export ");
            out.push_str(&d);
            out.push_str("\n\n");
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
        out
    }

    #[test]
    fn committed_types_match_the_rust_structs() {
        let fresh = generated();
        if std::env::var_os("KILN_WRITE_TYPES").is_some() {
            std::fs::write(PATH, &fresh).unwrap();
        }
        let committed = std::fs::read_to_string(PATH).unwrap_or_default();
        assert!(committed == fresh, "js/kiln-types.d.ts is stale: run `make types` and commit it");
    }
}
