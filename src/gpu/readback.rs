//! Async readback of tensors: copy to a staging buffer, `map_async`, await the callback. In the
//! browser the page's event loop drives the callback; natively the device is polled. Never
//! called inside a training step.

use crate::error::{KilnError, Result};
use crate::gpu::{Gpu, Staging, Tensor};

impl Gpu {
    pub async fn read_f32(&self, t: &Tensor) -> Result<Vec<f32>> {
        Ok(bytemuck::pod_collect_to_vec(&self.read_bytes(t).await?))
    }

    pub async fn read_u32(&self, t: &Tensor) -> Result<Vec<u32>> {
        Ok(bytemuck::pod_collect_to_vec(&self.read_bytes(t).await?))
    }

    /// `read_many` as f32 words (a byte copy: a `Vec<u8>` need not be aligned for f32).
    pub async fn read_many_f32(&self, tensors: &[&Tensor]) -> Result<Vec<Vec<f32>>> {
        Ok(self.read_many(tensors).await?.iter().map(|b| bytemuck::pod_collect_to_vec(b)).collect())
    }

    /// Several tensors' bytes from one copy submission and one map (a map is a round trip to
    /// the GPU, costly through a browser's engine), in order.
    pub async fn read_many(&self, tensors: &[&Tensor]) -> Result<Vec<Vec<u8>>> {
        let total: u64 = tensors.iter().map(|t| t.bytes()).sum();
        let staging = Staging::new(self, "readback", total.max(4));
        Staging::copy_packed(self, tensors, &staging);
        let (tx, rx) = futures_channel::oneshot::channel();
        staging.map(move |bytes| {
            tx.send(bytes).ok();
        });
        self.wait();
        // A failed map is an error (never zeros): `DeviceLost` when that is why.
        let failed = |why: &str| self.lost().map_or(KilnError::Readback(why.into()), KilnError::DeviceLost);
        let bytes = rx.await.map_err(|_| failed("the device dropped the request"))?.ok_or_else(|| failed("mapping the copy failed"))?;
        self.check_errors()?;
        let mut at = 0;
        Ok(tensors
            .iter()
            .map(|t| {
                let part = bytes[at..at + t.bytes() as usize].to_vec();
                at += t.bytes() as usize;
                part
            })
            .collect())
    }

    /// Copies `t` to a staging buffer and maps it without blocking the browser's thread.
    async fn read_bytes(&self, t: &Tensor) -> Result<Vec<u8>> {
        Ok(self.read_many(&[t]).await?.remove(0))
    }
}
