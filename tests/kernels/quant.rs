//! GPU-vs-reference checks for shaders/quant.wgsl (being written).
