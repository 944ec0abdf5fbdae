//! GPU-vs-reference checks for `matmul_128_swiglu_backward` (and its packed-f16 twin): the down
//! projection's input gradient with the SwiGLU backward as its epilogue, against the f64 product
//! followed by the f64 `silu_gate_backward`, fused (aligned 128 tile, unsplit) and on the
//! two-dispatch path it falls back to (another tile, a split, or F not a multiple of 128).
//!
//! Tolerance: dg carries the product's error (atol 4e-6·sqrt(K), rtol 1e-5, see matmul.rs) and
//! the epilogue multiplies it by |gate·σ·(1 + up(1 − σ))| ≤ 2.5 for up, gate in [-2, 2], plus a
//! few roundings of exp and the products: atol 2.5× the product's, rtol 2e-5.

use kiln::kernels::elementwise::reference::silu_gate_backward;
use kiln::kernels::matmul::{reference, MatmulDesc};
use kiln::kernels::matmul_swiglu::SwigluInputGrad;
use kiln::kernels::quant::reference as qref;
use kiln::Gpu;

use crate::common::*;

/// [d up | d gate] rows (rows, 2F) from dy (rows, k), W (k, F) and [up | gate] (rows, 2F).
fn want(d: &MatmulDesc, dy: &[f64], w: &[f64], up_gate: &[f64]) -> Vec<f64> {
    let f = d.n;
    let dg = reference::matmul(d, dy, w, &vec![0.0; d.m * f]);
    let half = |r: usize, h: usize| up_gate[r * 2 * f + h * f..r * 2 * f + (h + 1) * f].to_vec();
    let mut out = Vec::with_capacity(d.m * 2 * f);
    for r in 0..d.m {
        let (du, dgate) = silu_gate_backward(&half(r, 0), &half(r, 1), &dg[r * f..(r + 1) * f]);
        out.extend(du);
        out.extend(dgate);
    }
    out
}

/// (rows, F, k, forced tile and split, B as f16, dispatches expected): fused on the 128 tile in
/// both precisions, then the fallbacks: the 64 tile, a split, and F = 100 (unaligned).
const CASES: &[(usize, usize, usize, usize, usize, bool, usize)] = &[
    (256, 128, 64, 128, 1, false, 1),
    (128, 256, 40, 128, 1, true, 1),
    (128, 128, 64, 64, 1, false, 2),
    (128, 128, 256, 128, 2, false, 3),
    (128, 100, 24, 128, 1, false, 2),
];

pub async fn run(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(47);
    for &(m, f, k, tile, splits, f16, dispatches) in CASES {
        let mut d = MatmulDesc::new(m, f, k).tile(tile).splits(splits);
        let (dy, dy64) = random_tensor(gpu, &mut rng, "dy", &[m * k], -1.0, 1.0);
        let (w, w64) = if f16 {
            let halves: Vec<u16> = rng.vec_f32(k * f, -1.0, 1.0).into_iter().map(qref::f32_to_f16).collect();
            d = d.b_f16();
            let w64 = halves.iter().map(|&h| qref::f16_to_f32(h) as f64).collect();
            (gpu.tensor_from("w16", &[(k * f).div_ceil(2)], &qref::pack_f16(&halves)).unwrap(), w64)
        } else {
            random_tensor(gpu, &mut rng, "w", &[k * f], -1.0, 1.0)
        };
        let (up_gate, ug64) = random_tensor(gpu, &mut rng, "up_gate", &[m, 2 * f], -2.0, 2.0);
        let d_up_gate = gpu.tensor("d_up_gate", &[m, 2 * f]).unwrap();
        let ops = SwigluInputGrad::new(gpu, d).unwrap().ops(gpu, &dy, &w, &up_gate, &d_up_gate).unwrap();
        let entries: Vec<&str> = ops.iter().map(|o| o.entry).collect();
        assert_eq!(ops.len(), dispatches, "{d:?}: {entries:?}");
        gpu.run(&ops.iter().collect::<Vec<_>>()).unwrap();
        let label = format!("rows {m} F {f} k {k} tile {tile} splits {splits} f16 {f16}: {entries:?}");
        let entry = if dispatches == 1 { ops[0].entry } else { "silu_gate_backward" };
        c.close(entry, &label, &read(gpu, &d_up_gate).await, &want(&d, &dy64, &w64, &ug64), 2.5 * 4e-6 * (k as f64).sqrt(), 2e-5);
    }
    // A product that accumulates, or a d[up | gate] of the wrong length, is refused.
    let (dy, w) = (gpu.tensor("dy", &[128, 8]).unwrap(), gpu.tensor("w", &[8, 128]).unwrap());
    let (ug, bad) = (gpu.tensor("ug", &[128, 256]).unwrap(), gpu.tensor("bad", &[7]).unwrap());
    assert!(SwigluInputGrad::new(gpu, MatmulDesc::new(128, 128, 8).accumulate()).is_err());
    let grad = SwigluInputGrad::new(gpu, MatmulDesc::new(128, 128, 8)).unwrap();
    let Err(err) = grad.ops(gpu, &dy, &w, &ug, &bad) else { panic!("a 7-float d_up_gate was accepted") };
    let err = err.to_string();
    assert!(err.contains("bad") && err.contains("d_up_gate"), "{err}");
}

crate::device_test!(matmul_swiglu_kernels_match_reference, run, checks);
