//! Per-tensor views of a session's weights for the page and the npm package: the parameter
//! layout in model order, and the shape of an update/weight ratio (computed on the GPU by
//! `record_metrics`, read from `Session::update_ratios`).

use serde::Serialize;

use crate::model::params::ParamStore;
use crate::model::ModelConfig;

/// Where one parameter tensor lives in the flat weights buffer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TensorSlot {
    /// e.g. "layer0.weight", "blocks.0.attn.wq".
    pub name: String,
    pub shape: Vec<usize>,
    /// Element offset in the flat buffer.
    pub offset: usize,
    pub len: usize,
}

/// The parameter tensors in the model's own order (layer by layer), not the buffer's
/// (decayed tensors first).
pub fn layout(model: &ModelConfig, params: &ParamStore) -> Vec<TensorSlot> {
    model
        .param_specs()
        .into_iter()
        .filter_map(|spec| {
            let entry = params.entries.iter().find(|e| e.spec.name == spec.name)?;
            Some(TensorSlot { name: spec.name, shape: spec.shape.clone(), offset: entry.offset, len: spec.shape.iter().product() })
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct UpdateRatio {
    pub name: String,
    /// ‖Δw‖ / ‖w‖ at the last step trained (GPU-computed each step); 0 before any step.
    pub ratio: f64,
}
