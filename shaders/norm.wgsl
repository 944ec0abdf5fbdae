// norm.wgsl — RMSNorm forward (plain, and fused with the residual add) and its backward.
// Row kernels: one 256-thread workgroup per row of C channels. The forwards save
// rstd = 1/sqrt(mean(x²) + eps) per row (as llm.c does) so the backward needs no second
// reduction over x² and no eps.

struct NormParams {
    cols: u32,       // C, channels per row
    rows: u32,       // rows = B*T
    eps: f32,
    accumulate: u32, // rms_norm_backward's dx: 1 = dx += result, 0 = dx = result
    splits: u32,     // rms_norm_backward: dout arrives as this many partial arrays (1: dout itself)
    weight_chunks: u32, // rms_norm_backward: row chunks of dweight (1: accumulated into dweight)
    _pad1: u32,
    _pad2: u32,
};

// ---- rms_norm: out = x * rstd * weight ----
@group(0) @binding(0) var<storage, read> rn_x: array<f32>;          // (rows, C)
@group(0) @binding(1) var<storage, read> rn_weight: array<f32>;     // (C)
@group(0) @binding(2) var<storage, read_write> rn_out: array<f32>;  // (rows, C)
@group(0) @binding(3) var<storage, read_write> rn_rstd: array<f32>; // (rows)
@group(0) @binding(4) var<uniform> rn_p: NormParams;

@compute @workgroup_size(256)
fn rms_norm(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
            @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = row_index(wg, nwg);
    if (row >= rn_p.rows) { return; } // uniform: the whole workgroup exits
    let cols = rn_p.cols;
    let off = row * cols;
    var ss = 0.0;
    for (var i = lid; i < cols; i += ROW_WG) {
        let v = rn_x[off + i];
        ss += v * v;
    }
    let rstd = 1.0 / sqrt(row_sum(lid, ss) / f32(cols) + rn_p.eps);
    if (lid == 0u) { rn_rstd[row] = rstd; }
    for (var i = lid; i < cols; i += ROW_WG) {
        rn_out[off + i] = rn_x[off + i] * rstd * rn_weight[i];
    }
}

// ---- rms_norm_residual: sum = x + residual; out = rmsnorm(sum) * weight ----
// The sum is the residual stream's next value, so it is written out too; the backward then
// runs rms_norm_backward on `sum` with accumulate = 1 into the residual stream's gradient.
// The residual may arrive unreduced (a split-K product's `splits` partials), added here in
// split order, as matmul_split_reduce would: one dispatch fewer.
@group(0) @binding(0) var<storage, read> rr_x: array<f32>;          // (rows, C)
@group(0) @binding(1) var<storage, read> rr_residual: array<f32>;   // (splits, rows, C)
@group(0) @binding(2) var<storage, read> rr_weight: array<f32>;     // (C)
@group(0) @binding(3) var<storage, read_write> rr_sum: array<f32>;  // (rows, C)
@group(0) @binding(4) var<storage, read_write> rr_out: array<f32>;  // (rows, C)
@group(0) @binding(5) var<storage, read_write> rr_rstd: array<f32>; // (rows)
@group(0) @binding(6) var<uniform> rr_p: NormParams;

// The residual at element i of (rows, C): its partials added in split order.
fn rr_res(i: u32) -> f32 {
    var r = rr_residual[i];
    for (var s = 1u; s < rr_p.splits; s++) { r += rr_residual[s * rr_p.rows * rr_p.cols + i]; }
    return r;
}

@compute @workgroup_size(256)
fn rms_norm_residual(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                     @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = row_index(wg, nwg);
    if (row >= rr_p.rows) { return; } // uniform: the whole workgroup exits
    let cols = rr_p.cols;
    let off = row * cols;
    var ss = 0.0;
    for (var i = lid; i < cols; i += ROW_WG) {
        let v = rr_x[off + i] + rr_res(off + i);
        rr_sum[off + i] = v;
        ss += v * v;
    }
    let rstd = 1.0 / sqrt(row_sum(lid, ss) / f32(cols) + rr_p.eps);
    if (lid == 0u) { rr_rstd[row] = rstd; }
    // Each thread rereads only the sums it wrote itself: no barrier needed.
    for (var i = lid; i < cols; i += ROW_WG) {
        rr_out[off + i] = rr_sum[off + i] * rstd * rr_weight[i];
    }
}

// ---- rms_norm_backward: dx = rstd·w·g − x · rstd³/C · Σ_j w_j g_j x_j (per row), and
//      dweight[c] (+)= Σ_rows g·x·rstd (per channel) ----
// One dispatch with two kinds of workgroup, both reading g = dout: some take a block of WB_COLS
// channels over a chunk of rows (dweight), the rest a row each (dx). g may arrive
// unreduced: the `splits` partial products of a split-K input gradient, added in split order
// as they are read (as matmul_split_reduce would, so the bits are the same).
@group(0) @binding(0) var<storage, read> rb_dout: array<f32>;     // (splits, rows, C)
@group(0) @binding(1) var<storage, read> rb_x: array<f32>;        // (rows, C) forward input
@group(0) @binding(2) var<storage, read> rb_weight: array<f32>;   // (C)
@group(0) @binding(3) var<storage, read> rb_rstd: array<f32>;     // (rows) saved by the forward
@group(0) @binding(4) var<storage, read_write> rb_dx: array<f32>; // (rows, C)
@group(0) @binding(5) var<uniform> rb_p: NormParams;
@group(0) @binding(6) var<storage, read_write> rb_dweight: array<f32>; // (C) accumulated with one chunk, else (chunks, C) partials

// g at element i of (rows, C): its partials added in split order.
fn rb_g(i: u32) -> f32 {
    var g = rb_dout[i];
    for (var s = 1u; s < rb_p.splits; s++) { g += rb_dout[s * rb_p.rows * rb_p.cols + i]; }
    return g;
}

@compute @workgroup_size(256)
fn rms_norm_backward(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                     @builtin(num_workgroups) nwg: vec3<u32>) {
    let group = row_index(wg, nwg);
    // Uniform branches: each workgroup takes one role, or exits as grid padding. The dweight
    // workgroups come first: each loops over a chunk of rows, so they start before the short
    // row workgroups rather than trail them.
    let weight_groups = ((rb_p.cols + WB_COLS - 1u) / WB_COLS) * rb_p.weight_chunks;
    if (group < weight_groups) {
        rb_weight_chunk(lid, group);
    } else if (group - weight_groups < rb_p.rows) {
        rb_row(lid, group - weight_groups);
    }
}

// Elements of a row a thread keeps in registers between rb_row's two passes, so g (whose split
// partials are added as it is read) and x are read once: rows up to RB_KEPT · ROW_WG wide (every
// d_model up to 1,024); wider rows read the rest twice.
const RB_KEPT: u32 = 4u;

// dx of one row.
fn rb_row(lid: u32, row: u32) {
    let cols = rb_p.cols;
    let off = row * cols;
    var g: array<f32, RB_KEPT>; // g and x at off + lid + j·ROW_WG
    var x: array<f32, RB_KEPT>;
    var d = 0.0;
    for (var j = 0u; j < RB_KEPT; j++) {
        let i = lid + j * ROW_WG;
        if (i < cols) {
            g[j] = rb_g(off + i);
            x[j] = rb_x[off + i];
            d += g[j] * rb_weight[i] * x[j];
        }
    }
    for (var i = lid + RB_KEPT * ROW_WG; i < cols; i += ROW_WG) {
        d += rb_g(off + i) * rb_weight[i] * rb_x[off + i];
    }
    let r = rb_rstd[row];
    let k = row_sum(lid, d) * r * r * r / f32(cols);
    for (var j = 0u; j < RB_KEPT; j++) {
        let i = lid + j * ROW_WG;
        if (i < cols) { rb_store_dx(off + i, r * rb_weight[i] * g[j] - k * x[j]); }
    }
    for (var i = lid + RB_KEPT * ROW_WG; i < cols; i += ROW_WG) {
        rb_store_dx(off + i, r * rb_weight[i] * rb_g(off + i) - k * rb_x[off + i]);
    }
}

// Writes or adds (when the input gradient already holds a residual branch's share) one dx.
fn rb_store_dx(at: u32, v: f32) {
    if (rb_p.accumulate != 0u) {
        rb_dx[at] += v;
    } else {
        rb_dx[at] = v;
    }
}

// dweight over one chunk of rows for WB_COLS consecutive channels (coalesced reads along a
// row), done deterministically without atomics: the rows are split over WB_LANES lanes, which
// are then added in a fixed order. With more than one chunk, chunk z writes its sum to
// rb_dweight[z * C + c], partials that matmul_split_reduce then adds in order. (One chunk per
// channel block left all but C / 32 workgroups idle: 8 for d_model 256, ~39 µs each on an H200.)
const WB_COLS: u32 = 32u;
const WB_LANES: u32 = 8u; // WB_COLS * WB_LANES == ROW_WG

fn rb_weight_chunk(lid: u32, w: u32) {
    let cols = rb_p.cols;
    let blocks = (cols + WB_COLS - 1u) / WB_COLS;
    let z = w / blocks;
    let col = (w % blocks) * WB_COLS + lid % WB_COLS;
    let lane = lid / WB_COLS;
    let chunk = (rb_p.rows + rb_p.weight_chunks - 1u) / rb_p.weight_chunks; // rows per chunk
    var acc = 0.0;
    if (col < cols) {
        // Four rows per iteration: independent loads in flight hide memory latency.
        let rows = min(rb_p.rows, (z + 1u) * chunk);
        var a = vec4<f32>(0.0);
        var r = z * chunk + lane;
        for (; r + 3u * WB_LANES < rows; r += 4u * WB_LANES) {
            let r1 = r + WB_LANES;
            let r2 = r + 2u * WB_LANES;
            let r3 = r + 3u * WB_LANES;
            a += vec4<f32>(rb_g(r * cols + col), rb_g(r1 * cols + col), rb_g(r2 * cols + col), rb_g(r3 * cols + col))
                * vec4<f32>(rb_x[r * cols + col], rb_x[r1 * cols + col], rb_x[r2 * cols + col], rb_x[r3 * cols + col])
                * vec4<f32>(rb_rstd[r], rb_rstd[r1], rb_rstd[r2], rb_rstd[r3]);
        }
        for (; r < rows; r += WB_LANES) {
            a.x += rb_g(r * cols + col) * rb_x[r * cols + col] * rb_rstd[r];
        }
        acc = (a.x + a.y) + (a.z + a.w);
    }
    row_red[lid] = acc;
    workgroupBarrier();
    if (lid < WB_COLS && col < cols) {
        var s = 0.0;
        for (var l = 0u; l < WB_LANES; l++) { s += row_red[l * WB_COLS + lid]; }
        let at = z * cols + col;
        if (rb_p.weight_chunks == 1u) { s += rb_dweight[at]; }
        rb_dweight[at] = s;
    }
}
