//! The kernel registry. Each shader family `shaders/<family>.wgsl` has a module here holding
//! one `Kernel` per entry point (its bindings, in order), typed wrappers that build dispatches,
//! and f64 CPU references of the same math. Nothing else names a pipeline.
//!
//! Adding a kernel: write the entry point in its family's WGSL, add a `Kernel` const and a
//! wrapper + reference in the family module, list it in that module's `KERNELS`, and add a
//! GPU-vs-reference check in `tests/kernels/<family>.rs` (the coverage test enforces it).

use crate::error::{KilnError, Result};
use crate::gpu::Tensor;

pub mod attention;
pub mod conv;
pub mod elementwise;
pub mod embedding;
mod grad_norm;
pub mod inspect;
pub mod loss;
pub mod matmul;
mod matmul_checks;
mod matmul_plan;
pub mod matmul_swiglu;
pub mod metrics;
pub mod mlp_fused;
pub mod mlp_layer;
pub mod norm;
pub mod optimizer;
pub mod quant;
pub mod reduce;
pub mod rope;
pub mod sampling;
pub mod softmax;
pub mod split_sums;

pub use crate::gpu::{Access, Family, Kernel};
pub use Access::{Read as R, ReadWrite as RW, Uniform as U};

/// The shader families: `shaders/common.wgsl` followed by the family's file (and, for a family
/// split for length, its continuation files, and files build.rs generates), one const each, and
/// `FAMILIES` listing them. They are embedded from build.rs's copies in OUT_DIR/shaders/
/// (without comments in the browser build).
macro_rules! families {
    ($($name:ident => $file:literal $(+ $extra:literal)* $(+ generated $gen:literal)*),* ;
     generated only: $($gname:ident => $gfile:literal),* $(,)?) => {
        $(pub const $name: &Family = &Family {
            name: $file,
            source: concat!(
                include_str!(concat!(env!("OUT_DIR"), "/shaders/common.wgsl")),
                include_str!(concat!(env!("OUT_DIR"), "/shaders/", $file, ".wgsl"))
                $(, include_str!(concat!(env!("OUT_DIR"), "/shaders/", $extra, ".wgsl")))*
                $(, include_str!(concat!(env!("OUT_DIR"), "/shaders/", $gen, ".wgsl")))*
            ),
        };)*
        $(pub const $gname: &Family = &Family {
            name: $gfile,
            source: concat!(include_str!(concat!(env!("OUT_DIR"), "/shaders/common.wgsl")), include_str!(concat!(env!("OUT_DIR"), "/shaders/", $gfile, ".wgsl"))),
        };)*

        /// Every shader family.
        pub const FAMILIES: &[&Family] = &[$($name,)* $($gname),*];
    };
}

families! {
    ELEMENTWISE => "elementwise",
    MATMUL => "matmul" + "matmul_small" + "matmul_lean" + "matmul_wide" + "matmul_swiglu" + "matmul_reduce",
    NORM => "norm",
    SOFTMAX => "softmax",
    LOSS => "loss",
    REDUCE => "reduce",
    OPTIMIZER => "optimizer",
    ROPE => "rope" + "rotary",
    ATTENTION => "attention" + "attention_hd32" + "rotary" + generated "attention_hd64",
    EMBEDDING => "embedding",
    QUANT => "quant",
    CONV => "conv",
    SAMPLING => "sampling",
    METRICS => "metrics",
    INSPECT => "inspect",
    MLP_FUSED => "mlp_fused" + "mlp_fused_serial";
    generated only:
    MATMUL_B16 => "matmul_b16",
}

/// Every kernel of every family.
pub fn all_kernels() -> Vec<&'static Kernel> {
    [
        elementwise::KERNELS,
        matmul::KERNELS,
        matmul_swiglu::KERNELS,
        norm::KERNELS,
        softmax::KERNELS,
        loss::KERNELS,
        reduce::KERNELS,
        optimizer::KERNELS,
        rope::KERNELS,
        attention::KERNELS,
        embedding::KERNELS,
        quant::KERNELS,
        conv::KERNELS,
        sampling::KERNELS,
        metrics::KERNELS,
        inspect::KERNELS,
        mlp_fused::KERNELS,
    ]
    .concat()
}

/// The 33 entry points of the seed kernels, which the project keeps by name.
pub const SEED_ENTRY_POINTS: &[&str] = &[
    "rope",
    "rms_norm",
    "silu",
    "softmax",
    "add",
    "mul",
    "dequantize",
    "top_k",
    "add_backward",
    "mul_backward",
    "silu_backward_real",
    "sgd_update",
    "adamw_update",
    "sub",
    "sub_backward",
    "mse_loss",
    "mse_loss_backward",
    "relu",
    "relu_backward",
    "softmax_backward",
    "affine_dequantize",
    "conv1d",
    "cross_entropy_loss",
    "cross_entropy_backward",
    "gradient_norm_squared",
    "clip_grad_by_norm",
    "silu_gate_fused",
    "silu_gate_backward",
    "rms_norm_residual",
    "gradient_accumulate",
    "gradient_scale",
    "fp32_to_fp16",
    "fp16_to_fp32",
];

/// Workgroups for one thread per element of an `n`-element 1-D kernel (64 threads each).
pub fn groups_1d(n: usize) -> u32 {
    (n as u32).div_ceil(64)
}

/// Fails unless `t` has exactly `len` elements, naming the tensor.
pub fn expect_len(t: &Tensor, len: usize, what: &str) -> Result<()> {
    if t.len() == len {
        Ok(())
    } else {
        Err(KilnError::invalid(t.name(), format!("{what}: expected {len} elements, found {} (shape {:?})", t.len(), t.shape())))
    }
}

/// f32 bits of a float, for params structs that carry floats in u32 slots.
pub fn f32_bits(x: f32) -> u32 {
    x.to_bits()
}
