//! GPU-vs-reference checks for shaders/rope.wgsl (being written).
