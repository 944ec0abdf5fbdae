// attention_hd32.wgsl — the head_dim <= 32 variants of attention.wgsl's kernels (build.rs also
// generates the head_dim <= 64 ones from this file: keep its constants and names). The files
// are one shader family (src/kernels/mod.rs concatenates them): these kernels reuse its params,
// bindings, tiles and helpers, and differ only in keeping each head vector in registers.

// ---------------------------------------------------------------- head_dim <= 32
// The same three kernels specialised for head_dim <= 32 (the host picks them): head vectors
// are 8 vec4s with constant loop bounds, so they stay in registers. (The general kernels
// index per-thread arrays with runtime bounds, which compilers keep in slow local memory.)
// The forward keeps an online softmax over each step of keys, rescaling only when the running
// max grows, instead of a per-tile score array. Tiles hold 32 tokens x 8 vec4s (the same 256 vec4s).
const ATT_S4: u32 = 8u;     // vec4s per head vector
const ATT_SROWS: u32 = 32u; // tokens per tile

// Tile rows a key loop takes per step (a divisor of ATT_SROWS): their dot products are
// independent sums, where one running sum makes every add wait on the one before (these kernels
// run few threads per SM, so that latency shows). The hd64 kernels take one: their head vectors
// already fill the registers, and more spill (H100: dkv 244 -> 376 us a dispatch at four).
const ATT_KEYS: u32 = 4u;

// The helpers come in pairs, one per tile: WGSL passes no pointer to workgroup memory (short of
// the unrestricted_pointer_parameters extension), and a tile flag would branch in the inner loop.

// The dot products of a head vector in registers with tile rows r .. r + ATT_KEYS - 1.
fn att_dots_x_hd32(v: ptr<function, array<vec4<f32>, ATT_S4>>, r: u32) -> array<f32, ATT_KEYS> {
    var s: array<f32, ATT_KEYS>;
    for (var e = 0u; e < ATT_KEYS; e++) { s[e] = 0.0; }
    for (var x = 0u; x < ATT_S4; x++) {
        for (var e = 0u; e < ATT_KEYS; e++) { s[e] += dot((*v)[x], att_tile_x[(r + e) * ATT_S4 + x]); }
    }
    return s;
}

// The same with rows of att_tile_y.
fn att_dots_y_hd32(v: ptr<function, array<vec4<f32>, ATT_S4>>, r: u32) -> array<f32, ATT_KEYS> {
    var s: array<f32, ATT_KEYS>;
    for (var e = 0u; e < ATT_KEYS; e++) { s[e] = 0.0; }
    for (var x = 0u; x < ATT_S4; x++) {
        for (var e = 0u; e < ATT_KEYS; e++) { s[e] += dot((*v)[x], att_tile_y[(r + e) * ATT_S4 + x]); }
    }
    return s;
}

// acc += w[e] · tile row r + e of att_tile_x, for each e < ATT_KEYS.
fn att_axpy_x_hd32(acc: ptr<function, array<vec4<f32>, ATT_S4>>, w: array<f32, ATT_KEYS>, r: u32) {
    for (var x = 0u; x < ATT_S4; x++) {
        for (var e = 0u; e < ATT_KEYS; e++) { (*acc)[x] += w[e] * att_tile_x[(r + e) * ATT_S4 + x]; }
    }
}

// The same with rows of att_tile_y.
fn att_axpy_y_hd32(acc: ptr<function, array<vec4<f32>, ATT_S4>>, w: array<f32, ATT_KEYS>, r: u32) {
    for (var x = 0u; x < ATT_S4; x++) {
        for (var e = 0u; e < ATT_KEYS; e++) { (*acc)[x] += w[e] * att_tile_y[(r + e) * ATT_S4 + x]; }
    }
}

@compute @workgroup_size(64)
fn attention_forward_hd32(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                          @builtin(num_workgroups) nwg: vec3<u32>) {
    let blk = att_block(wg, nwg, att_p);
    if (!blk.valid) { return; } // uniform: whole workgroup exits
    let seq = att_p.seq;
    let hd = att_p.head_dim;
    let c = att_p.heads * hd;
    let head = blk.h * hd;
    let tok0 = blk.b * seq;
    let t = blk.t0 + lid;
    let live = t < seq;

    var q: array<vec4<f32>, 8>; // pre-scaled, so s = q·k
    var acc: array<vec4<f32>, 8>;
    for (var x = 0u; x < ATT_S4; x++) {
        acc[x] = vec4<f32>(0.0);
        q[x] = vec4<f32>(0.0);
        if (live) { q[x] = att_p.scale * att_qkv4((tok0 + t) * 3u * c + head, x, hd); }
    }
    var m = -1e30;
    var l = 0.0;
    let end = min(blk.t0 + ATT_BLOCK, seq);
    for (var j0 = 0u; j0 < end; j0 += ATT_SROWS) {
        att_stage_kv(lid, j0, ATT_SROWS, ATT_S4, seq, tok0, c, head, hd);
        workgroupBarrier();
        if (live && j0 <= t) {
            let n = min(ATT_SROWS, t + 1u - j0); // visible keys of this tile
            for (var r = 0u; r < n; r += ATT_KEYS) {
                var s = att_dots_x_hd32(&q, r);
                var top = m;
                for (var e = 0u; e < ATT_KEYS; e++) {
                    if (r + e >= n) { s[e] = -1e30; } // past the visible keys: exp gives 0
                    top = max(top, s[e]);
                }
                if (top > m) {
                    let corr = exp(m - top);
                    l *= corr;
                    for (var x = 0u; x < ATT_S4; x++) { acc[x] *= corr; }
                    m = top;
                }
                var p: array<f32, ATT_KEYS>;
                for (var e = 0u; e < ATT_KEYS; e++) {
                    p[e] = exp(s[e] - m);
                    l += p[e];
                }
                att_axpy_y_hd32(&acc, p, r);
            }
        }
        workgroupBarrier();
    }
    if (!live) { return; }
    let inv = 1.0 / l; // l >= 1: the key at the final max contributes exp(0)
    let out_base = (tok0 + t) * c + head;
    for (var x = 0u; x < ATT_S4; x++) {
        let o = acc[x] * inv;
        let d = x * 4u;
        if (d < hd) { att_out[out_base + d] = o.x; }
        if (d + 1u < hd) { att_out[out_base + d + 1u] = o.y; }
        if (d + 2u < hd) { att_out[out_base + d + 2u] = o.z; }
        if (d + 3u < hd) { att_out[out_base + d + 3u] = o.w; }
    }
    att_lse[(blk.b * att_p.heads + blk.h) * seq + t] = m + log(l);
}

// Writes v to dqkv[base + 4x ..], the components below head_dim.
fn attb_store4(base: u32, x: u32, hd: u32, v: vec4<f32>) {
    let d = x * 4u;
    if (d < hd) { attb_dqkv[base + d] = v.x; }
    if (d + 1u < hd) { attb_dqkv[base + d + 1u] = v.y; }
    if (d + 2u < hd) { attb_dqkv[base + d + 2u] = v.z; }
    if (d + 3u < hd) { attb_dqkv[base + d + 3u] = v.w; }
}

// Whether RoPE's backward can run on the head vector in registers: the forward rotated q and k,
// and the head fills all 4·ATT_S4 floats, so pair i (of i, i + hd/2) sits at component i % 4
// of vec4s i / 4 and i / 4 + ATT_S4 / 2, constant indices. Other widths rotate in memory after
// the store (attb_unrope), which costs a round trip through memory.
fn attb_rope_in_registers_hd32(hd: u32) -> bool {
    return attb_p.rope_theta != 0.0 && hd == 4u * ATT_S4;
}

// RoPE's backward (the rotation by -angle, as attb_unrope) on a head vector in registers at
// sequence position `pos`.
fn attb_unrope_registers_hd32(v: ptr<function, array<vec4<f32>, ATT_S4>>, pos: u32) {
    const half4 = ATT_S4 / 2u;
    for (var x = 0u; x < half4; x++) {
        var s = vec4<f32>(0.0);
        var c = vec4<f32>(0.0);
        for (var e = 0u; e < 4u; e++) {
            let sc = rope_sin_cos(f32(pos), 4u * x + e, 4u * ATT_S4, attb_p.rope_theta);
            s[e] = -sc.x;
            c[e] = sc.y;
        }
        let lo = (*v)[x];
        let hi = (*v)[x + half4];
        (*v)[x] = lo * c - hi * s;
        (*v)[x + half4] = lo * s + hi * c;
    }
}

@compute @workgroup_size(64)
fn attention_backward_dq_hd32(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                              @builtin(num_workgroups) nwg: vec3<u32>) {
    let blk = att_block(wg, nwg, attb_p);
    if (!blk.valid) { return; } // uniform: whole workgroup exits
    let seq = attb_p.seq;
    let hd = attb_p.head_dim;
    let c = attb_p.heads * hd;
    let head = blk.h * hd;
    let tok0 = blk.b * seq;
    let t = blk.t0 + lid;
    let live = t < seq;

    var q: array<vec4<f32>, 8>; // pre-scaled
    var dout: array<vec4<f32>, 8>;
    var dq: array<vec4<f32>, 8>;
    var lse = 0.0;
    var delta = 0.0;
    for (var x = 0u; x < ATT_S4; x++) {
        q[x] = vec4<f32>(0.0);
        dout[x] = vec4<f32>(0.0);
        dq[x] = vec4<f32>(0.0);
        if (live) {
            q[x] = attb_p.scale * att_qkv4((tok0 + t) * 3u * c + head, x, hd);
            dout[x] = attb_dout4((tok0 + t) * c + head, x, hd);
            delta += dot(dout[x], attq_out4((tok0 + t) * c + head, x, hd));
        }
    }
    if (live) {
        lse = attb_lse[(blk.b * attb_p.heads + blk.h) * seq + t];
        attq_delta[(blk.b * attb_p.heads + blk.h) * seq + t] = delta;
    }
    let end = min(blk.t0 + ATT_BLOCK, seq);
    for (var j0 = 0u; j0 < end; j0 += ATT_SROWS) {
        att_stage_kv(lid, j0, ATT_SROWS, ATT_S4, seq, tok0, c, head, hd);
        workgroupBarrier();
        if (live && j0 <= t) {
            let n = min(ATT_SROWS, t + 1u - j0);
            for (var r = 0u; r < n; r += ATT_KEYS) {
                let s = att_dots_x_hd32(&q, r);
                let dp = att_dots_y_hd32(&dout, r);
                var ds: array<f32, ATT_KEYS>;
                for (var e = 0u; e < ATT_KEYS; e++) { ds[e] = select(0.0, exp(s[e] - lse) * (dp[e] - delta), r + e < n); }
                att_axpy_x_hd32(&dq, ds, r);
            }
        }
        workgroupBarrier();
    }
    if (!live) { return; }
    let base = (tok0 + t) * 3u * c + head;
    for (var x = 0u; x < ATT_S4; x++) { dq[x] *= attb_p.scale; }
    let in_registers = attb_rope_in_registers_hd32(hd);
    if (in_registers) { attb_unrope_registers_hd32(&dq, t); }
    for (var x = 0u; x < ATT_S4; x++) { attb_store4(base, x, hd, dq[x]); }
    if (!in_registers) { attb_unrope(base, hd, t); }
}

@compute @workgroup_size(64)
fn attention_backward_dkv_hd32(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                               @builtin(num_workgroups) nwg: vec3<u32>) {
    let blk = att_block(wg, nwg, attb_p);
    if (!blk.valid) { return; } // uniform: whole workgroup exits
    let seq = attb_p.seq;
    let hd = attb_p.head_dim;
    let c = attb_p.heads * hd;
    let head = blk.h * hd;
    let tok0 = blk.b * seq;
    let lse0 = (blk.b * attb_p.heads + blk.h) * seq; // this (b, h)'s row of lse and delta
    let j = blk.t0 + lid; // this thread's key
    let live = j < seq;

    var k: array<vec4<f32>, 8>; // pre-scaled, so s = q·k
    var v: array<vec4<f32>, 8>;
    var dk: array<vec4<f32>, 8>;
    var dv: array<vec4<f32>, 8>;
    for (var x = 0u; x < ATT_S4; x++) {
        k[x] = vec4<f32>(0.0);
        v[x] = vec4<f32>(0.0);
        dk[x] = vec4<f32>(0.0);
        dv[x] = vec4<f32>(0.0);
        if (live) {
            k[x] = attb_p.scale * att_qkv4((tok0 + j) * 3u * c + head + c, x, hd);
            v[x] = att_qkv4((tok0 + j) * 3u * c + head + 2u * c, x, hd);
        }
    }
    // Queries before the block's first key see none of its keys.
    for (var i0 = blk.t0; i0 < seq; i0 += ATT_SROWS) {
        for (var i = lid; i < ATT_SROWS * ATT_S4; i += ATT_BLOCK) {
            let qi = i0 + i / ATT_S4;
            var qv = vec4<f32>(0.0);
            var dov = vec4<f32>(0.0);
            if (qi < seq) {
                qv = att_qkv4((tok0 + qi) * 3u * c + head, i % ATT_S4, hd);
                dov = attb_dout4((tok0 + qi) * c + head, i % ATT_S4, hd);
            }
            att_tile_x[i] = qv;
            att_tile_y[i] = dov;
        }
        if (lid < ATT_SROWS) {
            let qi = min(i0 + lid, seq - 1u); // rows past the end are never used
            att_tile_s[lid] = vec2<f32>(attb_lse[lse0 + qi], attb_delta[lse0 + qi]);
        }
        workgroupBarrier();
        if (live && i0 + ATT_SROWS > j) {
            let n = min(ATT_SROWS, seq - i0);
            // Causal: only queries i >= j see key j. Rows go ATT_KEYS a step from a multiple
            // of it (inside the tile), masking those before `first` and from n on.
            let first = select(0u, j - i0, j > i0);
            for (var r = first - first % ATT_KEYS; r < n; r += ATT_KEYS) {
                let s = att_dots_x_hd32(&k, r);
                let dp = att_dots_y_hd32(&v, r);
                var p: array<f32, ATT_KEYS>;
                var ds: array<f32, ATT_KEYS>;
                for (var e = 0u; e < ATT_KEYS; e++) {
                    let row = att_tile_s[r + e]; // (lse, delta) of query i0 + r + e
                    p[e] = select(0.0, exp(s[e] - row.x), r + e >= first && r + e < n);
                    ds[e] = p[e] * (dp[e] - row.y);
                }
                att_axpy_y_hd32(&dv, p, r);
                att_axpy_x_hd32(&dk, ds, r);
            }
        }
        workgroupBarrier();
    }
    if (!live) { return; }
    let base = (tok0 + j) * 3u * c + head;
    for (var x = 0u; x < ATT_S4; x++) { dk[x] *= attb_p.scale; }
    let in_registers = attb_rope_in_registers_hd32(hd);
    if (in_registers) { attb_unrope_registers_hd32(&dk, j); }
    for (var x = 0u; x < ATT_S4; x++) {
        attb_store4(base + c, x, hd, dk[x]);
        attb_store4(base + 2u * c, x, hd, dv[x]);
    }
    if (!in_registers) { attb_unrope(base + c, hd, j); }
}
