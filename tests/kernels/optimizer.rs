//! GPU-vs-reference checks for shaders/optimizer.wgsl (being written).
