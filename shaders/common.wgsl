// common.wgsl — prepended to every shader family (see src/kernels/mod.rs).
//
// Dispatch conventions:
// - 1-D kernels use @workgroup_size(64). When they need more than the device's per-dimension
//   workgroup limit, the host launches a 2-D grid and the kernel rebuilds its linear index as
//   gid.x + gid.y * (num_workgroups.x * 64).
// - Row kernels run one 256-thread workgroup per row (row = wg.x + wg.y * num_workgroups.x)
//   and reduce through workgroup memory with row_sum / row_max. A workgroup whose row is out
//   of range returns as a whole, so barriers stay in uniform control flow.

const WG: u32 = 64u;
const ROW_WG: u32 = 256u;

fn linear_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

fn row_index(wg: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wg.x + wg.y * nwg.x;
}

var<workgroup> row_red: array<f32, 256>;

fn row_sum(lid: u32, v: f32) -> f32 {
    row_red[lid] = v;
    workgroupBarrier();
    for (var s = ROW_WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) { row_red[lid] += row_red[lid + s]; }
        workgroupBarrier();
    }
    let r = row_red[0];
    workgroupBarrier();
    return r;
}

fn row_max(lid: u32, v: f32) -> f32 {
    row_red[lid] = v;
    workgroupBarrier();
    for (var s = ROW_WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) { row_red[lid] = max(row_red[lid], row_red[lid + s]); }
        workgroupBarrier();
    }
    let r = row_red[0];
    workgroupBarrier();
    return r;
}

fn sigmoid(x: f32) -> f32 {
    return 1.0 / (1.0 + exp(-x));
}
