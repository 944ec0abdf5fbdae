//! GPU-vs-reference checks for shaders/inspect.wgsl.
//!
//! Tolerances: min and max are exact (a min of f32 values is one of them) and so are the
//! non-finite counts. Σx² of ≤ 5,000 squares of values ≤ 2 in f32: rtol 1e-4 (n·ε ≈ 6e-4 worst
//! case for a serial sum, ~1e-5 for the kernel's tree). Histogram counts are exact except for an
//! element within 1e-5 of a bin's width of an edge, where the GPU's f32 division may round
//! across: a bin may differ from the f64 count by at most the elements near its edges, and the
//! counts must sum exactly to the finite elements. Attention probabilities P = exp(s − lse) with
//! s an f32 dot product of ≤ 64 terms of |q·k| ≤ 4 and lse from the forward (within 1e-5):
//! relative error ~3e-5 on P ≤ 1, so atol 1e-6, rtol 2e-4.

use kiln::kernels::attention::{attention_forward, reference as att_ref, AttentionDims};
use kiln::kernels::inspect::{attention_probs, reference, tensor_distributions, StatsInputs};
use kiln::Gpu;

use crate::common::*;

pub async fn run(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(77);
    // (tensor lengths, bins, with gradients and updates, grid limit)
    let cases: [(&[usize], usize, bool, u32); 4] =
        [(&[3], 1, false, 65_535), (&[300, 1, 4097, 64], 32, true, 65_535), (&[5; 9], 64, true, 2), (&[700], 17, false, 65_535)];
    for (lens, bins, full, grid) in cases {
        gpu.set_grid_limit(grid);
        check_distributions(gpu, c, &mut rng, lens, bins, full).await;
    }
    gpu.set_grid_limit(65_535);
    for (d, grid) in [
        (AttentionDims { batch: 1, seq: 5, heads: 1, head_dim: 4 }, 65_535),
        (AttentionDims { batch: 2, seq: 70, heads: 3, head_dim: 64 }, 65_535),
        (AttentionDims { batch: 1, seq: 33, heads: 2, head_dim: 8 }, 3),
    ] {
        gpu.set_grid_limit(grid);
        check_attention_probs(gpu, c, &mut rng, d).await;
    }
    gpu.set_grid_limit(65_535);
}

/// Random values with gaps between the tensors, and a NaN and an Inf in the values and grads.
async fn check_distributions(gpu: &Gpu, c: &mut Checks, rng: &mut Rng, lens: &[usize], bins: usize, full: bool) {
    let mut table = vec![];
    let mut off = 0;
    for &len in lens {
        table.push((off, len));
        off += len + 5;
    }
    let mut values = rng.vec_f32(off, -2.0, 2.0);
    let mut grads = rng.vec_f32(off, -1e-3, 1e-3);
    let prev: Vec<f32> = values.iter().map(|&v| v - rng.range(-0.01, 0.01) as f32).collect();
    if off > 10 {
        values[1] = f32::NAN;
        grads[off - 6] = f32::INFINITY;
    }
    let t = |name: &str, v: &[f32]| gpu.tensor_from(name, &[v.len()], v).unwrap();
    let (values_t, prev_t, grads_t) = (t("values", &values), t("prev", &prev), t("grads", &grads));
    let flat: Vec<u32> = table.iter().flat_map(|&(o, l)| [o as u32, l as u32]).collect();
    let table_t = gpu.tensor_from("table", &[lens.len(), 2], &flat).unwrap();
    let inputs = StatsInputs { values: &values_t, prev_and_grads: full.then_some((&prev_t, &grads_t)), table: &table_t };
    let rows = inputs.sources() * lens.len();
    let stats = gpu.tensor("stats", &[rows, 4]).unwrap();
    let counts = gpu.tensor("counts", &[rows, bins]).unwrap();
    let ops = tensor_distributions(gpu, &inputs, bins, &stats, &counts).unwrap();
    gpu.run(&[&ops[0], &ops[1]]).unwrap();
    let (got_stats, got_counts) = (read(gpu, &stats).await, gpu.read_u32(&counts).await.unwrap());

    // The sources in kernel order; the update the GPU saw is f32(values − prev).
    let update: Vec<f64> = values.iter().zip(&prev).map(|(&v, &p)| (v - p) as f64).collect();
    let sources = if full { vec![f64s(&values), f64s(&grads), update] } else { vec![f64s(&values)] };
    for (s, src) in sources.iter().enumerate() {
        let want = reference::stats(src, &table);
        for (i, &(o, len)) in table.iter().enumerate() {
            let r = s * lens.len() + i;
            let label = format!("lens {lens:?} source {s} tensor {i}");
            let got = &got_stats[4 * r..4 * r + 4];
            c.exact(
                "tensor_stats",
                &format!("{label}: min, max, non-finite"),
                &[got[0], got[1], got[3]],
                &[want[i][0] as f32, want[i][1] as f32, want[i][3] as f32],
            );
            c.close("tensor_stats", &format!("{label}: sum of squares"), &got[2..3], &want[i][2..3], 1e-12, 1e-4);
            let (lo, hi) = (got[0] as f64, got[1] as f64);
            let want_counts = reference::histogram(src, o, len, lo, hi, bins);
            let got_c = &got_counts[r * bins..(r + 1) * bins];
            let finite = src[o..o + len].iter().filter(|x| x.is_finite()).count();
            c.exact("tensor_histogram", &format!("{label}: total"), &[got_c.iter().sum::<u32>() as usize], &[finite]);
            let width = (hi - lo) / bins as f64;
            let near_edge = |b: usize| {
                src[o..o + len]
                    .iter()
                    .filter(|&&x| x.is_finite() && width > 0.0 && [b, b + 1].iter().any(|&e| ((x - lo) / width - e as f64).abs() < 1e-5))
                    .count()
            };
            for b in 0..bins {
                let diff = (got_c[b] as i64 - want_counts[b] as i64).unsigned_abs() as usize;
                assert!(
                    diff <= near_edge(b),
                    "tensor_histogram: {label}: bin {b} has {} not {} (only {} near its edges)",
                    got_c[b],
                    want_counts[b],
                    near_edge(b)
                );
            }
            c.pass("tensor_histogram");
        }
    }
}

async fn check_attention_probs(gpu: &Gpu, c: &mut Checks, rng: &mut Rng, d: AttentionDims) {
    let (qkv, qkv64) = random_tensor(gpu, rng, "qkv", &[d.batch, d.seq, 3 * d.channels()], -2.0, 2.0);
    let out = gpu.tensor("out", &[d.batch, d.seq, d.channels()]).unwrap();
    let lse = gpu.tensor("lse", &[d.batch, d.heads, d.seq]).unwrap();
    // Garbage first: every element, the zeros past the diagonal included, must be written.
    let (probs, _) = random_tensor(gpu, rng, "probs", &[d.batch, d.heads, d.seq, d.seq], 5.0, 6.0);
    let fwd = attention_forward(gpu, d, &qkv, &out, &lse).unwrap();
    let op = attention_probs(gpu, d, &qkv, &lse, &probs).unwrap();
    gpu.run(&[&fwd, &op]).unwrap();
    let want = att_ref::probabilities(&d, &qkv64);
    c.close("attention_probs", &format!("{d:?} grid {:?}", op.workgroups), &read(gpu, &probs).await, &want, 1e-6, 2e-4);
}

crate::device_test!(inspect_kernels_match_reference, run, checks);
