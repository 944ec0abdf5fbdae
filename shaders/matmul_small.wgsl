// matmul_small.wgsl — the matmul family's kernel for small products (same params, bindings and
// grid fold as matmul.wgsl): one thread per output element and a plain loop over k, no
// workgroup memory, no barriers. For the layers of tiny MLPs (a few thousand outputs, k from 2
// to a few hundred) the tiled kernels leave most threads idle and wait at barriers, which on a
// CPU adapter (llvmpipe, SwiftShader) costs as much as real work; on a GPU it also spares the
// split-K reduction a tiny weight gradient would otherwise need.
//
// Grid: element = linear index over (x, y) of 64-thread workgroups; wg.z = batch * splits + split.

@compute @workgroup_size(64)
fn matmul_small(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wg: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = linear_index(gid, nwg);
    let slot = mm_slot(wg.z);
    if (!slot.valid || idx >= mm.m * mm.n) { return; }
    let row = idx / mm.n;
    let col = idx % mm.n;
    var acc = 0.0;
    for (var kg = slot.k_begin; kg < slot.k_end; kg++) {
        acc += mm_load_a(slot.a_off, row, kg, slot.k_end) * mm_load_b(slot.b_off, kg, col, slot.k_end);
    }
    mm_put(slot.c_off + idx, mm.alpha * acc);
}
