//! Kiln's one error type. Every failure a user can cause or meet is a variant with a message
//! that says what happened and what to do; nothing in the crate panics on bad input.

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
}

impl KilnError {
    /// A bad-input error naming the field and what is allowed.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        KilnError::InvalidInput { field: field.into(), message: message.into() }
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
