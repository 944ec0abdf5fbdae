// mlp_fused.wgsl — a small MLP's whole forward, loss and backward in two dispatches, instead
// of a dozen or more per-layer ones (matmuls, bias, activation, loss, their backwards). For
// models this small every dispatch costs more to encode and launch than its arithmetic, so
// fewer dispatches is what makes a step fast.
//
//   mlp_fused_rows:   256 threads a workgroup, mf.stride per batch row (16, 32 or 64: the
//                     widest layer rounded up to a power of two), one per neuron, so 16, 8 or 4
//                     rows a pass. Layer by layer, each thread computes its neuron for its row
//                     from the activations in workgroup memory; then the loss and its gradient,
//                     and the backward pass, where the workgroup sums its rows' weight and bias
//                     gradients into its own slot of `partials`, with its loss. A workgroup
//                     takes every mf.groups-th pass of rows, so the slots (and the partials)
//                     stay few for big batches. (One thread per row, running whole layers, was
//                     latency-bound: 36 µs a step for mlp-spiral on an H200.)
//   mlp_fused_reduce: one thread per parameter: grads[p] += Σ over slots, in order (no float
//                     atomics: reproducible); the last thread writes the mean loss.
//
// The math is that of the per-layer path (mlp.rs + loss.wgsl): layer l computes
// z = W_l·h + b_l (W_l stored (out, in) at its offset of the flat parameter buffer), h = f(z)
// except for the last layer; cross-entropy's gradient is (softmax − onehot)/B with a NaN row
// loss and a zero gradient for a label out of range; MSE's is 2(pred − target)/(B·out).
// Limits (checked by the host): every width ≤ MF_MAXW, at most MF_MAXL layers.

const MF_MAXW: u32 = 64u; // widest layer (inputs, hidden, outputs)
const MF_MAXL: u32 = 4u;  // layers
const MF_PLANE: u32 = 256u; // values in a plane: one per thread, [row * mf.stride + neuron]

struct MfLayer {
    w: u32,      // offset of W (out, in) in the flat parameters
    b: u32,      // offset of b (out)
    fan_in: u32,
    out: u32,
};

struct MfParams {
    rows: u32,        // B
    layers: u32,      // L
    act: u32,         // 0 relu, 1 silu, 2 tanh
    mse: u32,         // 0 cross-entropy with labels, 1 mean squared error
    total: u32,       // P, flat parameters (a partials slot holds P gradients + 1 loss sum)
    groups: u32,      // partials slots: workgroups of mlp_fused_rows, threads of mlp_fused_rows_serial
    loss_scale: f32,  // 1/B (cross-entropy) or 1/(B·out) (MSE): the mean
    grad_scale: f32,  // 1/B or 2/(B·out): d mean loss / d output, without the (p − y) factor
    stride: u32,      // mlp_fused_rows: threads per row (a power of two, 16..=MF_MAXW)
    passes: u32,      // mlp_fused_rows: ⌈B / rows a pass⌉, dealt out to the mf.groups workgroups
    pad0: u32,
    pad1: u32,
    layer: array<MfLayer, 4>,
};

@group(0) @binding(0) var<storage, read> mf_w: array<f32>;               // (P) flat weights
@group(0) @binding(1) var<storage, read> mf_x: array<f32>;               // (B, in)
@group(0) @binding(2) var<storage, read> mf_t: array<u32>;               // (B) labels, or (B, out) f32 targets (bits)
@group(0) @binding(3) var<storage, read_write> mf_partials: array<f32>;  // (G, P + 1)
@group(0) @binding(4) var<uniform> mf: MfParams;

// Planes of MF_PLANE values, one per thread: (MF_PLANE / mf.stride rows, mf.stride neurons).
var<workgroup> mf_h: array<f32, (MF_MAXL + 1u) * MF_PLANE>;    // (MF_MAXL + 1) planes: layer l's input (l = 0: x; l = L: the output)
var<workgroup> mf_pre: array<f32, MF_MAXL * MF_PLANE>;  // (MF_MAXL) planes: layer l's pre-activation z
var<workgroup> mf_grad: array<f32, 2u * MF_PLANE>;  // (2) planes: d loss / d z of the layer being backpropagated, and of the one below
var<workgroup> mf_loss: array<f32, MF_PLANE>;  // (1) plane: each output's share of its row's loss

// b + Σ_i W[i]·mf_h[base + i] for one neuron, W at w. Four partial sums: one running sum
// would make every multiply-add wait for the one before it.
fn mf_neuron(w: u32, fan_in: u32, bias: f32, base: u32) -> f32 {
    var s = vec4<f32>(bias, 0.0, 0.0, 0.0);
    var i = 0u;
    while (i + 4u <= fan_in) {
        s += vec4<f32>(mf_w[w + i], mf_w[w + i + 1u], mf_w[w + i + 2u], mf_w[w + i + 3u])
           * vec4<f32>(mf_h[base + i], mf_h[base + i + 1u], mf_h[base + i + 2u], mf_h[base + i + 3u]);
        i += 4u;
    }
    while (i < fan_in) {
        s.x += mf_w[w + i] * mf_h[base + i];
        i += 1u;
    }
    return (s.x + s.y) + (s.z + s.w);
}

fn mf_act(z: f32) -> f32 {
    if (mf.act == 1u) { return z * sigmoid(z); }
    if (mf.act == 2u) {
        let e = exp(-2.0 * abs(z));
        return sign(z) * (1.0 - e) / (1.0 + e);
    }
    return max(0.0, z);
}

// f'(z), as the per-layer backward kernels compute it.
fn mf_act_grad(z: f32) -> f32 {
    if (mf.act == 1u) {
        let s = sigmoid(z);
        return s * (1.0 + z * (1.0 - s));
    }
    if (mf.act == 2u) {
        let t = mf_act(z);
        return 1.0 - t * t;
    }
    return select(0.0, 1.0, z > 0.0);
}

// d loss / d output j of the row whose outputs start at y in mf_h (0 for j ≥ outs), and into
// mf_loss[at] this output's share of the row loss (MSE: its squared error; cross-entropy: the
// whole row loss at j = 0). A quiet NaN loss for a label out of range: the mean turns NaN and
// the step is skipped.
fn mf_loss_grad(r: u32, j: u32, y: u32, outs: u32, at: u32) -> f32 {
    if (mf.mse == 1u) {
        if (j >= outs) { mf_loss[at] = 0.0; return 0.0; }
        let diff = mf_h[y + j] - bitcast<f32>(mf_t[r * outs + j]);
        mf_loss[at] = diff * diff;
        return mf.grad_scale * diff;
    }
    let t = mf_t[r];
    let valid = t < outs;
    var m = -3.402823e38;
    for (var o = 0u; o < outs; o++) { m = max(m, mf_h[y + o]); }
    var s = 0.0;
    for (var o = 0u; o < outs; o++) { s += exp(mf_h[y + o] - m); }
    let x_t = mf_h[y + select(0u, t, valid)];
    let row_loss = select(bitcast<f32>(0x7fc00000u | (t & 0x003fffffu)), (m - x_t) + log(s), valid);
    mf_loss[at] = select(0.0, row_loss, j == 0u);
    if (j >= outs) { return 0.0; }
    let p = exp(mf_h[y + j] - m) / s;
    return select(0.0, (p - select(0.0, 1.0, j == t)) * mf.grad_scale, valid);
}

@compute @workgroup_size(MF_PLANE)
fn mlp_fused_rows(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                  @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = row_index(wg, nwg);
    if (g >= mf.groups) { return; } // whole workgroup: barriers stay uniform
    for (var p = g; p < mf.passes; p += mf.groups) {
        mf_rows_pass(lid, p, g * (mf.total + 1u), p == g);
    }
}

// partials[at] = v in a slot's first pass (what the last step left is never read), += v after.
fn mf_put(at: u32, v: f32, first: bool) {
    if (first) {
        mf_partials[at] = v;
    } else {
        mf_partials[at] += v;
    }
}

// Pass p: rows p·(MF_PLANE / mf.stride) onwards, into the slot at `slot`.
fn mf_rows_pass(lid: u32, p: u32, slot: u32, first: bool) {
    let per = MF_PLANE / mf.stride; // rows a pass
    let row = lid / mf.stride; // this thread's row in the pass
    let j = lid % mf.stride;   // and its neuron (input, output) index; lid is its place in a plane
    let r = p * per + row;
    let live = r < mf.rows;
    let rc = min(r, mf.rows - 1u); // rows past the batch read the last one, and count zero
    mf_forward(lid, row, j, rc, live);
    mf_loss_and_grad(lid, row, j, rc, live, slot, first);
    // Backward, last layer first; mf_grad's two planes take turns holding this layer's dz.
    for (var step = 0u; step < mf.layers; step++) {
        mf_backward_layer(lid, row, j, mf.layers - 1u - step, step & 1u, slot, first);
    }
}

// The row's input into plane 0 of mf_h, then each layer's z into mf_pre and f(z) (the last
// layer: z) into the next plane of mf_h.
fn mf_forward(lid: u32, row: u32, j: u32, rc: u32, live: bool) {
    let in0 = mf.layer[0].fan_in;
    mf_h[lid] = select(0.0, mf_x[rc * in0 + min(j, in0 - 1u)], live && j < in0);
    workgroupBarrier();
    let last = mf.layers - 1u;
    for (var l = 0u; l < mf.layers; l++) {
        let ly = mf.layer[l];
        if (j < ly.out) {
            let s = mf_neuron(ly.w + j * ly.fan_in, ly.fan_in, mf_w[ly.b + j], l * MF_PLANE + row * mf.stride);
            mf_pre[l * MF_PLANE + lid] = s;
            mf_h[(l + 1u) * MF_PLANE + lid] = select(mf_act(s), s, l == last);
        }
        workgroupBarrier();
    }
}

// d loss / d output into plane 0 of mf_grad (zero for rows past the batch), and the pass's
// loss sum into the slot's last entry.
fn mf_loss_and_grad(lid: u32, row: u32, j: u32, rc: u32, live: bool, slot: u32, first: bool) {
    let outs = mf.layer[mf.layers - 1u].out;
    let d = mf_loss_grad(rc, j, mf.layers * MF_PLANE + row * mf.stride, outs, lid);
    mf_grad[lid] = select(0.0, d, live);
    if (!live) { mf_loss[lid] = 0.0; }
    workgroupBarrier();
    if (lid == 0u) {
        var sum = 0.0;
        for (var k = 0u; k < MF_PLANE / mf.stride; k++) {
            var row_loss = 0.0;
            for (var o = 0u; o < outs; o++) { row_loss += mf_loss[k * mf.stride + o]; }
            sum += row_loss;
        }
        mf_put(slot + mf.total, sum, first);
    }
}

// Layer l's backward, its dz in plane `cur` of mf_grad: the workgroup sums dW = Σ_rows dz ⊗ input
// and db = Σ_rows dz into the slot, and (below the first layer) each thread takes its row's dz
// one layer down, into the other plane.
fn mf_backward_layer(lid: u32, row: u32, j: u32, l: u32, cur: u32, slot: u32, first: bool) {
    let per = MF_PLANE / mf.stride;
    let ly = mf.layer[l];
    let dz = cur * MF_PLANE;
    let h = l * MF_PLANE;
    for (var e = lid; e < ly.out * ly.fan_in; e += MF_PLANE) {
        let o = e / ly.fan_in;
        let i = e % ly.fan_in;
        var acc = 0.0;
        for (var k = 0u; k < per; k++) { acc += mf_grad[dz + k * mf.stride + o] * mf_h[h + k * mf.stride + i]; }
        mf_put(slot + ly.w + e, acc, first);
    }
    if (lid < ly.out) {
        var acc = 0.0;
        for (var k = 0u; k < per; k++) { acc += mf_grad[dz + k * mf.stride + lid]; }
        mf_put(slot + ly.b + lid, acc, first);
    }
    if (l > 0u && j < ly.fan_in) {
        // dh = W_lᵀ·dz for this row and input j, then through the previous layer's activation.
        let f = ly.fan_in;
        let base = dz + row * mf.stride;
        var acc = vec4<f32>(0.0);
        var o = 0u;
        while (o + 4u <= ly.out) {
            acc += vec4<f32>(mf_w[ly.w + o * f + j], mf_w[ly.w + (o + 1u) * f + j], mf_w[ly.w + (o + 2u) * f + j], mf_w[ly.w + (o + 3u) * f + j])
                 * vec4<f32>(mf_grad[base + o], mf_grad[base + o + 1u], mf_grad[base + o + 2u], mf_grad[base + o + 3u]);
            o += 4u;
        }
        while (o < ly.out) {
            acc.x += mf_w[ly.w + o * f + j] * mf_grad[base + o];
            o += 1u;
        }
        let dh = (acc.x + acc.y) + (acc.z + acc.w);
        mf_grad[(cur ^ 1u) * MF_PLANE + lid] = dh * mf_act_grad(mf_pre[(l - 1u) * MF_PLANE + lid]);
    }
    workgroupBarrier(); // the next layer (or pass) reads the plane written here and overwrites this one
}

@group(0) @binding(0) var<storage, read> mfr_partials: array<f32>;      // (G, P + 1)
@group(0) @binding(1) var<storage, read_write> mfr_grads: array<f32>;   // (P) accumulated into
@group(0) @binding(2) var<storage, read_write> mfr_loss: array<f32>;    // (1) the mean loss
@group(0) @binding(3) var<uniform> mfr: MfParams;

@compute @workgroup_size(64)
fn mlp_fused_reduce(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let p = linear_index(gid, nwg);
    if (p > mfr.total) { return; }
    var acc = 0.0;
    for (var g = 0u; g < mfr.groups; g++) { acc += mfr_partials[g * (mfr.total + 1u) + p]; }
    if (p < mfr.total) {
        mfr_grads[p] += acc;
    } else {
        mfr_loss[0] = acc * mfr.loss_scale;
    }
}
