//! norm kernels (being written).
use super::Kernel;
pub const KERNELS: &[&Kernel] = &[];
