//! GPU-vs-reference checks for shaders/conv.wgsl (being written).
