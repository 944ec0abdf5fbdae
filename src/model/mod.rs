//! Models: fixed families with explicit forward and backward made of kernel calls, over
//! parameters kept in one flat `ParamStore`.

pub mod mlp;
pub mod params;
