// rope.wgsl — rotary position embeddings (NeoX pairing: element i rotates with i + head_dim/2),
// in place, and the backward (the inverse rotation, i.e. the transpose, applied to the gradient).
//
// Layout: `tokens` tokens, (B, T) flattened, each `token_stride` floats apart; the first `heads`
// head vectors of head_dim floats of each token rotate and the rest is left alone. A plain
// (B, T, H, hd) buffer has token_stride = H·hd; for a fused (B, T, 3C) qkv buffer,
// token_stride = 3C and heads = 2H rotates q and k but not v.
// Token t sits at position base_pos + t % seq_len; pair i turns by pos · theta^(-2i/head_dim).

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

// (sin x, cos x) to a few f32 ulp for 0 <= x < ~12000 (positions times frequencies), not with
// the built-ins: WGSL only bounds their error to 2^-11 absolute, and Chrome's SwiftShader is off
// by 2e-4 already at x = 8. Cody–Waite reduction by π/2 in three parts (the first two have few
// significant bits, so q·part is exact while q < 8192), then Cephes' sinf/cosf polynomials on
// |r| <= π/4.
fn sin_cos(x: f32) -> vec2<f32> {
    let q = round(x * 0.63661977236758134); // x / (π/2)
    let r = ((x - q * 1.5703125) - q * 4.837512969970703125e-4) - q * 7.54978995489188216e-8;
    let r2 = r * r;
    let s = r + r * r2 * (-1.6666654611e-1 + r2 * (8.3321608736e-3 + r2 * -1.9515295891e-4));
    let c = 1.0 - 0.5 * r2 + r2 * r2 * (4.166664568298827e-2 + r2 * (-1.388731625493765e-3 + r2 * 2.443315711809948e-5));
    switch (i32(q) & 3) { // x = q·π/2 + r
        case 0: { return vec2<f32>(s, c); }
        case 1: { return vec2<f32>(c, -s); }
        case 2: { return vec2<f32>(-s, -c); }
        default: { return vec2<f32>(-c, s); }
    }
}

@group(0) @binding(0) var<storage, read_write> rope_data: array<f32>; // (tokens, token_stride)
@group(0) @binding(1) var<uniform> rope_params: RopeParams;

// One thread per (token, head vector, pair); `dir` = 1 rotates by +angle, -1 by -angle.
fn rotate_pair(idx: u32, dir: f32) {
    let p = rope_params;
    let half = p.head_dim / 2u;
    if (idx >= p.tokens * p.heads * half) { return; }
    let i = idx % half;
    let head = (idx / half) % p.heads;
    let token = idx / (half * p.heads);
    let pos = f32(p.base_pos + token % p.seq_len);
    let angle = pos * pow(p.theta, -2.0 * f32(i) / f32(p.head_dim));
    let sc = sin_cos(angle);
    let s = dir * sc.x;
    let c = sc.y;
    let a = token * p.token_stride + head * p.head_dim + i;
    let b = a + half;
    let v1 = rope_data[a];
    let v2 = rope_data[b];
    rope_data[a] = v1 * c - v2 * s;
    rope_data[b] = v1 * s + v2 * c;
}

@compute @workgroup_size(64)
fn rope(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    rotate_pair(linear_index(gid, nwg), 1.0);
}

// The rotation is orthogonal, so its transpose (the backward) is the rotation by -angle.
@compute @workgroup_size(64)
fn rope_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    rotate_pair(linear_index(gid, nwg), -1.0);
}
