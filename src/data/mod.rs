//! Datasets: generated 2-D points and 1-D regression (`points`) and character-level text
//! (`text`). Everything is seeded and deterministic, with a train/validation split.

pub mod batches;
pub mod points;
pub mod scaling;
pub mod sequence;
pub mod text;

pub use points::{PointTask, Points};
pub use text::TextCorpus;
