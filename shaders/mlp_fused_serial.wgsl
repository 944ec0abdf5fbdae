// mlp_fused_serial.wgsl — mlp_fused_rows_serial, the fused MLP pass's first kernel for CPU
// adapters (llvmpipe, SwiftShader): one thread per batch row, 16 rows per workgroup, each
// thread running its row through every layer and back. On a GPU that serial chain is
// latency-bound (mlp_fused_rows, a thread per neuron, is what GPUs run), but a CPU adapter runs
// a workgroup's threads as loops, and there the per-neuron kernel's many more threads and
// barriers cost about three times as much (llvmpipe: ~350 against ~120 mlp-spiral steps/s). Same params, bindings, partials layout
// (one slot per workgroup) and math as mlp_fused_rows, whose module this shares.

const MFS_ROWS: u32 = 16u; // rows per workgroup, one per thread

var<workgroup> mfs_dz: array<f32, 512>;  // (MFS_ROWS, MF_MAXW) the layer's output gradient per row
var<workgroup> mfs_in: array<f32, 512>;  // (MFS_ROWS, MF_MAXW) the layer's input per row
var<workgroup> mfs_loss: array<f32, 16>; // (MFS_ROWS) row losses

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

@compute @workgroup_size(MFS_ROWS)
fn mlp_fused_rows_serial(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                         @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = row_index(wg, nwg);
    if (g >= mf.groups) { return; } // whole workgroup: barriers stay uniform
    let r = g * MFS_ROWS + lid;
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
            let s = mfs_neuron(ly.w + o * ly.fan_in, ly.fan_in, mf_w[ly.b + o], &a, l * MF_MAXW);
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
    mfs_loss[lid] = row_loss;
    workgroupBarrier();
    if (lid == 0u) {
        var sum = 0.0;
        for (var k = 0u; k < MFS_ROWS; k++) { sum += mfs_loss[k]; }
        mf_partials[slot + mf.total] = sum;
    }

    // Backward, last layer first: the workgroup sums dW = Σ_rows dz ⊗ input and db = Σ_rows dz.
    var dn: array<f32, 32>;
    for (var step = 0u; step < mf.layers; step++) {
        let l = last - step;
        let ly = mf.layer[l];
        for (var o = 0u; o < ly.out; o++) { mfs_dz[lid * MF_MAXW + o] = d[o]; }
        for (var i = 0u; i < ly.fan_in; i++) { mfs_in[lid * MF_MAXW + i] = a[l * MF_MAXW + i]; }
        workgroupBarrier();
        for (var e = lid; e < ly.out * ly.fan_in; e += MFS_ROWS) {
            let o = e / ly.fan_in;
            let i = e % ly.fan_in;
            var acc = vec4<f32>(0.0);
            for (var k = 0u; k < MFS_ROWS; k += 4u) {
                acc += vec4<f32>(mfs_dz[k * MF_MAXW + o], mfs_dz[(k + 1u) * MF_MAXW + o], mfs_dz[(k + 2u) * MF_MAXW + o], mfs_dz[(k + 3u) * MF_MAXW + o])
                     * vec4<f32>(mfs_in[k * MF_MAXW + i], mfs_in[(k + 1u) * MF_MAXW + i], mfs_in[(k + 2u) * MF_MAXW + i], mfs_in[(k + 3u) * MF_MAXW + i]);
            }
            mf_partials[slot + ly.w + e] = (acc.x + acc.y) + (acc.z + acc.w);
        }
        for (var o = lid; o < ly.out; o += MFS_ROWS) {
            var acc = 0.0;
            for (var k = 0u; k < MFS_ROWS; k++) { acc += mfs_dz[k * MF_MAXW + o]; }
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
        workgroupBarrier(); // the next layer overwrites mfs_dz and mf_in
    }
}
