//! Compiling shader families into modules. A device compiles a family the first time one of
//! its kernels is used (`Gpu::module`), so a run builds only the families it needs; every
//! family is validated on every adapter by the tests (`check_wgsl`, and the kernel checks). A
//! shader rejected at first use is reported by wgpu like any validation error, at the next
//! `check_errors`; `check_wgsl` validates inside an error scope, as a typed `ShaderValidation`.

use crate::error::{KilnError, Result};
use crate::gpu::{Family, Gpu};

impl Gpu {
    /// The family's module, compiled on first use.
    pub(crate) fn module(&self, family: &'static Family) -> wgpu::ShaderModule {
        let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        modules
            .entry(family.name)
            .or_insert_with(|| {
                create_module(&self.device, wgpu::ShaderModuleDescriptor { label: Some(family.name), source: wgpu::ShaderSource::Wgsl(family.source.into()) })
            })
            .clone()
    }

    /// The families compiled on this device so far.
    pub fn compiled_families(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self.modules.lock().unwrap_or_else(|p| p.into_inner()).keys().copied().collect();
        names.sort_unstable();
        names
    }
}

pub(crate) async fn compile_module(device: &wgpu::Device, label: &'static str, source: &str) -> Result<wgpu::ShaderModule> {
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let desc = wgpu::ShaderModuleDescriptor { label: Some(label), source: wgpu::ShaderSource::Wgsl(source.into()) };
    let module = create_module(device, desc);
    match scope.pop().await {
        Some(e) => Err(KilnError::ShaderValidation { family: label, message: e.to_string() }),
        None => Ok(module),
    }
}

/// Natively, shaders are compiled without naga's injected bounds checks: every kernel checks
/// its own indices against its params, and Vulkan/Metal/DX12 keep robust buffer access, so an
/// out-of-range access still cannot leave the binding. The checks (a clamp on every array
/// access) cost up to several times the speed of the inner loops. `KILN_SHADER_CHECKS=1`
/// restores them. In the browser the WebGPU implementation decides, so nothing changes there.
#[cfg(not(target_arch = "wasm32"))]
fn create_module(device: &wgpu::Device, desc: wgpu::ShaderModuleDescriptor<'_>) -> wgpu::ShaderModule {
    if std::env::var("KILN_SHADER_CHECKS").is_ok_and(|v| v == "1") {
        return device.create_shader_module(desc);
    }
    // SAFETY: the kernels are validated by naga (same WGSL as the checked path) and bound every
    // index they compute (tests compare each against an f64 reference at ragged sizes); buffer
    // accesses stay within bindings through the driver's robust buffer access.
    unsafe { device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked()) }
}

#[cfg(target_arch = "wasm32")]
fn create_module(device: &wgpu::Device, desc: wgpu::ShaderModuleDescriptor<'_>) -> wgpu::ShaderModule {
    device.create_shader_module(desc)
}
