// optimizer.wgsl — gradient norm, clipping, AdamW, SGD and gradient bookkeeping. Parameters may
// live in one flat buffer with each tensor a view, so every kernel works over the arrayLength of
// the range it is bound to and one dispatch can update a whole range.
//
// The clipping and the NaN guard read norm_sq (Σ g² over all gradients, 1 element) from a GPU
// buffer written by gradient_norm_squared + loss_and_grad_norm (or reduce.wgsl's sum_final): no
// CPU round trip. A non-finite norm_sq (a NaN/Inf gradient or an overflow) skips the update entirely.

// Exponent all ones = Inf or NaN; a bit test, because fast-math compilers may fold x != x.
fn is_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

// PyTorch clip_grad_norm_: g *= min(1, max_norm / (‖g‖ + 1e-6)); max_norm 0 means no clipping.
fn clip_factor(norm_sq: f32, max_norm: f32) -> f32 {
    if (max_norm <= 0.0) { return 1.0; }
    return min(1.0, max_norm / (sqrt(norm_sq) + 1e-6));
}

// ---- gradient_norm_squared: partials[offset + g] = Σ g² over workgroup g's share ----
struct NormParams {
    groups: u32, // G, the workgroups owning a partial (same layout as reduce.wgsl's PartialParams)
    offset: u32, // first slot written: every gradient tensor gets its own slots in one array
    _squares: u32,
    _pad: u32,
};

@group(0) @binding(0) var<storage, read> gn_grad: array<f32>;           // (N)
@group(0) @binding(1) var<storage, read_write> gn_partials: array<f32>; // (P), P >= offset + G
@group(0) @binding(2) var<uniform> gn_params: NormParams;

@compute @workgroup_size(256)
fn gradient_norm_squared(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                         @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = row_index(wg, nwg);
    if (g >= gn_params.groups) { return; } // whole workgroup: barriers stay uniform
    let n = arrayLength(&gn_grad);
    let stride = gn_params.groups * ROW_WG;
    var acc = 0.0;
    var i = g * ROW_WG + lid;
    // Four loads in flight at a time, still added one after another (the same bits).
    for (; i + 3u * stride < n; i += 4u * stride) {
        let a = gn_grad[i];
        let b = gn_grad[i + stride];
        let c = gn_grad[i + 2u * stride];
        let d = gn_grad[i + 3u * stride];
        acc = (((acc + a * a) + b * b) + c * c) + d * d;
    }
    for (; i < n; i += stride) {
        let v = gn_grad[i];
        acc += v * v;
    }
    let total = row_sum(lid, acc);
    if (lid == 0u) { gn_partials[gn_params.offset + g] = total; }
}

// ---- loss_and_grad_norm: the step's two closing sums in one workgroup ----
// norm_sq = Σ partials[0..norm_count] (gradient_norm_squared's), and the batch's mean loss:
// loss = loss_scale · Σ loss_partials[0..loss_count] (row losses, or MSE partials), or, with
// loss_count = 0, the loss a fused pass already wrote. A non-finite loss becomes norm_sq (a bit
// test, not 0·loss, which a fast-math compiler may fold to 0), so the update's NaN guard skips the step whether the loss or a gradient blew up.
// Both sums run the tree of reduce.wgsl's sum_final, so they have its bits.
struct LossNormParams {
    norm_count: u32,
    loss_count: u32,
    loss_scale: f32,
    _pad: u32,
};

@group(0) @binding(0) var<storage, read> lg_norm_partials: array<f32>; // (P), P >= norm_count
@group(0) @binding(1) var<storage, read> lg_loss_partials: array<f32>; // (L), L >= loss_count (a placeholder when 0)
@group(0) @binding(2) var<storage, read_write> lg_loss: array<f32>;    // (1)
@group(0) @binding(3) var<storage, read_write> lg_norm_sq: array<f32>; // (1)
@group(0) @binding(4) var<uniform> lg_params: LossNormParams;

@compute @workgroup_size(256)
fn loss_and_grad_norm(@builtin(local_invocation_index) lid: u32) {
    var acc = 0.0;
    for (var i = lid; i < lg_params.loss_count; i += ROW_WG) {
        acc += lg_loss_partials[i];
    }
    let loss_sum = row_sum(lid, acc) * lg_params.loss_scale;
    acc = 0.0;
    for (var i = lid; i < lg_params.norm_count; i += ROW_WG) {
        acc += lg_norm_partials[i];
    }
    let norm_sq = row_sum(lid, acc);
    if (lid == 0u) {
        var loss = lg_loss[0];
        if (lg_params.loss_count > 0u) {
            loss = loss_sum;
            lg_loss[0] = loss;
        }
        lg_norm_sq[0] = select(norm_sq, loss, !is_finite(loss));
    }
}

// ---- clip_grad_by_norm: g *= min(1, max_norm / (sqrt(norm_sq) + 1e-6)) ----
struct ClipParams {
    max_norm: f32,
    _pad0: f32,
    _pad1: f32,
    _pad2: f32,
};

@group(0) @binding(0) var<storage, read_write> clip_grad: array<f32>; // (N)
@group(0) @binding(1) var<storage, read> clip_norm_sq: array<f32>;    // (1)
@group(0) @binding(2) var<uniform> clip_params: ClipParams;

@compute @workgroup_size(64)
fn clip_grad_by_norm(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    let norm_sq = clip_norm_sq[0];
    // A non-finite norm leaves g alone: the optimizers' NaN guard then skips the step.
    if (i >= arrayLength(&clip_grad) || !is_finite(norm_sq)) { return; }
    clip_grad[i] *= clip_factor(norm_sq, clip_params.max_norm);
}

// ---- adamw_update: PyTorch AdamW (bias-corrected moments, decoupled weight decay) ----
struct AdamParams {
    lr: f32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    weight_decay: f32,
    t: f32,        // step number, 1 on the first update (a whole number)
    max_norm: f32, // 0: no clipping
    decay_end: u32, // elements [0, decay_end) decay; the rest (norms, biases) do not
};

@group(0) @binding(0) var<storage, read_write> adam_w: array<f32>; // (N) weights
@group(0) @binding(1) var<storage, read> adam_g: array<f32>;       // (N) gradients
@group(0) @binding(2) var<storage, read_write> adam_m: array<f32>; // (N) first moment
@group(0) @binding(3) var<storage, read_write> adam_v: array<f32>; // (N) second moment
@group(0) @binding(4) var<storage, read> adam_norm_sq: array<f32>; // (1) Σ g² of all gradients
@group(0) @binding(5) var<uniform> adam_params: AdamParams;

// beta^t for a whole step number t by binary powering: every product is correctly rounded, so
// 1 − beta2^t stays accurate at small t, where WGSL's pow (exp2 of log2, whose absolute error
// near 1 is 2^-21) may be off by 1e-3 relative in the bias correction.
fn int_pow(beta: f32, t: f32) -> f32 {
    var b = beta;
    var r = 1.0;
    for (var e = u32(t); e > 0u; e = e >> 1u) {
        if ((e & 1u) != 0u) { r *= b; }
        b *= b;
    }
    return r;
}

@compute @workgroup_size(64)
fn adamw_update(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    let norm_sq = adam_norm_sq[0];
    if (i >= arrayLength(&adam_w) || !is_finite(norm_sq)) { return; } // NaN guard: w, m, v untouched
    let p = adam_params;
    let g = adam_g[i] * clip_factor(norm_sq, p.max_norm);
    let m = p.beta1 * adam_m[i] + (1.0 - p.beta1) * g;
    let v = p.beta2 * adam_v[i] + (1.0 - p.beta2) * g * g;
    adam_m[i] = m;
    adam_v[i] = v;
    let m_hat = m / (1.0 - int_pow(p.beta1, p.t));
    let v_hat = v / (1.0 - int_pow(p.beta2, p.t));
    // Decoupled decay on the old weight (PyTorch: w *= 1 − lr·wd, then the Adam step).
    let w = adam_w[i];
    let wd = select(0.0, p.weight_decay, i < p.decay_end);
    adam_w[i] = w - p.lr * wd * w - p.lr * m_hat / (sqrt(v_hat) + p.eps);
}

// ---- sgd_update: PyTorch SGD (L2 weight decay into g, momentum buf = μ·buf + g, no dampening) ----
struct SgdParams {
    lr: f32,
    momentum: f32,     // 0: plain SGD, the momentum buffer is neither read nor written
    weight_decay: f32,
    max_norm: f32,     // 0: no clipping
};

@group(0) @binding(0) var<storage, read_write> sgd_w: array<f32>;   // (N) weights
@group(0) @binding(1) var<storage, read> sgd_g: array<f32>;         // (N) gradients
@group(0) @binding(2) var<storage, read_write> sgd_buf: array<f32>; // (N) momentum, or (1) unused
@group(0) @binding(3) var<storage, read> sgd_norm_sq: array<f32>;   // (1) Σ g² of all gradients
@group(0) @binding(4) var<uniform> sgd_params: SgdParams;

@compute @workgroup_size(64)
fn sgd_update(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    let n = arrayLength(&sgd_w);
    let norm_sq = sgd_norm_sq[0];
    if (i >= n || !is_finite(norm_sq)) { return; } // NaN guard: w and buf untouched
    let p = sgd_params;
    let w = sgd_w[i];
    var d = sgd_g[i] * clip_factor(norm_sq, p.max_norm) + p.weight_decay * w;
    // The length check keeps a momentum set later through the uniform from reading a 1-element
    // placeholder out of bounds.
    if (p.momentum != 0.0 && arrayLength(&sgd_buf) == n) {
        d = p.momentum * sgd_buf[i] + d;
        sgd_buf[i] = d;
    }
    sgd_w[i] = w - p.lr * d;
}

// ---- gradient bookkeeping for accumulation over micro-batches ----
@group(0) @binding(0) var<storage, read_write> acc_grad: array<f32>; // (N)
@group(0) @binding(1) var<storage, read> acc_new: array<f32>;        // (N)

@compute @workgroup_size(64)
fn gradient_accumulate(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= arrayLength(&acc_grad)) { return; }
    acc_grad[i] += acc_new[i];
}

struct ScaleParams {
    factor: f32,
    _pad0: f32,
    _pad1: f32,
    _pad2: f32,
};

@group(0) @binding(0) var<storage, read_write> scale_grad: array<f32>; // (N)
@group(0) @binding(1) var<uniform> scale_params: ScaleParams;

@compute @workgroup_size(64)
fn gradient_scale(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= arrayLength(&scale_grad)) { return; }
    scale_grad[i] *= scale_params.factor;
}

// ---- loss_scale_update: dynamic loss scaling for mixed precision, one thread per step ----
// Runs after the update. The loss gradient was multiplied by state[0] before the backward and
// the gradients by state[1] = 1/state[0] after it (gradient_scale, fed from this state). A
// finite norm² is a clean step: after `growth_interval` clean steps in a row the scale
// doubles (up to LS_MAX). A non-finite one, whose update the NaN guard skipped, halves it (down
// to 1), and a scale past LS_MAX comes back to it. ring[row] keeps the scale the step used.
const LS_MAX: f32 = 16777216.0; // 2^24
struct LossScaleParams {
    row: u32,             // the metrics ring's row of this step
    growth_interval: u32, // clean steps before the scale doubles
    _pad0: u32,
    _pad1: u32,
};

@group(0) @binding(0) var<storage, read> ls_norm_sq: array<f32>;     // (1)
@group(0) @binding(1) var<storage, read_write> ls_state: array<f32>; // (4) scale, 1/scale, clean steps, 0
@group(0) @binding(2) var<storage, read_write> ls_ring: array<f32>;  // (slots)
@group(0) @binding(3) var<uniform> ls_params: LossScaleParams;

@compute @workgroup_size(1)
fn loss_scale_update() {
    var scale = ls_state[0];
    var clean = ls_state[2] + 1.0;
    if (ls_params.row < arrayLength(&ls_ring)) { ls_ring[ls_params.row] = scale; }
    // No arithmetic on an infinite scale (WGSL leaves it unspecified): start from above the cap.
    if (!is_finite(scale)) { scale = 2.0 * LS_MAX; }
    if (!is_finite(ls_norm_sq[0])) {
        scale = max(scale * 0.5, 1.0);
        clean = 0.0;
    } else if (clean >= f32(ls_params.growth_interval)) {
        scale = scale * 2.0;
        clean = 0.0;
    }
    scale = min(scale, LS_MAX);
    ls_state[0] = scale;
    ls_state[1] = 1.0 / scale;
    ls_state[2] = clean;
}
