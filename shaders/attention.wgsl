// attention.wgsl — causal multi-head self-attention, flash-attention style: the (T, T) score
// matrix is never stored. The forward saves each query's logsumexp, from which the backward
// recomputes P_ij = exp(s_ij - lse_i), s_ij = scale · q_i·k_j, scale = 1/sqrt(head_dim).
//
// Layout (llm.c): qkv (B, T, 3C) with each token's row [q (H, hd) | k (H, hd) | v (H, hd)],
// C = H·hd; out and dout (B, T, C), heads contiguous per token; lse and delta (B, H, T).
// Causal: query t sees keys 0..=t.
//
// Work split: a 64-thread workgroup owns 64 consecutive queries (forward, dq) or keys (dkv) of
// one (b, h), one per thread, and streams the other side through workgroup memory in tiles of
// `rows` tokens (as many as fit 256 vec4s: 8 at hd = 128, 64 at hd <= 16). Head vectors are
// held as vec4s, zero-padded past head_dim, so dot products need no tail handling.
// Workgroups are numbered blk = wg.x + wg.y * num_workgroups.x over (B, H, ceil(T / 64)).

struct AttnParams {
    batch: u32,
    seq: u32,
    heads: u32,
    head_dim: u32, // <= 128 (the host rejects larger)
    scale: f32,    // 1 / sqrt(head_dim)
    rope_theta: f32, // backward: > 0 when the forward's q and k were rotated by RoPE with this theta
    _pad1: u32,
    _pad2: u32,
}

const ATT_BLOCK: u32 = 64u; // tokens owned per workgroup, one per thread
const ATT_HD4: u32 = 32u;   // max head_dim / 4
const ATT_TILE4: u32 = 256u; // vec4s per workgroup tile

var<workgroup> att_tile_x: array<vec4<f32>, 256>; // (rows, hd4): K (forward, dq) or Q (dkv)
var<workgroup> att_tile_y: array<vec4<f32>, 256>; // (rows, hd4): V (forward, dq) or dout (dkv)
var<workgroup> att_tile_s: array<vec2<f32>, 64>;  // (rows): (lse, delta) of the queries (dkv)

// Tokens per tile: 16 KiB of tiles fits WebGPU's default workgroup storage.
fn att_rows(hd4: u32) -> u32 {
    return min(ATT_TILE4 / hd4, ATT_BLOCK);
}

// Which (b, h) and first token a workgroup owns; valid == false for grid padding.
struct AttBlock {
    b: u32,
    h: u32,
    t0: u32,
    valid: bool,
}

fn att_block(wg: vec3<u32>, nwg: vec3<u32>, p: AttnParams) -> AttBlock {
    let blocks_t = (p.seq + ATT_BLOCK - 1u) / ATT_BLOCK;
    let blk = row_index(wg, nwg);
    let bh = blk / blocks_t;
    return AttBlock(bh / p.heads, bh % p.heads, (blk % blocks_t) * ATT_BLOCK, blk < p.batch * p.heads * blocks_t);
}

// ---------------------------------------------------------------- forward
@group(0) @binding(0) var<storage, read> att_qkv: array<f32>;        // (B, T, 3C); the backward kernels read it too
@group(0) @binding(1) var<storage, read_write> att_out: array<f32>; // (B, T, C)
@group(0) @binding(2) var<storage, read_write> att_lse: array<f32>; // (B, H, T)
@group(0) @binding(3) var<uniform> att_p: AttnParams;

// Elements 4c..4c+3 of the head vector at att_qkv[base..base + hd], zero past hd.
fn att_qkv4(base: u32, c: u32, hd: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    for (var e = 0u; e < 4u; e++) {
        if (c * 4u + e < hd) { v[e] = att_qkv[base + c * 4u + e]; }
    }
    return v;
}

// Stages keys and values j0 .. j0 + rows of one (batch, head) into att_tile_x and att_tile_y,
// hd4 vec4s a token (zeros past the sequence); the caller's barrier follows. The forward and
// dq kernels, general and hd32, all stage their tiles this way.
fn att_stage_kv(lid: u32, j0: u32, rows: u32, hd4: u32, seq: u32, tok0: u32, c: u32, head: u32, hd: u32) {
    for (var i = lid; i < rows * hd4; i += ATT_BLOCK) {
        let j = j0 + i / hd4;
        var kv = vec4<f32>(0.0);
        var vv = vec4<f32>(0.0);
        if (j < seq) {
            let base = (tok0 + j) * 3u * c + head;
            kv = att_qkv4(base + c, i % hd4, hd);
            vv = att_qkv4(base + 2u * c, i % hd4, hd);
        }
        att_tile_x[i] = kv;
        att_tile_y[i] = vv;
    }
}

@compute @workgroup_size(64)
fn attention_forward(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                     @builtin(num_workgroups) nwg: vec3<u32>) {
    let blk = att_block(wg, nwg, att_p);
    if (!blk.valid) { return; } // uniform: whole workgroup exits
    let seq = att_p.seq;
    let hd = att_p.head_dim;
    let hd4 = (hd + 3u) / 4u;
    let c = att_p.heads * hd;
    let head = blk.h * hd;
    let tok0 = blk.b * seq; // first token row of this sequence
    let rows = att_rows(hd4);
    let t = blk.t0 + lid;
    let live = t < seq;

    var q: array<vec4<f32>, ATT_HD4>; // pre-scaled, so s = q·k
    var acc: array<vec4<f32>, ATT_HD4>;
    var s: array<f32, ATT_BLOCK>;
    if (live) {
        for (var x = 0u; x < hd4; x++) { q[x] = att_p.scale * att_qkv4((tok0 + t) * 3u * c + head, x, hd); }
    }
    // Online softmax state: running max m and running sum l of exp(s - m).
    var m = -1e30;
    var l = 0.0;
    let end = min(blk.t0 + ATT_BLOCK, seq); // keys any query of this block can see
    for (var j0 = 0u; j0 < end; j0 += rows) {
        att_stage_kv(lid, j0, rows, hd4, seq, tok0, c, head, hd);
        workgroupBarrier();
        if (live && j0 <= t) {
            let n = min(rows, t + 1u - j0); // visible keys of this tile
            var tile_max = -1e30;
            for (var r = 0u; r < n; r++) {
                var d = 0.0;
                for (var x = 0u; x < hd4; x++) { d += dot(q[x], att_tile_x[r * hd4 + x]); }
                s[r] = d;
                tile_max = max(tile_max, d);
            }
            // Rescale once per tile rather than once per key.
            let m_new = max(m, tile_max);
            let corr = exp(m - m_new);
            l *= corr;
            for (var x = 0u; x < hd4; x++) { acc[x] *= corr; }
            for (var r = 0u; r < n; r++) {
                let p = exp(s[r] - m_new);
                l += p;
                for (var x = 0u; x < hd4; x++) { acc[x] += p * att_tile_y[r * hd4 + x]; }
            }
            m = m_new;
        }
        workgroupBarrier();
    }
    if (!live) { return; }
    let inv = 1.0 / l; // l >= 1: key t itself contributes exp(0) at the final max
    let out_base = (tok0 + t) * c + head;
    for (var d = 0u; d < hd; d++) { att_out[out_base + d] = acc[d / 4u][d % 4u] * inv; }
    att_lse[(blk.b * att_p.heads + blk.h) * seq + t] = m + log(l);
}

// ---------------------------------------------------------------- backward dq, dk, dv
// With dP_ij = dout_i·v_j and dS_ij = P_ij (dP_ij - delta_i):
//   dq_i = scale Σ_{j<=i} dS_ij k_j,  dk_j = scale Σ_{i>=j} dS_ij q_i,  dv_j = Σ_{i>=j} P_ij dout_i.
// Both kernels write (never accumulate) their slots of dqkv: dq the q slots, dkv the k and v slots
// (dq and dk un-rotated by RoPE's backward when the forward's q and k were rotated).
// The dq kernels also compute delta_i = Σ_d dout_i·out_i (the row term of the softmax backward)
// for their queries and write it for dkv, which runs after them.
// binding 0 is att_qkv (B, T, 3C), shared with the forward (att_qkv4 reads it)
@group(0) @binding(1) var<storage, read> attb_dout: array<f32>;        // (B, T, C)
@group(0) @binding(2) var<storage, read> attb_lse: array<f32>;         // (B, H, T)
@group(0) @binding(3) var<storage, read> attb_delta: array<f32>;       // (B, H, T)
@group(0) @binding(4) var<storage, read_write> attb_dqkv: array<f32>; // (B, T, 3C)
@group(0) @binding(5) var<uniform> attb_p: AttnParams;
// The dq kernels' own view of delta (they write it) and the forward's output.
@group(0) @binding(3) var<storage, read_write> attq_delta: array<f32>; // (B, H, T)
@group(0) @binding(6) var<storage, read> attq_out: array<f32>;         // (B, T, C)

// RoPE's backward (the rotation by -angle) on the head vector at attb_dqkv[base..base + hd],
// which this thread has just stored, at sequence position `pos`: dq or dk becomes the gradient
// of q or k before their rotation (no rope_backward dispatch). Nothing when rope_theta = 0.
fn attb_unrope(base: u32, hd: u32, pos: u32) {
    if (attb_p.rope_theta == 0.0) { return; }
    let half = hd / 2u;
    for (var i = 0u; i < half; i++) {
        let sc = rope_sin_cos(f32(pos), i, hd, attb_p.rope_theta);
        let s = -sc.x;
        let c = sc.y;
        let v1 = attb_dqkv[base + i];
        let v2 = attb_dqkv[base + i + half];
        attb_dqkv[base + i] = v1 * c - v2 * s;
        attb_dqkv[base + i + half] = v1 * s + v2 * c;
    }
}

fn attb_dout4(base: u32, c: u32, hd: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    for (var e = 0u; e < 4u; e++) {
        if (c * 4u + e < hd) { v[e] = attb_dout[base + c * 4u + e]; }
    }
    return v;
}

fn attq_out4(base: u32, c: u32, hd: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    for (var e = 0u; e < 4u; e++) {
        if (c * 4u + e < hd) { v[e] = attq_out[base + c * 4u + e]; }
    }
    return v;
}

@compute @workgroup_size(64)
fn attention_backward_dq(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                         @builtin(num_workgroups) nwg: vec3<u32>) {
    let blk = att_block(wg, nwg, attb_p);
    if (!blk.valid) { return; } // uniform: whole workgroup exits
    let seq = attb_p.seq;
    let hd = attb_p.head_dim;
    let hd4 = (hd + 3u) / 4u;
    let c = attb_p.heads * hd;
    let head = blk.h * hd;
    let tok0 = blk.b * seq;
    let rows = att_rows(hd4);
    let t = blk.t0 + lid;
    let live = t < seq;

    var q: array<vec4<f32>, ATT_HD4>; // pre-scaled
    var dout: array<vec4<f32>, ATT_HD4>;
    var dq: array<vec4<f32>, ATT_HD4>;
    var lse = 0.0;
    var delta = 0.0;
    if (live) {
        for (var x = 0u; x < hd4; x++) {
            q[x] = attb_p.scale * att_qkv4((tok0 + t) * 3u * c + head, x, hd);
            dout[x] = attb_dout4((tok0 + t) * c + head, x, hd);
            delta += dot(dout[x], attq_out4((tok0 + t) * c + head, x, hd));
        }
        lse = attb_lse[(blk.b * attb_p.heads + blk.h) * seq + t];
        attq_delta[(blk.b * attb_p.heads + blk.h) * seq + t] = delta;
    }
    let end = min(blk.t0 + ATT_BLOCK, seq);
    for (var j0 = 0u; j0 < end; j0 += rows) {
        att_stage_kv(lid, j0, rows, hd4, seq, tok0, c, head, hd);
        workgroupBarrier();
        if (live && j0 <= t) {
            let n = min(rows, t + 1u - j0);
            for (var r = 0u; r < n; r++) {
                var s = 0.0;
                var dp = 0.0;
                for (var x = 0u; x < hd4; x++) {
                    s += dot(q[x], att_tile_x[r * hd4 + x]);
                    dp += dot(dout[x], att_tile_y[r * hd4 + x]);
                }
                let ds = exp(s - lse) * (dp - delta);
                for (var x = 0u; x < hd4; x++) { dq[x] += ds * att_tile_x[r * hd4 + x]; }
            }
        }
        workgroupBarrier();
    }
    if (!live) { return; }
    let base = (tok0 + t) * 3u * c + head;
    for (var d = 0u; d < hd; d++) { attb_dqkv[base + d] = attb_p.scale * dq[d / 4u][d % 4u]; }
    attb_unrope(base, hd, t);
}

@compute @workgroup_size(64)
fn attention_backward_dkv(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                          @builtin(num_workgroups) nwg: vec3<u32>) {
    let blk = att_block(wg, nwg, attb_p);
    if (!blk.valid) { return; } // uniform: whole workgroup exits
    let seq = attb_p.seq;
    let hd = attb_p.head_dim;
    let hd4 = (hd + 3u) / 4u;
    let c = attb_p.heads * hd;
    let head = blk.h * hd;
    let tok0 = blk.b * seq;
    let lse0 = (blk.b * attb_p.heads + blk.h) * seq; // this (b, h)'s row of lse and delta
    let rows = att_rows(hd4);
    let j = blk.t0 + lid; // this thread's key
    let live = j < seq;

    var k: array<vec4<f32>, ATT_HD4>; // pre-scaled, so s = q·k
    var v: array<vec4<f32>, ATT_HD4>;
    var dk: array<vec4<f32>, ATT_HD4>;
    var dv: array<vec4<f32>, ATT_HD4>;
    if (live) {
        for (var x = 0u; x < hd4; x++) {
            k[x] = attb_p.scale * att_qkv4((tok0 + j) * 3u * c + head + c, x, hd);
            v[x] = att_qkv4((tok0 + j) * 3u * c + head + 2u * c, x, hd);
        }
    }
    // Queries before the block's first key see none of its keys.
    for (var i0 = blk.t0; i0 < seq; i0 += rows) {
        for (var i = lid; i < rows * hd4; i += ATT_BLOCK) {
            let qi = i0 + i / hd4;
            var qv = vec4<f32>(0.0);
            var dov = vec4<f32>(0.0);
            if (qi < seq) {
                qv = att_qkv4((tok0 + qi) * 3u * c + head, i % hd4, hd);
                dov = attb_dout4((tok0 + qi) * c + head, i % hd4, hd);
            }
            att_tile_x[i] = qv;
            att_tile_y[i] = dov;
        }
        for (var r = lid; r < rows; r += ATT_BLOCK) {
            let qi = min(i0 + r, seq - 1u); // rows past the end are never used
            att_tile_s[r] = vec2<f32>(attb_lse[lse0 + qi], attb_delta[lse0 + qi]);
        }
        workgroupBarrier();
        if (live && i0 + rows > j) {
            let n = min(rows, seq - i0);
            // Causal: only queries i >= j see key j.
            for (var r = select(0u, j - i0, j > i0); r < n; r++) {
                var s = 0.0;
                var dp = 0.0;
                for (var x = 0u; x < hd4; x++) {
                    s += dot(att_tile_x[r * hd4 + x], k[x]);
                    dp += dot(att_tile_y[r * hd4 + x], v[x]);
                }
                let p = exp(s - att_tile_s[r].x);
                let ds = p * (dp - att_tile_s[r].y);
                for (var x = 0u; x < hd4; x++) {
                    dv[x] += p * att_tile_y[r * hd4 + x];
                    dk[x] += ds * att_tile_x[r * hd4 + x];
                }
            }
        }
        workgroupBarrier();
    }
    if (!live) { return; }
    let base = (tok0 + j) * 3u * c + head;
    for (var d = 0u; d < hd; d++) {
        attb_dqkv[base + c + d] = attb_p.scale * dk[d / 4u][d % 4u];
        attb_dqkv[base + 2u * c + d] = dv[d / 4u][d % 4u];
    }
    attb_unrope(base + c, hd, j);
}
