// mlp_fused_serial.wgsl — mlp_fused_rows_serial, the fused MLP pass's first kernel for CPU
// adapters (llvmpipe, SwiftShader): one thread per partials slot, each running its rows
// (t, t + slots, ...) through every layer and back and adding their gradients and losses into
// its own slot. On a GPU that serial chain is latency-bound (mlp_fused_rows, a thread per
// neuron, is what GPUs run), but a CPU adapter runs a workgroup's threads as loops, and there
// the per-neuron kernel's many more threads and barriers cost about three times as much.
// No barriers at all: a CPU compiler turns each barrier into a point where every thread's live
// state is saved, and with this kernel's ~350 floats of per-row arrays live across the
// backward's barriers SwiftShader took 600-900 ms to compile the earlier workgroup-summing form.
// Same params, bindings and math as mlp_fused_rows, whose module this shares; mf.groups is the
// number of slots here (the host's FusedRows::PerRow), which mlp_fused_reduce sums.

const MFS_THREADS: u32 = 16u; // threads per workgroup
const MFS_MAXW: u32 = 32u;    // widest layer it takes (its per-row arrays hold 5 layers' worth: 160)

// The dot products below keep four partial sums: one running sum would make every
// multiply-add wait for the one before it, and these loops are the kernel's whole cost.

// b[o] + Σ_i W[o, i]·a[base + i] for the layer at (w, fan_in).
fn mfs_neuron(w: u32, fan_in: u32, bias: f32, a: ptr<function, array<f32, 160>>, base: u32) -> f32 {
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

// Row r's loss from its outputs a[y .. y + outs], and d loss / d output into d.
fn mfs_loss(r: u32, a: ptr<function, array<f32, 160>>, y: u32, outs: u32, d: ptr<function, array<f32, 32>>) -> f32 {
    if (mf.mse == 1u) {
        var row_loss = 0.0;
        for (var o = 0u; o < outs; o++) {
            let diff = (*a)[y + o] - bitcast<f32>(mf_t[r * outs + o]);
            row_loss += diff * diff;
            (*d)[o] = mf.grad_scale * diff;
        }
        return row_loss;
    }
    let t = mf_t[r];
    let valid = t < outs;
    var m = -3.402823e38;
    for (var o = 0u; o < outs; o++) { m = max(m, (*a)[y + o]); }
    var s = 0.0;
    for (var o = 0u; o < outs; o++) { s += exp((*a)[y + o] - m); }
    for (var o = 0u; o < outs; o++) {
        let p = exp((*a)[y + o] - m) / s;
        (*d)[o] = select(0.0, (p - select(0.0, 1.0, o == t)) * mf.grad_scale, valid);
    }
    // A quiet NaN for a label out of range: the mean turns NaN and the step is skipped.
    let x_t = (*a)[y + select(0u, t, valid)];
    return select(bitcast<f32>(0x7fc00000u | (t & 0x003fffffu)), (m - x_t) + log(s), valid);
}

@compute @workgroup_size(MFS_THREADS)
fn mlp_fused_rows_serial(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                         @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = row_index(wg, nwg) * MFS_THREADS + lid;
    if (t >= mf.groups) { return; }
    for (var r = t; r < mf.rows; r += mf.groups) {
        mfs_row(r, t * (mf.total + 1u), r == t);
    }
}

// Row r's forward, loss and backward, its gradients and loss added into the slot at `slot`.
fn mfs_row(r: u32, slot: u32, first: bool) {
    // a[l·MAXW + i]: input of layer l (a[0..] = x); z[l·MAXW + o]: its pre-activation.
    var a: array<f32, 160>;
    var z: array<f32, 128>;
    let in0 = mf.layer[0].fan_in;
    for (var i = 0u; i < in0; i++) { a[i] = mf_x[r * in0 + i]; }
    let last = mf.layers - 1u;
    for (var l = 0u; l < mf.layers; l++) {
        let ly = mf.layer[l];
        for (var o = 0u; o < ly.out; o++) {
            let s = mfs_neuron(ly.w + o * ly.fan_in, ly.fan_in, mf_w[ly.b + o], &a, l * MFS_MAXW);
            z[l * MFS_MAXW + o] = s;
            a[(l + 1u) * MFS_MAXW + o] = select(mf_act(s), s, l == last);
        }
    }

    // Loss of this row and d loss / d output (d[o]).
    let outs = mf.layer[last].out;
    var d: array<f32, 32>;
    let row_loss = mfs_loss(r, &a, (last + 1u) * MFS_MAXW, outs, &d);
    mf_put(slot + mf.total, row_loss, first);

    // Backward, last layer first: dW += dz ⊗ input and db += dz into the slot.
    var dn: array<f32, 32>;
    for (var step = 0u; step < mf.layers; step++) {
        let l = last - step;
        let ly = mf.layer[l];
        for (var o = 0u; o < ly.out; o++) {
            let w = slot + ly.w + o * ly.fan_in;
            for (var i = 0u; i < ly.fan_in; i++) { mf_put(w + i, d[o] * a[l * MFS_MAXW + i], first); }
            mf_put(slot + ly.b + o, d[o], first);
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
                dn[i] = ((acc.x + acc.y) + (acc.z + acc.w)) * mf_act_grad(z[(l - 1u) * MFS_MAXW + i]);
            }
            for (var i = 0u; i < ly.fan_in; i++) { d[i] = dn[i]; }
        }
    }
}
