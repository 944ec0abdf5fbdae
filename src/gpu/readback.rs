//! Async readback of tensors: copy to a staging buffer, `map_async`, await the callback. In the
//! browser the page's event loop drives the callback; natively the device is polled. Never
//! called inside a training step.

use crate::error::{KilnError, Result};
use crate::gpu::{Gpu, Staging, Tensor};

impl Gpu {
    pub async fn read_f32(&self, t: &Tensor) -> Result<Vec<f32>> {
        Ok(bytemuck::cast_slice(&self.read_bytes(t).await?).to_vec())
    }

    pub async fn read_u32(&self, t: &Tensor) -> Result<Vec<u32>> {
        Ok(bytemuck::cast_slice(&self.read_bytes(t).await?).to_vec())
    }

    /// Copies `t` to a staging buffer and maps it without blocking the browser's thread.
    async fn read_bytes(&self, t: &Tensor) -> Result<Vec<u8>> {
        let staging = Staging::new(self, "readback", t.bytes());
        Staging::copy_in(self, &[(t, &staging)]);
        let (tx, rx) = futures_channel::oneshot::channel();
        staging.map(move |bytes| {
            tx.send(bytes).ok();
        });
        self.wait();
        // A failed map is an error (never zeros): `DeviceLost` when that is why.
        let failed = |why: &str| self.lost().map_or(KilnError::Readback(why.into()), KilnError::DeviceLost);
        let bytes = rx.await.map_err(|_| failed("the device dropped the request"))?.ok_or_else(|| failed("mapping the copy failed"))?;
        self.check_errors()?;
        Ok(bytes)
    }
}
