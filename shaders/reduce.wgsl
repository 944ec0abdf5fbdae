// reduce.wgsl — deterministic sums. WGSL has no float atomics, so a total over N elements is a
// fixed two-level tree: `sum_partial` (G workgroups, each owning one partial sum) followed by
// `sum_final` (one workgroup over the G partials). The order of every addition depends only on
// N and G, so the same input always gives the same bits. `column_sum` is the bias backward.

// ---- level 1: partial sums (optionally of squares) ----
struct PartialParams {
    groups: u32,  // G, the workgroups owning a partial; the launched grid may be larger (2-D)
    offset: u32,  // first slot written: several inputs can share one partials array
    squares: u32, // 1: sum of x², 0: sum of x
    _pad: u32,
};

@group(0) @binding(0) var<storage, read> sp_x: array<f32>;              // (N)
@group(0) @binding(1) var<storage, read_write> sp_partials: array<f32>; // (P), P >= offset + G
@group(0) @binding(2) var<uniform> sp_params: PartialParams;

// Workgroup g sums the 256-element blocks g, g + G, g + 2G, ... (thread lid takes element lid of
// each block, so loads stay contiguous), then reduces its 256 threads and writes partials[offset + g].
@compute @workgroup_size(256)
fn sum_partial(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = row_index(wg, nwg);
    if (g >= sp_params.groups) { return; } // whole workgroup: barriers stay uniform
    let n = arrayLength(&sp_x);
    let stride = sp_params.groups * ROW_WG;
    let squares = sp_params.squares != 0u;
    var acc = 0.0;
    for (var i = g * ROW_WG + lid; i < n; i += stride) {
        let v = sp_x[i];
        acc += select(v, v * v, squares);
    }
    let total = row_sum(lid, acc);
    if (lid == 0u) { sp_partials[sp_params.offset + g] = total; }
}

// ---- level 2: one workgroup sums partials[0..count] ----
struct FinalParams {
    count: u32,      // partials to sum
    index: u32,      // element of `out` written
    accumulate: u32, // 1: out[index] += result, 0: out[index] = result
    scale: f32,      // 1/N for a mean, 1 for a total
};

@group(0) @binding(0) var<storage, read> sf_partials: array<f32>;  // (P), P >= count
@group(0) @binding(1) var<storage, read_write> sf_out: array<f32>; // (M), M > index
@group(0) @binding(2) var<uniform> sf_params: FinalParams;

@compute @workgroup_size(256)
fn sum_final(@builtin(local_invocation_index) lid: u32) {
    var acc = 0.0;
    for (var i = lid; i < sf_params.count; i += ROW_WG) {
        acc += sf_partials[i];
    }
    let total = row_sum(lid, acc) * sf_params.scale;
    if (lid == 0u) {
        let i = sf_params.index;
        // select, not `prev * flag`: a stale NaN/Inf in out must not leak into a fresh write.
        sf_out[i] = select(total, sf_out[i] + total, sf_params.accumulate != 0u);
    }
}

// ---- column sum (bias backward): db[c] (+)= Σ_r dy[r, c] ----
struct ColumnParams {
    rows: u32,
    cols: u32,
    accumulate: u32, // 1: db += Σ, 0: db = Σ
    lanes: u32,      // threads a column (4 to 32, a power of two); a workgroup owns 256 / lanes columns
};

@group(0) @binding(0) var<storage, read> cs_dy: array<f32>;       // (rows, cols)
@group(0) @binding(1) var<storage, read_write> cs_db: array<f32>; // (cols)
@group(0) @binding(2) var<uniform> cs_params: ColumnParams;

// Lane j of a column adds rows j, j + lanes, ... in ascending order with four loads in flight
// (a warp reads whole 32-byte stretches of a few rows), then column_lanes_total adds the lanes.
@compute @workgroup_size(256)
fn column_sum(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
              @builtin(num_workgroups) nwg: vec3<u32>) {
    let cols = cs_params.cols;
    let lanes = cs_params.lanes;
    let block = ROW_WG / lanes;
    let first = row_index(wg, nwg) * block;
    if (first >= cols) { return; } // whole workgroup: barriers stay uniform
    let col = first + lid % block;
    var acc = 0.0;
    if (col < cols) {
        let rows = cs_params.rows;
        var r = lid / block;
        for (; r + 3u * lanes < rows; r += 4u * lanes) {
            let a = cs_dy[r * cols + col];
            let b = cs_dy[(r + lanes) * cols + col];
            let c = cs_dy[(r + 2u * lanes) * cols + col];
            let d = cs_dy[(r + 3u * lanes) * cols + col];
            acc = acc + a + b + c + d;
        }
        for (; r < rows; r += lanes) { acc += cs_dy[r * cols + col]; }
    }
    column_lanes_total(lid, block, acc);
    if (lid < block && col < cols) {
        let total = row_red[lid];
        cs_db[col] = select(total, cs_db[col] + total, cs_params.accumulate != 0u);
    }
}
