//! The few shapes of GPU work a run submits, so that nothing outside `gpu/` builds an encoder:
//! clear a tensor, copy one tensor into another, one compute pass over a list of dispatches
//! (`Command`, submitted together by `Gpu::submit`), and a copy into mappable memory that lands
//! on the CPU later (`Staging`). Natively, map callbacks fire when the device is polled
//! (`Gpu::poll`, `Gpu::wait`); in the browser the event loop drives them.

use crate::gpu::{Gpu, Op, Tensor, Uniform};

/// One piece of a submission, run in order.
pub enum Command<'a> {
    /// Zero the whole buffer under a tensor (gradients before a step).
    Clear(&'a Tensor),
    /// Copy `from` into `to` (same length).
    Copy { from: &'a Tensor, to: &'a Tensor },
    /// Copy word `word` of `from` into the first word of a uniform: a factor computed on the
    /// GPU (the loss scale) reaches a kernel's uniform without a CPU round trip.
    CopyToUniform { from: &'a Tensor, word: u64, to: &'a Uniform },
    /// One compute pass over the dispatches, in order.
    Pass(&'a [&'a Op]),
}

impl Gpu {
    /// Encodes the commands into one encoder and submits it. Errors surface at the next
    /// `check_errors` (a step checks once, after all its submissions).
    pub fn submit(&self, commands: &[Command<'_>]) {
        let mut encoder = self.device.create_command_encoder(&Default::default());
        for command in commands {
            match command {
                Command::Clear(t) => encoder.clear_buffer(t.buffer(), 0, None),
                Command::Copy { from, to } => encoder.copy_buffer_to_buffer(from.buffer(), from.offset(), to.buffer(), to.offset(), from.bytes()),
                Command::CopyToUniform { from, word, to } => encoder.copy_buffer_to_buffer(from.buffer(), from.offset() + word * 4, &to.0, 0, 4),
                Command::Pass(ops) => {
                    let mut pass = encoder.begin_compute_pass(&Default::default());
                    for op in ops.iter() {
                        op.encode(&mut pass);
                    }
                }
            }
        }
        self.queue.submit([encoder.finish()]);
    }

    /// Lets map callbacks that are due fire, without waiting (natively; a no-op in the browser).
    pub fn poll(&self) {
        #[cfg(not(target_arch = "wasm32"))]
        {
            self.device.poll(wgpu::PollType::Poll).ok();
        }
    }

    /// Waits for all submitted work (natively; a no-op in the browser, which never blocks).
    pub fn wait(&self) {
        #[cfg(not(target_arch = "wasm32"))]
        {
            self.device.poll(wgpu::PollType::wait_indefinitely()).ok();
        }
    }

    /// Releases the device now (a lost device, as a driver reset would cause: tests use it).
    pub fn destroy(&self) {
        self.device.destroy();
    }
}

/// Mappable memory that receives copies of tensors and hands their words to the CPU.
pub struct Staging {
    /// (bytes / 4) words, MAP_READ | COPY_DST
    buffer: wgpu::Buffer,
}

impl Staging {
    pub fn new(gpu: &Gpu, name: &str, bytes: u64) -> Staging {
        let buffer = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(name),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Staging { buffer }
    }

    /// Copies each tensor into its staging memory, in one submission.
    pub fn copy_in(gpu: &Gpu, pairs: &[(&Tensor, &Staging)]) {
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        for (t, staging) in pairs {
            encoder.copy_buffer_to_buffer(t.buffer(), t.offset(), &staging.buffer, 0, t.bytes());
        }
        gpu.queue.submit([encoder.finish()]);
    }

    /// Copies the tensors one after another into the staging memory, in one submission.
    pub fn copy_packed(gpu: &Gpu, tensors: &[&Tensor], staging: &Staging) {
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        let mut at = 0;
        for t in tensors {
            encoder.copy_buffer_to_buffer(t.buffer(), t.offset(), &staging.buffer, at, t.bytes());
            at += t.bytes();
        }
        gpu.queue.submit([encoder.finish()]);
    }

    /// Maps the memory; `done` gets its words once the copy has run (None if the map failed,
    /// e.g. the device was lost), and the memory is unmapped for the next copy.
    pub fn map(&self, done: impl FnOnce(Option<Vec<u8>>) + Send + 'static) {
        let buffer = self.buffer.clone();
        self.buffer.map_async(wgpu::MapMode::Read, .., move |mapped| {
            let bytes = mapped.ok().and_then(|_| {
                let bytes = buffer.get_mapped_range(..).ok().map(|b| b.to_vec());
                buffer.unmap();
                bytes
            });
            done(bytes);
        });
    }
}
