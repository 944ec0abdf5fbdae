//! `ParamStore`: every parameter of a model in one flat buffer, with gradients and optimizer
//! state in flat buffers of the same layout. Each tensor is an exact-size view (so kernels see
//! the right `arrayLength`), and each optimizer update is one dispatch over a whole range:
//! tensors with weight decay come first, then those without (norms, biases).

use crate::error::Result;
use crate::gpu::Gpu;
use crate::gpu::Tensor;
use crate::rng::Rng;

/// How a parameter tensor starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Init {
    /// Uniform in ±1/sqrt(fan_in) (PyTorch's nn.Linear default).
    FanIn(usize),
    Normal(f32),
    Constant(f32),
    /// Rows of convolution taps (s−2, s−1, s) = (0, 0, 1): the identity.
    CausalIdentity,
}

#[derive(Debug, Clone)]
pub struct ParamSpec {
    pub name: String,
    pub shape: Vec<usize>,
    pub init: Init,
    pub decay: bool,
    /// The next spec starts right after this one, without padding, so the two bind as one
    /// matrix of stacked rows (a Llama's up and gate: one (2F, C) product; `ParamStore::joined`).
    /// Both must have the same decay. The second's own offset may then be unaligned, so it is
    /// only ever bound through the pair.
    pub joins_next: bool,
}

#[derive(Debug, Clone)]
pub struct ParamEntry {
    pub spec: ParamSpec,
    /// Element offset in the flat buffers.
    pub offset: usize,
}

impl ParamEntry {
    /// Elements of the tensor.
    pub fn elements(&self) -> usize {
        self.spec.shape.iter().product()
    }
}

/// Where each parameter lives in the flat buffers: a pure function of the specs and the
/// device's storage-offset alignment (in elements).
#[derive(Debug, Clone)]
pub struct Layout {
    pub entries: Vec<ParamEntry>,
    pub decay_end: usize,
    pub total: usize,
}

impl Layout {
    pub fn new(mut specs: Vec<ParamSpec>, align: usize) -> Layout {
        specs.sort_by_key(|s| !s.decay); // stable: decayed tensors first, order otherwise kept
        for (i, s) in specs.iter().enumerate().filter(|(_, s)| s.joins_next) {
            assert!(specs.get(i + 1).is_some_and(|n| n.decay == s.decay), "{} joins a next parameter of the same decay", s.name);
        }
        let (mut offset, mut decay_end) = (0, 0);
        let mut entries = Vec::with_capacity(specs.len());
        for spec in specs {
            let len: usize = spec.shape.iter().product();
            if spec.decay {
                decay_end = (offset + len).next_multiple_of(align);
            }
            let joins = spec.joins_next;
            entries.push(ParamEntry { spec, offset });
            offset = if joins { offset + len } else { (offset + len).next_multiple_of(align) };
        }
        Layout { entries, decay_end, total: offset.max(align) }
    }

    /// Number of real (unpadded) parameters.
    pub fn count(&self) -> usize {
        self.entries.iter().map(|e| e.spec.shape.iter().product::<usize>()).sum()
    }
}

/// What a product needs of one weight matrix (or of a joined pair).
pub struct Linear {
    pub weight: Tensor,
    /// The packed f16 copy, in mixed precision
    pub weight16: Option<Tensor>,
    pub grad: Tensor,
}

#[derive(Clone)]
pub struct ParamStore {
    pub entries: Vec<ParamEntry>,
    /// (total) all parameters, padded so each tensor starts at a storage-offset boundary (but
    /// the second of a joined pair, which follows the first directly and binds only through
    /// `joined`)
    pub weights: Tensor,
    /// (total) gradients, same layout
    pub grads: Tensor,
    /// (total) optimizer moments (AdamW m, v; SGD uses `m` as its momentum buffer)
    pub m: Tensor,
    pub v: Tensor,
    /// Mixed precision: (total / 2) words, the weights as packed f16 pairs, which the passes
    /// read; rewritten from `weights` (the fp32 master copy) at the start of every forward.
    pub weights16: Option<Tensor>,
    /// Elements [0, decay_end) have weight decay; [decay_end, total) do not.
    pub decay_end: usize,
    pub total: usize,
}

impl ParamStore {
    /// Lays out `specs` (decayed first), allocates the flat buffers, and initializes weights;
    /// with `half_copy`, also the packed f16 copy (tensors then start at twice the alignment,
    /// so that their halves start at a bindable offset too).
    pub fn new(gpu: &Gpu, specs: Vec<ParamSpec>, seed: u64, half_copy: bool) -> Result<ParamStore> {
        let align = (gpu.limits().min_storage_buffer_offset_alignment as usize / 4).max(1) * if half_copy { 2 } else { 1 };
        let Layout { entries, decay_end, total } = Layout::new(specs, align);
        let mut rng = Rng::new(seed);
        let mut init = vec![0f32; total];
        for e in &entries {
            let len: usize = e.spec.shape.iter().product();
            for (i, x) in init[e.offset..e.offset + len].iter_mut().enumerate() {
                *x = match e.spec.init {
                    Init::FanIn(fan_in) => rng.range(-1.0, 1.0) as f32 / (fan_in as f32).sqrt(),
                    Init::Normal(std) => rng.normal() as f32 * std,
                    Init::Constant(c) => c,
                    Init::CausalIdentity => (i % 3 == 2) as u8 as f32,
                };
            }
        }
        Ok(ParamStore {
            weights: gpu.tensor_from("parameters", &[total], &init)?,
            grads: gpu.tensor("gradients", &[total])?,
            m: gpu.tensor("optimizer m", &[total])?,
            v: gpu.tensor("optimizer v", &[total])?,
            weights16: if half_copy { Some(gpu.tensor("parameters (f16)", &[total / 2])?) } else { None },
            entries,
            decay_end,
            total,
        })
    }

    pub fn entry(&self, name: &str) -> &ParamEntry {
        self.entries.iter().find(|e| e.spec.name == name).unwrap_or_else(|| panic!("no parameter {name}"))
    }

    /// The weight view of parameter `name`.
    pub fn weight(&self, name: &str) -> Tensor {
        let e = self.entry(name);
        self.weights.view(&e.spec.name, e.offset, e.spec.shape.clone())
    }

    /// The packed f16 view of parameter `name` (ceil(len / 2) words), when there is a copy.
    pub fn weight16(&self, name: &str) -> Option<Tensor> {
        let e = self.entry(name);
        let half = self.weights16.as_ref()?;
        Some(half.view(&format!("{} (f16)", e.spec.name), e.offset / 2, vec![e.elements().div_ceil(2)]))
    }

    /// Parameter `first` and the one joined after it (`ParamSpec::joins_next`) as one matrix:
    /// (rows₁ + rows₂, cols) views of the weights, their f16 copy and the gradients.
    pub fn joined(&self, first: &str) -> Linear {
        let i = self.entries.iter().position(|e| e.spec.name == first).unwrap_or_else(|| panic!("no parameter {first}"));
        let (a, b) = (&self.entries[i], &self.entries[(i + 1).min(self.entries.len() - 1)]);
        let joined = a.spec.joins_next && b.offset == a.offset + a.elements() && a.spec.shape[1..] == b.spec.shape[1..];
        assert!(joined, "{first} is not joined to a parameter of its width");
        let name = format!("{}+{}", a.spec.name, b.spec.name);
        let mut shape = a.spec.shape.clone();
        shape[0] += b.spec.shape[0];
        let len = a.elements() + b.elements();
        Linear {
            weight16: self.weights16.as_ref().map(|h| h.view(&format!("{name} (f16)"), a.offset / 2, vec![len.div_ceil(2)])),
            weight: self.weights.view(&name, a.offset, shape.clone()),
            grad: self.grads.view(&format!("d{name}"), a.offset, shape),
        }
    }

    /// The weight, f16 weight and gradient views of parameter `name`.
    pub fn linear(&self, name: &str) -> Linear {
        Linear { weight: self.weight(name), weight16: self.weight16(name), grad: self.grad(name) }
    }

    /// The gradient view of parameter `name`.
    pub fn grad(&self, name: &str) -> Tensor {
        let e = self.entry(name);
        self.grads.view(&format!("d{}", e.spec.name), e.offset, e.spec.shape.clone())
    }

    /// Number of real (unpadded) parameters.
    pub fn count(&self) -> usize {
        self.entries.iter().map(|e| e.spec.shape.iter().product::<usize>()).sum()
    }

    /// Views of one flat buffer split at the decay boundary: (decayed, not decayed); either
    /// may be None when empty.
    pub fn ranges(&self, flat: &Tensor) -> [Option<Tensor>; 2] {
        let first = (self.decay_end > 0).then(|| flat.view("decayed", 0, vec![self.decay_end]));
        let rest = (self.total > self.decay_end).then(|| flat.view("not decayed", self.decay_end, vec![self.total - self.decay_end]));
        [first, rest]
    }
}
