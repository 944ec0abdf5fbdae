// sampling.wgsl — batched top-k and sampling from the top k.
//
// Order: element (v, i) ranks before (w, j) when v > w, or v == w and i < j (value
// descending, ties to the lower index). This is a strict total order on a row's elements,
// so "the r-th element" is well defined for any finite logits: all-equal rows and huge
// negatives like -1e30 included. No -inf/-1e9 sentinel and no "used" marks are needed.

// (va, ia) ranks before (vb, ib).
fn ranks_before(va: f32, ia: u32, vb: f32, ib: u32) -> bool {
    return va > vb || (va == vb && ia < ib);
}

// ---- top_k: one 256-thread workgroup per row, k rounds of a workgroup arg-max ----
// Round r finds the best element strictly after round r-1's pick in the order above; each
// thread scans a strided slice, then a tree reduction over (found, value, index) picks the
// winner. A thread with no eligible element says so with its found flag.

struct TopKParams {
    vocab: u32, // V, elements per row
    k: u32,     // 1 <= k <= min(V, 256)
    rows: u32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read> tk_logits: array<f32>;        // (rows, V)
@group(0) @binding(1) var<storage, read_write> tk_indices: array<u32>; // (rows, k) best first
@group(0) @binding(2) var<storage, read_write> tk_values: array<f32>;  // (rows, k) matching values
@group(0) @binding(3) var<uniform> tk_p: TopKParams;

var<workgroup> tk_found: array<u32, 256>;
var<workgroup> tk_val: array<f32, 256>;
var<workgroup> tk_idx: array<u32, 256>;

@compute @workgroup_size(256)
fn top_k(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) lid3: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let row = row_index(wg, nwg);
    if (row >= tk_p.rows) { return; } // uniform: the whole workgroup exits
    let lid = lid3.x;
    let off = row * tk_p.vocab;
    var prev_v = 0.0;
    var prev_i = 0u;
    for (var r = 0u; r < tk_p.k; r++) {
        var found = false;
        var best_v = 0.0;
        var best_i = 0u;
        for (var j = lid; j < tk_p.vocab; j += ROW_WG) {
            let v = tk_logits[off + j];
            let eligible = r == 0u || ranks_before(prev_v, prev_i, v, j);
            if (eligible && (!found || ranks_before(v, j, best_v, best_i))) {
                found = true;
                best_v = v;
                best_i = j;
            }
        }
        tk_found[lid] = select(0u, 1u, found);
        tk_val[lid] = best_v;
        tk_idx[lid] = best_i;
        workgroupBarrier();
        for (var s = ROW_WG / 2u; s > 0u; s = s >> 1u) {
            if (lid < s) {
                let o = lid + s;
                let take = tk_found[o] == 1u
                    && (tk_found[lid] == 0u || ranks_before(tk_val[o], tk_idx[o], tk_val[lid], tk_idx[lid]));
                if (take) {
                    tk_found[lid] = 1u;
                    tk_val[lid] = tk_val[o];
                    tk_idx[lid] = tk_idx[o];
                }
            }
            workgroupBarrier();
        }
        // k <= V guarantees slot 0 found something: the row has V distinct ranks.
        prev_v = tk_val[0];
        prev_i = tk_idx[0];
        if (lid == 0u) {
            tk_indices[row * tk_p.k + r] = prev_i;
            tk_values[row * tk_p.k + r] = prev_v;
        }
        workgroupBarrier(); // every thread has read slot 0 before the next round rewrites it
    }
}

// ---- top_k_sample: one thread per row draws a token from softmax(values / temperature) ----
// The draw u in [0, 1) is a counter-based hash of (seed, row), so a run is reproducible and
// the CPU reference draws the same u: u = (pcg_hash(seed + pcg_hash(row)) >> 8) / 2^24.
// The token is the first pick j whose cumulative weight exceeds u · Σ weights, where
// weight_j = exp(max(v_j - v_0, -104·T) / T) (v_0 is the row's largest value, so the top
// weight is exactly 1 and nothing overflows; the clamp keeps the exponent finite for tiny T
// or logits like -1e30, where exp(-104) already underflows). Temperature 0 is greedy: the
// token is pick 0, the arg-max (lowest index among ties).

struct SampleParams {
    k: u32,
    rows: u32,
    temperature: f32, // 0 (greedy) or a normal positive f32
    seed: u32,
}

@group(0) @binding(0) var<storage, read> ts_indices: array<u32>;       // (rows, k) from top_k
@group(0) @binding(1) var<storage, read> ts_values: array<f32>;        // (rows, k) descending
@group(0) @binding(2) var<storage, read_write> ts_tokens: array<u32>;  // (rows)
@group(0) @binding(3) var<uniform> ts_p: SampleParams;

// PCG-RXS-M-XS 32-bit hash (Jarzynski & Olano 2020); u32 arithmetic wraps.
fn pcg_hash(x: u32) -> u32 {
    let state = x * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

fn sample_weight(v: f32, top: f32, t: f32) -> f32 {
    return exp(max(v - top, -104.0 * t) / t);
}

@compute @workgroup_size(64)
fn top_k_sample(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = linear_index(gid, nwg);
    if (row >= ts_p.rows) { return; }
    let k = ts_p.k;
    let off = row * k;
    let t = ts_p.temperature;
    if (t == 0.0) {
        ts_tokens[row] = ts_indices[off];
        return;
    }
    let top = ts_values[off];
    var total = 0.0;
    for (var j = 0u; j < k; j++) { total += sample_weight(ts_values[off + j], top, t); }
    // 24 random bits: exactly representable, so the CPU reference sees the same u.
    let u = f32(pcg_hash(ts_p.seed + pcg_hash(row)) >> 8u) * (1.0 / 16777216.0);
    let goal = u * total;
    // Walk the CDF; a rounding shortfall at the end falls back to the last pick with weight.
    var cum = 0.0;
    var pick = ts_indices[off];
    for (var j = 0u; j < k; j++) {
        let w = sample_weight(ts_values[off + j], top, t);
        cum += w;
        if (w > 0.0) { pick = ts_indices[off + j]; }
        if (goal < cum) { break; }
    }
    ts_tokens[row] = pick;
}
