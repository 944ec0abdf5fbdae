//! `Tensor`: a view of 32-bit words (f32 or u32) in a GPU storage buffer, with its shape.
//! A tensor may own a whole buffer or a range of a larger one (the flat parameter buffer);
//! either way its binding is exact, so a kernel's `arrayLength` is the tensor's length.

use std::sync::Arc;

use crate::gpu::live::Tracked;

#[derive(Clone, Debug)]
pub struct Tensor {
    buffer: Arc<Tracked>,
    name: std::sync::Arc<str>,
    /// Offset into `buffer`, in bytes: a multiple of the device's storage offset alignment for
    /// any tensor bound to a kernel (a view at another offset can only be written or copied;
    /// the second of a joined parameter pair is one, `ParamSpec::joins_next`).
    offset: u64,
    shape: Vec<usize>,
}

impl Tensor {
    pub(crate) fn new(buffer: Arc<Tracked>, name: &str, shape: Vec<usize>) -> Tensor {
        Tensor { buffer, name: name.into(), offset: 0, shape }
    }

    /// A view of `shape` elements starting at element `start` of this tensor's buffer.
    pub(crate) fn view(&self, name: &str, start: usize, shape: Vec<usize>) -> Tensor {
        let offset = self.offset + start as u64 * 4;
        Tensor { buffer: self.buffer.clone(), name: name.into(), offset, shape }
    }

    /// The whole buffer this tensor lies in, as one tensor.
    pub(crate) fn whole(&self, name: &str) -> Tensor {
        Tensor { buffer: self.buffer.clone(), name: name.into(), offset: 0, shape: vec![(self.buffer.buffer.size() / 4) as usize] }
    }

    /// Where this tensor starts in its buffer, in elements.
    pub(crate) fn start(&self) -> usize {
        (self.offset / 4) as usize
    }

    /// Whether `other` lies in the same buffer.
    pub(crate) fn same_buffer(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.buffer, &other.buffer)
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn bytes(&self) -> u64 {
        self.len() as u64 * 4
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer.buffer
    }

    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    pub(crate) fn binding(&self) -> wgpu::BindingResource<'_> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: &self.buffer.buffer, offset: self.offset, size: std::num::NonZeroU64::new(self.bytes()) })
    }
}
