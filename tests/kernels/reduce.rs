//! GPU-vs-reference checks for shaders/reduce.wgsl (being written).
