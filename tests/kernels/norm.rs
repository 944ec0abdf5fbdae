//! GPU-vs-reference checks for shaders/norm.wgsl (being written).
