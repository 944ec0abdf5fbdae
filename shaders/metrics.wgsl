// metrics.wgsl — what a training step reports, written on the GPU into a ring buffer so no step
// waits on the CPU: the loss, the gradient norm, and each parameter tensor's update/weight ratio
// ||w_after − w_before|| / ||w_after|| (the AdamW health signal; ~1e-3 is typical).
// Why a new kernel: the ratios need two reductions per tensor over ranges of the flat parameter
// buffer, which `sum_partial`/`sum_final` would do in 2·tensors dispatches; this is one.

struct MetricsParams {
    tensors: u32, // parameter tensors, one workgroup each
    row: u32,     // ring row written this step (step % slots)
    stride: u32,  // floats per ring row: 2 + tensors
    _pad: u32,
};

@group(0) @binding(0) var<storage, read> m_weights: array<f32>;     // (P) flat parameters after the update
@group(0) @binding(1) var<storage, read> m_prev: array<f32>;        // (P) flat parameters before it
@group(0) @binding(2) var<storage, read> m_table: array<u32>;       // (tensors, 2) [offset, len] in the flat buffers
@group(0) @binding(3) var<storage, read> m_loss: array<f32>;        // (1) mean loss of the step
@group(0) @binding(4) var<storage, read> m_norm_sq: array<f32>;     // (1) squared global gradient norm
@group(0) @binding(5) var<storage, read_write> m_ring: array<f32>;  // (slots, stride) [loss, grad norm, ratios…]
@group(0) @binding(6) var<uniform> m_params: MetricsParams;

@compute @workgroup_size(256)
fn record_metrics(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                  @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = row_index(wg, nwg);
    if (t >= m_params.tensors) { return; } // whole workgroup: barriers stay uniform
    let off = m_table[2u * t];
    let len = m_table[2u * t + 1u];
    var dd = 0.0;
    var ww = 0.0;
    for (var i = lid; i < len; i += ROW_WG) {
        let w = m_weights[off + i];
        let d = w - m_prev[off + i];
        dd += d * d;
        ww += w * w;
    }
    dd = row_sum(lid, dd);
    ww = row_sum(lid, ww);
    if (lid == 0u) {
        let base = m_params.row * m_params.stride;
        m_ring[base + 2u + t] = select(0.0, sqrt(dd / ww), ww > 0.0);
        if (t == 0u) {
            m_ring[base] = m_loss[0];
            m_ring[base + 1u] = sqrt(m_norm_sq[0]);
        }
    }
}
