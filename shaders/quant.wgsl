// quant.wgsl — 8-bit and 4-bit dequantization and IEEE 754 binary16 <-> binary32 conversion.
// One thread per output element (1-D kernels, 2-D grid capable). Lengths come from
// arrayLength, so every tensor is bound at its exact size (the host validates them).
//
// Packing: u8 values are stored 4 per u32 word, little-endian (element 4w+b is byte b of
// word w); 4-bit codes 8 per word, lowest nibble first (element 8w+n is bits 4n..4n+3), as MLX
// packs them; f16 values 2 per u32 word (element 2w is the low half of word w). A trailing
// partial word's unused bytes/halves are ignored on read and written as 0 (+0.0).
//
// The f16 casts move raw bits through u32 bindings and use integer math only: loading a
// NaN or subnormal as f32 and doing float arithmetic on it is not bit-exact on every GPU
// (payloads may be canonicalised, subnormals flushed), integer ops are.

// Byte of element i within its packed word.
fn byte_at(i: u32, word: u32) -> u32 {
    return (word >> ((i % 4u) * 8u)) & 0xFFu;
}

// ---- dequantize: out[i] = f32(u8 i) ----
@group(0) @binding(0) var<storage, read> deq_in: array<u32>;        // (ceil(N / 4)) packed u8
@group(0) @binding(1) var<storage, read_write> deq_out: array<f32>; // (N)

@compute @workgroup_size(64)
fn dequantize(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= arrayLength(&deq_out)) { return; }
    deq_out[i] = f32(byte_at(i, deq_in[i / 4u]));
}

// ---- affine_dequantize: out[i] = f32(u8 i) * scale[i / group_size] + bias[i / group_size] ----
struct AffineParams {
    group_size: u32, // > 0; the last group may be partial
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<storage, read> q_weight: array<u32>;      // (ceil(N / 4)) packed u8
@group(0) @binding(1) var<storage, read> q_scales: array<f32>;      // (ceil(N / group_size))
@group(0) @binding(2) var<storage, read> q_biases: array<f32>;      // (ceil(N / group_size))
@group(0) @binding(3) var<storage, read_write> q_out: array<f32>;   // (N)
@group(0) @binding(4) var<uniform> q_params: AffineParams;

@compute @workgroup_size(64)
fn affine_dequantize(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= arrayLength(&q_out)) { return; }
    let g = i / q_params.group_size;
    q_out[i] = fma(f32(byte_at(i, q_weight[i / 4u])), q_scales[g], q_biases[g]);
}

// ---- affine_dequantize4: the same with 4-bit codes, 8 per u32 word ----
@compute @workgroup_size(64)
fn affine_dequantize4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_index(gid, nwg);
    if (i >= arrayLength(&q_out)) { return; }
    let g = i / q_params.group_size;
    let code = (q_weight[i / 8u] >> ((i % 8u) * 4u)) & 0xFu;
    q_out[i] = fma(f32(code), q_scales[g], q_biases[g]);
}

// ---- fp32_to_fp16: round to nearest, ties to even; subnormals, ±Inf, quiet NaN, signed zero ----
@group(0) @binding(0) var<storage, read> cast_fp32_in: array<u32>;        // (N) f32 bit patterns
@group(0) @binding(1) var<storage, read_write> cast_fp16_out: array<u32>; // (ceil(N / 2)) packed f16

fn f32_to_f16_bits(b: u32) -> u32 {
    let sign = (b >> 16u) & 0x8000u;
    let a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u) {
        // NaN: keep the top 10 payload bits and force the quiet bit, so it stays a NaN.
        return sign | 0x7E00u | ((a >> 13u) & 0x3FFu);
    }
    // 65520 = 65504 + half an ulp: the tie goes to the even neighbour 65536, i.e. Inf.
    if (a >= 0x477FF000u) { return sign | 0x7C00u; }
    if (a >= 0x38800000u) {
        // Normal half (|x| >= 2^-14): rebias the exponent (127 - 15 = 112), then round the 13
        // dropped mantissa bits to nearest even; a mantissa carry bumps the exponent correctly.
        let m = a - 0x38000000u;
        return sign | ((m + 0xFFFu + ((m >> 13u) & 1u)) >> 13u);
    }
    // |x| <= 2^-25 is at most half of the smallest subnormal 2^-24: ties go to even, i.e. 0.
    if (a <= 0x33000000u) { return sign; }
    // Subnormal half: value / 2^-24 = mant * 2^(e - 126), with e <= 112, so shift in [14, 24].
    let e = a >> 23u;
    let mant = (a & 0x7FFFFFu) | 0x800000u;
    let shift = 126u - e;
    let q = mant >> shift;
    let rem = mant & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    let up = rem > half || (rem == half && (q & 1u) == 1u);
    // q + 1 may reach 0x400, which is exactly the smallest normal's encoding.
    return sign | (q + select(0u, 1u, up));
}

@compute @workgroup_size(64)
fn fp32_to_fp16(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = linear_index(gid, nwg);
    if (w >= arrayLength(&cast_fp16_out)) { return; }
    let n = arrayLength(&cast_fp32_in);
    let lo = f32_to_f16_bits(cast_fp32_in[2u * w]);
    var hi = 0u;
    if (2u * w + 1u < n) { hi = f32_to_f16_bits(cast_fp32_in[2u * w + 1u]); }
    cast_fp16_out[w] = lo | (hi << 16u);
}

// ---- fp16_to_fp32: exact (every f16 is representable in f32) ----
@group(0) @binding(0) var<storage, read> cast_fp16_in: array<u32>;        // (ceil(N / 2)) packed f16
@group(0) @binding(1) var<storage, read_write> cast_fp32_out: array<u32>; // (N) f32 bit patterns

fn f16_bits_to_f32_bits(h: u32) -> u32 {
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1Fu;
    let mant = h & 0x3FFu;
    if (e == 31u) {
        // Inf, or NaN with its payload kept and the quiet bit forced.
        return sign | 0x7F800000u | select(0u, 0x400000u | (mant << 13u), mant != 0u);
    }
    if (e == 0u) {
        if (mant == 0u) { return sign; }
        // Subnormal mant * 2^-24: normalise around its leading bit p, value 2^(p - 24) * 1.f.
        let p = firstLeadingBit(mant);
        return sign | ((p + 103u) << 23u) | ((mant << (23u - p)) & 0x7FFFFFu);
    }
    return sign | ((e + 112u) << 23u) | (mant << 13u);
}

// One thread per packed word, writing both its halves: each word is read once (mixed
// precision widens whole activation stashes with this every step).
@compute @workgroup_size(64)
fn fp16_to_fp32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = linear_index(gid, nwg);
    let n = arrayLength(&cast_fp32_out);
    if (2u * w >= n) { return; }
    let word = cast_fp16_in[w];
    cast_fp32_out[2u * w] = f16_bits_to_f32_bits(word & 0xFFFFu);
    if (2u * w + 1u < n) { cast_fp32_out[2u * w + 1u] = f16_bits_to_f32_bits(word >> 16u); }
}
