// matmul.wgsl — one tiled GEMM for every product training needs:
//   C = alpha · op(A) · op(B) + (accumulate ? C : 0)
// op(A) is A stored (M, K) row-major, or with trans_a A stored (K, M); op(B) is B stored (K, N),
// or with trans_b B stored (N, K). So a Linear layer Y = X·Wᵀ is trans_b, its dX = dY·W is the
// plain product and its dW += dYᵀ·X is trans_a + accumulate.
//
// Tiling: each 256-thread workgroup owns a tile of C (64x64 or 128x128); each thread a 4x4 or
// 8x8 register tile. K advances through workgroup memory, where both operand tiles are stored
// k-major as vec4s, so the inner step is vec4 FMAs. Out-of-range loads read zero, so any
// M, N, K >= 1 is correct.
//
// Grid: the output tiles are numbered tile = wg.x + wg.y * num_workgroups.x (the host folds
// them into a 2-D grid under the per-dimension limit); wg.z = batch index * splits + split.
//
// Split-K: with splits > 1 the k range is cut into chunks of k_chunk (a multiple of 16) and
// split s writes its partial product to C + s * split_stride (the host points C at a scratch
// buffer and clears accumulate); matmul_split_reduce then sums the partials into the real C.
// This keeps the GPU busy for products with few output tiles and long k (weight gradients).
//
// Two tile shapes share the params and bindings: `matmul` (64x64 tile, 4x4 per thread) and
// `matmul_128` (128x128 tile, 8x8 per thread), which the host picks by problem size.
// Neither indexes a register array with a runtime index (which would push it to local
// memory): every accumulator access uses a constant index.

struct MatmulParams {
    m: u32,
    n: u32,
    k: u32,
    flags: u32,      // MM_TRANS_A | MM_TRANS_B | MM_ACCUMULATE | MM_ALIGNED
    alpha: f32,
    batch: u32,
    splits: u32,     // k chunks (1 = no split)
    k_chunk: u32,    // k per chunk, a multiple of 16
    stride_a: u32,   // elements between consecutive batches of A (0 broadcasts one matrix)
    stride_b: u32,
    stride_c: u32,
    split_stride: u32, // elements between the partial products of consecutive splits
}

const MM_TRANS_A: u32 = 1u;
const MM_TRANS_B: u32 = 2u;
const MM_ACCUMULATE: u32 = 4u;
const MM_ALIGNED: u32 = 8u; // matmul_128 only: m, n multiples of 128, k and k_chunk of 8: no edge tiles
const MM_TILE: u32 = 64u; // output rows and columns per workgroup
const MM_KT: u32 = 16u;   // k per workgroup-memory step

@group(0) @binding(0) var<storage, read> mm_a: array<f32>;        // (batch, M, K), or (batch, K, M) with trans_a
@group(0) @binding(1) var<storage, read> mm_b: array<f32>;        // (batch, K, N), or (batch, N, K) with trans_b
@group(0) @binding(2) var<storage, read_write> mm_c: array<f32>; // (batch, M, N)
@group(0) @binding(3) var<uniform> mm: MatmulParams;
// matmul_128 only: A and B again, read four floats at a time when the product is aligned
// (otherwise the host binds a 16-byte placeholder here).
@group(0) @binding(4) var<storage, read> mm_a4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> mm_b4: array<vec4<f32>>;
// matmul_128_aligned only: binding 2 (C) as vec4s, so an aligned product stores four floats at
// once (mm_store4's scalar stores cost matmul_128 20-40% on the k = 256 products of llama-small
// on an H200). Each entry point uses one of the two declarations of binding 2.
@group(0) @binding(2) var<storage, read_write> mm_c4: array<vec4<f32>>;

// Which batch, split and k range workgroup row wg.z computes; valid == false for grid padding.
struct MmSlot {
    a_off: u32,
    b_off: u32,
    c_off: u32,
    k_begin: u32,
    k_end: u32,
    valid: bool,
}

fn mm_slot(z: u32) -> MmSlot {
    let b = z / mm.splits;
    let s = z % mm.splits;
    let kb = s * mm.k_chunk;
    let ke = min(mm.k, kb + mm.k_chunk);
    return MmSlot(b * mm.stride_a, b * mm.stride_b, b * mm.stride_c + s * mm.split_stride, kb, ke, b < mm.batch);
}

// op(A)[row, kg] of this batch, zero outside the matrix (or past this split's k range).
fn mm_load_a(off: u32, row: u32, kg: u32, kend: u32) -> f32 {
    if (row >= mm.m || kg >= kend) { return 0.0; }
    if ((mm.flags & MM_TRANS_A) != 0u) { return mm_a[off + kg * mm.m + row]; }
    return mm_a[off + row * mm.k + kg];
}

// op(B)[kg, col] of this batch, zero outside the matrix (or past this split's k range).
fn mm_load_b(off: u32, kg: u32, col: u32, kend: u32) -> f32 {
    if (kg >= kend || col >= mm.n) { return 0.0; }
    if ((mm.flags & MM_TRANS_B) != 0u) { return mm_b[off + col * mm.k + kg]; }
    return mm_b[off + kg * mm.n + col];
}

// C[idx] = v, or += v with accumulate. Without accumulate C is never read, so stale or NaN
// contents cannot leak in.
fn mm_put(idx: u32, v: f32) {
    if ((mm.flags & MM_ACCUMULATE) != 0u) {
        mm_c[idx] = mm_c[idx] + v;
    } else {
        mm_c[idx] = v;
    }
}

// alpha · v into C[row, col .. col + 4], skipping what lies outside the matrix.
fn mm_store4(c_off: u32, row: u32, col: u32, v: vec4<f32>) {
    if (row >= mm.m) { return; }
    let base = c_off + row * mm.n + col;
    let w = mm.alpha * v;
    if (col < mm.n) { mm_put(base, w.x); }
    if (col + 1u < mm.n) { mm_put(base + 1u, w.y); }
    if (col + 2u < mm.n) { mm_put(base + 2u, w.z); }
    if (col + 3u < mm.n) { mm_put(base + 3u, w.w); }
}

// ---------------------------------------------------------------- 64x64 tile
// [kk * 17 + i / 4][i % 4] holds op(A)[row0 + i, k0 + kk] (resp. op(B)[k0 + kk, col0 + i]).
// Each k row is 16 vec4s plus one of padding, so stores along k hit distinct banks.
const MM_ROW64: u32 = 17u;
var<workgroup> mm_tile_a: array<vec4<f32>, 272>;
var<workgroup> mm_tile_b: array<vec4<f32>, 272>;

@compute @workgroup_size(256)
fn matmul(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
          @builtin(num_workgroups) nwg: vec3<u32>) {
    let tiles_n = (mm.n + MM_TILE - 1u) / MM_TILE;
    let tiles_m = (mm.m + MM_TILE - 1u) / MM_TILE;
    let tile = wg.x + wg.y * nwg.x;
    let slot = mm_slot(wg.z);
    if (tile >= tiles_m * tiles_n || !slot.valid) { return; } // uniform: whole workgroup exits
    let row0 = (tile / tiles_n) * MM_TILE;
    let col0 = (tile % tiles_n) * MM_TILE;
    let tx = lid % 16u;
    let ty = lid / 16u;
    // Load order follows each operand's contiguous axis so neighbouring threads read
    // neighbouring addresses (coalesced): k for A and Bᵀ, m for Aᵀ, n for B.
    let a_along_k = (mm.flags & MM_TRANS_A) == 0u;
    let b_along_k = (mm.flags & MM_TRANS_B) != 0u;

    // acc_i = C[row0 + ty*4 + i, col0 + tx*4 .. +4]
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    for (var k0 = slot.k_begin; k0 < slot.k_end; k0 += MM_KT) {
        // 64x16 elements per operand, 4 per thread.
        for (var r = 0u; r < 4u; r++) {
            let e = lid + r * 256u;
            var i: u32;
            var kk: u32;
            if (a_along_k) { i = e / 16u; kk = e % 16u; } else { i = e % 64u; kk = e / 64u; }
            mm_tile_a[kk * MM_ROW64 + i / 4u][i % 4u] = mm_load_a(slot.a_off, row0 + i, k0 + kk, slot.k_end);
            if (b_along_k) { i = e / 16u; kk = e % 16u; } else { i = e % 64u; kk = e / 64u; }
            mm_tile_b[kk * MM_ROW64 + i / 4u][i % 4u] = mm_load_b(slot.b_off, k0 + kk, col0 + i, slot.k_end);
        }
        workgroupBarrier();
        for (var kk = 0u; kk < MM_KT; kk++) {
            let a = mm_tile_a[kk * MM_ROW64 + ty];
            let b = mm_tile_b[kk * MM_ROW64 + tx];
            acc0 += a.x * b;
            acc1 += a.y * b;
            acc2 += a.z * b;
            acc3 += a.w * b;
        }
        workgroupBarrier();
    }
    let row = row0 + ty * 4u;
    let col = col0 + tx * 4u;
    mm_store4(slot.c_off, row, col, acc0);
    mm_store4(slot.c_off, row + 1u, col, acc1);
    mm_store4(slot.c_off, row + 2u, col, acc2);
    mm_store4(slot.c_off, row + 3u, col, acc3);
}

// ---------------------------------------------------------------- 128x128 tile
// 256 threads, each an 8x8 block of C: rows ty*4 + {0..3} and 64 + ty*4 + {0..3}, columns
// tx*4 .. +4 and 64 + tx*4 .. +4, so the vec4 reads of workgroup memory are conflict-free.
// K advances 8 at a time; the next step's operands are fetched into registers while this
// step computes, and stored into the second of two buffers per operand, so each step needs
// one barrier. Workgroup memory: 2 operands x 2 buffers x 8 x 32 vec4s = 16 KiB, the web limit.
const MM_BIG: u32 = 128u;
const MM_BKT: u32 = 8u;
// mm_big[t][kk][j]: tile t (A's buffers 0 and 1, B's 2 and 3), k row kk, vec4 column j.
// One array, so one function stores both operands (WGSL cannot pass a workgroup pointer to a
// function). Three dimensions, so that the indices that vary inside a step are the small
// constant kk and the thread's fixed column: the range checks a browser's WebGPU adds to every
// access (clamps) then do not depend on the step and leave the inner loop (a flat array
// indexed by cur + kk * 32 + ty measured 32.0 TFLOP/s at 4096³ on Dawn/H200; this, 37.4).
var<workgroup> mm_big: array<array<array<vec4<f32>, 32>, 8>, 4>;
const MM_BIG_B: u32 = 2u; // B's first tile in mm_big

// Position (i, kk) in the 128x8 operand tile of element e = lid + r * 256 of a step's load.
fn mm_big_pos(e: u32, along_k: bool) -> vec2<u32> {
    if (along_k) { return vec2<u32>(e / MM_BKT, e % MM_BKT); }
    return vec2<u32>(e % MM_BIG, e / MM_BIG);
}

// Aligned products (MM_ALIGNED) load one vec4 per thread per operand and step: four
// consecutive k of one row of A (stored (M, K)) or B (stored (N, K)), or four consecutive
// rows/columns at one k when the operand is stored k-major ((K, M) for A, (K, N) for B).
// Thread lid: along k, row lid / 2 and k half lid % 2; k-major, k lid / 32 and vec4 lid % 32.
fn mm_v4_a(s: MmSlot, row0: u32, k0: u32, lid: u32, along_k: bool) -> vec4<f32> {
    if (along_k) { return mm_a4[(s.a_off + (row0 + lid / 2u) * mm.k + k0 + (lid % 2u) * 4u) / 4u]; }
    return mm_a4[(s.a_off + (k0 + lid / 32u) * mm.m + row0) / 4u + lid % 32u];
}

fn mm_v4_b(s: MmSlot, col0: u32, k0: u32, lid: u32, along_k: bool) -> vec4<f32> {
    if (along_k) { return mm_b4[(s.b_off + (col0 + lid / 2u) * mm.k + k0 + (lid % 2u) * 4u) / 4u]; }
    return mm_b4[(s.b_off + (k0 + lid / 32u) * mm.n + col0) / 4u + lid % 32u];
}

fn mm_big_fetch_a(s: MmSlot, row0: u32, k0: u32, lid: u32, along_k: bool) -> vec4<f32> {
    if ((mm.flags & MM_ALIGNED) != 0u) { return mm_v4_a(s, row0, k0, lid, along_k); }
    let p0 = mm_big_pos(lid, along_k);
    let p1 = mm_big_pos(lid + 256u, along_k);
    let p2 = mm_big_pos(lid + 512u, along_k);
    let p3 = mm_big_pos(lid + 768u, along_k);
    return vec4<f32>(
        mm_load_a(s.a_off, row0 + p0.x, k0 + p0.y, s.k_end),
        mm_load_a(s.a_off, row0 + p1.x, k0 + p1.y, s.k_end),
        mm_load_a(s.a_off, row0 + p2.x, k0 + p2.y, s.k_end),
        mm_load_a(s.a_off, row0 + p3.x, k0 + p3.y, s.k_end));
}

fn mm_big_fetch_b(s: MmSlot, col0: u32, k0: u32, lid: u32, along_k: bool) -> vec4<f32> {
    if ((mm.flags & MM_ALIGNED) != 0u) { return mm_v4_b(s, col0, k0, lid, along_k); }
    let p0 = mm_big_pos(lid, along_k);
    let p1 = mm_big_pos(lid + 256u, along_k);
    let p2 = mm_big_pos(lid + 512u, along_k);
    let p3 = mm_big_pos(lid + 768u, along_k);
    return vec4<f32>(
        mm_load_b(s.b_off, k0 + p0.y, col0 + p0.x, s.k_end),
        mm_load_b(s.b_off, k0 + p1.y, col0 + p1.x, s.k_end),
        mm_load_b(s.b_off, k0 + p2.y, col0 + p2.x, s.k_end),
        mm_load_b(s.b_off, k0 + p3.y, col0 + p3.x, s.k_end));
}

// Stores a thread's share of a step's operand tile into tile t of mm_big, as fetched by
// mm_big_fetch_a / mm_big_fetch_b.
fn mm_big_put(t: u32, lid: u32, along_k: bool, v: vec4<f32>) {
    if ((mm.flags & MM_ALIGNED) != 0u) {
        // Stored as loaded: a k-major vec4 as is, a vec4 along k spread over four k rows.
        if (!along_k) {
            mm_big[t][lid / 32u][lid % 32u] = v;
            return;
        }
        let i = lid / 2u;
        let k = (lid % 2u) * 4u;
        mm_big[t][k][i / 4u][i % 4u] = v.x;
        mm_big[t][k + 1u][i / 4u][i % 4u] = v.y;
        mm_big[t][k + 2u][i / 4u][i % 4u] = v.z;
        mm_big[t][k + 3u][i / 4u][i % 4u] = v.w;
        return;
    }
    var p = mm_big_pos(lid, along_k);
    mm_big[t][p.y][p.x / 4u][p.x % 4u] = v.x;
    p = mm_big_pos(lid + 256u, along_k);
    mm_big[t][p.y][p.x / 4u][p.x % 4u] = v.y;
    p = mm_big_pos(lid + 512u, along_k);
    mm_big[t][p.y][p.x / 4u][p.x % 4u] = v.z;
    p = mm_big_pos(lid + 768u, along_k);
    mm_big[t][p.y][p.x / 4u][p.x % 4u] = v.w;
}

// alpha · v into C[row, col .. col + 4] as one vec4 store (matmul_128_aligned: every tile is
// whole and row·n + col a multiple of 4).
fn mm_store_vec4(c_off: u32, row: u32, col: u32, v: vec4<f32>) {
    let i = (c_off + row * mm.n + col) / 4u;
    let w = mm.alpha * v;
    if ((mm.flags & MM_ACCUMULATE) != 0u) {
        mm_c4[i] = mm_c4[i] + w;
    } else {
        mm_c4[i] = w; // C is not read without accumulate
    }
}

// Thread (tx, ty)'s 8x8 block of C: rows (R < 4 ? ty*4 + R : 64 + ty*4 + R - 4), columns
// (h == 0 ? tx*4 : 64 + tx*4) .. +4 in cRh.
struct MmAcc {
    c00: vec4<f32>, c01: vec4<f32>, c10: vec4<f32>, c11: vec4<f32>,
    c20: vec4<f32>, c21: vec4<f32>, c30: vec4<f32>, c31: vec4<f32>,
    c40: vec4<f32>, c41: vec4<f32>, c50: vec4<f32>, c51: vec4<f32>,
    c60: vec4<f32>, c61: vec4<f32>, c70: vec4<f32>, c71: vec4<f32>,
}

// The block's outer-product step: rows a0 (4) and a1 (4) times columns b0 (4) and b1 (4).
fn mm_fma_8x8(c: ptr<function, MmAcc>, a0: vec4<f32>, a1: vec4<f32>, b0: vec4<f32>, b1: vec4<f32>) {
    (*c).c00 = fma(vec4(a0.x), b0, (*c).c00); (*c).c01 = fma(vec4(a0.x), b1, (*c).c01);
    (*c).c10 = fma(vec4(a0.y), b0, (*c).c10); (*c).c11 = fma(vec4(a0.y), b1, (*c).c11);
    (*c).c20 = fma(vec4(a0.z), b0, (*c).c20); (*c).c21 = fma(vec4(a0.z), b1, (*c).c21);
    (*c).c30 = fma(vec4(a0.w), b0, (*c).c30); (*c).c31 = fma(vec4(a0.w), b1, (*c).c31);
    (*c).c40 = fma(vec4(a1.x), b0, (*c).c40); (*c).c41 = fma(vec4(a1.x), b1, (*c).c41);
    (*c).c50 = fma(vec4(a1.y), b0, (*c).c50); (*c).c51 = fma(vec4(a1.y), b1, (*c).c51);
    (*c).c60 = fma(vec4(a1.z), b0, (*c).c60); (*c).c61 = fma(vec4(a1.z), b1, (*c).c61);
    (*c).c70 = fma(vec4(a1.w), b0, (*c).c70); (*c).c71 = fma(vec4(a1.w), b1, (*c).c71);
}

// Adds k row kk of buffer `buf` (0 or 1) to the block: op(A)[rows, kk] times op(B)[kk, columns].
fn mm_big_kstep(c: ptr<function, MmAcc>, buf: u32, kk: u32, tx: u32, ty: u32) {
    mm_fma_8x8(c, mm_big[buf][kk][ty], mm_big[buf][kk][16u + ty], mm_big[MM_BIG_B + buf][kk][tx], mm_big[MM_BIG_B + buf][kk][16u + tx]);
}

// A workgroup's 128x128 tile: thread (tx, ty)'s 8x8 block `c` of it, for the entry points to
// store; valid == false (the whole workgroup) for grid padding.
struct MmBlock {
    c: MmAcc,
    c_off: u32,
    row0: u32,
    col0: u32,
    tx: u32,
    ty: u32,
    valid: bool,
}

fn mm_big_block(lid: u32, wg: vec3<u32>, nwg: vec3<u32>) -> MmBlock {
    let tiles_n = (mm.n + MM_BIG - 1u) / MM_BIG;
    let tiles_m = (mm.m + MM_BIG - 1u) / MM_BIG;
    let tile = wg.x + wg.y * nwg.x;
    let slot = mm_slot(wg.z);
    var c: MmAcc; // zero-initialized
    if (tile >= tiles_m * tiles_n || !slot.valid) { return MmBlock(c, 0u, 0u, 0u, 0u, 0u, false); } // uniform
    let row0 = (tile / tiles_n) * MM_BIG;
    let col0 = (tile % tiles_n) * MM_BIG;
    let tx = lid % 16u;
    let ty = lid / 16u;
    let a_along_k = (mm.flags & MM_TRANS_A) == 0u;
    let b_along_k = (mm.flags & MM_TRANS_B) != 0u;

    // Double-buffered: while the workgroup computes from one buffer, each thread stores the
    // next step's operands (fetched into registers first) into the other; one barrier a step.
    var pa = mm_big_fetch_a(slot, row0, slot.k_begin, lid, a_along_k);
    var pb = mm_big_fetch_b(slot, col0, slot.k_begin, lid, b_along_k);
    mm_big_put(0u, lid, a_along_k, pa);
    mm_big_put(MM_BIG_B, lid, b_along_k, pb);
    workgroupBarrier();
    var cur = 0u;
    for (var k0 = slot.k_begin; k0 < slot.k_end; k0 += MM_BKT) {
        let more = k0 + MM_BKT < slot.k_end;
        if (more) {
            pa = mm_big_fetch_a(slot, row0, k0 + MM_BKT, lid, a_along_k);
            pb = mm_big_fetch_b(slot, col0, k0 + MM_BKT, lid, b_along_k);
        }
        // Written out, not a loop: NVIDIA's compiler leaves the loop rolled (-9% at 4096³).
        mm_big_kstep(&c, cur, 0u, tx, ty); mm_big_kstep(&c, cur, 1u, tx, ty);
        mm_big_kstep(&c, cur, 2u, tx, ty); mm_big_kstep(&c, cur, 3u, tx, ty);
        mm_big_kstep(&c, cur, 4u, tx, ty); mm_big_kstep(&c, cur, 5u, tx, ty);
        mm_big_kstep(&c, cur, 6u, tx, ty); mm_big_kstep(&c, cur, 7u, tx, ty);
        if (more) {
            mm_big_put(cur ^ 1u, lid, a_along_k, pa);
            mm_big_put(MM_BIG_B + (cur ^ 1u), lid, b_along_k, pb);
        }
        workgroupBarrier();
        cur = cur ^ 1u;
    }
    return MmBlock(c, slot.c_off, row0, col0, tx, ty, true);
}

@compute @workgroup_size(256)
fn matmul_128(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
              @builtin(num_workgroups) nwg: vec3<u32>) {
    let b = mm_big_block(lid, wg, nwg);
    if (!b.valid) { return; }
    let r0 = b.row0 + b.ty * 4u;
    let r1 = b.row0 + 64u + b.ty * 4u;
    let q0 = b.col0 + b.tx * 4u;
    let q1 = b.col0 + 64u + b.tx * 4u;
    let o = b.c_off;
    let c = b.c;
    mm_store4(o, r0, q0, c.c00); mm_store4(o, r0, q1, c.c01);
    mm_store4(o, r0 + 1u, q0, c.c10); mm_store4(o, r0 + 1u, q1, c.c11);
    mm_store4(o, r0 + 2u, q0, c.c20); mm_store4(o, r0 + 2u, q1, c.c21);
    mm_store4(o, r0 + 3u, q0, c.c30); mm_store4(o, r0 + 3u, q1, c.c31);
    mm_store4(o, r1, q0, c.c40); mm_store4(o, r1, q1, c.c41);
    mm_store4(o, r1 + 1u, q0, c.c50); mm_store4(o, r1 + 1u, q1, c.c51);
    mm_store4(o, r1 + 2u, q0, c.c60); mm_store4(o, r1 + 2u, q1, c.c61);
    mm_store4(o, r1 + 3u, q0, c.c70); mm_store4(o, r1 + 3u, q1, c.c71);
}

// A thread's 8x8 block as vec4 stores (matmul_128_aligned, matmul_lean): rows r0 .. r0 + 3 and
// r1 .., columns q0 .. q0 + 3 and q1 ...
fn mm_store_block4(o: u32, r0: u32, r1: u32, q0: u32, q1: u32, c: MmAcc) {
    mm_store_vec4(o, r0, q0, c.c00); mm_store_vec4(o, r0, q1, c.c01);
    mm_store_vec4(o, r0 + 1u, q0, c.c10); mm_store_vec4(o, r0 + 1u, q1, c.c11);
    mm_store_vec4(o, r0 + 2u, q0, c.c20); mm_store_vec4(o, r0 + 2u, q1, c.c21);
    mm_store_vec4(o, r0 + 3u, q0, c.c30); mm_store_vec4(o, r0 + 3u, q1, c.c31);
    mm_store_vec4(o, r1, q0, c.c40); mm_store_vec4(o, r1, q1, c.c41);
    mm_store_vec4(o, r1 + 1u, q0, c.c50); mm_store_vec4(o, r1 + 1u, q1, c.c51);
    mm_store_vec4(o, r1 + 2u, q0, c.c60); mm_store_vec4(o, r1 + 2u, q1, c.c61);
    mm_store_vec4(o, r1 + 3u, q0, c.c70); mm_store_vec4(o, r1 + 3u, q1, c.c71);
}

// matmul_128 for aligned products (MM_ALIGNED), storing C as vec4s. Its stores repeat
// matmul_128's with the other store function: one function for both would make each entry
// point use both declarations of binding 2, which WGSL refuses.
@compute @workgroup_size(256)
fn matmul_128_aligned(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
                      @builtin(num_workgroups) nwg: vec3<u32>) {
    let b = mm_big_block(lid, wg, nwg);
    if (!b.valid) { return; }
    mm_store_block4(b.c_off, b.row0 + b.ty * 4u, b.row0 + 64u + b.ty * 4u, b.col0 + b.tx * 4u, b.col0 + 64u + b.tx * 4u, b.c);
}
