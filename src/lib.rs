//! Kiln: train tiny neural networks live on the GPU, natively and in the browser.
//! See ARCHITECTURE.md for the data flow and how to add a kernel.

pub mod api;
#[cfg(not(target_arch = "wasm32"))]
pub mod bench;
pub mod config;
pub mod data;
pub mod error;
pub mod fit;
pub mod gpu;
pub mod kernels;
pub mod loss_scale;
pub mod mlx;
pub mod model;
pub mod optim;
pub mod param_layout;
pub mod parse;
pub mod presets;
pub mod profile;
pub mod quantize;
pub mod rng;
pub mod session;
pub mod share;

pub use error::{ErrorCode, KilnError, Result};
pub use gpu::{Arg, Gpu, Op, Tensor};

#[cfg(target_arch = "wasm32")]
pub mod web;
#[cfg(all(target_arch = "wasm32", feature = "engine-bench"))]
pub mod web_bench;
