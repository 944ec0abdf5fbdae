// app.js — the page's entry point. It talks to Kiln only through the wasm bindings that
// Trunk exposes as `window.wasmBindings` once the module has started.

const status = document.getElementById('gpu-status');
const info = document.getElementById('gpu-info');

function row(name, value) {
  const dt = document.createElement('dt');
  dt.textContent = name;
  const dd = document.createElement('dd');
  dd.textContent = String(value);
  info.append(dt, dd);
}

async function showAdapter() {
  if (!('gpu' in navigator)) {
    status.textContent = window.isSecureContext
      ? 'This browser has no WebGPU. Use Chrome or Edge 113+, Safari 26+ or Firefox 141+, or enable WebGPU in its settings.'
      : 'WebGPU needs a secure page: open Kiln over https or from localhost.';
    status.dataset.state = 'unavailable';
    return;
  }
  try {
    const a = await window.wasmBindings.adapterInfo();
    status.textContent = 'WebGPU is ready.';
    status.dataset.state = 'ready';
    row('Adapter', a.name);
    row('Backend', a.backend);
    row('Max storage binding', `${(a.max_storage_binding_bytes / 2 ** 20).toFixed(0)} MiB`);
    row('Max workgroups per dimension', a.max_workgroups_per_dim);
  } catch (e) {
    status.textContent = `WebGPU could not start: ${e.message ?? e}`;
    status.dataset.state = 'error';
  }
}

if (window.wasmBindings) {
  showAdapter();
} else {
  addEventListener('TrunkApplicationStarted', showAdapter, { once: true });
}
