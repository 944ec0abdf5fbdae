//! Kiln's MLP export (torch_export.rs), trained further anywhere (python/train_mlp.py writes
//! the same folder), back into a Kiln run: kiln_config.json gives the config and step,
//! model.safetensors the nn.Sequential's state dict ("0.weight", "0.bias", "2.weight", …).
//! Every tensor must be there with its shape, and no other.

use std::collections::HashMap;

use safetensors::SafeTensors;
use serde_json::Value;

use crate::config::SessionConfig;
use crate::error::Result;
use crate::gpu::Gpu;
use crate::model::ModelConfig;
use crate::session::hf_import::{read_tensor, refuse};
use crate::session::Session;

impl Session {
    /// A run from an MLP export folder's files (name → bytes).
    pub fn from_torch(gpu: Gpu, files: &HashMap<String, Vec<u8>>) -> Result<Session> {
        let file = |name: &str| files.get(name).ok_or_else(|| refuse(name, "is missing from the folder"));
        let kiln: Value = serde_json::from_slice(file("kiln_config.json")?).map_err(|e| refuse("kiln_config.json", format!("is not JSON: {e}")))?;
        let config = kiln.get("kiln_config").ok_or_else(|| refuse("kiln_config.json: kiln_config", "is missing"))?;
        let cfg = SessionConfig::from_json(&config.to_string()).map_err(|e| refuse("kiln_config.json: kiln_config", e.to_string()))?;
        let ModelConfig::Mlp(mlp) = &cfg.model else { return Err(refuse("kiln_config.json: kiln_config", "holds a Llama: import its Hugging Face folder")) };
        let dims = mlp.layer_dims();
        let tensors =
            SafeTensors::deserialize(file("model.safetensors")?).map_err(|e| refuse("model.safetensors", format!("is not a valid safetensors file: {e}")))?;
        let mut weights = vec![];
        for (l, &(fan_in, out)) in dims.iter().enumerate() {
            for (part, shape) in [("weight", vec![out, fan_in]), ("bias", vec![out])] {
                weights.push((format!("layer{l}.{part}"), read_tensor(&tensors, "model.safetensors", &format!("{}.{part}", 2 * l), &shape)?));
            }
        }
        if tensors.len() != weights.len() {
            let known: Vec<String> = (0..dims.len()).flat_map(|l| [format!("{}.weight", 2 * l), format!("{}.bias", 2 * l)]).collect();
            let extra = tensors.names().into_iter().find(|n| !known.iter().any(|k| k == n)).unwrap_or_default();
            return Err(refuse("model.safetensors", format!("tensor `{extra}`: the MLP of kiln_config has no such layer")));
        }
        let mut s = Session::with_gpu(gpu, cfg)?;
        s.install_weights(&weights, kiln["kiln_step"].as_u64().unwrap_or(0))?;
        Ok(s)
    }
}
