//! GPU-vs-reference checks for shaders/attention.wgsl (being written).
