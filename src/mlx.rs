//! A quantized Kiln model as an MLX-layout safetensors file. A quantized matrix `m.weight` (or
//! `m`) is stored as `m.weight` (U32 codes, (rows, cols / codes per word)), `m.scales` and
//! `m.biases` (F32, (rows, cols / group_size)); every other tensor under its own name as F32.
//! The metadata holds `format` "mlx", `quantization` {"group_size", "bits"}, and Kiln's config
//! and step (`kiln_config`, `kiln_step`), so Kiln can load the file back. Decoding checks the
//! whole file against the config's model before anything is built from it.

use std::collections::HashMap;

use safetensors::tensor::{Dtype, TensorView};
use safetensors::SafeTensors;

use crate::config::SessionConfig;
use crate::error::{KilnError, Result};
use crate::model::params::ParamSpec;
use crate::quantize::{Packed, QuantizeOptions};
use crate::session::checkpoint::MAX_CHECKPOINT_BYTES;

pub const FORMAT: &str = "mlx";

/// How one parameter tensor is stored.
#[derive(Debug, Clone, PartialEq)]
pub enum Stored {
    Quantized(Packed),
    Full(Vec<f32>),
}

/// A quantized model: every parameter tensor of the config's model, quantized or in f32.
#[derive(Debug, Clone)]
pub struct QuantizedModel {
    pub config: SessionConfig,
    pub step: u64,
    pub opts: QuantizeOptions,
    pub tensors: Vec<(ParamSpec, Stored)>,
}

fn bad(message: impl Into<String>) -> KilnError {
    KilnError::BadCheckpoint(message.into())
}

/// The MLX module a weight belongs to: "layer0.weight" → "layer0", "blocks.0.qkv" stays.
pub fn module(name: &str) -> &str {
    name.strip_suffix(".weight").unwrap_or(name)
}

/// (rows, cols / per_word) codes and (rows, cols / group) scales of a quantized (rows, cols).
fn packed_shapes(shape: &[usize], opts: &QuantizeOptions) -> ([usize; 2], [usize; 2]) {
    let (rows, cols) = (shape[0], shape[1]);
    ([rows, cols / opts.per_word()], [rows, cols / opts.group_size])
}

pub fn encode(m: &QuantizedModel) -> Result<Vec<u8>> {
    let mut parts: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = vec![];
    for (spec, stored) in &m.tensors {
        match stored {
            Stored::Full(values) => parts.push((spec.name.clone(), Dtype::F32, spec.shape.clone(), bytemuck::cast_slice(values).to_vec())),
            Stored::Quantized(p) => {
                let (codes, groups) = packed_shapes(&spec.shape, &m.opts);
                let base = module(&spec.name);
                parts.push((format!("{base}.weight"), Dtype::U32, codes.to_vec(), bytemuck::cast_slice(&p.words).to_vec()));
                parts.push((format!("{base}.scales"), Dtype::F32, groups.to_vec(), bytemuck::cast_slice(&p.scales).to_vec()));
                parts.push((format!("{base}.biases"), Dtype::F32, groups.to_vec(), bytemuck::cast_slice(&p.biases).to_vec()));
            }
        }
    }
    let views = parts
        .iter()
        .map(|(name, dtype, shape, bytes)| Ok((name.clone(), TensorView::new(*dtype, shape.clone(), bytes).map_err(|e| bad(e.to_string()))?)))
        .collect::<Result<Vec<_>>>()?;
    let quantization = serde_json::json!({ "group_size": m.opts.group_size, "bits": m.opts.bits }).to_string();
    let metadata = HashMap::from([
        ("format".to_string(), FORMAT.to_string()),
        ("quantization".to_string(), quantization),
        ("kiln_config".to_string(), serde_json::to_string(&m.config).map_err(|e| bad(e.to_string()))?),
        ("kiln_step".to_string(), m.step.to_string()),
    ]);
    safetensors::serialize(views, Some(metadata.into_iter().collect())).map_err(|e| bad(e.to_string()))
}

/// Whether `bytes` claim to be a quantized model (a safetensors header with `format` "mlx").
pub fn is_quantized_file(bytes: &[u8]) -> bool {
    SafeTensors::read_metadata(bytes).ok().and_then(|(_, m)| m.metadata().as_ref().and_then(|m| m.get("format").cloned())).as_deref() == Some(FORMAT)
}

/// Parses and checks a file written by `encode` (or by MLX in the same layout, with Kiln's metadata).
pub fn decode(bytes: &[u8]) -> Result<QuantizedModel> {
    if bytes.len() > MAX_CHECKPOINT_BYTES {
        return Err(bad(format!("it is {} bytes; at most {MAX_CHECKPOINT_BYTES}", bytes.len())));
    }
    let (_, meta) = SafeTensors::read_metadata(bytes).map_err(|e| bad(format!("not a quantized model (not a valid safetensors file: {e})")))?;
    let file = SafeTensors::deserialize(bytes).map_err(|e| bad(format!("not a valid safetensors file: {e}")))?;
    let metadata: HashMap<String, String> = meta.metadata().clone().unwrap_or_default().into_iter().collect();
    let field = |key: &str| metadata.get(key).ok_or_else(|| bad(format!("metadata `{key}` is missing (Kiln loads MLX files that it wrote)")));
    if field("format")? != FORMAT {
        return Err(bad(format!("metadata `format` must be `{FORMAT}`")));
    }
    let opts = options(field("quantization")?)?;
    let config = SessionConfig::from_json(field("kiln_config")?).map_err(|e| bad(format!("its config is invalid: {e}")))?;
    let step = field("kiln_step")?.parse::<u64>().map_err(|_| bad("metadata `kiln_step` is not a number"))?;
    let specs = config.model.param_specs();
    let mut expected = vec![];
    let mut tensors = vec![];
    for spec in specs {
        let stored = if opts.kept_because(&spec.shape).is_some() {
            expected.push(spec.name.clone());
            Stored::Full(read(&file, &spec.name, Dtype::F32, &spec.shape, "this model's weights")?)
        } else {
            let (codes, groups) = packed_shapes(&spec.shape, &opts);
            let base = module(&spec.name);
            let what = format!("{}-bit codes of a {}×{} matrix", opts.bits, spec.shape[0], spec.shape[1]);
            let words = read(&file, &format!("{base}.weight"), Dtype::U32, &codes, &what)?;
            let per_group = format!("one per group of {} of a {}×{} matrix", opts.group_size, spec.shape[0], spec.shape[1]);
            let scales = read(&file, &format!("{base}.scales"), Dtype::F32, &groups, &per_group)?;
            let biases = read(&file, &format!("{base}.biases"), Dtype::F32, &groups, &per_group)?;
            expected.extend(["weight", "scales", "biases"].map(|s| format!("{base}.{s}")));
            Stored::Quantized(Packed { words, scales, biases })
        };
        tensors.push((spec, stored));
    }
    if let Some(extra) = file.names().into_iter().find(|n| !expected.iter().any(|e| e == *n)) {
        return Err(bad(format!("tensor `{extra}` is not part of this model")));
    }
    Ok(QuantizedModel { config, step, opts, tensors })
}

/// `quantization` metadata: {"group_size": 32|64|128, "bits": 4|8}.
fn options(json: &str) -> Result<QuantizeOptions> {
    #[derive(serde::Deserialize)]
    struct Meta {
        group_size: usize,
        bits: u32,
    }
    let m: Meta = serde_json::from_str(json).map_err(|e| bad(format!("metadata `quantization` must be {{\"group_size\": …, \"bits\": …}}: {e}")))?;
    let opts = QuantizeOptions { bits: m.bits, group_size: m.group_size };
    opts.validate().map_err(|e| bad(format!("metadata `quantization`: {e}")))?;
    Ok(opts)
}

/// Tensor `name`'s words, checked for dtype, shape and (for floats) finiteness.
fn read<T: bytemuck::Pod + Copy>(file: &SafeTensors<'_>, name: &str, dtype: Dtype, shape: &[usize], what: &str) -> Result<Vec<T>> {
    let view = file.tensor(name).map_err(|_| bad(format!("tensor `{name}` is missing")))?;
    if view.dtype() != dtype {
        return Err(bad(format!("tensor `{name}` is {:?}; {what} are {dtype:?}", view.dtype())));
    }
    if view.shape() != shape {
        return Err(bad(format!("tensor `{name}` has shape {:?}; {what} need {shape:?}", view.shape())));
    }
    let words: Vec<T> = bytemuck::pod_collect_to_vec(view.data());
    if dtype == Dtype::F32 {
        let floats: &[f32] = bytemuck::cast_slice(&words);
        if let Some(i) = floats.iter().position(|v| !v.is_finite()) {
            return Err(bad(format!("tensor `{name}` holds a non-finite value ({}) at index {i}", floats[i])));
        }
    }
    Ok(words)
}
