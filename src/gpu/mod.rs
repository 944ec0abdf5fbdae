//! The runtime layer: the only code that names a wgpu type. `Gpu` owns the device and queue,
//! reports the adapter and its limits, compiles a shader family the first time one of its
//! kernels is used, caches one pipeline per entry point (with an explicit bind-group layout),
//! creates exact-size buffers and builds dispatches (`Op`). The rest of the runtime, one
//! concept a file: kernel descriptors (kernel.rs), tensors (tensor.rs) and their live count
//! (live.rs), the encoding shapes a step submits and staged maps (encoding.rs), async readback
//! (readback.rs), shared scratch (shared.rs), shader modules (modules.rs). Native and browser
//! share this code; only polling differs. `kernels/` depends on this module, never the reverse.

mod encoding;
mod kernel;
mod live;
mod modules;
mod readback;
mod shared;
mod tensor;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

pub use encoding::{Command, Staging};
pub use kernel::{Access, Family, Kernel};
pub use live::{Live, LiveCounters};
pub use tensor::Tensor;

use crate::error::{KilnError, Result};
use live::Tracked;
use modules::compile_module;

/// What the page and the CLI show about the GPU in use.
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct AdapterSummary {
    pub name: String,
    /// e.g. "Vulkan", "BrowserWebGpu".
    pub backend: String,
    pub driver: String,
    /// A CPU implementation (llvmpipe, SwiftShader): fine for small models, slow for a Llama.
    pub cpu: bool,
    #[cfg_attr(test, ts(type = "number"))]
    pub max_storage_binding_bytes: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub max_buffer_bytes: u64,
    pub max_workgroups_per_dim: u32,
    pub max_workgroup_storage_bytes: u32,
}

/// A compiled entry point and the layout its bind groups must follow.
struct Pipeline {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
}

/// A uniform buffer of a kernel's params struct, written once or rewritten per step.
#[derive(Clone, Debug)]
pub struct Uniform(wgpu::Buffer);

/// One argument of a dispatch, in binding order.
#[derive(Clone, Copy)]
pub enum Arg<'a> {
    T(&'a Tensor),
    U(&'a Uniform),
}

/// A ready-to-encode dispatch: pipeline, bind group and workgroup count, built once.
#[derive(Clone)]
pub struct Op {
    pub entry: &'static str,
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    pub workgroups: [u32; 3],
    /// The tensors it binds, so they stay counted as live while the op can run.
    _tensors: Vec<Tensor>,
}

impl Op {
    fn encode(&self, pass: &mut wgpu::ComputePass<'_>) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        let [x, y, z] = self.workgroups;
        pass.dispatch_workgroups(x, y, z);
    }
}

pub struct Gpu {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    limits: wgpu::Limits,
    /// Shader modules by family name, compiled on first use (modules.rs).
    modules: Mutex<HashMap<&'static str, wgpu::ShaderModule>>,
    pipelines: Mutex<HashMap<&'static str, Arc<Pipeline>>>,
    /// Largest workgroup count per grid dimension; tests lower it to exercise the 2-D grid.
    grid_limit: AtomicU32,
    /// Errors wgpu reported outside an error scope (it would otherwise panic natively).
    uncaptured: Arc<Mutex<Vec<KilnError>>>,
    /// Why the device was lost, once it has been (driver reset, `destroy()`, browser reclaim).
    lost: Arc<Mutex<Option<String>>>,
    /// Storage buffers alive (see `live.rs`).
    live: Arc<LiveCounters>,
    /// The shared scratch buffer (see shared.rs).
    scratch: Mutex<Option<Tensor>>,
    /// (4) zeros, bound where a kernel's optional binding is unused (see shared.rs).
    placeholder: Mutex<Option<Tensor>>,
}

impl Gpu {
    /// Acquires the best adapter (high performance) and a device with the adapter's own
    /// limits. Same code natively and in the browser; no shader is compiled yet.
    pub async fn new() -> Result<Gpu> {
        let instance = wgpu::Instance::new(instance_descriptor());
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions { power_preference: wgpu::PowerPreference::HighPerformance, ..Default::default() })
            .await
            .map_err(|e| KilnError::NoAdapter(format!("{e}. {}", no_adapter_hint())))?;
        let limits = adapter.limits();
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor { label: Some("kiln"), required_limits: limits.clone(), ..Default::default() })
            .await
            .map_err(|e| KilnError::RequestDevice(e.to_string()))?;
        let uncaptured = Arc::new(Mutex::new(Vec::new()));
        let sink = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            let typed = match e {
                wgpu::Error::OutOfMemory { .. } => KilnError::OutOfMemory(e.to_string()),
                _ => KilnError::Gpu(e.to_string()),
            };
            sink.lock().map(|mut v| v.push(typed)).ok();
        }));
        let lost = Arc::new(Mutex::new(None));
        let lost_sink = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            let why = match reason {
                wgpu::DeviceLostReason::Destroyed => "the device was destroyed".to_string(),
                wgpu::DeviceLostReason::Unknown => format!("the GPU driver or browser dropped the device ({message})"),
            };
            lost_sink.lock().map(|mut l| *l = Some(why)).ok();
        });
        Ok(Gpu {
            device,
            queue,
            info: adapter.get_info(),
            limits,
            modules: Mutex::new(HashMap::new()),
            pipelines: Mutex::new(HashMap::new()),
            grid_limit: AtomicU32::new(65_535),
            uncaptured,
            lost,
            live: Arc::new(LiveCounters::default()),
            scratch: Mutex::new(None),
            placeholder: Mutex::new(None),
        })
    }

    pub fn summary(&self) -> AdapterSummary {
        // Browsers may hide the adapter's name for privacy; say so rather than show nothing.
        let name = if self.info.name.is_empty() { format!("{} (name hidden by the browser)", self.info.backend) } else { self.info.name.clone() };
        AdapterSummary {
            name,
            backend: format!("{:?}", self.info.backend),
            driver: format!("{} {}", self.info.driver, self.info.driver_info).trim().to_string(),
            // Browsers do not report a device type; their CPU fallback names itself.
            cpu: self.on_cpu() || ["swiftshader", "llvmpipe"].iter().any(|n| self.info.name.to_ascii_lowercase().contains(n)),
            max_storage_binding_bytes: self.limits.max_storage_buffer_binding_size,
            max_buffer_bytes: self.limits.max_buffer_size,
            max_workgroups_per_dim: self.limits.max_compute_workgroups_per_dimension,
            max_workgroup_storage_bytes: self.limits.max_compute_workgroup_storage_size,
        }
    }

    /// Validates WGSL source on this device; a rejected shader is `ShaderValidation`.
    pub async fn check_wgsl(&self, label: &'static str, source: &str) -> Result<()> {
        compile_module(&self.device, label, source).await.map(|_| ())
    }

    /// Storage buffers Kiln holds on this device right now, and their bytes.
    pub fn live(&self) -> Live {
        self.live.now()
    }

    /// The counters themselves, which outlive this `Gpu` (a test hands the `Gpu` to a session
    /// and still reads what that session allocated).
    pub fn live_counters(&self) -> Arc<LiveCounters> {
        self.live.clone()
    }

    /// Whether the adapter is a CPU implementation (llvmpipe, SwiftShader natively); browsers
    /// do not say, so there this is false.
    pub fn on_cpu(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    pub fn limits(&self) -> &wgpu::Limits {
        &self.limits
    }

    /// Lowers the per-dimension workgroup limit used by `grid` (tests use it to reach the 2-D
    /// grid with small sizes). Clamped to the device's real limit.
    pub fn set_grid_limit(&self, limit: u32) {
        let max = self.limits.max_compute_workgroups_per_dimension;
        self.grid_limit.store(limit.clamp(1, max), Ordering::Relaxed);
    }

    /// Workgroup grid for `groups` workgroups of a 1-D or row kernel: x up to the limit, the
    /// rest in y. Kernels rebuild the linear index as `wg.x + wg.y * num_workgroups.x`.
    pub fn grid(&self, groups: u32) -> [u32; 3] {
        let limit = self.grid_limit.load(Ordering::Relaxed);
        let x = groups.clamp(1, limit);
        [x, groups.div_ceil(x).max(1), 1]
    }

    /// Exact-size zeroed storage tensor of `len` 32-bit words (f32 or u32).
    pub fn tensor(&self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let len: usize = shape.iter().product();
        let bytes = (len as u64) * 4;
        if len == 0 {
            return Err(KilnError::invalid(name, format!("shape {shape:?} has no elements")));
        }
        let limit = self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size);
        if bytes > limit {
            return Err(KilnError::BufferTooLarge { name: name.into(), bytes, limit });
        }
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(name),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Ok(Tensor::new(Tracked::new(buffer, &self.live), name, shape.to_vec()))
    }

    /// A storage tensor holding `data` (f32 or u32 words).
    pub fn tensor_from<T: bytemuck::Pod>(&self, name: &str, shape: &[usize], data: &[T]) -> Result<Tensor> {
        let t = self.tensor(name, shape)?;
        self.write(&t, data)?;
        Ok(t)
    }

    pub fn write<T: bytemuck::Pod>(&self, t: &Tensor, data: &[T]) -> Result<()> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        if bytes.len() as u64 != t.bytes() {
            return Err(KilnError::invalid(t.name(), format!("expected {} elements, got {}", t.len(), bytes.len() / 4)));
        }
        self.queue.write_buffer(t.buffer(), t.offset(), bytes);
        Ok(())
    }

    /// A uniform buffer holding `params`, written once (or rewritten with `write_uniform`).
    pub fn uniform<T: bytemuck::Pod>(&self, name: &str, params: &T) -> Uniform {
        let bytes = bytemuck::bytes_of(params);
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(name),
            size: (bytes.len() as u64).next_multiple_of(16),
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.queue.write_buffer(&buffer, 0, bytes);
        Uniform(buffer)
    }

    pub fn write_uniform<T: bytemuck::Pod>(&self, uniform: &Uniform, params: &T) {
        self.queue.write_buffer(&uniform.0, 0, bytemuck::bytes_of(params));
    }

    /// Builds a dispatch of `kernel` over `args` (in binding order).
    pub fn op(&self, kernel: &'static Kernel, args: &[Arg<'_>], workgroups: [u32; 3]) -> Result<Op> {
        if args.len() != kernel.bindings.len() {
            return Err(KilnError::Gpu(format!("{} takes {} bindings, got {}", kernel.entry, kernel.bindings.len(), args.len())));
        }
        let pipeline = self.pipeline(kernel);
        let entries: Vec<wgpu::BindGroupEntry<'_>> = args
            .iter()
            .enumerate()
            .map(|(i, arg)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: match arg {
                    Arg::T(t) => t.binding(),
                    Arg::U(u) => u.0.as_entire_binding(),
                },
            })
            .collect();
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(kernel.entry), layout: &pipeline.layout, entries: &entries });
        let tensors = args.iter().filter_map(|a| if let Arg::T(t) = a { Some((*t).clone()) } else { None }).collect();
        Ok(Op { entry: kernel.entry, pipeline: pipeline.pipeline.clone(), bind_group, workgroups, _tensors: tensors })
    }

    fn pipeline(&self, kernel: &'static Kernel) -> Arc<Pipeline> {
        let mut cache = self.pipelines.lock().unwrap_or_else(|p| p.into_inner());
        cache.entry(kernel.entry).or_insert_with(|| Arc::new(self.compile(kernel))).clone()
    }

    fn compile(&self, kernel: &'static Kernel) -> Pipeline {
        let entries: Vec<wgpu::BindGroupLayoutEntry> = kernel
            .bindings
            .iter()
            .enumerate()
            .map(|(i, access)| wgpu::BindGroupLayoutEntry {
                binding: i as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: match access {
                    Access::Read => storage(true),
                    Access::ReadWrite => storage(false),
                    Access::Uniform => wgpu::BindingType::Buffer { ty: wgpu::BufferBindingType::Uniform, has_dynamic_offset: false, min_binding_size: None },
                },
                count: None,
            })
            .collect();
        let layout = self.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(kernel.entry), entries: &entries });
        let pipeline_layout = self.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(kernel.entry),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(kernel.entry),
            layout: Some(&pipeline_layout),
            module: &self.module(kernel.family),
            entry_point: Some(kernel.entry),
            compilation_options: Default::default(),
            cache: None,
        });
        Pipeline { pipeline, layout }
    }

    /// Encodes `ops` in order into one compute pass and submits them.
    pub fn run(&self, ops: &[&Op]) -> Result<()> {
        self.submit(&[Command::Pass(ops)]);
        self.check_errors()
    }

    /// Why the device was lost, if it has been. Natively the loss is noticed when the device is
    /// polled, so this polls (without waiting) first; in the browser `device.lost` resolves
    /// on its own.
    pub fn lost(&self) -> Option<String> {
        #[cfg(not(target_arch = "wasm32"))]
        {
            self.device.poll(wgpu::PollType::Poll).ok();
        }
        self.lost.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Fails with the first error wgpu reported outside an error scope since the last check;
    /// `DeviceLost` when the device is gone (every later call would fail the same way).
    pub fn check_errors(&self) -> Result<()> {
        let first = {
            let mut errors = self.uncaptured.lock().unwrap_or_else(|p| p.into_inner());
            let first = errors.first().cloned();
            errors.clear();
            first
        };
        match first {
            None => Ok(()),
            Some(e) => Err(self.lost().map_or(e, KilnError::DeviceLost)),
        }
    }
}

fn storage(read_only: bool) -> wgpu::BindingType {
    wgpu::BindingType::Buffer { ty: wgpu::BufferBindingType::Storage { read_only }, has_dynamic_offset: false, min_binding_size: None }
}

#[cfg(not(target_arch = "wasm32"))]
fn instance_descriptor() -> wgpu::InstanceDescriptor {
    wgpu::InstanceDescriptor::new_without_display_handle_from_env()
}

#[cfg(target_arch = "wasm32")]
fn instance_descriptor() -> wgpu::InstanceDescriptor {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::BROWSER_WEBGPU;
    desc
}

fn no_adapter_hint() -> &'static str {
    if cfg!(target_arch = "wasm32") {
        "Kiln needs a browser with WebGPU (Chrome/Edge 113+, Safari 26+, Firefox 141+) on a secure page (https or localhost)"
    } else {
        "Install a Vulkan, Metal or DX12 driver; on Linux without a GPU, `apt-get install mesa-vulkan-drivers` provides llvmpipe"
    }
}
