//! GPU-vs-reference checks for shaders/attention.wgsl, and a finite-difference check of the
//! reference backward.
//!
//! Tolerances: qkv is uniform in [-2, 2] so the softmax is far from uniform. The forward output is
//! a convex combination of v (|v| <= 2) computed with f32 online-softmax rescaling, and lse is
//! a log of a sum: both within a few ulp·(terms) of f64, so atol 1e-5, rtol 1e-5. The backward
//! sums up to T terms of O(1) products with exp(s - lse) recomputed in f32 and a cancellation in
//! (dp - delta): atol 1e-5 + 1e-7·T, rtol 1e-4 (llvmpipe's worst error is ~1e-6 at T = 130 on
//! gradients up to ~2.5; the margin allows for GPUs with less accurate exp). With RoPE's backward
//! fused into the stores, dq and dk also carry the rotation's error: its f32 angle pos·freq
//! (pos < 100) is off by half an ulp (≤ 4e-6 rad) plus pow's few-ulp relative error times pos
//! (≤ 3e-5 rad), on gradients up to ~2.5: atol 1e-4 more.

use kiln::kernels::attention::{self as att, reference, AttentionDims};
use kiln::kernels::rope::{reference as rope_ref, RopeConfig};
use kiln::Gpu;

use crate::common::*;

const FWD_ATOL: f64 = 1e-5;
const FWD_RTOL: f64 = 1e-5;
const BWD_RTOL: f64 = 1e-4;

fn bwd_atol(d: &AttentionDims) -> f64 {
    1e-5 + 1e-7 * d.seq as f64
}

/// The rotation's share of the backward tolerance (see the top).
const ROPE_ATOL: f64 = 1e-4;

fn dims(batch: usize, seq: usize, heads: usize, head_dim: usize) -> AttentionDims {
    AttentionDims { batch, seq, heads, head_dim }
}

/// Forward then backward on random qkv and dout; checks out, lse, delta and dqkv. With a RoPE
/// `theta`, qkv stands for rotated q and k and dqkv must come out as rope_backward of the
/// reference gradient.
async fn check(gpu: &Gpu, c: &mut Checks, rng: &mut Rng, d: AttentionDims, theta: Option<f32>) {
    let rope = theta.map(|t| RopeConfig::qkv(d.head_dim, d.heads, d.seq, t));
    let (qkv, qkv64) = random_tensor(gpu, rng, "qkv", &[d.batch, d.seq, 3 * d.channels()], -2.0, 2.0);
    let (dout, dout64) = random_tensor(gpu, rng, "dout", &[d.batch, d.seq, d.channels()], -1.0, 1.0);
    let out = gpu.tensor("out", &[d.batch, d.seq, d.channels()]).unwrap();
    let lse = gpu.tensor("lse", &[d.batch, d.heads, d.seq]).unwrap();
    let delta = gpu.tensor("delta", &[d.batch, d.heads, d.seq]).unwrap();
    // dqkv starts as garbage: every element must be written, not accumulated.
    let (dqkv, _) = random_tensor(gpu, rng, "dqkv", &[d.batch, d.seq, 3 * d.channels()], 50.0, 60.0);
    let fwd = att::attention_forward(gpu, d, &qkv, &out, &lse).unwrap();
    let bwd = att::attention_backward(gpu, d, rope.as_ref(), &qkv, &out, &lse, &dout, &delta, &dqkv).unwrap();
    let [dq, dkv] = bwd.ops();
    gpu.run(&[&fwd, dq, dkv]).unwrap();

    let label = format!("{d:?} rope theta {theta:?} grid {:?}", fwd.workgroups);
    let (want_out, want_lse) = reference::forward(&d, &qkv64);
    let got_out = read(gpu, &out).await;
    c.close(fwd.entry, &format!("out {label}"), &got_out, &want_out, FWD_ATOL, FWD_RTOL);
    c.close(fwd.entry, &format!("lse {label}"), &read(gpu, &lse).await, &want_lse, FWD_ATOL, FWD_RTOL);
    // delta from the GPU's own out, exactly what the kernel saw.
    let want_delta = reference::delta(&d, &f64s(&got_out), &dout64);
    let got_delta = read(gpu, &delta).await;
    c.close(dq.entry, &format!("delta {label}"), &got_delta, &want_delta, FWD_ATOL, FWD_RTOL);

    let mut want = reference::backward(&d, &qkv64, &dout64);
    if let Some(rope) = &rope {
        want = rope_ref::rope_backward(&want, rope);
    }
    let got = read(gpu, &dqkv).await;
    // Split dqkv into its q slots (dq kernel) and k, v slots (dkv kernel) to credit each.
    let c3 = 3 * d.channels();
    let slots = |v: &[f64], part: std::ops::Range<usize>| -> Vec<f64> {
        v.chunks(c3).flat_map(|row| row[part.start * d.channels()..part.end * d.channels()].to_vec()).collect()
    };
    let got64 = f64s(&got);
    let atol = bwd_atol(&d) + if rope.is_some() { ROPE_ATOL } else { 0.0 };
    c.close(dq.entry, &format!("dq {label}"), &to32(&slots(&got64, 0..1)), &slots(&want, 0..1), atol, BWD_RTOL);
    c.close(dkv.entry, &format!("dk,dv {label}"), &to32(&slots(&got64, 1..3)), &slots(&want, 1..3), atol, BWD_RTOL);
}

async fn shapes(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(21);
    for d in [
        dims(1, 1, 1, 4),
        dims(2, 7, 2, 8),
        dims(1, 33, 3, 16),
        dims(2, 64, 4, 32),
        dims(1, 70, 2, 6),    // head_dim not a multiple of 4; two query blocks
        dims(1, 130, 1, 128), // largest head: 8-row tiles, three blocks
        dims(2, 70, 2, 36),   // smallest head of the _hd64 kernels (<= 32 take the _hd32 ones)
        dims(2, 40, 2, 64),   // largest head of the _hd64 kernels
        dims(1, 70, 1, 68),   // smallest head of the general kernels
        dims(3, 5, 1, 1),
    ] {
        check(gpu, c, &mut rng, d, None).await;
    }
    // RoPE's backward in the stores: each kernel variant, an odd half (hd 6), Llama-3's theta.
    for (d, theta) in [(dims(2, 64, 4, 32), 10_000.0), (dims(1, 70, 2, 6), 10_000.0), (dims(2, 40, 2, 64), 500_000.0), (dims(1, 70, 1, 68), 10_000.0)] {
        check(gpu, c, &mut rng, d, Some(theta)).await;
    }
}

/// Lowers the grid limit so the block kernels launch 2-D grids.
pub async fn two_d_grid(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(22);
    gpu.set_grid_limit(3);
    for d in [dims(2, 64, 4, 32), dims(3, 100, 2, 12), dims(2, 70, 2, 40)] {
        assert!(gpu.grid(d.batch as u32 * d.heads as u32)[1] > 1, "case must need a 2-D grid");
        check(gpu, c, &mut rng, d, Some(10_000.0)).await;
    }
}

async fn rejects_bad_input(gpu: &Gpu, _c: &mut Checks) {
    let d = dims(1, 4, 1, 129);
    let qkv = gpu.tensor("qkv", &[d.qkv_len()]).unwrap();
    let out = gpu.tensor("out", &[d.out_len()]).unwrap();
    let lse = gpu.tensor("lse", &[d.lse_len()]).unwrap();
    match att::attention_forward(gpu, d, &qkv, &out, &lse) {
        Ok(_) => panic!("head_dim 129 must be rejected"),
        Err(e) => assert!(e.to_string().contains("head_dim"), "{e}"),
    }
    let d = dims(1, 4, 1, 8);
    match att::attention_forward(gpu, d, &qkv, &out, &lse) {
        Ok(_) => panic!("wrong qkv length must be rejected"),
        Err(e) => assert!(e.to_string().contains("qkv"), "{e}"),
    }
    // A RoPE config of other dims than the attention's is an error naming `rope`.
    let (qkv, out, lse) = (gpu.tensor("qkv", &[d.qkv_len()]).unwrap(), gpu.tensor("out", &[d.out_len()]).unwrap(), gpu.tensor("lse", &[d.lse_len()]).unwrap());
    let (delta, dqkv) = (gpu.tensor("delta", &[d.lse_len()]).unwrap(), gpu.tensor("dqkv", &[d.qkv_len()]).unwrap());
    let wrong = RopeConfig::qkv(8, 1, 5, 10_000.0);
    match att::attention_backward(gpu, d, Some(&wrong), &qkv, &out, &lse, &out, &delta, &dqkv) {
        Ok(_) => panic!("a RoPE config for seq 5 must be rejected for seq 4"),
        Err(e) => assert!(matches!(&e, kiln::KilnError::InvalidInput { field, .. } if field == "rope"), "{e}"),
    }
}

pub async fn run(gpu: &Gpu, c: &mut Checks) {
    shapes(gpu, c).await;
    rejects_bad_input(gpu, c).await;
}

crate::device_test!(attention_kernels_match_reference, run, checks);
crate::device_test!(attention_two_d_grid, two_d_grid, checks);

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn attention_reference_backward_matches_finite_differences() {
    let mut rng = Rng::new(23);
    for d in [dims(1, 4, 2, 3), dims(2, 3, 1, 2)] {
        let qkv: Vec<f64> = (0..d.qkv_len()).map(|_| rng.range(-2.0, 2.0)).collect();
        let g: Vec<f64> = (0..d.out_len()).map(|_| rng.range(-1.0, 1.0)).collect();
        let numeric = numeric_grad(|x| dot(&reference::forward(&d, x).0, &g), &qkv, 1e-6);
        assert_close(&format!("attention dqkv {d:?}"), &to32(&reference::backward(&d, &qkv, &g)), &numeric, 1e-6, 1e-5);
    }
}
