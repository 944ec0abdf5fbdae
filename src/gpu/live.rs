//! Kiln's own count of the GPU buffers it holds: every storage tensor is registered when created and released when its last handle drops. Soak tests read
//! it to prove a long run does not grow (wgpu's own internals are not counted). An `Op` holds
//! the `Tracked` handles of the tensors it binds, so a buffer counts as long as anything uses it.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

#[derive(Debug, Default)]
pub struct LiveCounters {
    buffers: AtomicI64,
    bytes: AtomicI64,
}

/// Buffers and bytes alive at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Live {
    pub buffers: i64,
    pub bytes: i64,
}

impl LiveCounters {
    pub fn now(&self) -> Live {
        Live { buffers: self.buffers.load(Ordering::Relaxed), bytes: self.bytes.load(Ordering::Relaxed) }
    }
}

/// A wgpu buffer counted while alive.
#[derive(Debug)]
pub struct Tracked {
    pub buffer: wgpu::Buffer,
    bytes: i64,
    counters: Arc<LiveCounters>,
}

impl Tracked {
    // wgpu's buffers are Send + Sync natively; on wasm32 (one thread) they are not, and one Arc
    // serves both.
    #[allow(clippy::arc_with_non_send_sync)]
    pub fn new(buffer: wgpu::Buffer, counters: &Arc<LiveCounters>) -> Arc<Tracked> {
        let bytes = buffer.size() as i64;
        counters.buffers.fetch_add(1, Ordering::Relaxed);
        counters.bytes.fetch_add(bytes, Ordering::Relaxed);
        Arc::new(Tracked { buffer, bytes, counters: counters.clone() })
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.counters.buffers.fetch_sub(1, Ordering::Relaxed);
        self.counters.bytes.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}
