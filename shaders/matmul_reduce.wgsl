// matmul_reduce.wgsl — the split-K reduction (part of the matmul family, after matmul.wgsl and
// matmul_small.wgsl; not in the packed-f16 family, which needs no copy of it).
// Several sums of partials in one dispatch: entry e adds its `splits` arrays of `len` floats,
// parts[src + s * len + j] for s = 0, 1, ..., in that order, into out[dst + j] (+ out[dst + j]
// with accumulate). Thread i serves elements 4i .. 4i + 3 of the entries laid end to end, each
// starting at a multiple of 4 (`first`), so its elements lie in one entry and each split's four
// loads are in flight together. One entry is a split-K product's reduction; a table of them
// sums a Llama block's gradients.
struct MatmulReduceParams {
    entries: u32,
    total: u32, // elements of the entries laid end to end, each rounded up to a multiple of 4
    _pad0: u32,
    _pad1: u32,
    // entry e < 16 (REDUCE_MAX_ENTRIES in split_sums.rs): table[2e] = [first, len, splits,
    // accumulate], table[2e + 1] = [src, dst, 0, 0]
    table: array<vec4<u32>, 32>,
}

@group(0) @binding(0) var<storage, read> mmr_parts: array<f32>;   // every entry's (splits, len) partials
@group(0) @binding(1) var<storage, read_write> mmr_c: array<f32>; // every entry's destination
@group(0) @binding(2) var<uniform> mmr: MatmulReduceParams;

// Four consecutive floats of the partials from `i` on: an entry's last thread, when its length
// is not a multiple of 4, takes the scalar path below instead (native builds do not check
// indices, so no read may pass the entry's range).
fn mmr_four(i: u32) -> vec4<f32> {
    return vec4<f32>(mmr_parts[i], mmr_parts[i + 1u], mmr_parts[i + 2u], mmr_parts[i + 3u]);
}

// One element's sum, for the last elements of an entry whose length is not a multiple of 4.
fn mmr_one(head: vec4<u32>, at: vec4<u32>, j: u32) {
    var s = 0.0;
    for (var p = 0u; p < head.z; p++) { s += mmr_parts[at.x + p * head.y + j]; }
    let o = at.y + j;
    mmr_c[o] = select(s, s + mmr_c[o], head.w != 0u);
}

@compute @workgroup_size(64)
fn matmul_split_reduce(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = 4u * linear_index(gid, nwg);
    if (t >= mmr.total) { return; }
    var e = 0u;
    while (e + 1u < mmr.entries && t >= mmr.table[2u * (e + 1u)].x) { e++; }
    let head = mmr.table[2u * e];
    let at = mmr.table[2u * e + 1u];
    let j = t - head.x;
    if (j >= head.y) { return; } // the padding after an entry
    if (j + 4u > head.y) {
        for (var q = j; q < head.y; q++) { mmr_one(head, at, q); }
        return;
    }
    // Four splits' loads in flight at a time, still added in split order (the same bits).
    var s = vec4<f32>(0.0);
    var p = 0u;
    for (; p + 3u < head.z; p += 4u) {
        let a = mmr_four(at.x + p * head.y + j);
        let b = mmr_four(at.x + (p + 1u) * head.y + j);
        let c = mmr_four(at.x + (p + 2u) * head.y + j);
        let d = mmr_four(at.x + (p + 3u) * head.y + j);
        s = (((s + a) + b) + c) + d;
    }
    for (; p < head.z; p++) { s += mmr_four(at.x + p * head.y + j); }
    let o = at.y + j;
    if (head.w != 0u) { s += vec4<f32>(mmr_c[o], mmr_c[o + 1u], mmr_c[o + 2u], mmr_c[o + 3u]); }
    mmr_c[o] = s.x;
    mmr_c[o + 1u] = s.y;
    mmr_c[o + 2u] = s.z;
    mmr_c[o + 3u] = s.w;
}
