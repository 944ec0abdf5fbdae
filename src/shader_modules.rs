//! Compiling the shader families into modules, once per device, inside an error scope so that
//! a shader that fails validation is a typed `ShaderValidation` error rather than a panic.

use std::collections::HashMap;

use crate::error::{KilnError, Result};
use crate::kernels::Family;

/// Compiles every shader family inside an error scope so a bad shader is a typed error.
pub(crate) async fn compile_families(device: &wgpu::Device) -> Result<HashMap<Family, wgpu::ShaderModule>> {
    let mut modules = HashMap::new();
    for &family in Family::ALL {
        modules.insert(family, compile_module(device, family.name(), family.source()).await?);
    }
    Ok(modules)
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
