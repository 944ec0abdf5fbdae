// softmax.wgsl — row softmax with an optional causal mask, and its backward.
// Row kernels: one 256-thread workgroup per row of `len` values.
//
// Causal mask: rows are (…, T) query positions flattened, so row r is query position
// r % seq_len and keeps columns 0..=pos only. Masked outputs (and their gradients) are
// exactly 0, and masked inputs are never read, so they may hold anything (even -inf/NaN).

struct SoftmaxParams {
    len: u32,     // values per row
    rows: u32,
    causal: u32,  // 1 = causal mask
    seq_len: u32, // T, for the causal mask's query position
};

// Columns of `row` that take part: all of them, or 0..=pos under the causal mask.
fn kept_columns(row: u32, p: SoftmaxParams) -> u32 {
    if (p.causal != 0u) {
        return min(row % p.seq_len + 1u, p.len);
    }
    return p.len;
}

// ---- softmax: out = exp(x - max) / Σ exp(x - max) over the kept columns ----
@group(0) @binding(0) var<storage, read> sm_input: array<f32>;     // (rows, len)
@group(0) @binding(1) var<storage, read_write> sm_out: array<f32>; // (rows, len)
@group(0) @binding(2) var<uniform> sm_params: SoftmaxParams;

@compute @workgroup_size(256)
fn softmax(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = row_index(wg, nwg);
    if (row >= sm_params.rows) { return; } // uniform: the whole workgroup exits
    let len = sm_params.len;
    let kept = kept_columns(row, sm_params);
    let off = row * len;
    var mx = -3.0e38;
    for (var i = lid; i < kept; i += ROW_WG) { mx = max(mx, sm_input[off + i]); }
    mx = row_max(lid, mx);
    var sum = 0.0;
    for (var i = lid; i < kept; i += ROW_WG) { sum += exp(sm_input[off + i] - mx); }
    let inv = 1.0 / row_sum(lid, sum);
    for (var i = lid; i < len; i += ROW_WG) {
        var y = 0.0;
        if (i < kept) { y = exp(sm_input[off + i] - mx) * inv; }
        sm_out[off + i] = y;
    }
}

// ---- softmax_backward: grad_in = y * (g - Σ y·g) over the kept columns, 0 elsewhere ----
@group(0) @binding(0) var<storage, read> sm_grad_out: array<f32>;     // (rows, len) upstream gradient
@group(0) @binding(1) var<storage, read> sm_final_out: array<f32>;    // (rows, len) forward output y
@group(0) @binding(2) var<storage, read_write> sm_grad_in: array<f32>; // (rows, len)
@group(0) @binding(3) var<uniform> smb_params: SoftmaxParams;

@compute @workgroup_size(256)
fn softmax_backward(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                    @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = row_index(wg, nwg);
    if (row >= smb_params.rows) { return; } // uniform: the whole workgroup exits
    let len = smb_params.len;
    let kept = kept_columns(row, smb_params);
    let off = row * len;
    var d = 0.0;
    for (var i = lid; i < kept; i += ROW_WG) { d += sm_grad_out[off + i] * sm_final_out[off + i]; }
    d = row_sum(lid, d);
    for (var i = lid; i < len; i += ROW_WG) {
        var gi = 0.0;
        if (i < kept) { gi = sm_final_out[off + i] * (sm_grad_out[off + i] - d); }
        sm_grad_in[off + i] = gi;
    }
}
