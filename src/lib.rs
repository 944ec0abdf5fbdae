//! Kiln: train tiny neural networks live on the GPU, natively and in the browser.
//! See ARCHITECTURE.md for the data flow and how to add a kernel.

pub mod api;
#[cfg(not(target_arch = "wasm32"))]
pub mod bench;
pub mod checkpoint;
pub mod config;
pub mod data;
pub mod error;
pub mod fit;
pub mod generate;
pub mod gpu;
pub mod kernels;
pub mod live;
pub mod model;
pub mod optim;
pub mod parse;
pub mod presets;
pub mod readback;
pub mod recovery;
pub mod rng;
mod shader_modules;
pub mod share;
mod shared_buffers;
pub mod snapshot;
pub mod tensor;
pub mod train;

pub use error::{ErrorCode, KilnError, Result};
pub use gpu::{Arg, Gpu, Op};
pub use tensor::Tensor;

#[cfg(target_arch = "wasm32")]
pub mod web;
#[cfg(target_arch = "wasm32")]
pub mod web_bench;
