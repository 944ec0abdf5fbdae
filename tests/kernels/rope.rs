//! GPU-vs-reference checks for shaders/rope.wgsl, a round trip (rope then rope_backward gives
//! the input back), and finite-difference checks of the reference backward.
//!
//! Tolerance: values in [-1, 1] rotated by angles pos·theta^(-2i/hd) with pos < 64. The f32
//! angle carries ~1 ulp of pos·freq (≤ 4e-6 at 64 rad) plus pow's relative error; the kernel's
//! own sin/cos add a few ulp (the built-ins are avoided: SwiftShader's are off by 2e-4). Worst
//! seen: 4e-7 on llvmpipe, 7e-7 on SwiftShader; atol 1e-5 covers the angle rounding bound.
//! The round trip is two rotations: twice that.

use kiln::kernels::rope::{self, reference, RopeConfig};
use kiln::{Gpu, KilnError};

use crate::common::*;

const ATOL: f64 = 1e-5;
const RTOL: f64 = 1e-5;

/// (config, batch, grid limit).
fn cases() -> Vec<(RopeConfig, usize, u32)> {
    vec![
        // Plain (B, T, H, hd): 40 threads (token, pair), each turning 3 heads' pairs.
        (RopeConfig::plain(8, 3, 5, 10_000.0), 2, 65_535),
        // Fused (B, T, 3C) qkv: q and k rotate, v stays; 168 threads, 3 workgroups on a 2-D
        // grid (limit 2: one workgroup of the 2x2 grid has nothing to do).
        (RopeConfig::qkv(16, 2, 7, 10_000.0), 3, 2),
        // Larger head_dim, positions shifted by base_pos, Llama-3's theta.
        (RopeConfig { base_pos: 17, ..RopeConfig::plain(64, 4, 33, 500_000.0) }, 2, 65_535),
        // Odd half (hd = 6) with extra floats after the rotated heads, 3 workgroups on a 2-D grid.
        (RopeConfig { head_dim: 6, seq_len: 4, heads: 2, token_stride: 15, base_pos: 3, theta: 100.0 }, 12, 1),
    ]
}

/// Indices no head vector covers (v of qkv, padding): rope must leave them bit-exact.
fn untouched(cfg: &RopeConfig, len: usize) -> Vec<usize> {
    (0..len).filter(|i| i % cfg.token_stride >= cfg.heads * cfg.head_dim).collect()
}

pub async fn run(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(31);
    for (cfg, batch, limit) in cases() {
        gpu.set_grid_limit(limit);
        let len = batch * cfg.seq_len * cfg.token_stride;
        let label = format!("{cfg:?} B={batch}");
        let (data, x64) = random_tensor(gpu, &mut rng, "data", &[len], -1.0, 1.0);
        let fwd = rope::rope(gpu, &data, &cfg).unwrap();
        assert_eq!(fwd.op.workgroups[1] > 1, limit < 100, "2-D grid expected iff the limit is lowered");
        gpu.run(&[&fwd.op]).unwrap();
        let got = read(gpu, &data).await;
        c.close("rope", &label, &got, &reference::rope(&x64, &cfg), ATOL, RTOL);
        let keep = untouched(&cfg, len);
        let pick = |v: &[f32]| keep.iter().map(|&i| v[i].to_bits()).collect::<Vec<u32>>();
        c.exact("rope", &format!("untouched floats, {label}"), &pick(&got), &pick(&to32(&x64)));

        // Backward on a random gradient, in place.
        let (grad, g64) = random_tensor(gpu, &mut rng, "grad", &[len], -1.0, 1.0);
        let bwd = rope::rope_backward(gpu, &grad, &cfg).unwrap();
        gpu.run(&[&bwd.op]).unwrap();
        let got = read(gpu, &grad).await;
        c.close("rope_backward", &label, &got, &reference::rope_backward(&g64, &cfg), ATOL, RTOL);
        c.exact("rope_backward", &format!("untouched floats, {label}"), &pick(&got), &pick(&to32(&g64)));

        // Round trip: rope_backward undoes rope (the rotation is orthogonal).
        let back = rope::rope_backward(gpu, &data, &cfg).unwrap();
        gpu.run(&[&back.op]).unwrap();
        c.close("rope_backward", &format!("round trip, {label}"), &read(gpu, &data).await, &x64, 2.0 * ATOL, RTOL);
    }
}

/// Decoding one token at a time: the same op at growing positions via set_base_pos.
pub async fn decode_positions(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(32);
    let cfg = RopeConfig::plain(10, 3, 1, 10_000.0);
    let (data, _) = random_tensor(gpu, &mut rng, "q", &[2, 3, 10], -1.0, 1.0);
    let mut op = rope::rope(gpu, &data, &cfg).unwrap();
    for pos in [5usize, 40, 63] {
        let x = rng.vec_f32(60, -1.0, 1.0);
        gpu.write(&data, &x).unwrap();
        op.set_base_pos(gpu, pos);
        gpu.run(&[&op.op]).unwrap();
        let want = reference::rope(&f64s(&x), &RopeConfig { base_pos: pos, ..cfg });
        c.close("rope", &format!("decode base_pos={pos}"), &read(gpu, &data).await, &want, ATOL, RTOL);
    }
}

/// Bad configs are errors naming the field, never panics.
pub async fn validation(gpu: &Gpu, _c: &mut Checks) {
    let data = gpu.tensor("qkv", &[2, 5, 48]).unwrap();
    let good = RopeConfig::qkv(8, 2, 5, 10_000.0);
    assert!(rope::rope(gpu, &data, &good).is_ok());
    let field = |cfg: RopeConfig| match rope::rope(gpu, &data, &cfg) {
        Err(KilnError::InvalidInput { field, .. }) => field,
        Err(e) => panic!("expected InvalidInput, got {e}"),
        Ok(_) => panic!("accepted {cfg:?}"),
    };
    assert_eq!(field(RopeConfig { head_dim: 7, ..good }), "head_dim");
    assert_eq!(field(RopeConfig { heads: 0, ..good }), "heads");
    assert_eq!(field(RopeConfig { seq_len: 0, ..good }), "seq_len");
    assert_eq!(field(RopeConfig { token_stride: 31, ..good }), "token_stride");
    assert_eq!(field(RopeConfig { theta: -1.0, ..good }), "theta");
    assert_eq!(field(RopeConfig { seq_len: 3, ..good }), "qkv"); // 10 tokens are not whole sequences of 3
}

crate::device_test!(rope_kernels_match_reference, run, checks);
crate::device_test!(rope_decode_moves_base_pos, decode_positions, checks);
crate::device_test!(rope_rejects_bad_config, validation, checks);

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn rope_reference_backward_matches_finite_differences() {
    let mut rng = Rng::new(33);
    let cfgs = [RopeConfig { base_pos: 2, ..RopeConfig::plain(4, 2, 3, 10_000.0) }, RopeConfig::qkv(6, 1, 2, 10.0)];
    for cfg in cfgs {
        let n = 2 * cfg.seq_len * cfg.token_stride;
        let x: Vec<f64> = (0..n).map(|_| rng.range(-1.0, 1.0)).collect();
        let g: Vec<f64> = (0..n).map(|_| rng.range(-1.0, 1.0)).collect();
        let numeric = numeric_grad(|x| dot(&reference::rope(x, &cfg), &g), &x, 1e-6);
        assert_close(&format!("rope' {cfg:?}"), &to32(&reference::rope_backward(&g, &cfg)), &numeric, 1e-6, 1e-5);
    }
}
