//! The shapes the JS API returns (npm package `kiln-gpu`, the page) and the queries behind
//! them that are not training itself. `src/web.rs` hands these to JS as objects; the test at
//! the end generates their TypeScript (js/kiln-types.d.ts) from the same structs.

use serde::Serialize;

use crate::config::{DataConfig, SessionConfig};
use crate::data::scaling::InputScaling;
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
    /// Bytes of GPU memory the run holds (weights, gradients, optimizer state, snapshots,
    /// activations), from Kiln's own count of its buffers.
    pub gpu_bytes: f64,
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
    /// The most validation tokens one `evaluate` call scores (its `maxTokens` limit).
    pub max_eval_tokens: usize,
    /// An MLP with `data.points.standardize`: the mean and standard deviation of each input
    /// column (from the training split) that the network's inputs are standardized with.
    pub input_scaling: Option<InputScaling>,
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
            gpu_bytes: s.gpu.live().bytes as f64,
            adapter: s.gpu.summary(),
            model,
            task,
            regression,
            classes: if regression { 0 } else { s.cfg.model.outputs() },
            batch: s.cfg.batch,
            examples_per_step,
            tokens_per_step: examples_per_step * context,
            max_eval_tokens: crate::session::evaluate::MAX_EVAL_TOKENS,
            input_scaling: s.data.scaling().cloned(),
            config: s.cfg.clone(),
        }
    }
}

#[cfg(test)]
mod typescript {
    //! js/kiln-types.d.ts is generated from the Rust types: `make types` writes it, and this
    //! test fails while the committed file differs from what the structs say.
    use ts_rs::TS;

    use super::*;

    const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/js/kiln-types.d.ts");

    fn generated() -> String {
        use crate::quantize::QuantizeOptions;
        use crate::session::{attention_maps, checkpoint, evaluate, generate, inspect, next_tokens, plane, quantize, recovery};
        use crate::{config, data, error, kernels, model, optim, param_layout, share};
        let decls = [
            error::ErrorCode::decl(),
            kernels::elementwise::Activation::decl(),
            model::mlp::MlpConfig::decl(),
            model::llama::Precision::decl(),
            model::llama::LlamaConfig::decl(),
            model::ModelConfig::decl(),
            data::PointTask::decl(),
            data::sequence::SequenceTask::decl(),
            config::PointData::decl(),
            data::scaling::InputScaling::decl(),
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
            plane::NeuronLayer::decl(),
            plane::NeuronOutputs::decl(),
            attention_maps::AttentionMaps::decl(),
            inspect::Distribution::decl(),
            inspect::TensorDistributions::decl(),
            inspect::LayerStats::decl(),
            inspect::Inspection::decl(),
            QuantizeOptions::decl(),
            quantize::TensorQuantization::decl(),
            quantize::QuantizeReport::decl(),
            PresetInfo::decl(),
            AdapterSummary::decl(),
            RunInfo::decl(),
            evaluate::Evaluation::decl(),
            param_layout::TensorSlot::decl(),
            param_layout::UpdateRatio::decl(),
            recovery::Recovered::decl(),
            share::Shared::decl(),
            checkpoint::CheckpointInfo::decl(),
            checkpoint::CheckpointDtype::decl(),
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
