// matmul_wide.wgsl — the matmul family's 128x256 tile: 256 threads, each an 8x16 block of C
// (twice the 128 tile's 8x8), for aligned products with many output tiles. Each k step a
// thread reads two vec4s of A and four of B from workgroup memory for 128 FMAs (the 128 tile:
// four for 64), which on an H200 took 4096³ from 40.4 to 42.4 TFLOP/s. Same params and
// bindings as matmul_128_aligned (A, B and C as vec4s; m a multiple of 128, n of 256, k and
// k_chunk of 8). K advances 8 at a time, double-buffered, one barrier a step, as in
// mm_big_block. Workgroup memory: 24 KiB, more than WebGPU's default 16 (the host runs it only
// where the device allows it, else the 128 tile).
const MM_WIDE: u32 = 256u; // output columns per workgroup (rows: MM_BIG)
// mm_wide_a[buf][kk][j]: A's buffer buf, k row kk, vec4 j of 128 rows (8 KiB).
var<workgroup> mm_wide_a: array<array<array<vec4<f32>, 32>, 8>, 2>;
// mm_wide_b[buf][kk][j]: B's buffer buf, k row kk, vec4 j of 256 columns (16 KiB).
var<workgroup> mm_wide_b: array<array<array<vec4<f32>, 64>, 8>, 2>;

// A thread's share of one k step's operands: one vec4 of A (as mm_v4_a fetches for the 128
// tile) and two of B's 512: along k, columns lid / 2 and 128 + lid / 2 at k half lid % 2;
// k-major, k rows lid / 64 and 4 + lid / 64 at vec4 lid % 64. Written out rather than through
// a shared helper per vec4: that form (the same loads) ran 4096³ at 33 TFLOP/s on an H200
// against this one's 42, most likely register spills.
struct MmWideFetch { a: vec4<f32>, b0: vec4<f32>, b1: vec4<f32> }

fn mm_wide_fetch(s: MmSlot, row0: u32, col0: u32, k0: u32, lid: u32, a_k: bool, b_k: bool) -> MmWideFetch {
    let a = mm_v4_a(s, row0, k0, lid, a_k);
    var b0: vec4<f32>;
    var b1: vec4<f32>;
    if (b_k) {
        b0 = mm_b4[(s.b_off + (col0 + lid / 2u) * mm.k + k0 + (lid % 2u) * 4u) / 4u];
        b1 = mm_b4[(s.b_off + (col0 + 128u + lid / 2u) * mm.k + k0 + (lid % 2u) * 4u) / 4u];
    } else {
        b0 = mm_b4[(s.b_off + (k0 + lid / 64u) * mm.n + col0) / 4u + lid % 64u];
        b1 = mm_b4[(s.b_off + (k0 + 4u + lid / 64u) * mm.n + col0) / 4u + lid % 64u];
    }
    return MmWideFetch(a, b0, b1);
}

// Stores a fetch into buffer buf: a k-major vec4 as is, a vec4 along k over four k rows.
fn mm_wide_put(buf: u32, lid: u32, a_k: bool, b_k: bool, f: MmWideFetch) {
    if (a_k) {
        let i = lid / 2u;
        let k = (lid % 2u) * 4u;
        mm_wide_a[buf][k][i / 4u][i % 4u] = f.a.x;
        mm_wide_a[buf][k + 1u][i / 4u][i % 4u] = f.a.y;
        mm_wide_a[buf][k + 2u][i / 4u][i % 4u] = f.a.z;
        mm_wide_a[buf][k + 3u][i / 4u][i % 4u] = f.a.w;
    } else {
        mm_wide_a[buf][lid / 32u][lid % 32u] = f.a;
    }
    if (b_k) {
        let k = (lid % 2u) * 4u;
        let i = lid / 2u;
        let j = 128u + lid / 2u;
        mm_wide_b[buf][k][i / 4u][i % 4u] = f.b0.x;
        mm_wide_b[buf][k + 1u][i / 4u][i % 4u] = f.b0.y;
        mm_wide_b[buf][k + 2u][i / 4u][i % 4u] = f.b0.z;
        mm_wide_b[buf][k + 3u][i / 4u][i % 4u] = f.b0.w;
        mm_wide_b[buf][k][j / 4u][j % 4u] = f.b1.x;
        mm_wide_b[buf][k + 1u][j / 4u][j % 4u] = f.b1.y;
        mm_wide_b[buf][k + 2u][j / 4u][j % 4u] = f.b1.z;
        mm_wide_b[buf][k + 3u][j / 4u][j % 4u] = f.b1.w;
    } else {
        mm_wide_b[buf][lid / 64u][lid % 64u] = f.b0;
        mm_wide_b[buf][4u + lid / 64u][lid % 64u] = f.b1;
    }
}

// k row kk of buffer buf into thread (tx, ty)'s block: rows ty*4 .. and 64 + ty*4 .., columns
// tx*4 + {0, 64} .. into c and tx*4 + {128, 192} .. into d.
fn mm_wide_kstep(c: ptr<function, MmAcc>, d: ptr<function, MmAcc>, buf: u32, kk: u32, tx: u32, ty: u32) {
    let a0 = mm_wide_a[buf][kk][ty];
    let a1 = mm_wide_a[buf][kk][16u + ty];
    mm_fma_8x8(c, a0, a1, mm_wide_b[buf][kk][tx], mm_wide_b[buf][kk][16u + tx]);
    mm_fma_8x8(d, a0, a1, mm_wide_b[buf][kk][32u + tx], mm_wide_b[buf][kk][48u + tx]);
}

@compute @workgroup_size(256)
fn matmul_wide(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let tiles_n = mm.n / MM_WIDE;
    let tile = wg.x + wg.y * nwg.x;
    let slot = mm_slot(wg.z);
    if (tile >= (mm.m / MM_BIG) * tiles_n || !slot.valid) { return; } // uniform
    let row0 = (tile / tiles_n) * MM_BIG;
    let col0 = (tile % tiles_n) * MM_WIDE;
    let tx = lid % 16u;
    let ty = lid / 16u;
    let a_k = (mm.flags & MM_TRANS_A) == 0u;
    let b_k = (mm.flags & MM_TRANS_B) != 0u;
    var c: MmAcc;
    var d: MmAcc;
    var f = mm_wide_fetch(slot, row0, col0, slot.k_begin, lid, a_k, b_k);
    mm_wide_put(0u, lid, a_k, b_k, f);
    workgroupBarrier();
    var cur = 0u;
    for (var k0 = slot.k_begin; k0 < slot.k_end; k0 += MM_BKT) {
        let more = k0 + MM_BKT < slot.k_end;
        if (more) { f = mm_wide_fetch(slot, row0, col0, k0 + MM_BKT, lid, a_k, b_k); }
        // Written out, as in mm_big_block (NVIDIA's compiler leaves a loop rolled).
        mm_wide_kstep(&c, &d, cur, 0u, tx, ty); mm_wide_kstep(&c, &d, cur, 1u, tx, ty);
        mm_wide_kstep(&c, &d, cur, 2u, tx, ty); mm_wide_kstep(&c, &d, cur, 3u, tx, ty);
        mm_wide_kstep(&c, &d, cur, 4u, tx, ty); mm_wide_kstep(&c, &d, cur, 5u, tx, ty);
        mm_wide_kstep(&c, &d, cur, 6u, tx, ty); mm_wide_kstep(&c, &d, cur, 7u, tx, ty);
        if (more) { mm_wide_put(cur ^ 1u, lid, a_k, b_k, f); }
        workgroupBarrier();
        cur = cur ^ 1u;
    }
    let r0 = row0 + ty * 4u;
    let r1 = row0 + 64u + ty * 4u;
    mm_store_block4(slot.c_off, r0, r1, col0 + tx * 4u, col0 + 64u + tx * 4u, c);
    mm_store_block4(slot.c_off, r0, r1, col0 + 128u + tx * 4u, col0 + 192u + tx * 4u, d);
}
