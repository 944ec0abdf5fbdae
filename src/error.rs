//! Kiln's one error type. Every failure a user can cause or meet is a variant with a message
//! that says what happened and what to do; nothing in the crate panics on bad input. Each error
//! has a stable `code` (and, for bad input, the `field`): that is what JS branches on.

use serde::Serialize;
use thiserror::Error;

pub type Result<T, E = KilnError> = std::result::Result<T, E>;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum KilnError {
    #[error("no GPU adapter found: {0}")]
    NoAdapter(String),
    #[error("the GPU adapter refused to create a device: {0}")]
    RequestDevice(String),
    #[error("shader family `{family}` failed validation: {message}")]
    ShaderValidation { family: &'static str, message: String },
    #[error("buffer `{name}` needs {bytes} bytes but this device allows at most {limit} bytes per storage binding; use a smaller model or batch")]
    BufferTooLarge { name: String, bytes: u64, limit: u64 },
    #[error("invalid `{field}`: {message}")]
    InvalidInput { field: String, message: String },
    #[error("invalid `checkpoint`: {0}")]
    BadCheckpoint(String),
    #[error("GPU out of memory: {0}; use a smaller model or batch")]
    OutOfMemory(String),
    #[error("GPU error: {0}")]
    Gpu(String),
    #[error("reading results back from the GPU failed: {0}")]
    Readback(String),
    #[error("the GPU device was lost: {0}")]
    DeviceLost(String),
    #[error("training diverged: {0}")]
    Diverged(String),
    #[error("the built-in text (Genesis) is not loaded in this build: provide data/genesis.txt first (kiln-gpu's JS fetches it itself), or give the run its own text in data.text.text")]
    CorpusMissing,
    #[error("Llama models are not in this build (the page's first wasm trains MLPs only): kiln-gpu's JS builds the run in its second wasm")]
    LlamaMissing,
}

/// The kind of an error, stable across releases: the `code` of every Error kiln-gpu throws.
/// `disposed` and `busy` come from the JS layer itself (a call after `dispose()`, a second
/// concurrent `train()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "kebab-case")]
pub enum ErrorCode {
    /// A config field, option or argument is out of range or of the wrong type (`field` names it).
    InvalidInput,
    /// A file is not a checkpoint Kiln can load (or not one of this model).
    BadCheckpoint,
    /// No WebGPU adapter or device could be had here.
    NoWebgpu,
    /// A kernel failed the device's shader validation (a bug in Kiln or the driver).
    Shader,
    /// The model or batch needs a buffer larger than this device allows.
    TooLarge,
    OutOfMemory,
    /// Another GPU error (a validation error of a dispatch).
    Gpu,
    Readback,
    /// The GPU device was lost (driver reset, the browser reclaiming it).
    DeviceLost,
    /// The loss stayed non-finite for many steps in a row.
    Diverged,
    /// The run was disposed.
    Disposed,
    /// The run is already training.
    Busy,
    /// The run trains on the built-in text, which this build (the page's) fetches on first use
    /// and has not yet been given; kiln-gpu's JS loads it and retries by itself.
    CorpusMissing,
    /// The run is a Llama and this build (the page's first wasm) trains MLPs only; kiln-gpu's
    /// JS builds it in the page's second wasm by itself.
    LlamaMissing,
}

impl KilnError {
    /// A bad-input error naming the field and what is allowed.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        KilnError::InvalidInput { field: field.into(), message: message.into() }
    }

    pub fn code(&self) -> ErrorCode {
        match self {
            KilnError::NoAdapter(_) | KilnError::RequestDevice(_) => ErrorCode::NoWebgpu,
            KilnError::ShaderValidation { .. } => ErrorCode::Shader,
            KilnError::BufferTooLarge { .. } => ErrorCode::TooLarge,
            KilnError::InvalidInput { .. } => ErrorCode::InvalidInput,
            KilnError::BadCheckpoint(_) => ErrorCode::BadCheckpoint,
            KilnError::OutOfMemory(_) => ErrorCode::OutOfMemory,
            KilnError::Gpu(_) => ErrorCode::Gpu,
            KilnError::Readback(_) => ErrorCode::Readback,
            KilnError::DeviceLost(_) => ErrorCode::DeviceLost,
            KilnError::Diverged(_) => ErrorCode::Diverged,
            KilnError::CorpusMissing => ErrorCode::CorpusMissing,
            KilnError::LlamaMissing => ErrorCode::LlamaMissing,
        }
    }

    /// The config field or argument a bad-input error is about.
    pub fn field(&self) -> Option<&str> {
        match self {
            KilnError::InvalidInput { field, .. } => Some(field),
            KilnError::BadCheckpoint(_) => Some("checkpoint"),
            _ => None,
        }
    }

    /// What is wrong with a bad-input error's field, without the field's name (the page puts the
    /// form's label in front of it).
    pub fn reason(&self) -> Option<&str> {
        match self {
            KilnError::InvalidInput { message, .. } => Some(message),
            _ => None,
        }
    }

    /// The same error with its field under `parent` (`beta1` → `optimizer.beta1`), for checks
    /// that know only their own part of a config.
    pub fn under(self, parent: &str) -> Self {
        match self {
            KilnError::InvalidInput { field, message } => KilnError::invalid(format!("{parent}.{field}"), message),
            other => other,
        }
    }
}

impl ErrorCode {
    /// The code as JS sees it (`invalid-input`, `device-lost`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidInput => "invalid-input",
            ErrorCode::BadCheckpoint => "bad-checkpoint",
            ErrorCode::NoWebgpu => "no-webgpu",
            ErrorCode::Shader => "shader",
            ErrorCode::TooLarge => "too-large",
            ErrorCode::OutOfMemory => "out-of-memory",
            ErrorCode::Gpu => "gpu",
            ErrorCode::Readback => "readback",
            ErrorCode::DeviceLost => "device-lost",
            ErrorCode::Diverged => "diverged",
            ErrorCode::Disposed => "disposed",
            ErrorCode::Busy => "busy",
            ErrorCode::CorpusMissing => "corpus-missing",
            ErrorCode::LlamaMissing => "llama-missing",
        }
    }
}

/// Fails with `InvalidInput` unless `ok`.
pub fn ensure(ok: bool, field: &str, message: impl FnOnce() -> String) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(KilnError::invalid(field, message()))
    }
}

/// A float as a user wrote it: an f32 field given 1e300 holds infinity, which the user never typed.
pub fn shown(v: f32) -> String {
    if v.is_infinite() {
        format!("{}a number beyond the 32-bit float range (±3.4e38)", if v < 0.0 { "-" } else { "" })
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_serialize_as_js_sees_them() {
        for code in [ErrorCode::InvalidInput, ErrorCode::BadCheckpoint, ErrorCode::NoWebgpu, ErrorCode::DeviceLost, ErrorCode::Busy] {
            assert_eq!(serde_json::to_value(code).unwrap(), code.as_str());
        }
    }
}
