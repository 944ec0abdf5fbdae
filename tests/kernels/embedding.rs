//! GPU-vs-reference checks for shaders/embedding.wgsl (being written).
