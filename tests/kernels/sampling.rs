//! GPU-vs-reference checks for shaders/sampling.wgsl (being written).
