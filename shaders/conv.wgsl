// conv.wgsl — depthwise 1-D convolution, width 3, zero padding, and its backward.
//
//   out[d, s] = bias[d] + Σ_{k=0..2} in[d, s + k - shift] · w[d, k],   in outside [0, T) = 0
//
// for channel d < D and position s < T of each sequence. shift = 1 is the seed's "same"
// convolution (tap k = 1 the centre; PyTorch's Conv1d with padding=1, groups=D); shift = 2
// is causal (taps s-2, s-1, s: the "short conv" of hybrid models, which never sees the
// future). Sequences lie either channel-major, (B, D, T) row-major (a channel's sequence is
// contiguous; the seed's layout, B = 1), or token-major, (B, T, D) (a token's channels are
// contiguous; the layout of a Llama's activations). B is the buffers' length over D·T.
// w (D, 3), bias (D). One thread per element (1-D kernel, 2-D grid capable); the weight
// gradient one thread per (channel, tap or bias).
//
// Fixed from the seed: bindings in the project's order (inputs, then output, then params),
// params padded to 16 bytes, and the element count taken from the output's arrayLength so a
// params/buffer mismatch cannot index out of bounds (the host also validates every length).
// Added: the causal shift, the token-major layout, batches, and the two backward kernels.

struct ConvParams {
    dim: u32,     // D
    seq_len: u32, // T
    flags: u32,   // bit 0: causal (shift 2, else 1); bit 1: token-major (else channel-major)
    _pad: u32,
}

/// Where element idx's sequence starts, its position s, its channel d, and the distance
/// between consecutive positions of the sequence.
struct ConvSite { base: u32, s: u32, d: u32, stride: u32 }

fn conv_site(idx: u32, p: ConvParams) -> ConvSite {
    if ((p.flags & 2u) != 0u) {
        let tok = idx / p.dim;
        let s = tok % p.seq_len;
        let d = idx % p.dim;
        return ConvSite((tok - s) * p.dim + d, s, d, p.dim);
    }
    let row = idx / p.seq_len;
    return ConvSite(row * p.seq_len, idx % p.seq_len, row % p.dim, 1u);
}

fn conv_shift(p: ConvParams) -> u32 {
    return select(1u, 2u, (p.flags & 1u) != 0u);
}

@group(0) @binding(0) var<storage, read> conv_in: array<f32>;         // (B, D, T) or (B, T, D)
@group(0) @binding(1) var<storage, read> conv_weight: array<f32>;     // (D, 3)
@group(0) @binding(2) var<storage, read> conv_bias: array<f32>;       // (D)
@group(0) @binding(3) var<storage, read_write> conv_out: array<f32>;  // like conv_in
@group(0) @binding(4) var<uniform> conv_p: ConvParams;

@compute @workgroup_size(64)
fn conv1d(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = linear_index(gid, nwg);
    if (idx >= arrayLength(&conv_out)) { return; }
    let site = conv_site(idx, conv_p);
    let shift = conv_shift(conv_p);
    var acc = conv_bias[site.d];
    for (var k = 0u; k < 3u; k++) {
        // Input position s + k - shift; taps before 0 or past T read the zero padding.
        let q = site.s + k;
        if (q >= shift && q - shift < conv_p.seq_len) {
            acc = fma(conv_in[site.base + (q - shift) * site.stride], conv_weight[site.d * 3u + k], acc);
        }
    }
    conv_out[idx] = acc;
}

// d_in[d, s] = Σ_k d_out[d, s - k + shift] · w[d, k] (the transpose of the taps).
@group(0) @binding(0) var<storage, read> cbi_dout: array<f32>;         // like the output
@group(0) @binding(1) var<storage, read> cbi_weight: array<f32>;       // (D, 3)
@group(0) @binding(2) var<storage, read_write> cbi_din: array<f32>;    // like the input
@group(0) @binding(3) var<uniform> cbi_p: ConvParams;

@compute @workgroup_size(64)
fn conv1d_backward_input(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = linear_index(gid, nwg);
    if (idx >= arrayLength(&cbi_din)) { return; }
    let site = conv_site(idx, cbi_p);
    let shift = conv_shift(cbi_p);
    var acc = 0.0;
    for (var k = 0u; k < 3u; k++) {
        // Output position s - k + shift read this input through tap k.
        let q = site.s + shift;
        if (q >= k && q - k < cbi_p.seq_len) {
            acc = fma(cbi_dout[site.base + (q - k) * site.stride], cbi_weight[site.d * 3u + k], acc);
        }
    }
    cbi_din[idx] = acc;
}

// d_w[d, k] += Σ_{b, s} d_out[b, d, s] · in[b, d, s + k - shift]; d_bias[d] += Σ_{b, s} d_out.
// Thread j < 4·D: channel j / 4, tap j % 4 (tap 3 is the bias). Gradients accumulate (+=).
@group(0) @binding(0) var<storage, read> cbw_dout: array<f32>;         // like the output
@group(0) @binding(1) var<storage, read> cbw_in: array<f32>;           // the forward's input
@group(0) @binding(2) var<storage, read_write> cbw_dweight: array<f32>; // (D, 3)
@group(0) @binding(3) var<storage, read_write> cbw_dbias: array<f32>;   // (D)
@group(0) @binding(4) var<uniform> cbw_p: ConvParams;

@compute @workgroup_size(64)
fn conv1d_backward_weight(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = linear_index(gid, nwg);
    let d = j / 4u;
    let k = j % 4u;
    if (d >= cbw_p.dim) { return; }
    let t = cbw_p.seq_len;
    let shift = conv_shift(cbw_p);
    let token_major = (cbw_p.flags & 2u) != 0u;
    let sequences = arrayLength(&cbw_dout) / (cbw_p.dim * t);
    var acc = 0.0;
    for (var b = 0u; b < sequences; b++) {
        // The sequence's start and stride for channel d, in either layout.
        let base = select((b * cbw_p.dim + d) * t, b * t * cbw_p.dim + d, token_major);
        let stride = select(1u, cbw_p.dim, token_major);
        for (var s = 0u; s < t; s++) {
            let g = cbw_dout[base + s * stride];
            if (k == 3u) {
                acc += g;
            } else if (s + k >= shift && s + k - shift < t) {
                acc = fma(g, cbw_in[base + (s + k - shift) * stride], acc);
            }
        }
    }
    if (k == 3u) {
        cbw_dbias[d] += acc;
    } else {
        cbw_dweight[d * 3u + k] += acc;
    }
}
