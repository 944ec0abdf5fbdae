// loss.wgsl — cross-entropy over batched logits (one 256-thread workgroup per row, or one thread
// per row for few classes; forward and gradient fused in one pass) and mean-squared error (partial sums of (pred − target)², finished
// by reduce.wgsl's sum_final). Means over N are taken by the host's 1/N scale; backwards read
// the upstream gradient dloss from a 1-element GPU buffer, so no scalar crosses to the CPU.

// ---- cross-entropy: loss_r = logsumexp(x_r) − x_r[t_r], dlogits = (softmax(x_r) − onehot(t_r)) · scale ----
struct CeParams {
    rows: u32,       // N
    vocab: u32,      // V
    grad_scale: f32, // 1/N: the gradient of the mean over rows
    _pad: u32,
};

@group(0) @binding(0) var<storage, read> ce_logits: array<f32>;         // (N, V)
@group(0) @binding(1) var<storage, read> ce_targets: array<u32>;        // (N)
@group(0) @binding(2) var<storage, read_write> ce_row_loss: array<f32>; // (N)   forward only
@group(0) @binding(2) var<storage, read> ce_dloss: array<f32>;          // (1)   backward only
@group(0) @binding(3) var<storage, read_write> ce_dlogits: array<f32>;  // (N, V)
@group(0) @binding(4) var<uniform> ce_params: CeParams;

// A quiet NaN carrying the bad target in its payload. WGSL rejects NaN constants, so the bits
// come through a run-time value; a NaN row loss makes the mean NaN, which the host can detect.
fn nan_for_target(t: u32) -> f32 {
    return bitcast<f32>(0x7fc00000u | (t & 0x003fffffu));
}

// (max, Σ exp(x − max)) of the row at `base`: the max subtraction keeps exp ≤ 1, so any finite
// logits (±80 included) neither overflow nor lose the sum.
fn ce_row_stats(base: u32, lid: u32) -> vec2<f32> {
    let v = ce_params.vocab;
    var m = -3.402823e38;
    for (var j = lid; j < v; j += ROW_WG) {
        m = max(m, ce_logits[base + j]);
    }
    m = row_max(lid, m);
    var s = 0.0;
    for (var j = lid; j < v; j += ROW_WG) {
        s += exp(ce_logits[base + j] - m);
    }
    s = row_sum(lid, s);
    return vec2<f32>(m, s);
}

// dlogits[row] = (softmax − onehot(t)) · scale, or 0 for an out-of-range target.
fn ce_write_grad(base: u32, lid: u32, t: u32, valid: bool, stats: vec2<f32>, scale: f32) {
    let inv_s = 1.0 / stats.y;
    for (var j = lid; j < ce_params.vocab; j += ROW_WG) {
        let p = exp(ce_logits[base + j] - stats.x) * inv_s;
        let g = (p - select(0.0, 1.0, j == t)) * scale;
        ce_dlogits[base + j] = select(0.0, g, valid);
    }
}

@compute @workgroup_size(256)
fn cross_entropy_loss(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                      @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = row_index(wg, nwg);
    if (row >= ce_params.rows) { return; } // whole workgroup: barriers stay uniform
    let base = row * ce_params.vocab;
    let t = ce_targets[row];
    let valid = t < ce_params.vocab;
    let stats = ce_row_stats(base, lid);
    if (lid == 0u) {
        // (max − x_t) + log Σ: both terms ≥ 0, no cancellation between large logits.
        let x_t = ce_logits[base + select(0u, t, valid)];
        ce_row_loss[row] = select(nan_for_target(t), (stats.x - x_t) + log(stats.y), valid);
    }
    ce_write_grad(base, lid, t, valid, stats, ce_params.grad_scale);
}

// The same for few classes (V ≤ 64, e.g. a classifier's 2–10): one thread per row. A whole
// 256-thread workgroup per row would leave nearly every thread idle, which on a CPU adapter
// (llvmpipe, SwiftShader) costs as much as real work.
@compute @workgroup_size(64)
fn cross_entropy_loss_small(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = linear_index(gid, nwg);
    if (row >= ce_params.rows) { return; }
    let v = ce_params.vocab;
    let base = row * v;
    let t = ce_targets[row];
    let valid = t < v;
    var m = -3.402823e38;
    for (var j = 0u; j < v; j++) {
        m = max(m, ce_logits[base + j]);
    }
    var s = 0.0;
    for (var j = 0u; j < v; j++) {
        s += exp(ce_logits[base + j] - m);
    }
    let x_t = ce_logits[base + select(0u, t, valid)];
    ce_row_loss[row] = select(nan_for_target(t), (m - x_t) + log(s), valid);
    let inv_s = 1.0 / s;
    for (var j = 0u; j < v; j++) {
        let g = (exp(ce_logits[base + j] - m) * inv_s - select(0.0, 1.0, j == t)) * ce_params.grad_scale;
        ce_dlogits[base + j] = select(0.0, g, valid);
    }
}

@compute @workgroup_size(256)
fn cross_entropy_backward(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                          @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = row_index(wg, nwg);
    if (row >= ce_params.rows) { return; }
    let base = row * ce_params.vocab;
    let t = ce_targets[row];
    let stats = ce_row_stats(base, lid);
    ce_write_grad(base, lid, t, t < ce_params.vocab, stats, ce_dloss[0] * ce_params.grad_scale);
}

// ---- mean-squared error: partials of Σ (pred − target)², then sum_final with scale 1/N ----
struct MseParams {
    groups: u32, // G, the workgroups owning a partial (same layout as reduce.wgsl's PartialParams)
    offset: u32, // first partial slot written
    _squares: u32,
    _pad: u32,
};

@group(0) @binding(0) var<storage, read> mse_pred: array<f32>;           // (N)
@group(0) @binding(1) var<storage, read> mse_target: array<f32>;         // (N)
@group(0) @binding(2) var<storage, read_write> mse_partials: array<f32>; // (P) forward only
@group(0) @binding(2) var<storage, read> mse_dloss: array<f32>;          // (1) backward only
@group(0) @binding(3) var<uniform> mse_params: MseParams;                 // forward only
@group(0) @binding(3) var<storage, read_write> mse_grad: array<f32>;     // (N) backward only

@compute @workgroup_size(256)
fn mse_loss(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
            @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = row_index(wg, nwg);
    if (g >= mse_params.groups) { return; }
    let n = arrayLength(&mse_pred);
    var acc = 0.0;
    for (var i = g * ROW_WG + lid; i < n; i += mse_params.groups * ROW_WG) {
        let d = mse_pred[i] - mse_target[i];
        acc += d * d;
    }
    let total = row_sum(lid, acc);
    if (lid == 0u) { mse_partials[mse_params.offset + g] = total; }
}

// grad = dloss · 2(pred − target)/N, the gradient of PyTorch's MSELoss(reduction='mean').
@compute @workgroup_size(64)
fn mse_loss_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    let n = arrayLength(&mse_pred);
    if (i >= n) { return; }
    mse_grad[i] = mse_dloss[0] * 2.0 * (mse_pred[i] - mse_target[i]) / f32(n);
}
