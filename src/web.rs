//! The wasm-bindgen API under the npm package's `js/kiln.js` (and the page). Every failure is a
//! rejected promise (or thrown `Error`) carrying a readable message; nothing here unwraps user
//! input. Structured results cross as JSON strings or typed arrays; `js/kiln.js` shapes them
//! into the documented objects and serializes calls (async methods borrow the session while
//! they await, so overlapping calls would otherwise hit wasm-bindgen's "recursive use" error).

use js_sys::{Array, Float32Array, Float64Array, Object, Reflect, Uint32Array, Uint8Array};
use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::config::{DataConfig, SessionConfig};
use crate::error::{KilnError, Result};
use crate::generate::GenerateOptions;
use crate::gpu::Gpu;
use crate::model::ModelConfig;
use crate::presets::{preset, PRESETS};
use crate::snapshot::{layout, TensorSlot, UpdateRatio};
use crate::train::{Session, METRIC_SLOTS};

#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

fn js_error(e: impl std::fmt::Display) -> JsValue {
    js_sys::Error::new(&e.to_string()).into()
}

fn json<T: Serialize>(value: &T) -> Result<String, JsValue> {
    serde_json::to_string(value).map_err(js_error)
}

/// wgpu panics when the global scope is neither a Window nor a worker (Node without a shim);
/// this turns that, and a missing `navigator.gpu`, into an error that says what to do.
fn check_webgpu_reachable() -> Result<()> {
    let global = js_sys::global();
    let has = |name: &str| Reflect::get(&global, &JsValue::from_str(name)).map(|v| !v.is_undefined()).unwrap_or(false);
    let gpu = Reflect::get(&global, &"navigator".into())
        .ok()
        .filter(|n| n.is_object())
        .and_then(|n| Reflect::get(&n, &"gpu".into()).ok())
        .is_some_and(|g| g.is_object());
    if !(has("Window") || has("WorkerGlobalScope")) || !gpu {
        return Err(KilnError::NoAdapter(
            "this JavaScript environment has no WebGPU (navigator.gpu). In a browser, use Chrome/Edge 113+, Safari 26+ or \
             Firefox 141+ on a secure page (https or localhost); in Node, pass one to init: `init({ gpu: create([]) })` with \
             `create` from the `webgpu` package"
                .into(),
        ));
    }
    Ok(())
}

async fn acquire_gpu() -> Result<Gpu, JsValue> {
    check_webgpu_reachable().map_err(js_error)?;
    Gpu::new().await.map_err(js_error)
}

/// Acquires the browser's WebGPU device and describes the adapter and its limits.
#[wasm_bindgen(js_name = adapterInfo)]
pub async fn adapter_info() -> Result<JsValue, JsValue> {
    let gpu = acquire_gpu().await?;
    serde_wasm_bindgen::to_value(&gpu.summary()).map_err(js_error)
}

/// `[{name, description}]` of every preset, as JSON.
#[wasm_bindgen(js_name = presetsJson)]
pub fn presets_json() -> String {
    let list: Vec<serde_json::Value> = PRESETS.iter().map(|(name, description)| serde_json::json!({ "name": name, "description": description })).collect();
    serde_json::Value::Array(list).to_string()
}

/// The named preset's `SessionConfig` as JSON.
#[wasm_bindgen(js_name = presetJson)]
pub fn preset_json(name: &str) -> Result<String, JsValue> {
    let cfg = preset(name).ok_or_else(|| {
        let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
        js_error(KilnError::invalid("preset", format!("no preset named {name:?}; choose one of {}", names.join(", "))))
    })?;
    json(&cfg)
}

/// Checks a config without touching the GPU; the error names the field.
#[wasm_bindgen(js_name = validateConfig)]
pub fn validate_config(config_json: &str) -> Result<(), JsValue> {
    SessionConfig::from_json(config_json).map(|_| ()).map_err(js_error)
}

/// One training run on this page's WebGPU device.
#[wasm_bindgen(js_name = Session)]
pub struct WebSession {
    session: Session,
    slots: Vec<TensorSlot>,
}

#[wasm_bindgen(js_class = Session)]
impl WebSession {
    /// Validates the config (JSON of `SessionConfig`), acquires a device and builds the run.
    pub async fn create(config_json: String) -> Result<WebSession, JsValue> {
        let cfg = SessionConfig::from_json(&config_json).map_err(js_error)?;
        let gpu = acquire_gpu().await?;
        let session = Session::with_gpu(gpu, cfg).map_err(js_error)?;
        let slots = layout(&session.cfg.model, &session.params);
        Ok(WebSession { session, slots })
    }

    /// A run rebuilt from a checkpoint's own config, then loaded from it (continues exactly).
    #[wasm_bindgen(js_name = fromCheckpoint)]
    pub async fn from_checkpoint(bytes: Vec<u8>) -> Result<WebSession, JsValue> {
        let gpu = acquire_gpu().await?;
        let session = Session::from_checkpoint(gpu, &bytes).map_err(js_error)?;
        let slots = layout(&session.cfg.model, &session.params);
        Ok(WebSession { session, slots })
    }

    /// `{parameters, dispatchesPerStep, adapter, model, task, ...}` as JSON.
    #[wasm_bindgen(js_name = infoJson)]
    pub fn info_json(&self) -> Result<String, JsValue> {
        let s = &self.session;
        let a = s.gpu.summary();
        let (model, context) = match &s.cfg.model {
            ModelConfig::Mlp(_) => ("mlp", 1),
            ModelConfig::Llama(l) => ("llama", l.context),
        };
        let (task, regression) = match &s.cfg.data {
            DataConfig::Points(p) => (serde_json::to_value(p.task).map_err(js_error)?, p.task.is_regression()),
            DataConfig::Text(_) => (serde_json::Value::from("text"), false),
            DataConfig::Sequence(q) => (serde_json::to_value(q.task).map_err(js_error)?, false),
        };
        let classes = match &s.cfg.model {
            ModelConfig::Mlp(m) if !regression => m.output_dim,
            ModelConfig::Llama(l) => l.vocab,
            _ => 0,
        };
        let examples_per_step = s.cfg.batch * s.cfg.optimizer.accumulation as usize;
        Ok(serde_json::json!({
            "parameters": s.params.count(),
            "dispatchesPerStep": s.dispatches_per_step(),
            "adapter": {
                "name": a.name,
                "backend": a.backend,
                "driver": a.driver,
                "maxStorageBindingBytes": a.max_storage_binding_bytes,
                "maxBufferBytes": a.max_buffer_bytes,
                "maxWorkgroupsPerDim": a.max_workgroups_per_dim,
                "maxWorkgroupStorageBytes": a.max_workgroup_storage_bytes,
            },
            "model": model,
            "task": task,
            "regression": regression,
            "classes": classes,
            "batch": s.cfg.batch,
            "examplesPerStep": examples_per_step,
            "tokensPerStep": examples_per_step * context,
            "config": &s.cfg,
        })
        .to_string())
    }

    /// The data the run trains on: points (train and validation splits) or a text excerpt and
    /// its vocabulary.
    #[wasm_bindgen(js_name = datasetPreview)]
    pub fn dataset_preview(&self) -> Result<JsValue, JsValue> {
        let out = Object::new();
        if let Some(corpus) = self.session.data.corpus() {
            let excerpt_len = corpus.tokens.len().min(2000);
            set(&out, "kind", &"text".into())?;
            set(&out, "excerpt", &corpus.decode(&corpus.tokens[..excerpt_len]).into())?;
            let vocab: Array = corpus.chars.iter().map(|c| JsValue::from(c.to_string())).collect();
            set(&out, "vocab", &vocab)?;
            set(&out, "length", &(corpus.tokens.len() as f64).into())?;
            set(&out, "trainLength", &(corpus.split as f64).into())?;
            return Ok(out.into());
        }
        set(&out, "kind", &"points".into())?;
        for (key, validation) in [("train", false), ("validation", true)] {
            let Some(p) = self.session.data.points(validation) else { continue };
            let split = if validation { Object::new() } else { out.clone() };
            set(&split, "inputs", &Float32Array::from(p.inputs.as_slice()))?;
            if p.labels.is_empty() {
                set(&split, "targets", &Float32Array::from(p.targets.as_slice()))?;
            } else {
                set(&split, "labels", &Uint32Array::from(p.labels.as_slice()))?;
            }
            set(&split, "inputDim", &(p.input_dim as f64).into())?;
            set(&split, "classes", &(p.classes as f64).into())?;
            if validation {
                set(&out, key, &split)?;
            }
        }
        Ok(out.into())
    }

    /// Parameter tensors in model order: `[{name, shape, offset, len}]` as JSON.
    #[wasm_bindgen(js_name = layoutJson)]
    pub fn layout_json(&self) -> Result<String, JsValue> {
        json(&self.slots)
    }

    /// Encodes and submits `steps` training steps; does not wait for the GPU.
    pub fn train(&mut self, steps: u32) -> Result<(), JsValue> {
        self.session.train(steps as u64).map_err(js_error)
    }

    /// `[step, loss, gradNorm]` triples of every step since the last read (at most the
    /// metrics ring's size).
    #[wasm_bindgen(js_name = readMetrics)]
    pub async fn read_metrics(&mut self) -> Result<Float64Array, JsValue> {
        let metrics = self.session.read_metrics().await.map_err(js_error)?;
        let flat: Vec<f64> = metrics.iter().flat_map(|m| [m.step as f64, m.loss as f64, m.grad_norm as f64]).collect();
        Ok(Float64Array::from(flat.as_slice()))
    }

    /// Steps the metrics ring holds between two reads.
    #[wasm_bindgen(js_name = metricSlots)]
    pub fn metric_slots() -> u32 {
        METRIC_SLOTS as u32
    }

    pub fn step(&self) -> f64 {
        self.session.step_count() as f64
    }

    /// `{loss, accuracy}` (accuracy null for regression) as JSON.
    pub async fn evaluate(&self, validation: bool) -> Result<String, JsValue> {
        let e = self.session.evaluate(validation).await.map_err(js_error)?;
        json(&e)
    }

    /// The whole flat weights buffer; `layoutJson` says where each tensor lies.
    pub async fn weights(&self) -> Result<Float32Array, JsValue> {
        let flat = self.session.gpu.read_f32(&self.session.params.weights).await.map_err(js_error)?;
        Ok(Float32Array::from(flat.as_slice()))
    }

    /// `[{name, ratio}]` as JSON, in model order: each tensor's ‖Δw‖ / ‖w‖ at the last step
    /// read back (computed on the GPU every step by `record_metrics`; no readback here).
    #[wasm_bindgen(js_name = updateRatios)]
    pub async fn update_ratios(&mut self) -> Result<String, JsValue> {
        let ratios = self.session.update_ratios();
        let by_name = |name: &str| ratios.iter().find(|(n, _)| n == name).map_or(0.0, |(_, r)| *r as f64);
        let out: Vec<UpdateRatio> = self.slots.iter().map(|s| UpdateRatio { name: s.name.clone(), ratio: by_name(&s.name) }).collect();
        json(&out)
    }

    /// A 2-D classifier's class-1 probability on a `size`×`size` grid of cell centres over
    /// [-extent, extent]² (row-major, first row at y = +extent), or a regression MLP's
    /// predictions at `size` evenly spaced x in [-extent, extent] (both ends included).
    #[wasm_bindgen(js_name = predictGrid)]
    pub async fn predict_grid(&self, size: u32, extent: f64) -> Result<Float32Array, JsValue> {
        let values = self.grid(size as usize, extent).await.map_err(js_error)?;
        Ok(Float32Array::from(values.as_slice()))
    }

    /// Continues `prompt`; options as JSON `{max_tokens, temperature, top_k, seed}`.
    pub async fn generate(&self, prompt: String, options_json: String) -> Result<String, JsValue> {
        let opts: GenerateOptions = serde_json::from_str(&options_json).map_err(|e| js_error(KilnError::invalid("options", e.to_string())))?;
        self.session.generate(&prompt, &opts).await.map_err(|e| {
            let message = e.to_string().replace("`max_tokens`", "`maxTokens`").replace("`top_k`", "`topK`");
            js_error(message)
        })
    }

    /// A safetensors checkpoint: weights, optimizer state, config, step, sampler state.
    pub async fn save(&self) -> Result<Uint8Array, JsValue> {
        let bytes = self.session.save_checkpoint().await.map_err(js_error)?;
        Ok(Uint8Array::from(bytes.as_slice()))
    }

    /// Loads a checkpoint of the same model; on error the run is unchanged.
    pub fn load(&mut self, bytes: &[u8]) -> Result<(), JsValue> {
        self.session.load_checkpoint(bytes).map_err(js_error)?;
        Ok(())
    }

    /// Why the device was lost, or undefined while it is fine.
    #[wasm_bindgen(js_name = deviceLost)]
    pub fn device_lost(&self) -> Option<String> {
        self.session.gpu.lost()
    }

    /// Rebuilds the run on a new device from the latest in-memory snapshot:
    /// `{reason, lost_at, resumed_at}` as JSON.
    pub async fn recover(&mut self) -> Result<String, JsValue> {
        let report = self.session.recover().await.map_err(js_error)?;
        json(&report)
    }

    /// Snapshot the state for recovery at most every `steps` steps (0: never).
    #[wasm_bindgen(js_name = setSnapshotEvery)]
    pub fn set_snapshot_every(&mut self, steps: u32) {
        self.session.snapshots.set_every(steps as u64);
    }

    /// Releases the GPU device now rather than when the garbage collector gets to it (also how
    /// tests simulate a lost device).
    pub fn destroy(&self) {
        self.session.gpu.device.destroy();
    }
}

impl WebSession {
    async fn grid(&self, size: usize, extent: f64) -> Result<Vec<f32>> {
        let ModelConfig::Mlp(mlp) = &self.session.cfg.model else {
            return Err(KilnError::invalid("model", "predictGrid needs an MLP; a Llama predicts text (use generate)"));
        };
        if !(extent.is_finite() && extent > 0.0 && extent <= 1e6) {
            return Err(KilnError::invalid("extent", format!("must be a number in (0, 1e6], got {extent}")));
        }
        let regression = self.session.data.points(false).is_some_and(|p| p.labels.is_empty());
        let at = |i: usize, n: usize| -extent + (i as f64 + 0.5) * 2.0 * extent / n as f64;
        match (regression, mlp.input_dim) {
            (true, 1) => {
                if !(2..=65_536).contains(&size) {
                    return Err(KilnError::invalid("size", format!("must be 2..=65536 for a regression curve, got {size}")));
                }
                let xs: Vec<f32> = (0..size).map(|i| (-extent + i as f64 * 2.0 * extent / (size - 1) as f64) as f32).collect();
                self.session.predict(size, &xs).await
            }
            (false, 2) => {
                if !(1..=512).contains(&size) {
                    return Err(KilnError::invalid("size", format!("must be 1..=512 for a 2-D grid, got {size}")));
                }
                let mut inputs = Vec::with_capacity(size * size * 2);
                for row in 0..size {
                    let y = -at(row, size);
                    for col in 0..size {
                        inputs.extend([at(col, size) as f32, y as f32]);
                    }
                }
                let classes = mlp.output_dim;
                let logits = self.session.predict(size * size, &inputs).await?;
                Ok(logits.chunks_exact(classes).map(class_one_probability).collect())
            }
            (_, d) => Err(KilnError::invalid("model", format!("predictGrid needs 2-D classification or 1-D regression points; this MLP takes {d}-D inputs"))),
        }
    }
}

/// softmax(row)[1], computed stably.
fn class_one_probability(row: &[f32]) -> f32 {
    let max = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    let sum: f32 = row.iter().map(|&x| (x - max).exp()).sum();
    match row.get(1) {
        Some(&x) if sum > 0.0 && sum.is_finite() => (x - max).exp() / sum,
        _ => f32::NAN,
    }
}

fn set(target: &Object, key: &str, value: &JsValue) -> Result<(), JsValue> {
    Reflect::set(target, &JsValue::from_str(key), value).map(|_| ())
}
