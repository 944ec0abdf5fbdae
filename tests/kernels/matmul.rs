//! GPU-vs-reference checks for shaders/matmul.wgsl (being written).
