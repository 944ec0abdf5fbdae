// matmul_lean.wgsl — the matmul family's 64x64 tile with 64 threads, each an 8x8 block of C
// (the 128 tile's per-thread work on a quarter of its tile), for aligned products whose output
// has too few 128 tiles to fill a large GPU: with four times as many, smaller workgroups the
// multiprocessors get nearly equal shares (llama-small's (4096, 256) products had 64 tiles of
// 128 for 132 multiprocessors). Same params and bindings as matmul_128_aligned (A, B and C as
// vec4s; m, n multiples of 64, k and k_chunk of 8); K advances 8 at a time, double-buffered,
// one barrier a step, as in mm_big_block.
const MM_LEAN: u32 = 64u;
// mm_lean[t][kk][j]: tile t (A's buffers 0 and 1, B's 2 and 3), k row kk, vec4 column j. 8 KiB.
var<workgroup> mm_lean: array<array<array<vec4<f32>, 16>, 8>, 4>;

// Thread lid's two vec4s of a step's 64x8 operand tile: element e = lid + 64 r (r = 0, 1) is,
// along k, row e / 2 and k half e % 2; k-major, k e / 16 and vec4 e % 16.
fn mm_lean_fetch_a(s: MmSlot, row0: u32, k0: u32, e: u32, along_k: bool) -> vec4<f32> {
    if (along_k) { return mm_a4[(s.a_off + (row0 + e / 2u) * mm.k + k0 + (e % 2u) * 4u) / 4u]; }
    return mm_a4[(s.a_off + (k0 + e / 16u) * mm.m + row0) / 4u + e % 16u];
}

fn mm_lean_fetch_b(s: MmSlot, col0: u32, k0: u32, e: u32, along_k: bool) -> vec4<f32> {
    if (along_k) { return mm_b4[(s.b_off + (col0 + e / 2u) * mm.k + k0 + (e % 2u) * 4u) / 4u]; }
    return mm_b4[(s.b_off + (k0 + e / 16u) * mm.n + col0) / 4u + e % 16u];
}

// Stores fetched element e into tile t: a k-major vec4 as is, a vec4 along k over four k rows.
fn mm_lean_put(t: u32, e: u32, along_k: bool, v: vec4<f32>) {
    if (!along_k) {
        mm_lean[t][e / 16u][e % 16u] = v;
        return;
    }
    let i = e / 2u;
    let k = (e % 2u) * 4u;
    mm_lean[t][k][i / 4u][i % 4u] = v.x;
    mm_lean[t][k + 1u][i / 4u][i % 4u] = v.y;
    mm_lean[t][k + 2u][i / 4u][i % 4u] = v.z;
    mm_lean[t][k + 3u][i / 4u][i % 4u] = v.w;
}

// k row kk of buffer buf into thread (tx, ty)'s block: rows ty*4 .. and 32 + ty*4 .., columns
// tx*4 .. and 32 + tx*4 ...
fn mm_lean_kstep(c: ptr<function, MmAcc>, buf: u32, kk: u32, tx: u32, ty: u32) {
    mm_fma_8x8(c, mm_lean[buf][kk][ty], mm_lean[buf][kk][8u + ty], mm_lean[2u + buf][kk][tx], mm_lean[2u + buf][kk][8u + tx]);
}

@compute @workgroup_size(64)
fn matmul_lean(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let tiles_n = mm.n / MM_LEAN;
    let tile = wg.x + wg.y * nwg.x;
    let slot = mm_slot(wg.z);
    if (tile >= (mm.m / MM_LEAN) * tiles_n || !slot.valid) { return; } // uniform
    let row0 = (tile / tiles_n) * MM_LEAN;
    let col0 = (tile % tiles_n) * MM_LEAN;
    let tx = lid % 8u;
    let ty = lid / 8u;
    let a_k = (mm.flags & MM_TRANS_A) == 0u;
    let b_k = (mm.flags & MM_TRANS_B) != 0u;
    var c: MmAcc;
    var pa0 = mm_lean_fetch_a(slot, row0, slot.k_begin, lid, a_k);
    var pa1 = mm_lean_fetch_a(slot, row0, slot.k_begin, lid + 64u, a_k);
    var pb0 = mm_lean_fetch_b(slot, col0, slot.k_begin, lid, b_k);
    var pb1 = mm_lean_fetch_b(slot, col0, slot.k_begin, lid + 64u, b_k);
    mm_lean_put(0u, lid, a_k, pa0); mm_lean_put(0u, lid + 64u, a_k, pa1);
    mm_lean_put(2u, lid, b_k, pb0); mm_lean_put(2u, lid + 64u, b_k, pb1);
    workgroupBarrier();
    var cur = 0u;
    for (var k0 = slot.k_begin; k0 < slot.k_end; k0 += MM_BKT) {
        let more = k0 + MM_BKT < slot.k_end;
        if (more) {
            pa0 = mm_lean_fetch_a(slot, row0, k0 + MM_BKT, lid, a_k);
            pa1 = mm_lean_fetch_a(slot, row0, k0 + MM_BKT, lid + 64u, a_k);
            pb0 = mm_lean_fetch_b(slot, col0, k0 + MM_BKT, lid, b_k);
            pb1 = mm_lean_fetch_b(slot, col0, k0 + MM_BKT, lid + 64u, b_k);
        }
        mm_lean_kstep(&c, cur, 0u, tx, ty); mm_lean_kstep(&c, cur, 1u, tx, ty);
        mm_lean_kstep(&c, cur, 2u, tx, ty); mm_lean_kstep(&c, cur, 3u, tx, ty);
        mm_lean_kstep(&c, cur, 4u, tx, ty); mm_lean_kstep(&c, cur, 5u, tx, ty);
        mm_lean_kstep(&c, cur, 6u, tx, ty); mm_lean_kstep(&c, cur, 7u, tx, ty);
        if (more) {
            let nxt = cur ^ 1u;
            mm_lean_put(nxt, lid, a_k, pa0); mm_lean_put(nxt, lid + 64u, a_k, pa1);
            mm_lean_put(2u + nxt, lid, b_k, pb0); mm_lean_put(2u + nxt, lid + 64u, b_k, pb1);
        }
        workgroupBarrier();
        cur = cur ^ 1u;
    }
    mm_store_block4(slot.c_off, row0 + ty * 4u, row0 + 32u + ty * 4u, col0 + tx * 4u, col0 + 32u + tx * 4u, c);
}
