//! GPU-vs-reference checks for shaders/loss.wgsl (being written).
