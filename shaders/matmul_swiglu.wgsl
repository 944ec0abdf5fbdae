// matmul_swiglu.wgsl — the matmul family's 128 tile with a SwiGLU backward as its epilogue.
// matmul_128_swiglu_backward only: a SwiGLU's (rows, 2F) input [up | gate], as vec4s.
@group(0) @binding(6) var<storage, read> mm_glu: array<vec4<f32>>;

// The input gradient of a SwiGLU's down projection with silu_gate_backward (elementwise.wgsl) as
// its epilogue: the product is dg (rows, F) = dy·W_down, and instead of storing it each thread
// turns its vec4s of dg into d[up | gate] (binding 2, (rows, 2F)) with [up | gate] (binding 6):
//   d gate = dg·up·σ(up),  d up = dg·gate·σ(up)·(1 + up·(1 − σ(up))).
// Aligned products only (F a multiple of 128), unsplit, not accumulating: one dispatch and no
// pass of dg through memory instead of two.
fn mm_store_swiglu_backward(row: u32, col: u32, v: vec4<f32>) {
    let up_at = (row * 2u * mm.n + col) / 4u;
    let gate_at = up_at + mm.n / 4u;
    let dg = mm.alpha * v;
    let up = mm_glu[up_at];
    let gate = mm_glu[gate_at];
    let s = 1.0 / (1.0 + exp(-up));
    mm_c4[gate_at] = dg * up * s;
    mm_c4[up_at] = dg * gate * s * (1.0 + up * (1.0 - s));
}

@compute @workgroup_size(256)
fn matmul_128_swiglu_backward(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                              @builtin(num_workgroups) nwg: vec3<u32>) {
    let b = mm_big_block(lid, wg, nwg);
    if (!b.valid) { return; }
    let r0 = b.row0 + b.ty * 4u;
    let r1 = b.row0 + 64u + b.ty * 4u;
    let q0 = b.col0 + b.tx * 4u;
    let q1 = b.col0 + 64u + b.tx * 4u;
    let c = b.c;
    mm_store_swiglu_backward(r0, q0, c.c00); mm_store_swiglu_backward(r0, q1, c.c01);
    mm_store_swiglu_backward(r0 + 1u, q0, c.c10); mm_store_swiglu_backward(r0 + 1u, q1, c.c11);
    mm_store_swiglu_backward(r0 + 2u, q0, c.c20); mm_store_swiglu_backward(r0 + 2u, q1, c.c21);
    mm_store_swiglu_backward(r0 + 3u, q0, c.c30); mm_store_swiglu_backward(r0 + 3u, q1, c.c31);
    mm_store_swiglu_backward(r1, q0, c.c40); mm_store_swiglu_backward(r1, q1, c.c41);
    mm_store_swiglu_backward(r1 + 1u, q0, c.c50); mm_store_swiglu_backward(r1 + 1u, q1, c.c51);
    mm_store_swiglu_backward(r1 + 2u, q0, c.c60); mm_store_swiglu_backward(r1 + 2u, q1, c.c61);
    mm_store_swiglu_backward(r1 + 3u, q0, c.c70); mm_store_swiglu_backward(r1 + 3u, q1, c.c71);
}
