//! Buffers one `Gpu` shares among all the dispatches built on it: the scratch buffer for
//! partials and the placeholder bound where a kernel's optional binding goes unused.

use crate::error::Result;
use crate::gpu::{Gpu, Tensor};

impl Gpu {
    /// A view of `len` words of one scratch buffer shared by every caller, for data that lives
    /// only from one dispatch to the next and is written whole before it is read (split-K
    /// partial products, the RMSNorm weight gradient's partial sums). Dispatches run in
    /// submission order with barriers between them, so one buffer serves every such pair; it
    /// grows when a larger one is asked for (ops built earlier keep the old one alive).
    pub fn scratch(&self, name: &str, len: usize) -> Result<Tensor> {
        let mut slot = self.scratch.lock().unwrap_or_else(|p| p.into_inner());
        if slot.as_ref().is_none_or(|s| s.len() < len) {
            *slot = Some(self.tensor("scratch", &[len])?);
        }
        Ok(slot.as_ref().expect("just filled").view(name, 0, vec![len]))
    }

    /// A 4-word tensor for a binding the dispatch does not use (a vec4 binding must hold at
    /// least 16 bytes, which a small tensor may not). Bound read-only, or writable where a
    /// kernel leaves an output unwritten (an MLP output layer's h), never both in one dispatch.
    pub fn placeholder(&self) -> Result<Tensor> {
        let mut slot = self.placeholder.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(self.tensor("placeholder", &[4])?);
        }
        Ok(slot.as_ref().expect("just filled").clone())
    }
}
