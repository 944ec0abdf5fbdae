// mlp_fused.wgsl — a small MLP's whole forward, loss and backward in two dispatches, instead
// of a dozen or more per-layer ones (matmuls, bias, activation, loss, their backwards). For
// models this small every dispatch costs more to encode and launch than its arithmetic, so
// fewer dispatches is what makes a step fast.
//
//   mlp_fused_rows:   one thread per batch row, 16 rows per workgroup. Each thread runs its row
//                     through every layer, takes the loss and its gradient (cross-entropy with
//                     labels, or mean squared error), and backpropagates; the workgroup then
//                     sums its 16 rows' weight and bias gradients (through workgroup memory)
//                     and its loss, and writes them to its own slot of `partials`.
//   mlp_fused_reduce: one thread per parameter: grads[p] += Σ over workgroups, in order (no
//                     float atomics: reproducible); the last thread writes the mean loss.
//
// The math is that of the per-layer path (mlp.rs + loss.wgsl): layer l computes
// z = W_l·h + b_l (W_l stored (out, in) at its offset of the flat parameter buffer), h = f(z)
// except for the last layer; cross-entropy's gradient is (softmax − onehot)/B with a NaN row
// loss and a zero gradient for a label out of range; MSE's is 2(pred − target)/(B·out).
// Limits (checked by the host): every width ≤ MF_MAXW, at most MF_MAXL layers.

const MF_MAXW: u32 = 32u; // widest layer (inputs, hidden, outputs)
const MF_MAXL: u32 = 4u;  // layers
const MF_ROWS: u32 = 16u; // rows per workgroup, one per thread

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
    groups: u32,      // workgroups of mlp_fused_rows
    loss_scale: f32,  // 1/B (cross-entropy) or 1/(B·out) (MSE): the mean
    grad_scale: f32,  // 1/B or 2/(B·out): d mean loss / d output, without the (p − y) factor
    layer: array<MfLayer, 4>,
};

@group(0) @binding(0) var<storage, read> mf_w: array<f32>;               // (P) flat weights
@group(0) @binding(1) var<storage, read> mf_x: array<f32>;               // (B, in)
@group(0) @binding(2) var<storage, read> mf_t: array<u32>;               // (B) labels, or (B, out) f32 targets (bits)
@group(0) @binding(3) var<storage, read_write> mf_partials: array<f32>;  // (G, P + 1)
@group(0) @binding(4) var<uniform> mf: MfParams;

var<workgroup> mf_dz: array<f32, 512>;  // (MF_ROWS, MF_MAXW) the layer's output gradient per row
var<workgroup> mf_in: array<f32, 512>;  // (MF_ROWS, MF_MAXW) the layer's input per row
var<workgroup> mf_loss: array<f32, 16>; // (MF_ROWS) row losses

// The dot products below keep four partial sums: one running sum would make every
// multiply-add wait for the one before it, and these loops are the kernel's whole cost.

// b[o] + Σ_i W[o, i]·a[base + i] for the layer at (w, fan_in).
fn mf_neuron(w: u32, fan_in: u32, bias: f32, a: ptr<function, array<f32, 160>>, base: u32) -> f32 {
    var s = vec4<f32>(bias, 0.0, 0.0, 0.0);
    var i = 0u;
    while (i + 4u <= fan_in) {
        s += vec4<f32>(mf_w[w + i], mf_w[w + i + 1u], mf_w[w + i + 2u], mf_w[w + i + 3u])
           * vec4<f32>((*a)[base + i], (*a)[base + i + 1u], (*a)[base + i + 2u], (*a)[base + i + 3u]);
        i += 4u;
    }
    while (i < fan_in) {
        s.x += mf_w[w + i] * (*a)[base + i];
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

@compute @workgroup_size(16)
fn mlp_fused_rows(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                  @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = row_index(wg, nwg);
    if (g >= mf.groups) { return; } // whole workgroup: barriers stay uniform
    let r = g * MF_ROWS + lid;
    let live = r < mf.rows;
    let slot = g * (mf.total + 1u);
    // a[l·MAXW + i]: input of layer l (a[0..] = x); z[l·MAXW + o]: its pre-activation.
    var a: array<f32, 160>;
    var z: array<f32, 128>;
    let in0 = mf.layer[0].fan_in;
    for (var i = 0u; i < in0; i++) {
        a[i] = select(0.0, mf_x[min(r, mf.rows - 1u) * in0 + i], live);
    }
    let last = mf.layers - 1u;
    for (var l = 0u; l < mf.layers; l++) {
        let ly = mf.layer[l];
        for (var o = 0u; o < ly.out; o++) {
            let s = mf_neuron(ly.w + o * ly.fan_in, ly.fan_in, mf_w[ly.b + o], &a, l * MF_MAXW);
            z[l * MF_MAXW + o] = s;
            a[(l + 1u) * MF_MAXW + o] = select(mf_act(s), s, l == last);
        }
    }

    // Loss of this row and d loss / d output (d[o]).
    let outs = mf.layer[last].out;
    let y = (last + 1u) * MF_MAXW;
    var d: array<f32, 32>;
    var row_loss = 0.0;
    if (mf.mse == 1u) {
        for (var o = 0u; o < outs; o++) {
            let diff = a[y + o] - bitcast<f32>(mf_t[min(r, mf.rows - 1u) * outs + o]);
            row_loss += diff * diff;
            d[o] = mf.grad_scale * diff;
        }
    } else {
        let t = mf_t[min(r, mf.rows - 1u)];
        let valid = t < outs;
        var m = -3.402823e38;
        for (var o = 0u; o < outs; o++) { m = max(m, a[y + o]); }
        var s = 0.0;
        for (var o = 0u; o < outs; o++) { s += exp(a[y + o] - m); }
        let x_t = a[y + select(0u, t, valid)];
        // A quiet NaN for a label out of range: the mean turns NaN and the step is skipped.
        row_loss = select(bitcast<f32>(0x7fc00000u | (t & 0x003fffffu)), (m - x_t) + log(s), valid);
        for (var o = 0u; o < outs; o++) {
            let p = exp(a[y + o] - m) / s;
            d[o] = select(0.0, (p - select(0.0, 1.0, o == t)) * mf.grad_scale, valid);
        }
    }
    if (!live) {
        row_loss = 0.0;
        for (var o = 0u; o < outs; o++) { d[o] = 0.0; }
    }
    mf_loss[lid] = row_loss;
    workgroupBarrier();
    if (lid == 0u) {
        var sum = 0.0;
        for (var k = 0u; k < MF_ROWS; k++) { sum += mf_loss[k]; }
        mf_partials[slot + mf.total] = sum;
    }

    // Backward, last layer first: the workgroup sums dW = Σ_rows dz ⊗ input and db = Σ_rows dz.
    var dn: array<f32, 32>;
    for (var step = 0u; step < mf.layers; step++) {
        let l = last - step;
        let ly = mf.layer[l];
        for (var o = 0u; o < ly.out; o++) { mf_dz[lid * MF_MAXW + o] = d[o]; }
        for (var i = 0u; i < ly.fan_in; i++) { mf_in[lid * MF_MAXW + i] = a[l * MF_MAXW + i]; }
        workgroupBarrier();
        for (var e = lid; e < ly.out * ly.fan_in; e += MF_ROWS) {
            let o = e / ly.fan_in;
            let i = e % ly.fan_in;
            var acc = vec4<f32>(0.0);
            for (var k = 0u; k < MF_ROWS; k += 4u) {
                acc += vec4<f32>(mf_dz[k * MF_MAXW + o], mf_dz[(k + 1u) * MF_MAXW + o], mf_dz[(k + 2u) * MF_MAXW + o], mf_dz[(k + 3u) * MF_MAXW + o])
                     * vec4<f32>(mf_in[k * MF_MAXW + i], mf_in[(k + 1u) * MF_MAXW + i], mf_in[(k + 2u) * MF_MAXW + i], mf_in[(k + 3u) * MF_MAXW + i]);
            }
            mf_partials[slot + ly.w + e] = (acc.x + acc.y) + (acc.z + acc.w);
        }
        for (var o = lid; o < ly.out; o += MF_ROWS) {
            var acc = 0.0;
            for (var k = 0u; k < MF_ROWS; k++) { acc += mf_dz[k * MF_MAXW + o]; }
            mf_partials[slot + ly.b + o] = acc;
        }
        if (l > 0u) {
            // dh = W_lᵀ·dz, then through the previous layer's activation.
            for (var i = 0u; i < ly.fan_in; i++) {
                var acc = vec4<f32>(0.0);
                var o = 0u;
                while (o + 4u <= ly.out) {
                    let f = ly.fan_in;
                    acc += vec4<f32>(mf_w[ly.w + o * f + i], mf_w[ly.w + (o + 1u) * f + i], mf_w[ly.w + (o + 2u) * f + i], mf_w[ly.w + (o + 3u) * f + i])
                         * vec4<f32>(d[o], d[o + 1u], d[o + 2u], d[o + 3u]);
                    o += 4u;
                }
                while (o < ly.out) {
                    acc.x += mf_w[ly.w + o * ly.fan_in + i] * d[o];
                    o += 1u;
                }
                dn[i] = ((acc.x + acc.y) + (acc.z + acc.w)) * mf_act_grad(z[(l - 1u) * MF_MAXW + i]);
            }
            for (var i = 0u; i < ly.fan_in; i++) { d[i] = dn[i]; }
        }
        workgroupBarrier(); // the next layer overwrites mf_dz and mf_in
    }
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
