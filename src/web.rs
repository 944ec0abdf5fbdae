//! The wasm-bindgen API under the npm package's `js/kiln.js` (and the page). Values cross as
//! typed JS objects (serde-wasm-bindgen; their TypeScript is generated from the same structs,
//! see src/api.rs) or typed arrays. Every failure is an `Error` with a stable `code` and, for
//! bad input, the `field`; nothing here unwraps user input. `js/kiln.js` serializes the calls
//! of a run (async methods borrow the session while they await, so overlapping calls would
//! otherwise hit wasm-bindgen's "recursive use" error).

use js_sys::{Array, Float32Array, Float64Array, Object, Reflect, Uint32Array};
use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::api::{PresetInfo, RunInfo};
use crate::config::SessionConfig;
use crate::data::points::{from_csv_any, Points};
use crate::error::{KilnError, Result};
use crate::gpu::Gpu;
use crate::param_layout::{layout, TensorSlot, UpdateRatio};
use crate::presets::{preset as preset_config, PRESETS};
use crate::session::plane::PlaneBox;
use crate::session::{Session, METRIC_SLOTS};

#[cfg(feature = "formats")]
mod export;
mod files;
mod llama_views;
#[cfg(feature = "formats")]
mod reading;

#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

/// An `Error` with `code` (and `field`, and for bad input the `reason` without the field's name)
/// set: what kiln.js and the page branch on.
fn js_error(e: KilnError) -> JsValue {
    let error = js_sys::Error::new(&e.to_string());
    error.set_name("KilnError");
    let _ = Reflect::set(&error, &"code".into(), &e.code().as_str().into());
    if let Some(field) = e.field() {
        let _ = Reflect::set(&error, &"field".into(), &field.into());
    }
    if let Some(reason) = e.reason() {
        let _ = Reflect::set(&error, &"reason".into(), &reason.into());
    }
    error.into()
}

/// A plain JS object of a Rust value, through its JSON: an f32 field then reads as written
/// (`lr: 0.003`, where a direct conversion to a JS number gives 0.003000000026077032), and
/// the object equals what checkpoints and links hold.
fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsValue> {
    let failed = |e: String| js_error(KilnError::Gpu(format!("a result could not be converted for JavaScript: {e}")));
    let json = serde_json::to_string(value).map_err(|e| failed(e.to_string()))?;
    js_sys::JSON::parse(&json).map_err(|e| failed(format!("{e:?}")))
}

/// A plain JS object of measured numbers, converted directly (numbers, not BigInts; null for
/// None), so that a NaN loss stays NaN rather than becoming JSON's null.
fn numbers_to_js<T: Serialize>(value: &T) -> Result<JsValue, JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| js_error(KilnError::Gpu(format!("a result could not be converted for JavaScript: {e}"))))
}

/// A config given as an object or as its JSON text, parsed and validated.
fn config_from_js(value: JsValue) -> Result<SessionConfig> {
    if let Some(json) = value.as_string() {
        return SessionConfig::from_json(&json);
    }
    if !is_plain_object(&value) {
        return Err(KilnError::invalid("config", "expected a SessionConfig object (or its JSON text)"));
    }
    SessionConfig::from_json(&object_json(&value, "config")?)
}

fn is_plain_object(value: &JsValue) -> bool {
    value.is_object() && !Array::is_array(value)
}

/// An options argument: `T`'s defaults for undefined or null; anything but an object (an array,
/// a number) is refused, naming `what` (an array would otherwise read as the struct's fields
/// in order). (The page's first wasm has no binding that takes options.)
#[cfg(any(feature = "llama", feature = "formats"))]
fn options_or_default<T: Default + for<'de> serde::Deserialize<'de>>(value: &JsValue, what: &str) -> Result<T> {
    if value.is_undefined() || value.is_null() {
        return Ok(T::default());
    }
    if !is_plain_object(value) {
        return Err(KilnError::invalid(what, "expected an options object"));
    }
    crate::parse::from_json(&object_json(value, what)?, what)
}

/// An options or config object as JSON, through one parser with the CLI's and the files'.
/// (serde-wasm-bindgen reads only the fields a struct names, so an unknown key — a typo —
/// would pass unnoticed.) NaN and ±Infinity, which JSON would turn into null, are written as
/// the strings "NaN" and "Infinity", so the error names what the user passed.
fn object_json(value: &JsValue, what: &str) -> Result<String> {
    let replacer = Closure::<dyn Fn(JsValue, JsValue) -> JsValue>::new(|_key: JsValue, v: JsValue| match v.as_f64() {
        Some(x) if x.is_nan() => JsValue::from_str("NaN"),
        Some(x) if x.is_infinite() => JsValue::from_str(if x > 0.0 { "Infinity" } else { "-Infinity" }),
        _ => v,
    });
    let json = js_sys::JSON::stringify_with_replacer(value, replacer.as_ref().unchecked_ref()).map_err(|e| {
        KilnError::invalid(what, format!("cannot be read: {}", e.as_string().unwrap_or_else(|| "it is not plain data (a cycle, or a BigInt)".into())))
    })?;
    json.as_string().ok_or_else(|| KilnError::invalid(what, "cannot be read as plain data"))
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

async fn acquire_gpu() -> Result<Gpu> {
    check_webgpu_reachable()?;
    Gpu::new().await
}

/// Acquires the browser's WebGPU device and describes the adapter and its limits.
#[wasm_bindgen(js_name = adapterInfo)]
pub async fn adapter_info() -> Result<JsValue, JsValue> {
    let gpu = acquire_gpu().await.map_err(js_error)?;
    to_js(&gpu.summary())
}

/// `[{name, description}]` of every preset.
#[wasm_bindgen]
pub fn presets() -> Result<JsValue, JsValue> {
    let list: Vec<PresetInfo> = PRESETS.iter().map(|(name, description)| PresetInfo { name: name.to_string(), description: description.to_string() }).collect();
    to_js(&list)
}

/// The named preset's `SessionConfig`.
#[wasm_bindgen]
pub fn preset(name: &str) -> Result<JsValue, JsValue> {
    let cfg = preset_config(name).ok_or_else(|| {
        let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
        js_error(KilnError::invalid("preset", format!("no preset named {name:?}; choose one of {}", names.join(", "))))
    })?;
    to_js(&cfg)
}

/// Checks a config without touching the GPU and returns it with every default filled in.
#[wasm_bindgen(js_name = validateConfig)]
pub fn validate_config(config: JsValue) -> Result<JsValue, JsValue> {
    to_js(&config_from_js(config).map_err(js_error)?)
}

/// The config as URL state (`{state, dropped}`), the user's data included while it fits.
#[wasm_bindgen(js_name = shareConfig)]
pub fn share_config(config: JsValue) -> Result<JsValue, JsValue> {
    let cfg = config_from_js(config).map_err(js_error)?;
    to_js(&crate::share::encode(&cfg).map_err(js_error)?)
}

/// The validated config in URL state from `shareConfig`.
#[wasm_bindgen(js_name = openShared)]
pub fn open_shared(state: &str) -> Result<JsValue, JsValue> {
    to_js(&crate::share::decode(state).map_err(js_error)?)
}

/// Hands this build its built-in text, data/genesis.txt as fetched (the page's build leaves it
/// out; see `text::genesis`); refused unless it is that file.
#[wasm_bindgen(js_name = provideGenesis)]
pub fn provide_genesis(text: String) -> Result<(), JsValue> {
    crate::data::text::provide_genesis(text).map_err(js_error)
}

/// `[xmin, xmax, ymin, ymax]` of the plane box `extent` names (see `PlaneBox::new`).
#[wasm_bindgen(js_name = planeBox)]
pub fn plane_box(extent: Vec<f64>) -> Result<Vec<f64>, JsValue> {
    Ok(PlaneBox::new(&extent).map_err(js_error)?.bounds().to_vec())
}

/// Your own points from CSV text (`x,y,label` or `x,target` rows; blank lines, `#` comments and
/// a header line are skipped): `{inputs, labels | targets, inputDim, classes}`.
#[wasm_bindgen(js_name = parsePoints)]
pub fn parse_points(csv: &str) -> Result<JsValue, JsValue> {
    let points = from_csv_any(csv).map_err(js_error)?;
    let out = Object::new();
    write_points(&out, &points)?;
    Ok(out.into())
}

/// One training run on this page's WebGPU device.
#[wasm_bindgen(js_name = Session)]
pub struct WebSession {
    session: Session,
    slots: Vec<TensorSlot>,
}

#[wasm_bindgen(js_class = Session)]
impl WebSession {
    /// Validates the config (an object or its JSON), acquires a device and builds the run.
    pub async fn create(config: JsValue) -> Result<WebSession, JsValue> {
        let cfg = config_from_js(config).map_err(js_error)?;
        cfg.model.check_built().map_err(js_error)?;
        crate::data::text::check_corpus(&cfg.data).map_err(js_error)?;
        let gpu = acquire_gpu().await.map_err(js_error)?;
        Self::wrap(Session::with_gpu(gpu, cfg))
    }

    /// `RunInfo`: size, adapter, task and the validated config.
    pub fn info(&self) -> Result<JsValue, JsValue> {
        to_js(&RunInfo::of(&self.session))
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
        if let (Some(train), Some(validation)) = (self.session.data.given_points(false), self.session.data.given_points(true)) {
            write_points(&out, train)?;
            let split = Object::new();
            write_points(&split, validation)?;
            set(&out, "validation", &split)?;
        }
        Ok(out.into())
    }

    /// Parameter tensors in model order: `[{name, shape, offset, len}]`.
    pub fn layout(&self) -> Result<JsValue, JsValue> {
        to_js(&self.slots)
    }

    /// Encodes and submits `steps` training steps; does not wait for the GPU.
    pub fn train(&mut self, steps: u32) -> Result<(), JsValue> {
        self.session.train(steps as u64).map_err(js_error)
    }

    /// `[step, loss, gradNorm, lossScale]` of every step since the last read (at most the
    /// metrics ring's size); lossScale is 0 unless the run trains in mixed precision.
    #[wasm_bindgen(js_name = readMetrics)]
    pub async fn read_metrics(&mut self) -> Result<Float64Array, JsValue> {
        let metrics = self.session.read_metrics().await.map_err(js_error)?;
        let flat: Vec<f64> = metrics.iter().flat_map(|m| [m.step as f64, m.loss as f64, m.grad_norm as f64, m.loss_scale.unwrap_or(0.0) as f64]).collect();
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

    /// `Evaluation` of the validation or training split, scoring at most `max_tokens` next
    /// tokens of text (default: 16,384).
    /// `quantized`: score the quantized copy instead of the run's weights.
    pub async fn evaluate(&self, validation: bool, max_tokens: Option<u32>, quantized: bool) -> Result<JsValue, JsValue> {
        let budget = max_tokens.map_or(crate::session::evaluate::MAX_EVAL_TOKENS, |t| t as usize);
        let params = self.session.weights_for(quantized).map_err(js_error)?;
        numbers_to_js(&self.session.evaluate_with(params, validation, budget).await.map_err(js_error)?)
    }

    /// The whole flat weights buffer; `layout` says where each tensor lies.
    pub async fn weights(&self) -> Result<Float32Array, JsValue> {
        let flat = self.session.gpu.read_f32(&self.session.params.weights).await.map_err(js_error)?;
        Ok(Float32Array::from(flat.as_slice()))
    }

    /// `[{name, ratio}]` in model order: each tensor's ‖Δw‖ / ‖w‖ at the last step read back
    /// (computed on the GPU every step by `record_metrics`; no readback here).
    #[wasm_bindgen(js_name = updateRatios)]
    pub fn update_ratios(&self) -> Result<JsValue, JsValue> {
        let ratios = self.session.update_ratios();
        let by_name = |name: &str| ratios.iter().find(|(n, _)| n == name).map_or(0.0, |(_, r)| *r as f64);
        let out: Vec<UpdateRatio> = self.slots.iter().map(|s| UpdateRatio { name: s.name.clone(), ratio: by_name(&s.name) }).collect();
        numbers_to_js(&out)
    }

    /// Class probabilities on a grid, or a fitted curve: see `Session::predict_grid`.
    #[wasm_bindgen(js_name = predictGrid)]
    pub async fn predict_grid(&self, size: u32, extent: Vec<f64>, quantized: bool) -> Result<Float32Array, JsValue> {
        let params = self.session.weights_for(quantized).map_err(js_error)?;
        let extent = PlaneBox::new(&extent).map_err(js_error)?;
        let values = self.session.predict_grid_with(params, size as usize, &extent).await.map_err(js_error)?;
        Ok(Float32Array::from(values.as_slice()))
    }

    /// `NeuronOutputs`: every neuron's output over the input plane (an MLP), one forward pass.
    #[wasm_bindgen(js_name = neuronOutputs)]
    pub async fn neuron_outputs(&self, size: u32, extent: Vec<f64>) -> Result<JsValue, JsValue> {
        let extent = PlaneBox::new(&extent).map_err(js_error)?;
        numbers_to_js(&self.session.neuron_outputs(size as usize, &extent).await.map_err(js_error)?)
    }

    /// `Inspection`: histograms and quantiles of every tensor's weights, gradients and last
    /// update, and each layer's gradient RMS and activations, in `bins` bins.
    pub async fn inspect(&self, bins: u32) -> Result<JsValue, JsValue> {
        numbers_to_js(&self.session.inspect(bins as usize).await.map_err(js_error)?)
    }

    /// Why the device was lost, or undefined while it is fine.
    #[wasm_bindgen(js_name = deviceLost)]
    pub fn device_lost(&self) -> Option<String> {
        self.session.gpu.lost()
    }

    /// Rebuilds the run on a new device from the latest in-memory snapshot: `Recovered`.
    pub async fn recover(&mut self) -> Result<JsValue, JsValue> {
        let report = self.session.recover().await.map_err(js_error)?;
        to_js(&report)
    }

    /// Snapshot the state for recovery at most every `steps` steps (0: never).
    #[wasm_bindgen(js_name = setSnapshotEvery)]
    pub fn set_snapshot_every(&mut self, steps: u32) {
        self.session.snapshots.set_every(steps as u64);
    }

    /// Releases the GPU device now rather than when the garbage collector gets to it (also how
    /// tests simulate a lost device).
    pub fn destroy(&self) {
        self.session.gpu.destroy();
    }
}

impl WebSession {
    fn wrap(session: Result<Session>) -> Result<WebSession, JsValue> {
        let session = session.map_err(js_error)?;
        let slots = layout(&session.cfg.model, &session.params);
        Ok(WebSession { session, slots })
    }
}

/// `{inputs, labels | targets, inputDim, classes}` of a point set, as typed arrays.
fn write_points(target: &Object, p: &Points) -> Result<(), JsValue> {
    set(target, "inputs", &Float32Array::from(p.inputs.as_slice()))?;
    if p.labels.is_empty() {
        set(target, "targets", &Float32Array::from(p.targets.as_slice()))?;
    } else {
        set(target, "labels", &Uint32Array::from(p.labels.as_slice()))?;
    }
    set(target, "inputDim", &(p.input_dim as f64).into())?;
    set(target, "classes", &(p.classes as f64).into())
}

fn set(target: &Object, key: &str, value: &JsValue) -> Result<(), JsValue> {
    Reflect::set(target, &JsValue::from_str(key), value).map(|_| ())
}
