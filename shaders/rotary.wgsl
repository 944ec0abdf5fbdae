// rotary.wgsl — the angles of rotary position embeddings, shared by rope.wgsl's kernels and the
// attention backward (which applies RoPE's backward to dq and dk as it stores them).

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

// (sin, cos) of the angle pair i (of i, i + head_dim/2) of a head vector turns by at `pos`.
fn rope_sin_cos(pos: f32, i: u32, head_dim: u32, theta: f32) -> vec2<f32> {
    return sin_cos(pos * pow(theta, -2.0 * f32(i) / f32(head_dim)));
}
