// elementwise.wgsl — one thread per element: binary ops with bias broadcast, activations,
// the fused SwiGLU gate, and their backwards. Lengths come from arrayLength, so each tensor
// must be bound at its exact size (the host guarantees it). One exception, at the end:
// `activation_backward_sum`, a column reduction (256-thread workgroups, sizes from its params).

// ---- binary ops: out = a (op) b, where b broadcasts along a's last axis when shorter ----
@group(0) @binding(0) var<storage, read> bin_a: array<f32>;        // (N)
@group(0) @binding(1) var<storage, read> bin_b: array<f32>;        // (N) or (C) with N % C == 0
@group(0) @binding(2) var<storage, read_write> bin_out: array<f32>; // (N)

fn b_at(i: u32) -> f32 {
    return bin_b[i % arrayLength(&bin_b)];
}

@compute @workgroup_size(64)
fn add(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= arrayLength(&bin_out)) { return; }
    bin_out[i] = bin_a[i] + b_at(i);
}

@compute @workgroup_size(64)
fn sub(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= arrayLength(&bin_out)) { return; }
    bin_out[i] = bin_a[i] - b_at(i);
}

@compute @workgroup_size(64)
fn mul(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= arrayLength(&bin_out)) { return; }
    bin_out[i] = bin_a[i] * b_at(i);
}

// ---- binary backwards (same shapes): write, do not accumulate ----
@group(0) @binding(0) var<storage, read> bk_grad_out: array<f32>;      // (N) upstream gradient
@group(0) @binding(1) var<storage, read_write> bk_grad_a: array<f32>; // (N)
@group(0) @binding(2) var<storage, read_write> bk_grad_b: array<f32>; // (N)

@compute @workgroup_size(64)
fn add_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= arrayLength(&bk_grad_out)) { return; }
    let g = bk_grad_out[i];
    bk_grad_a[i] = g;
    bk_grad_b[i] = g;
}

@compute @workgroup_size(64)
fn sub_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= arrayLength(&bk_grad_out)) { return; }
    let g = bk_grad_out[i];
    bk_grad_a[i] = g;
    bk_grad_b[i] = -g;
}

@group(0) @binding(0) var<storage, read> mul_grad_out: array<f32>;      // (N)
@group(0) @binding(1) var<storage, read> mul_a: array<f32>;             // (N)
@group(0) @binding(2) var<storage, read> mul_b: array<f32>;             // (N)
@group(0) @binding(3) var<storage, read_write> mul_grad_a: array<f32>; // (N)
@group(0) @binding(4) var<storage, read_write> mul_grad_b: array<f32>; // (N)

@compute @workgroup_size(64)
fn mul_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= arrayLength(&mul_grad_out)) { return; }
    let g = mul_grad_out[i];
    mul_grad_a[i] = g * mul_b[i];
    mul_grad_b[i] = g * mul_a[i];
}

// ---- bias + activation, fused for MLP layers: z = x + b (b broadcast), h = f(z) ----
// x may arrive unreduced: a split-K product's `splits` partial arrays, added here in split order.
// Or, for a short k (an MLP's 2-D input), x is the product's left side (B, k) and the product
// x·W is formed here (`matmul_small`'s adds, in k order): one dispatch and one pass over the
// (B, C) product fewer. An output layer has no activation (kind 3): only z is written.
struct BiasActParams {
    kind: u32,    // 0 relu, 1 silu, 2 tanh, 3 none (z only; h is a placeholder)
    splits: u32,  // x's partial arrays (1: x itself)
    k: u32,       // 0: x is the product; else x is (B, k) and the product is x·W, W as below
    w_trans: u32, // 1: W is (C, k) (a layer's own weight, W[c, j] at c·k + j); 0: (k, C)
};

@group(0) @binding(0) var<storage, read> ba_x: array<f32>;         // (splits, N), N = (B, C); or (B, k)
@group(0) @binding(1) var<storage, read> ba_bias: array<f32>;      // (C)
@group(0) @binding(2) var<storage, read_write> ba_z: array<f32>;   // (N) kept for the backward
@group(0) @binding(3) var<storage, read_write> ba_h: array<f32>;   // (N), or a placeholder when kind = 3
@group(0) @binding(4) var<uniform> ba: BiasActParams;
@group(0) @binding(5) var<storage, read> ba_w: array<f32>;         // (C, k) or (k, C) when k > 0, else unread (the bias)

// Element i of the product: its partials added in split order, or x·W over the short k.
fn ba_product(i: u32, n: u32) -> f32 {
    if (ba.k == 0u) {
        var x = ba_x[i];
        for (var s = 1u; s < ba.splits; s++) { x += ba_x[s * n + i]; }
        return x;
    }
    let cols = arrayLength(&ba_bias);
    let row = i / cols;
    let col = i % cols;
    var acc = 0.0;
    for (var j = 0u; j < ba.k; j++) {
        acc += ba_x[row * ba.k + j] * ba_w[select(j * cols + col, col * ba.k + j, ba.w_trans != 0u)];
    }
    return acc;
}

@compute @workgroup_size(64)
fn bias_activation(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    let n = arrayLength(&ba_z);
    if (i >= n) { return; }
    let z = ba_product(i, n) + ba_bias[i % arrayLength(&ba_bias)];
    ba_z[i] = z;
    if (ba.kind == 3u) { return; }
    var h = max(0.0, z);
    if (ba.kind == 1u) { h = z * sigmoid(z); }
    if (ba.kind == 2u) { h = stable_tanh(z); }
    ba_h[i] = h;
}

// ---- activations: out = f(x) ----
@group(0) @binding(0) var<storage, read> act_in: array<f32>;         // (N)
@group(0) @binding(1) var<storage, read_write> act_out: array<f32>; // (N)

@compute @workgroup_size(64)
fn silu(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= arrayLength(&act_out)) { return; }
    let x = act_in[i];
    act_out[i] = x * sigmoid(x);
}

@compute @workgroup_size(64)
fn relu(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= arrayLength(&act_out)) { return; }
    act_out[i] = max(0.0, act_in[i]);
}

// tanh through exp of a non-positive argument: never overflows, exact sign.
fn stable_tanh(x: f32) -> f32 {
    let e = exp(-2.0 * abs(x));
    return sign(x) * (1.0 - e) / (1.0 + e);
}

@compute @workgroup_size(64)
fn tanh_forward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= arrayLength(&act_out)) { return; }
    act_out[i] = stable_tanh(act_in[i]);
}

// ---- activation backwards: grad_in = grad_out * f'(x) ----
// kind: 0 relu, 1 silu, 2 tanh (as BiasActParams).
fn activation_backward_at(kind: u32, g: f32, x: f32) -> f32 {
    if (kind == 1u) {
        let s = sigmoid(x);
        return g * s * (1.0 + x * (1.0 - s));
    }
    if (kind == 2u) {
        let t = stable_tanh(x);
        return g * (1.0 - t * t);
    }
    return select(0.0, g, x > 0.0);
}

@group(0) @binding(0) var<storage, read> actb_grad_out: array<f32>;     // (N)
@group(0) @binding(1) var<storage, read> actb_in: array<f32>;           // (N) forward input x
@group(0) @binding(2) var<storage, read_write> actb_grad_in: array<f32>; // (N)

fn activation_backward_one(kind: u32, gid: vec3<u32>, nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= arrayLength(&actb_grad_out)) { return; }
    actb_grad_in[i] = activation_backward_at(kind, actb_grad_out[i], actb_in[i]);
}

@compute @workgroup_size(64)
fn relu_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    activation_backward_one(0u, gid, nwg);
}

@compute @workgroup_size(64)
fn silu_backward_real(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    activation_backward_one(1u, gid, nwg);
}

@compute @workgroup_size(64)
fn tanh_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    activation_backward_one(2u, gid, nwg);
}

// ---- an MLP hidden layer's backward through its activation, with its bias gradient ----
// dz = dh · f'(z) and db (+)= Σ_rows dz in one pass: one dispatch and one read of dz fewer than
// an activation backward followed by column_sum, whose layout and order of sums this shares
// (reduce.wgsl). dh may arrive unreduced: a split-K product's `splits` partial arrays, added in
// split order (as matmul_split_reduce would). Or, for a short k (the gradient coming back from
// an output layer of a few classes), dh = dy·W is formed here, as bias_activation forms x·W.
struct ActSumParams {
    rows: u32,
    cols: u32,
    accumulate: u32, // 1: db += Σ, 0: db = Σ
    lanes: u32,      // threads a column (4 to 32, a power of two); a workgroup owns 256 / lanes columns
    splits: u32,     // dh's partial arrays (1: dh itself)
    kind: u32,       // as BiasActParams
    k: u32,          // 0: abs_dh is dh; else abs_dh is dy (rows, k) and dh = dy·W
    w_trans: u32,    // as BiasActParams
};

@group(0) @binding(0) var<storage, read> abs_dh: array<f32>;        // (splits, rows, cols); or dy (rows, k)
@group(0) @binding(1) var<storage, read> abs_z: array<f32>;         // (rows, cols) pre-activation
@group(0) @binding(2) var<storage, read_write> abs_dz: array<f32>;  // (rows, cols)
@group(0) @binding(3) var<storage, read_write> abs_db: array<f32>;  // (cols)
@group(0) @binding(4) var<uniform> abs_p: ActSumParams;
@group(0) @binding(5) var<storage, read> abs_w: array<f32>;         // (cols, k) or (k, cols) when k > 0, else unread (z)

// dh at row r, column col (element i): its partials in split order, or dy·W over the short k.
fn abs_dh_at(r: u32, col: u32, i: u32) -> f32 {
    let p = abs_p;
    if (p.k == 0u) {
        var g = abs_dh[i];
        for (var s = 1u; s < p.splits; s++) { g += abs_dh[s * p.rows * p.cols + i]; }
        return g;
    }
    var acc = 0.0;
    for (var j = 0u; j < p.k; j++) {
        acc += abs_dh[r * p.k + j] * abs_w[select(j * p.cols + col, col * p.k + j, p.w_trans != 0u)];
    }
    return acc;
}

// dz at row r, column col: written, and returned for the column's sum.
fn abs_dz_at(r: u32, col: u32) -> f32 {
    let i = r * abs_p.cols + col;
    let dz = activation_backward_at(abs_p.kind, abs_dh_at(r, col, i), abs_z[i]);
    abs_dz[i] = dz;
    return dz;
}

@compute @workgroup_size(256)
fn activation_backward_sum(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                           @builtin(num_workgroups) nwg: vec3<u32>) {
    let cols = abs_p.cols;
    let lanes = abs_p.lanes;
    let block = ROW_WG / lanes;
    let first = row_index(wg, nwg) * block;
    if (first >= cols) { return; } // whole workgroup: barriers stay uniform
    let col = first + lid % block;
    var acc = 0.0;
    if (col < cols) {
        let rows = abs_p.rows;
        var r = lid / block;
        for (; r + 3u * lanes < rows; r += 4u * lanes) {
            let a = abs_dz_at(r, col);
            let b = abs_dz_at(r + lanes, col);
            let c = abs_dz_at(r + 2u * lanes, col);
            let d = abs_dz_at(r + 3u * lanes, col);
            acc = acc + a + b + c + d;
        }
        for (; r < rows; r += lanes) { acc += abs_dz_at(r, col); }
    }
    column_lanes_total(lid, block, acc);
    if (lid < block && col < cols) {
        let total = row_red[lid];
        abs_db[col] = select(total, abs_db[col] + total, abs_p.accumulate != 0u);
    }
}

// ---- fused SwiGLU gate: out = silu(up) * gate ----
// up and gate come from one (N, 2F) product (the Llama's up and gate weights lie back to back),
// so each row holds [up (F) | gate (F)]; the gradient has the same layout, ready for the
// joined backward products.
struct GluParams {
    hidden: u32, // F
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
};

@group(0) @binding(0) var<storage, read> glu_up_gate: array<f32>;  // (N, 2F)
@group(0) @binding(1) var<storage, read_write> glu_out: array<f32>; // (N, F)
@group(0) @binding(2) var<uniform> glu: GluParams;

// The two SwiGLU kernels run on (tokens, hidden) activations, the largest elementwise work of a
// Llama step: each 64-thread workgroup covers 256 elements (4 per thread, 64 apart so every
// load is coalesced), a quarter of the workgroups a one-per-thread kernel launches.
const GLU_PER_WG: u32 = 256u;

// Where element i of an (N, F) tensor's up lies in the (N, 2F) rows; its gate is F further.
fn glu_up_index(i: u32, f: u32) -> u32 {
    return i + (i / f) * f;
}

@compute @workgroup_size(64)
fn silu_gate_fused(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                   @builtin(num_workgroups) nwg: vec3<u32>) {
    let base = row_index(wg, nwg) * GLU_PER_WG + lid;
    let len = arrayLength(&glu_out);
    for (var e = 0u; e < 4u; e++) {
        let i = base + e * WG;
        if (i < len) {
            let u = glu_up_index(i, glu.hidden);
            let up = glu_up_gate[u];
            glu_out[i] = up * sigmoid(up) * glu_up_gate[u + glu.hidden];
        }
    }
}

@group(0) @binding(0) var<storage, read> glub_up_gate: array<f32>;            // (N, 2F)
@group(0) @binding(1) var<storage, read> glub_grad_out: array<f32>;           // (N, F)
@group(0) @binding(2) var<storage, read_write> glub_grad_up_gate: array<f32>; // (N, 2F)
@group(0) @binding(3) var<uniform> glub: GluParams;

@compute @workgroup_size(64)
fn silu_gate_backward(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                      @builtin(num_workgroups) nwg: vec3<u32>) {
    let base = row_index(wg, nwg) * GLU_PER_WG + lid;
    let len = arrayLength(&glub_grad_out);
    for (var e = 0u; e < 4u; e++) {
        let i = base + e * WG;
        if (i < len) {
            let u = glu_up_index(i, glub.hidden);
            let up = glub_up_gate[u];
            let g = glub_grad_out[i];
            let s = sigmoid(up);
            glub_grad_up_gate[u + glub.hidden] = g * up * s;
            glub_grad_up_gate[u] = g * glub_up_gate[u + glub.hidden] * s * (1.0 + up * (1.0 - s));
        }
    }
}
