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
var<workgroup> row_part: array<f32, 16>; // row_sum's and row_max's partials

// Reductions of a row workgroup's 256 values, returned to every thread, in two levels: 16
// threads each combine 16 values (strided by 16, so their reads hit distinct banks), then every
// thread combines the 16 partials in the same order. Two barriers where a halving tree needs
// nine, and no third: the next call's first barrier comes after every read of row_part.
// The values thread `lid` of the first level combines: row_red[lid + 16·(4j .. 4j + 3)].
fn row_four(lid: u32, j: u32) -> vec4<f32> {
    let i = lid + 64u * j;
    return vec4<f32>(row_red[i], row_red[i + 16u], row_red[i + 32u], row_red[i + 48u]);
}

// The 16 partials as four vec4s.
fn row_parts(k: u32) -> vec4<f32> {
    return vec4<f32>(row_part[4u * k], row_part[4u * k + 1u], row_part[4u * k + 2u], row_part[4u * k + 3u]);
}

fn row_sum(lid: u32, v: f32) -> f32 {
    row_red[lid] = v;
    workgroupBarrier();
    if (lid < 16u) {
        let a = (row_four(lid, 0u) + row_four(lid, 1u)) + (row_four(lid, 2u) + row_four(lid, 3u));
        row_part[lid] = (a.x + a.y) + (a.z + a.w);
    }
    workgroupBarrier();
    let p = (row_parts(0u) + row_parts(1u)) + (row_parts(2u) + row_parts(3u));
    return (p.x + p.y) + (p.z + p.w);
}

fn row_max(lid: u32, v: f32) -> f32 {
    row_red[lid] = v;
    workgroupBarrier();
    if (lid < 16u) {
        let a = max(max(row_four(lid, 0u), row_four(lid, 1u)), max(row_four(lid, 2u), row_four(lid, 3u)));
        row_part[lid] = max(max(a.x, a.y), max(a.z, a.w));
    }
    workgroupBarrier();
    let p = max(max(row_parts(0u), row_parts(1u)), max(row_parts(2u), row_parts(3u)));
    return max(max(p.x, p.y), max(p.z, p.w));
}

// Column reductions (bias gradients) run 256-thread workgroups that own `block` adjacent columns
// each: thread lid serves column lid % block on lane lid / block, and lane j has summed rows j,
// j + lanes, ... of its column. This adds each column's lanes pairwise (a fixed tree: the bits
// depend only on the sizes) and leaves column c's total in row_red[c]. `block` (8 to 64, a power
// of two) comes from a uniform, so the barriers stay uniform.
fn column_lanes_total(lid: u32, block: u32, v: f32) {
    row_red[lid] = v;
    workgroupBarrier();
    for (var s = ROW_WG / 2u; s >= max(block, 1u); s /= 2u) {
        if (lid < s) { row_red[lid] += row_red[lid + s]; }
        workgroupBarrier();
    }
}

fn sigmoid(x: f32) -> f32 {
    return 1.0 / (1.0 + exp(-x));
}
