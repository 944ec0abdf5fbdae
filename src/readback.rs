//! Async readback of tensors: copy to a staging buffer, `map_async`, await the callback. In the
//! browser the page's event loop drives the callback; natively the device is polled. Never
//! called inside a training step.

use crate::error::{KilnError, Result};
use crate::gpu::Gpu;
use crate::tensor::Tensor;

impl Gpu {
    pub async fn read_f32(&self, t: &Tensor) -> Result<Vec<f32>> {
        Ok(bytemuck::cast_slice(&self.read_bytes(t).await?).to_vec())
    }

    pub async fn read_u32(&self, t: &Tensor) -> Result<Vec<u32>> {
        Ok(bytemuck::cast_slice(&self.read_bytes(t).await?).to_vec())
    }

    /// Copies `t` to a staging buffer and maps it without blocking the browser's thread.
    async fn read_bytes(&self, t: &Tensor) -> Result<Vec<u8>> {
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: t.bytes(),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self.device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(t.buffer(), t.offset(), &staging, 0, t.bytes());
        self.queue.submit([encoder.finish()]);
        let (tx, rx) = futures_channel::oneshot::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            tx.send(r).ok();
        });
        self.wait_native();
        // A failed map is an error (never zeros): `DeviceLost` when that is why.
        let failed = |why: String| self.lost().map_or(KilnError::Readback(why), KilnError::DeviceLost);
        let mapped = rx.await.map_err(|_| failed("the device dropped the request".into()))?;
        mapped.map_err(|e| failed(e.to_string()))?;
        self.check_errors()?;
        let bytes = staging.get_mapped_range(..).map_err(|e| KilnError::Readback(e.to_string()))?.to_vec();
        staging.unmap();
        Ok(bytes)
    }

    /// Natively, callbacks fire only when the device is polled; the browser drives them itself.
    fn wait_native(&self) {
        #[cfg(not(target_arch = "wasm32"))]
        {
            self.device.poll(wgpu::PollType::wait_indefinitely()).ok();
        }
    }
}
