// metrics.wgsl — what a training step reports, written on the GPU into a ring buffer so no step
// waits on the CPU: the loss, the gradient norm, and each parameter tensor's update/weight ratio
// ||w_after − w_before|| / ||w_after|| (the AdamW health signal; ~1e-3 is typical).
// Why a new kernel: the ratios need two reductions per tensor over ranges of the flat parameter
// buffer, which `sum_partial`/`sum_final` would do in 2·tensors dispatches; this is one, or two
// for a model with tensors so large that one workgroup each would be slow (one workgroup took
// 2 ms for a 4M-float tensor on an H200): `metrics_partials` first sums their parts, a
// workgroup each, and `record_metrics` adds up those parts.

struct MetricsParams {
    tensors: u32, // parameter tensors, one workgroup each
    row: u32,     // ring row written this step (step % slots)
    stride: u32,  // floats per ring row: 2 + tensors
    parts: u32,   // parts of the large tensors, one metrics_partials workgroup each
};

@group(0) @binding(0) var<storage, read> m_weights: array<f32>;     // (P) flat parameters after the update
@group(0) @binding(1) var<storage, read> m_prev: array<f32>;        // (P) flat parameters before it
// (tensors + parts, 4): each tensor's [offset, len, first part, parts] in the flat buffers
// (parts = 0: record_metrics sums the range itself), then each part's [offset, len, 0, 0]
@group(0) @binding(2) var<storage, read> m_table: array<u32>;
@group(0) @binding(3) var<storage, read> m_loss: array<f32>;        // (1) mean loss of the step
@group(0) @binding(4) var<storage, read> m_norm_sq: array<f32>;     // (1) squared global gradient norm
@group(0) @binding(5) var<storage, read_write> m_ring: array<f32>;  // (slots, stride) [loss, grad norm, ratios…]
@group(0) @binding(6) var<uniform> m_params: MetricsParams;
@group(0) @binding(7) var<storage, read_write> m_parts: array<f32>; // (max(parts, 1), 2) [Σ Δw², Σ w²] of each part

// This thread's share of [Σ (w − prev)², Σ w²] over [off, off + len).
fn m_squares(lid: u32, off: u32, len: u32) -> vec2<f32> {
    var s = vec2<f32>(0.0);
    var i = lid;
    // Four elements an iteration: their loads are in flight together.
    for (; i + 3u * ROW_WG < len; i += 4u * ROW_WG) {
        let at = vec4<u32>(off + i) + vec4<u32>(0u, ROW_WG, 2u * ROW_WG, 3u * ROW_WG);
        let w = vec4<f32>(m_weights[at.x], m_weights[at.y], m_weights[at.z], m_weights[at.w]);
        let d = w - vec4<f32>(m_prev[at.x], m_prev[at.y], m_prev[at.z], m_prev[at.w]);
        s += vec2<f32>(dot(d, d), dot(w, w));
    }
    for (; i < len; i += ROW_WG) {
        let w = m_weights[off + i];
        let d = w - m_prev[off + i];
        s += vec2<f32>(d * d, w * w);
    }
    return s;
}

@compute @workgroup_size(256)
fn metrics_partials(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                    @builtin(num_workgroups) nwg: vec3<u32>) {
    let p = row_index(wg, nwg);
    if (p >= m_params.parts) { return; } // whole workgroup: barriers stay uniform
    let e = 4u * (m_params.tensors + p);
    let s = m_squares(lid, m_table[e], m_table[e + 1u]);
    let dd = row_sum(lid, s.x);
    let ww = row_sum(lid, s.y);
    if (lid == 0u) {
        m_parts[2u * p] = dd;
        m_parts[2u * p + 1u] = ww;
    }
}

@compute @workgroup_size(256)
fn record_metrics(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                  @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = row_index(wg, nwg);
    if (t >= m_params.tensors) { return; } // whole workgroup: barriers stay uniform
    let e = 4u * t;
    let first = m_table[e + 2u];
    let parts = m_table[e + 3u];
    var s = vec2<f32>(0.0);
    if (parts == 0u) {
        s = m_squares(lid, m_table[e], m_table[e + 1u]);
    } else {
        for (var q = lid; q < parts; q += ROW_WG) {
            s += vec2<f32>(m_parts[2u * (first + q)], m_parts[2u * (first + q) + 1u]);
        }
    }
    let dd = row_sum(lid, s.x);
    let ww = row_sum(lid, s.y);
    if (lid == 0u) {
        let base = m_params.row * m_params.stride;
        m_ring[base + 2u + t] = select(0.0, sqrt(dd / ww), ww > 0.0);
        if (t == 0u) {
            m_ring[base] = m_loss[0];
            m_ring[base + 1u] = sqrt(m_norm_sq[0]);
        }
    }
}
