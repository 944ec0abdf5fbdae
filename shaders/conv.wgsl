// conv.wgsl — depthwise 1-D convolution, width 3, "same" zero padding.
//
//   out[d, s] = bias[d] + Σ_{k=0..2} in[d, s + k - 1] · w[d, k],   in[d, -1] = in[d, T] = 0
//
// for channel d < D and position s < T, with in/out laid out (D, T) row-major (a channel's
// sequence is contiguous), w (D, 3) and bias (D). Tap k = 1 is the centre, so the window is
// centred on s (cross-correlation, as in PyTorch's Conv1d with padding=1, groups=D).
// One thread per output element (1-D kernel, 2-D grid capable).
//
// Fixed from the seed: bindings in the project's order (inputs, then output, then params),
// params padded to 16 bytes, and the element count taken from the output's arrayLength so a
// params/buffer mismatch cannot index out of bounds (the host also validates every length).

struct ConvParams {
    dim: u32,     // D
    seq_len: u32, // T
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read> conv_in: array<f32>;         // (D, T)
@group(0) @binding(1) var<storage, read> conv_weight: array<f32>;     // (D, 3)
@group(0) @binding(2) var<storage, read> conv_bias: array<f32>;       // (D)
@group(0) @binding(3) var<storage, read_write> conv_out: array<f32>;  // (D, T)
@group(0) @binding(4) var<uniform> conv_p: ConvParams;

@compute @workgroup_size(64)
fn conv1d(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = linear_index(gid, nwg);
    if (idx >= arrayLength(&conv_out)) { return; }
    let t = conv_p.seq_len;
    let d = idx / t;
    let s = idx % t;
    let row = d * t;
    var acc = conv_bias[d];
    // Taps that fall off either end of the sequence read the zero padding: skip them.
    if (s >= 1u) { acc = fma(conv_in[row + s - 1u], conv_weight[d * 3u], acc); }
    acc = fma(conv_in[row + s], conv_weight[d * 3u + 1u], acc);
    if (s + 1u < t) { acc = fma(conv_in[row + s + 1u], conv_weight[d * 3u + 2u], acc); }
    conv_out[idx] = acc;
}
