//! GPU-vs-reference checks for shaders/softmax.wgsl (being written).
