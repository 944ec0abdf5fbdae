//! Checkpoints as safetensors: every parameter under its own name, AdamW/SGD state under
//! `optimizer.m.<name>` / `optimizer.v.<name>`, and in the metadata the config (JSON), the step
//! and the data sampler's state, so a loaded run continues exactly as it would have. Loading
//! validates the whole file before touching the running model.
//!
//! An F16 checkpoint (metadata `dtype` "f16", half the file) holds every tensor as F16, cast on
//! the GPU by the seed's `fp32_to_fp16`. AdamW's second moment v ≈ g² falls below f16's
//! smallest value (6e-8) for gradients under 2.4e-4, and a v read back as 0 would make the next
//! update m / eps; so the file stores sqrt(v) (`optimizer.sqrt_v.<name>`, in the gradients'
//! own range) and loading squares it. Loading widens F16 on the CPU with the exact conversion
//! (every f16 is an f32; it matches the GPU's `fp16_to_fp32` bit for bit, kernel tests), since
//! the whole file is checked, and kept as the recovery snapshot, before the model changes.

use std::collections::HashMap;
use std::sync::Arc;

use safetensors::tensor::{Dtype, TensorView};
use safetensors::SafeTensors;

use crate::config::SessionConfig;
use crate::error::{KilnError, Result};
use crate::gpu::{Gpu, Tensor};
use crate::kernels::quant::{fp32_to_fp16, reference::f16_to_f32};
use crate::model::params::Layout;
use crate::model::ModelConfig;
use crate::session::recovery::Snapshot;
use crate::session::Session;

const FORMAT: &str = "kiln-checkpoint-1";
/// Largest checkpoint accepted: more than any model a playground trains.
pub const MAX_CHECKPOINT_BYTES: usize = 1 << 30;

fn bad(message: impl Into<String>) -> KilnError {
    KilnError::BadCheckpoint(message.into())
}

/// How a checkpoint stores its numbers (JS: `save({ dtype: 'f16' })`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum CheckpointDtype {
    /// Exact: a loaded run continues bit for bit.
    #[default]
    F32,
    /// Half the file; weights rounded to f16 (about 3 significant digits).
    F16,
}

/// The tensor-name prefixes of the three flat buffers in a file of `dtype`.
fn prefixes(dtype: CheckpointDtype) -> [&'static str; 3] {
    match dtype {
        CheckpointDtype::F32 => ["", "optimizer.m.", "optimizer.v."],
        CheckpointDtype::F16 => ["", "optimizer.m.", "optimizer.sqrt_v."],
    }
}

impl Session {
    /// Serializes weights, optimizer state, config, step and sampler state, in f32.
    pub async fn save_checkpoint(&self) -> Result<Vec<u8>> {
        self.save_checkpoint_as(CheckpointDtype::F32).await
    }

    /// `save_checkpoint` in f32, or in f16 (half the file; see the module notes).
    pub async fn save_checkpoint_as(&self, dtype: CheckpointDtype) -> Result<Vec<u8>> {
        let flat: [Vec<u8>; 3] = match dtype {
            CheckpointDtype::F32 => {
                self.gpu.read_many(&[&self.params.weights, &self.params.m, &self.params.v]).await?.try_into().map_err(|_| bad("readback"))?
            }
            CheckpointDtype::F16 => self.halves().await?,
        };
        let (width, kind) = match dtype {
            CheckpointDtype::F32 => (4, Dtype::F32),
            CheckpointDtype::F16 => (2, Dtype::F16),
        };
        let mut names = vec![];
        for (prefix, bytes) in prefixes(dtype).iter().zip(&flat) {
            for e in &self.params.entries {
                names.push((format!("{prefix}{}", e.spec.name), e.spec.shape.clone(), &bytes[width * e.offset..width * (e.offset + e.elements())]));
            }
        }
        let views = names
            .iter()
            .map(|(n, shape, bytes)| Ok((n.clone(), TensorView::new(kind, shape.clone(), bytes).map_err(|e| bad(e.to_string()))?)))
            .collect::<Result<Vec<_>>>()?;
        let config = serde_json::to_string(&self.cfg).map_err(|e| bad(e.to_string()))?;
        let metadata = HashMap::from([
            ("format".to_string(), FORMAT.to_string()),
            ("config".to_string(), config),
            ("step".to_string(), self.step.to_string()),
            ("rng".to_string(), self.rng.state().to_string()),
            ("dtype".to_string(), if dtype == CheckpointDtype::F16 { "f16" } else { "f32" }.to_string()),
        ]);
        // safetensors without `std` has its own map type: collect into it.
        safetensors::serialize(views, Some(metadata.into_iter().collect())).map_err(|e| bad(e.to_string()))
    }

    /// The weights, m and sqrt(v) as packed f16 bytes (two per word, the flat layout), cast on
    /// the GPU by `fp32_to_fp16`.
    async fn halves(&self) -> Result<[Vec<u8>; 3]> {
        let v = self.gpu.read_f32(&self.params.v).await?;
        // (P) sqrt(v): v is a mean of squares, never negative
        let sqrt_v = self.gpu.tensor_from("sqrt v", &[self.params.total], &v.iter().map(|x| x.max(0.0).sqrt()).collect::<Vec<f32>>())?;
        let words = self.params.total.div_ceil(2);
        // (P / 2) each: the packed halves
        let out: Vec<Tensor> = (0..3).map(|i| self.gpu.tensor(&format!("f16 checkpoint {i}"), &[words])).collect::<Result<_>>()?;
        let ops = [
            fp32_to_fp16(&self.gpu, &self.params.weights, &out[0])?,
            fp32_to_fp16(&self.gpu, &self.params.m, &out[1])?,
            fp32_to_fp16(&self.gpu, &sqrt_v, &out[2])?,
        ];
        self.gpu.run(&ops.iter().collect::<Vec<_>>())?;
        self.gpu.read_many(&out.iter().collect::<Vec<_>>()).await?.try_into().map_err(|_| bad("readback"))
    }

    /// A new session on `gpu` built from the checkpoint's own config, then loaded from it.
    pub fn from_checkpoint(gpu: Gpu, bytes: &[u8]) -> Result<Session> {
        Session::from_checkpoint_with(gpu, bytes, |_| {})
    }

    /// `from_checkpoint` with the checkpoint's config edited first (`kiln train --resume
    /// --mixed` trains on in mixed precision); the edit must keep the model's parameters.
    pub fn from_checkpoint_with(gpu: Gpu, bytes: &[u8], edit: impl FnOnce(&mut SessionConfig)) -> Result<Session> {
        let (mut cfg, _) = read_header(bytes)?;
        edit(&mut cfg);
        let mut session = Session::with_gpu(gpu, cfg)?;
        session.load_checkpoint(bytes)?;
        Ok(session)
    }

    /// Replaces this session's weights, optimizer state, step and sampler state with the
    /// checkpoint's. The file must match this session's model exactly; on any error the
    /// session is left as it was.
    pub fn load_checkpoint(&mut self, bytes: &[u8]) -> Result<()> {
        let layout = Layout { entries: self.params.entries.clone(), decay_end: self.params.decay_end, total: self.params.total };
        let decoded = decode(bytes, Some((&self.cfg.model, &layout)))?;
        // Everything checked: only now does the running model change. The loaded state is also
        // the latest snapshot, so a device lost before the next one resumes from here.
        let Decoded { step, rng, flat, .. } = decoded;
        self.restore(&Snapshot { step, rng, state: Arc::new(flat) })?;
        Ok(())
    }
}

/// A checkpoint read and checked on the CPU, ready to upload.
#[derive(Debug)]
pub struct Decoded {
    pub config: SessionConfig,
    pub step: u64,
    pub rng: u64,
    /// Weights, optimizer m and v, each laid out like the session's flat buffers.
    pub flat: [Vec<f32>; 3],
}

/// Parses and validates a checkpoint without touching any GPU. With `expect`, the file must
/// hold exactly that model and is laid out like that layout; without, the file's own config
/// decides (with the default 256-byte alignment). Allocates nothing beyond the file's size.
pub fn decode(bytes: &[u8], expect: Option<(&ModelConfig, &Layout)>) -> Result<Decoded> {
    let (config, (tensors, metadata)) = read_header(bytes)?;
    let own;
    let layout = match expect {
        Some((model, layout)) => {
            // The same model in either precision: precision changes how training stores
            // numbers, not the parameters a checkpoint holds.
            if config.model.in_fp32() != model.in_fp32() {
                return Err(bad(format!(
                    "it holds a different model ({}) than this session ({})",
                    serde_json::to_string(&config.model).unwrap_or_default(),
                    serde_json::to_string(model).unwrap_or_default()
                )));
            }
            layout
        }
        None => {
            own = Layout::new(config.model.param_specs(), 64);
            &own
        }
    };
    let number = |key: &str| metadata.get(key).and_then(|s| s.parse::<u64>().ok()).ok_or_else(|| bad(format!("metadata `{key}` is missing or not a number")));
    let (step, rng) = (number("step")?, number("rng")?);
    let dtype = match metadata.get("dtype").map(String::as_str) {
        None | Some("f32") => CheckpointDtype::F32,
        Some("f16") => CheckpointDtype::F16,
        Some(other) => return Err(bad(format!("metadata `dtype` must be `f32` or `f16`, got `{other}`"))),
    };
    let (width, kind) = if dtype == CheckpointDtype::F16 { (2, Dtype::F16) } else { (4, Dtype::F32) };
    let expected = 3 * layout.entries.len();
    if tensors.len() != expected {
        return Err(bad(format!("it has {} tensors; this model needs {expected}", tensors.len())));
    }
    // Every tensor must be in the file at its full size, so the flat buffers are never larger
    // than the file says they can be.
    let need = layout.count().saturating_mul(3 * width);
    if need > bytes.len() {
        return Err(bad(format!("it is {} bytes; this model's tensors alone need {need}", bytes.len())));
    }
    let mut flat = [vec![0f32; layout.total], vec![0f32; layout.total], vec![0f32; layout.total]];
    for (slot, prefix) in prefixes(dtype).iter().enumerate() {
        for e in &layout.entries {
            let name = format!("{prefix}{}", e.spec.name);
            let view = tensors.tensor(&name).map_err(|_| bad(format!("tensor `{name}` is missing")))?;
            if view.dtype() != kind {
                return Err(bad(format!("tensor `{name}` is {:?}; this {dtype:?} checkpoint stores {kind:?}", view.dtype())));
            }
            if view.shape() != e.spec.shape.as_slice() {
                return Err(bad(format!("tensor `{name}` has shape {:?}; this model needs {:?}", view.shape(), e.spec.shape)));
            }
            let dst = &mut flat[slot][e.offset..e.offset + view.data().len() / width];
            for (d, chunk) in dst.iter_mut().zip(view.data().chunks_exact(width)) {
                *d = match chunk {
                    [a, b] => f16_to_f32(u16::from_le_bytes([*a, *b])),
                    _ => f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]),
                };
            }
            if slot == 2 && dtype == CheckpointDtype::F16 {
                dst.iter_mut().for_each(|s| *s *= *s); // sqrt(v) back to v
            }
            // A NaN weight would load "fine" and make every loss NaN; say which tensor holds it.
            if let Some(i) = dst.iter().position(|v| !v.is_finite()) {
                return Err(bad(format!(
                    "tensor `{name}` holds a non-finite value ({}) at index {i}; Kiln loads only finite weights and optimizer state",
                    dst[i]
                )));
            }
        }
    }
    Ok(Decoded { config, step, rng, flat })
}

/// What a checkpoint's header says: its config and step (read without the tensors).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct CheckpointInfo {
    pub config: SessionConfig,
    #[cfg_attr(test, ts(type = "number"))]
    pub step: u64,
}

/// The config and step of a checkpoint, from its header: how the page decides whether a file
/// fits the current run. The tensors are checked by `decode` when it is loaded.
pub fn header(bytes: &[u8]) -> Result<CheckpointInfo> {
    let (config, (_, metadata)) = read_header(bytes)?;
    let step = metadata.get("step").and_then(|s| s.parse::<u64>().ok()).ok_or_else(|| bad("metadata `step` is missing or not a number"))?;
    Ok(CheckpointInfo { config, step })
}

type Parsed<'a> = (SafeTensors<'a>, HashMap<String, String>);

/// Why tensor data and file length disagree, when the header itself parses: trailing bytes,
/// or data missing (a gap or a cut). Empty when it cannot tell.
fn coverage(bytes: &[u8]) -> String {
    let Some(n) = bytes.get(..8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as usize) else { return String::new() };
    let Some(header) = bytes.get(8..8usize.saturating_add(n)) else { return String::new() };
    let Ok(json) = serde_json::from_slice::<HashMap<String, serde_json::Value>>(header) else { return String::new() };
    let end = json.values().filter_map(|t| t.get("data_offsets")?.get(1)?.as_u64()).max().unwrap_or(0) as usize;
    let have = bytes.len() - 8 - n;
    match have.cmp(&end) {
        std::cmp::Ordering::Greater => format!(" ({} trailing bytes after the last tensor)", have - end),
        std::cmp::Ordering::Less => format!(" (the tensors need {end} bytes of data, the file has {have})"),
        std::cmp::Ordering::Equal => String::new(),
    }
}

/// Parses and checks the header: size, format, config.
fn read_header(bytes: &[u8]) -> Result<(SessionConfig, Parsed<'_>)> {
    if bytes.len() > MAX_CHECKPOINT_BYTES {
        return Err(bad(format!("it is {} bytes; at most {MAX_CHECKPOINT_BYTES}", bytes.len())));
    }
    let (_, meta) =
        SafeTensors::read_metadata(bytes).map_err(|e| bad(format!("not a Kiln checkpoint (not a valid safetensors file: {e}{})", coverage(bytes))))?;
    let tensors = SafeTensors::deserialize(bytes).map_err(|e| bad(format!("not a valid safetensors file: {e}")))?;
    let metadata: HashMap<String, String> = meta.metadata().clone().unwrap_or_default().into_iter().collect();
    if metadata.get("format").map(String::as_str) != Some(FORMAT) {
        return Err(bad(format!("not a Kiln checkpoint (metadata `format` must be `{FORMAT}`)")));
    }
    let json = metadata.get("config").ok_or_else(|| bad("metadata `config` is missing"))?;
    let cfg = SessionConfig::from_json(json).map_err(|e| bad(format!("its config is invalid: {e}")))?;
    Ok((cfg, (tensors, metadata)))
}
