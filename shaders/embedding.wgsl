// embedding.wgsl — token embedding lookup and its backward (a deterministic scatter-add).
// Tokens are u32 ids; a token >= vocab reads as a zero row (the host validates tokens when it
// uploads them, see `check_tokens`; the kernel only keeps such a token from reading out of bounds).

struct EmbParams {
    tokens: u32,   // N = B*T positions
    vocab: u32,    // V
    channels: u32, // C
    blocks: u32,   // embedding_backward: workgroups a row, each taking every blocks-th 256 channels
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
// No float atomics in WGSL, so no scatter: eb_p.blocks 256-thread workgroups own row v of
// dtable, each every blocks-th 256 of its channels (the host splits rows while the grid stays
// small: each workgroup scans every token, so a big vocabulary keeps one a row). A workgroup
// scans the tokens EB_CHUNK at a time, each thread checking EB_PER_THREAD consecutive ones,
// compacts the matching positions (in ascending order) with a prefix sum of the threads' counts
// in workgroup memory, then each thread adds those dout rows into its channels, four loads in
// flight. Every dtable element is written by one thread, in a fixed order: deterministic.
// (With one token a thread, the prefix sum's 16 barriers came every 256 tokens: 1.2-2x this
// time natively; with no prefix sum, every thread testing every token, its 4,096 dependent
// tests were slower still: bench/RESULTS.md, session 27. With a workgroup a row and one dout
// load in flight at a time, Dawn took 160 µs at C = 256 and 605 µs at C = 1,024 on an H100,
// 60 rows; split into 256-channel workgroups, 50-53 µs at every C: session 28.)
@group(0) @binding(0) var<storage, read> eb_dout: array<f32>;         // (N, C)
@group(0) @binding(1) var<storage, read> eb_tokens: array<u32>;       // (N)
@group(0) @binding(2) var<storage, read_write> eb_dtable: array<f32>; // (V, C), accumulated
@group(0) @binding(3) var<uniform> eb_p: EmbParams;

const EB_PER_THREAD: u32 = 8u;
const EB_CHUNK: u32 = 2048u; // ROW_WG * EB_PER_THREAD tokens a chunk

var<workgroup> eb_scan: array<u32, 256>;   // inclusive prefix sum of the threads' match counts
var<workgroup> eb_hits: array<u32, 2048>;  // the chunk's matching positions n, ascending

@compute @workgroup_size(256)
fn embedding_backward(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                      @builtin(num_workgroups) nwg: vec3<u32>) {
    let ch = eb_p.channels;
    let v = row_index(wg, nwg) / eb_p.blocks;
    if (v >= eb_p.vocab) { return; } // uniform: the whole workgroup exits
    let c0 = (row_index(wg, nwg) % eb_p.blocks) * ROW_WG + lid; // this thread's first channel
    for (var base = 0u; base < eb_p.tokens; base += EB_CHUNK) {
        let first = base + lid * EB_PER_THREAD; // this thread's tokens: first .. first + 8
        var hits = 0u; // bit k: token first + k matches
        var count = 0u;
        for (var k = 0u; k < EB_PER_THREAD; k++) {
            if (first + k < eb_p.tokens && eb_tokens[first + k] == v) {
                hits |= 1u << k;
                count++;
            }
        }
        eb_scan[lid] = count;
        workgroupBarrier();
        // Hillis–Steele scan: read, barrier, write, barrier (log2(256) = 8 steps).
        for (var off = 1u; off < ROW_WG; off = off << 1u) {
            var add = 0u;
            if (lid >= off) { add = eb_scan[lid - off]; }
            workgroupBarrier();
            eb_scan[lid] += add;
            workgroupBarrier();
        }
        var at = eb_scan[lid] - count; // where this thread's first match goes
        for (var k = 0u; k < EB_PER_THREAD; k++) {
            if ((hits & (1u << k)) != 0u) {
                eb_hits[at] = first + k;
                at++;
            }
        }
        workgroupBarrier();
        let total = eb_scan[ROW_WG - 1u];
        if (total > 0u) {
            for (var c = c0; c < ch; c += eb_p.blocks * ROW_WG) {
                var acc = eb_dtable[v * ch + c];
                var j = 0u;
                // Four rows' loads in flight together, still added one by one in ascending n.
                for (; j + 4u <= total; j += 4u) {
                    let g0 = eb_dout[eb_hits[j] * ch + c];
                    let g1 = eb_dout[eb_hits[j + 1u] * ch + c];
                    let g2 = eb_dout[eb_hits[j + 2u] * ch + c];
                    let g3 = eb_dout[eb_hits[j + 3u] * ch + c];
                    acc = (((acc + g0) + g1) + g2) + g3;
                }
                for (; j < total; j++) { acc += eb_dout[eb_hits[j] * ch + c]; }
                eb_dtable[v * ch + c] = acc;
            }
        }
        workgroupBarrier(); // eb_scan and eb_hits are rewritten by the next chunk
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
