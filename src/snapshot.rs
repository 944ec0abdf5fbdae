//! Per-tensor views of a session's weights for the page and the npm package: the parameter
//! layout in model order, and the update/weight ratio ‖w_now − w_prev‖ / ‖w_now‖ of each tensor
//! since the previous look, computed on the CPU from a copy of the previous weights.

use serde::Serialize;

use crate::model::params::ParamStore;
use crate::model::ModelConfig;

/// Where one parameter tensor lives in the flat weights buffer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TensorSlot {
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
pub struct UpdateRatio {
    pub name: String,
    pub ratio: f64,
}

/// The weights as they were at the previous `ratios` call.
#[derive(Debug, Default)]
pub struct Snapshot {
    previous: Option<Vec<f32>>,
}

impl Snapshot {
    /// Forgets the previous weights (after a checkpoint load): the next call returns zeros.
    pub fn reset(&mut self) {
        self.previous = None;
    }

    /// ‖now − previous‖ / ‖now‖ per tensor (0 when the tensor is all zeros, and on the first
    /// call or after `reset`), then remembers `now`.
    pub fn ratios(&mut self, slots: &[TensorSlot], now: Vec<f32>) -> Vec<UpdateRatio> {
        let out = slots
            .iter()
            .map(|s| {
                let range = s.offset..(s.offset + s.len).min(now.len());
                let ratio = match &self.previous {
                    Some(prev) if prev.len() == now.len() => {
                        let (mut diff, mut norm) = (0.0f64, 0.0f64);
                        for (&a, &b) in now[range.clone()].iter().zip(&prev[range]) {
                            diff += (a as f64 - b as f64).powi(2);
                            norm += (a as f64).powi(2);
                        }
                        if norm > 0.0 { (diff / norm).sqrt() } else { 0.0 }
                    }
                    _ => 0.0,
                };
                UpdateRatio { name: s.name.clone(), ratio }
            })
            .collect();
        self.previous = Some(now);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(name: &str, offset: usize, len: usize) -> TensorSlot {
        TensorSlot { name: name.into(), shape: vec![len], offset, len }
    }

    #[test]
    fn first_call_is_zero_then_relative_change() {
        let slots = [slot("a", 0, 2), slot("b", 4, 1)];
        let mut s = Snapshot::default();
        let r = s.ratios(&slots, vec![3.0, 4.0, 9.0, 9.0, 2.0, 0.0]);
        assert!(r.iter().all(|u| u.ratio == 0.0));
        // a: ‖(0, 4) − (3, 4)‖ / ‖(0, 4)‖ = 3/4; b unchanged; padding ignored.
        let r = s.ratios(&slots, vec![0.0, 4.0, 1.0, 1.0, 2.0, 7.0]);
        assert_eq!(r[0], UpdateRatio { name: "a".into(), ratio: 0.75 });
        assert_eq!(r[1].ratio, 0.0);
        s.reset();
        assert!(s.ratios(&slots, vec![1.0; 6]).iter().all(|u| u.ratio == 0.0));
    }

    #[test]
    fn zero_weights_give_zero_not_nan() {
        let slots = [slot("z", 0, 2)];
        let mut s = Snapshot::default();
        s.ratios(&slots, vec![1.0, 1.0]);
        assert_eq!(s.ratios(&slots, vec![0.0, 0.0])[0].ratio, 0.0);
    }
}
