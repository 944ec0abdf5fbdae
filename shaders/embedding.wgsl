// embedding.wgsl — token embedding lookup and its backward (a deterministic scatter-add).
// Tokens are u32 ids; a token >= vocab reads as a zero row (the host validates tokens when it
// uploads them, see `check_tokens`; the kernel only keeps such a token from reading out of bounds).

struct EmbParams {
    tokens: u32,   // N = B*T positions
    vocab: u32,    // V
    channels: u32, // C
    _pad: u32,
};

// ---- embedding_forward: out[n, :] = table[tokens[n], :] ----
@group(0) @binding(0) var<storage, read> ef_tokens: array<u32>;     // (N)
@group(0) @binding(1) var<storage, read> ef_table: array<f32>;      // (V, C)
@group(0) @binding(2) var<storage, read_write> ef_out: array<f32>;  // (N, C)
@group(0) @binding(3) var<uniform> ef_p: EmbParams;

@compute @workgroup_size(64)
fn embedding_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = linear_index(gid, nwg);
    let ch = ef_p.channels;
    if (idx >= ef_p.tokens * ch) { return; }
    let tok = ef_tokens[idx / ch];
    var v = 0.0;
    if (tok < ef_p.vocab) { v = ef_table[tok * ch + idx % ch]; }
    ef_out[idx] = v;
}

// ---- embedding_backward: dtable[v, :] += Σ_{n : tokens[n] == v} dout[n, :] ----
// No float atomics in WGSL, so no scatter: one 256-thread workgroup owns row v of dtable, a
// thread a channel (256 channels a pass). The tokens come through workgroup memory 256 at a
// time; every thread reads each one (a broadcast, the same branch for all) and adds the dout
// rows of the matches, in ascending n. Every dtable element is written by one thread, in a
// fixed order: deterministic. (An earlier version compacted each chunk's matches with a prefix
// sum first: 16 barriers a chunk, which made it a chain of barriers, 3x slower on Dawn.)
@group(0) @binding(0) var<storage, read> eb_dout: array<f32>;         // (N, C)
@group(0) @binding(1) var<storage, read> eb_tokens: array<u32>;       // (N)
@group(0) @binding(2) var<storage, read_write> eb_dtable: array<f32>; // (V, C), accumulated
@group(0) @binding(3) var<uniform> eb_p: EmbParams;

var<workgroup> eb_chunk: array<u32, 256>; // tokens[base .. base + 256]

@compute @workgroup_size(256)
fn embedding_backward(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                      @builtin(num_workgroups) nwg: vec3<u32>) {
    let v = row_index(wg, nwg);
    if (v >= eb_p.vocab) { return; } // uniform: the whole workgroup exits
    let ch = eb_p.channels;
    for (var c0 = 0u; c0 < ch; c0 += ROW_WG) {
        let c = c0 + lid;
        let live = c < ch;
        var acc = 0.0;
        if (live) { acc = eb_dtable[v * ch + c]; }
        for (var base = 0u; base < eb_p.tokens; base += ROW_WG) {
            workgroupBarrier(); // the previous chunk's readers are done
            let n = base + lid;
            eb_chunk[lid] = select(eb_p.vocab, eb_tokens[min(n, eb_p.tokens - 1u)], n < eb_p.tokens);
            workgroupBarrier();
            let count = min(ROW_WG, eb_p.tokens - base);
            for (var j = 0u; j < count; j++) {
                if (eb_chunk[j] == v && live) { acc += eb_dout[(base + j) * ch + c]; }
            }
        }
        if (live) { eb_dtable[v * ch + c] = acc; }
    }
}

// ---- embedding_rms_norm: x[n, :] = table[tokens[n], :], then out = rmsnorm(x) * weight ----
// A Llama's first two steps in one dispatch, a 256-thread workgroup per token row: the row is
// looked up, written to the residual stream x, and normed as rms_norm (norm.wgsl) would, with
// the same sums, so x, out and rstd have its bits.
struct EmbNormParams {
    tokens: u32,   // N
    vocab: u32,    // V
    channels: u32, // C
    eps: f32,
};

@group(0) @binding(0) var<storage, read> en_tokens: array<u32>;        // (N)
@group(0) @binding(1) var<storage, read> en_table: array<f32>;         // (V, C)
@group(0) @binding(2) var<storage, read> en_weight: array<f32>;        // (C)
@group(0) @binding(3) var<storage, read_write> en_x: array<f32>;       // (N, C)
@group(0) @binding(4) var<storage, read_write> en_out: array<f32>;     // (N, C)
@group(0) @binding(5) var<storage, read_write> en_rstd: array<f32>;    // (N)
@group(0) @binding(6) var<uniform> en_p: EmbNormParams;

@compute @workgroup_size(256)
fn embedding_rms_norm(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                      @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = row_index(wg, nwg);
    if (row >= en_p.tokens) { return; } // uniform: the whole workgroup exits
    let ch = en_p.channels;
    let tok = en_tokens[row];
    let valid = tok < en_p.vocab; // a token >= V reads as a zero row, as in embedding_forward
    let off = row * ch;
    var ss = 0.0;
    for (var i = lid; i < ch; i += ROW_WG) {
        var v = 0.0;
        if (valid) { v = en_table[tok * ch + i]; }
        en_x[off + i] = v;
        ss += v * v;
    }
    let rstd = 1.0 / sqrt(row_sum(lid, ss) / f32(ch) + en_p.eps);
    if (lid == 0u) { en_rstd[row] = rstd; }
    // Each thread rereads only the values it wrote itself: no barrier needed.
    for (var i = lid; i < ch; i += ROW_WG) {
        en_out[off + i] = en_x[off + i] * rstd * en_weight[i];
    }
}
