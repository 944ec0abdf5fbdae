// inspect.wgsl — what the "look inside" views read from a model, computed where the data already
// lives so that only a few hundred numbers come back: each tensor's range, sum of squares and
// histogram, for its values (weights or an activation), its gradients and its last update (the
// values minus those before the step), every tensor in two dispatches; and the causal attention
// probabilities of one prompt, recomputed from q, k and the forward's log-sum-exp.
//
// Non-finite values (NaN, ±Inf) are counted, not binned: a diverging tensor shows as a count
// rather than poisoning the range. They are recognised by their exponent bits, which no
// compiler folds away (as `x != x` may be).

struct StatsParams {
    tensors: u32, // entries in the table
    sources: u32, // 1: values only; 3: values, gradients, updates
    bins: u32,    // histogram bins, 1..=64
    _pad: u32,
};

@group(0) @binding(0) var<storage, read> st_values: array<f32>; // (P) flat weights, or one activation tensor
@group(0) @binding(1) var<storage, read> st_prev: array<f32>;   // (P) the values before the last update
@group(0) @binding(2) var<storage, read> st_grads: array<f32>;  // (P) gradients
@group(0) @binding(3) var<storage, read> st_table: array<u32>;  // (tensors, 2) [offset, len]

// Element i of source 0 (values), 1 (gradients) or 2 (updates: values − previous).
fn st_value(source: u32, i: u32) -> f32 {
    switch source {
        case 0u: { return st_values[i]; }
        case 1u: { return st_grads[i]; }
        default: { return st_values[i] - st_prev[i]; }
    }
}

fn st_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

// ---------------------------------------------------------------- range and sum of squares
@group(0) @binding(4) var<storage, read_write> st_stats: array<f32>; // (sources, tensors, 4) [min, max, Σx², non-finite]
@group(0) @binding(5) var<uniform> st_p: StatsParams;

// One workgroup per (source, tensor): row r = source · tensors + tensor.
@compute @workgroup_size(256)
fn tensor_stats(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
    let r = row_index(wg, nwg);
    if (r >= st_p.sources * st_p.tensors) { return; } // whole workgroup: barriers stay uniform
    let source = r / st_p.tensors;
    let t = r % st_p.tensors;
    let off = st_table[2u * t];
    let len = st_table[2u * t + 1u];
    var lo = 3.4e38;
    var hi = -3.4e38;
    var sq = 0.0;
    var bad = 0.0;
    for (var i = lid; i < len; i += ROW_WG) {
        let x = st_value(source, off + i);
        if (st_finite(x)) {
            lo = min(lo, x);
            hi = max(hi, x);
            sq += x * x;
        } else {
            bad += 1.0;
        }
    }
    lo = -row_max(lid, -lo);
    hi = row_max(lid, hi);
    sq = row_sum(lid, sq);
    bad = row_sum(lid, bad);
    if (lid == 0u) {
        st_stats[4u * r] = lo;
        st_stats[4u * r + 1u] = hi;
        st_stats[4u * r + 2u] = sq;
        st_stats[4u * r + 3u] = bad;
    }
}

// ---------------------------------------------------------------- histogram
@group(0) @binding(4) var<storage, read> sh_stats: array<f32>;       // (sources, tensors, 4) from tensor_stats
@group(0) @binding(5) var<storage, read_write> sh_counts: array<u32>; // (sources, tensors, bins)
@group(0) @binding(6) var<uniform> sh_p: StatsParams;

var<workgroup> sh_bins: array<atomic<u32>, 64>;

// Equal-width bins over [min, max] of each (source, tensor); bin = floor((x − min) / width),
// the maximum in the last bin; a tensor of one value puts everything in bin 0.
@compute @workgroup_size(256)
fn tensor_histogram(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                    @builtin(num_workgroups) nwg: vec3<u32>) {
    let r = row_index(wg, nwg);
    if (r >= sh_p.sources * sh_p.tensors) { return; }
    let source = r / sh_p.tensors;
    let t = r % sh_p.tensors;
    let off = st_table[2u * t];
    let len = st_table[2u * t + 1u];
    let bins = sh_p.bins;
    if (lid < 64u) { atomicStore(&sh_bins[lid], 0u); }
    workgroupBarrier();
    let lo = sh_stats[4u * r];
    let width = (sh_stats[4u * r + 1u] - lo) / f32(bins);
    for (var i = lid; i < len; i += ROW_WG) {
        let x = st_value(source, off + i);
        if (st_finite(x)) {
            var b = 0u;
            if (width > 0.0) { b = min(u32(max((x - lo) / width, 0.0)), bins - 1u); }
            atomicAdd(&sh_bins[b], 1u);
        }
    }
    workgroupBarrier();
    if (lid < bins) { sh_counts[r * bins + lid] = atomicLoad(&sh_bins[lid]); }
}

// ---------------------------------------------------------------- attention probabilities
struct AttnProbsParams {
    batch: u32,
    seq: u32,
    heads: u32,
    head_dim: u32,
    scale: f32, // 1 / sqrt(head_dim), as in the forward
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
};

@group(0) @binding(0) var<storage, read> ap_qkv: array<f32>;          // (B, T, 3C) q and k rotated, as attention_forward read them
@group(0) @binding(1) var<storage, read> ap_lse: array<f32>;          // (B, H, T) each query's log-sum-exp, from attention_forward
@group(0) @binding(2) var<storage, read_write> ap_probs: array<f32>;  // (B, H, T, T) row i: query i's weights over keys 0..=i
@group(0) @binding(3) var<uniform> ap_p: AttnProbsParams;

// P_ij = exp(scale · q_i·k_j − lse_i) for j <= i, 0 past the diagonal; one thread per element.
@compute @workgroup_size(64)
fn attention_probs(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = linear_index(gid, nwg);
    let t_len = ap_p.seq;
    if (e >= ap_p.batch * ap_p.heads * t_len * t_len) { return; }
    let j = e % t_len;
    let i = (e / t_len) % t_len;
    let bh = e / (t_len * t_len);
    if (j > i) {
        ap_probs[e] = 0.0;
        return;
    }
    let h = bh % ap_p.heads;
    let b = bh / ap_p.heads;
    let c = ap_p.heads * ap_p.head_dim;
    let q = (b * t_len + i) * 3u * c + h * ap_p.head_dim;
    let k = (b * t_len + j) * 3u * c + c + h * ap_p.head_dim;
    var s = 0.0;
    for (var d = 0u; d < ap_p.head_dim; d++) {
        s += ap_qkv[q + d] * ap_qkv[k + d];
    }
    ap_probs[e] = exp(s * ap_p.scale - ap_lse[bh * t_len + i]);
}
