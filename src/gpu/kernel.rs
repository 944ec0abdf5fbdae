//! What the runtime needs to know of a kernel: its shader family (the WGSL source it is
//! compiled from), its entry point and how it sees each binding. The registry of every kernel
//! lives in `kernels/`; this file only describes one, so `gpu/` never depends on `kernels/`.

/// How a kernel sees one binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    ReadWrite,
    Uniform,
}

/// A shader family: one WGSL module (shaders/common.wgsl followed by the family's files),
/// compiled on a device the first time one of its kernels is used.
#[derive(Debug)]
pub struct Family {
    pub name: &'static str,
    pub source: &'static str,
}

/// One WGSL entry point and the bindings it declares, in binding order.
#[derive(Debug)]
pub struct Kernel {
    pub entry: &'static str,
    pub family: &'static Family,
    pub bindings: &'static [Access],
}
