// rope.wgsl — rotary position embeddings (NeoX pairing: element i rotates with i + head_dim/2),
// in place, and the backward (the inverse rotation, i.e. the transpose, applied to the gradient).
//
// Layout: `tokens` tokens, (B, T) flattened, each `token_stride` floats apart; the first `heads`
// head vectors of head_dim floats of each token rotate and the rest is left alone. A plain
// (B, T, H, hd) buffer has token_stride = H·hd; for a fused (B, T, 3C) qkv buffer,
// token_stride = 3C and heads = 2H rotates q and k but not v.
// Token t sits at position base_pos + t % seq_len; pair i turns by pos · theta^(-2i/head_dim)
// (rotary.wgsl, which the attention backward shares).

struct RopeParams {
    head_dim: u32,
    seq_len: u32,
    heads: u32,        // head vectors rotated per token
    token_stride: u32, // floats between consecutive tokens
    base_pos: u32,     // position of each sequence's first token (KV-cache decoding)
    tokens: u32,
    theta: f32,
    _pad: u32,
};

@group(0) @binding(0) var<storage, read_write> rope_data: array<f32>; // (tokens, token_stride)
@group(0) @binding(1) var<uniform> rope_params: RopeParams;

// One thread per (token, pair i): the angle depends on the position and i alone, so it is
// computed once and turns pair i of each of the token's `heads` rotated head vectors (16 on a
// fused qkv buffer of 8 heads). `dir` = 1 rotates by +angle, -1 by -angle.
fn rotate_pairs(idx: u32, dir: f32) {
    let p = rope_params;
    let half = p.head_dim / 2u;
    if (idx >= p.tokens * half) { return; }
    let i = idx % half;
    let token = idx / half;
    let pos = f32(p.base_pos + token % p.seq_len);
    let sc = rope_sin_cos(pos, i, p.head_dim, p.theta);
    let s = dir * sc.x;
    let c = sc.y;
    var a = token * p.token_stride + i; // pair i of head vector `head`: (a, a + half)
    for (var head = 0u; head < p.heads; head++) {
        let v1 = rope_data[a];
        let v2 = rope_data[a + half];
        rope_data[a] = v1 * c - v2 * s;
        rope_data[a + half] = v1 * s + v2 * c;
        a += p.head_dim;
    }
}

@compute @workgroup_size(64)
fn rope(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    rotate_pairs(linear_index(gid, nwg), 1.0);
}

// The rotation is orthogonal, so its transpose (the backward) is the rotation by -angle.
@compute @workgroup_size(64)
fn rope_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    rotate_pairs(linear_index(gid, nwg), -1.0);
}
