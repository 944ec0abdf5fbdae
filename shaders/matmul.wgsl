// matmul.wgsl — one tiled GEMM for every product training needs:
//   C = alpha · op(A) · op(B) + (accumulate ? C : 0)
// op(A) is A stored (M, K) row-major, or with trans_a A stored (K, M); op(B) is B stored (K, N),
// or with trans_b B stored (N, K). So a Linear layer Y = X·Wᵀ is trans_b, its dX = dY·W is the
// plain product and its dW += dYᵀ·X is trans_a + accumulate.
//
// Tiling: each 256-thread workgroup owns a 64x64 tile of C; each thread a 4x4 register tile
// (rows ty*4.., cols tx*4..). K advances 16 at a time through workgroup memory, where both
// operand tiles are stored k-major as vec4s, so the inner step is 4 vec4 FMAs per k.
// Out-of-range loads read zero, so any M, N, K >= 1 is correct.
//
// Grid: the 64x64 output tiles are numbered tile = wg.x + wg.y * num_workgroups.x (the host
// folds them into a 2-D grid under the per-dimension limit); wg.z is the batch index.

struct MatmulParams {
    m: u32,
    n: u32,
    k: u32,
    flags: u32,      // MM_TRANS_A | MM_TRANS_B | MM_ACCUMULATE
    alpha: f32,
    batch: u32,
    _pad0: u32,
    _pad1: u32,
    stride_a: u32,   // elements between consecutive batches of A (0 broadcasts one matrix)
    stride_b: u32,
    stride_c: u32,
    _pad2: u32,
}

const MM_TRANS_A: u32 = 1u;
const MM_TRANS_B: u32 = 2u;
const MM_ACCUMULATE: u32 = 4u;
const MM_TILE: u32 = 64u; // output rows and columns per workgroup
const MM_KT: u32 = 16u;   // k per workgroup-memory step

@group(0) @binding(0) var<storage, read> mm_a: array<f32>;        // (batch, M, K), or (batch, K, M) with trans_a
@group(0) @binding(1) var<storage, read> mm_b: array<f32>;        // (batch, K, N), or (batch, N, K) with trans_b
@group(0) @binding(2) var<storage, read_write> mm_c: array<f32>; // (batch, M, N)
@group(0) @binding(3) var<uniform> mm: MatmulParams;

// [kk * 16 + i / 4][i % 4] holds op(A)[row0 + i, k0 + kk] (resp. op(B)[k0 + kk, col0 + i]).
var<workgroup> mm_tile_a: array<vec4<f32>, 256>;
var<workgroup> mm_tile_b: array<vec4<f32>, 256>;

// op(A)[row, kg] of this batch, zero outside the matrix.
fn mm_load_a(off: u32, row: u32, kg: u32) -> f32 {
    if (row >= mm.m || kg >= mm.k) { return 0.0; }
    if ((mm.flags & MM_TRANS_A) != 0u) { return mm_a[off + kg * mm.m + row]; }
    return mm_a[off + row * mm.k + kg];
}

// op(B)[kg, col] of this batch, zero outside the matrix.
fn mm_load_b(off: u32, kg: u32, col: u32) -> f32 {
    if (kg >= mm.k || col >= mm.n) { return 0.0; }
    if ((mm.flags & MM_TRANS_B) != 0u) { return mm_b[off + col * mm.k + kg]; }
    return mm_b[off + kg * mm.n + col];
}

@compute @workgroup_size(256)
fn matmul(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
          @builtin(num_workgroups) nwg: vec3<u32>) {
    let tiles_n = (mm.n + MM_TILE - 1u) / MM_TILE;
    let tiles_m = (mm.m + MM_TILE - 1u) / MM_TILE;
    let tile = wg.x + wg.y * nwg.x;
    if (tile >= tiles_m * tiles_n || wg.z >= mm.batch) { return; } // uniform: whole workgroup exits
    let row0 = (tile / tiles_n) * MM_TILE;
    let col0 = (tile % tiles_n) * MM_TILE;
    let a_off = wg.z * mm.stride_a;
    let b_off = wg.z * mm.stride_b;
    let c_off = wg.z * mm.stride_c;
    let tx = lid % 16u;
    let ty = lid / 16u;
    // Load order follows each operand's contiguous axis so neighbouring threads read
    // neighbouring addresses (coalesced): k for A and Bᵀ, m for Aᵀ, n for B.
    let a_along_k = (mm.flags & MM_TRANS_A) == 0u;
    let b_along_k = (mm.flags & MM_TRANS_B) != 0u;

    var acc: array<vec4<f32>, 4>; // acc[i] = C[row0 + ty*4 + i, col0 + tx*4 .. +4]
    for (var k0 = 0u; k0 < mm.k; k0 += MM_KT) {
        // 64x16 elements per operand, 4 per thread.
        for (var r = 0u; r < 4u; r++) {
            let e = lid + r * 256u;
            var i: u32;
            var kk: u32;
            if (a_along_k) { i = e / 16u; kk = e % 16u; } else { i = e % 64u; kk = e / 64u; }
            mm_tile_a[kk * 16u + i / 4u][i % 4u] = mm_load_a(a_off, row0 + i, k0 + kk);
            if (b_along_k) { i = e / 16u; kk = e % 16u; } else { i = e % 64u; kk = e / 64u; }
            mm_tile_b[kk * 16u + i / 4u][i % 4u] = mm_load_b(b_off, k0 + kk, col0 + i);
        }
        workgroupBarrier();
        for (var kk = 0u; kk < MM_KT; kk++) {
            let a = mm_tile_a[kk * 16u + ty];
            let b = mm_tile_b[kk * 16u + tx];
            acc[0] += a.x * b;
            acc[1] += a.y * b;
            acc[2] += a.z * b;
            acc[3] += a.w * b;
        }
        workgroupBarrier();
    }

    let accumulate = (mm.flags & MM_ACCUMULATE) != 0u;
    for (var i = 0u; i < 4u; i++) {
        let row = row0 + ty * 4u + i;
        if (row >= mm.m) { break; }
        for (var j = 0u; j < 4u; j++) {
            let col = col0 + tx * 4u + j;
            if (col >= mm.n) { break; }
            let idx = c_off + row * mm.n + col;
            var v = mm.alpha * acc[i][j];
            // Without accumulate C is never read, so stale or NaN contents cannot leak in.
            if (accumulate) { v += mm_c[idx]; }
            mm_c[idx] = v;
        }
    }
}
