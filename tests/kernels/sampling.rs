//! GPU-vs-reference checks for shaders/sampling.wgsl.
//! - top_k: indices and values are copies, compared exactly against an f64 sort.
//! - top_k_sample: the GPU and the reference draw the same u (same hash, 24 exact bits), so the
//!   token is compared exactly, except where u lies within MARGIN of a CDF boundary, where f32
//!   rounding may pick either neighbour: MARGIN = 1e-6 + 8·k·2^-24 bounds the CDF error of a
//!   serial f32 sum of k weights (<= k·2^-24 relative) plus WGSL's exp error (<= (3 + 2|x|)
//!   ulp; (3 + 2|x|)·e^x <= 3, so <= 3·2^-24 of the total per weight). Those rows accept
//!   either pick next to the boundary and are counted (they must stay a small minority).
//! - Statistics: 6,144 draws (2,048 identical rows × 3 seeds) of a fixed distribution over
//!   k = 6 picks; Pearson's chi-square must stay below 25.74, the 1 - 1e-4 quantile for 5
//!   degrees of freedom (deterministic seeds, so this either always or never passes).

use kiln::kernels::sampling::{self as sm, reference};
use kiln::{Gpu, KilnError, Tensor};

use crate::common::*;

/// Rows that stress the ordering: random, heavy ties, all equal, ±1e30 magnitudes, and
/// random values mixed with -1e30.
fn logits(rng: &mut Rng, rows: usize, vocab: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(rows * vocab);
    for row in 0..rows {
        for _ in 0..vocab {
            out.push(match row % 5 {
                0 => rng.range(-5.0, 5.0) as f32,
                1 => (rng.below(7) as f32) - 3.0,
                2 => 1.5,
                3 => [-1e30, 1e30, -2e30, 0.0][rng.below(4)],
                _ => {
                    if rng.below(3) == 0 {
                        -1e30
                    } else {
                        rng.range(-5.0, 5.0) as f32
                    }
                }
            });
        }
    }
    out
}

fn margin(k: usize) -> f64 {
    1e-6 + 8.0 * k as f64 * 2f64.powi(-24)
}

/// The reference tokens, except that a row whose GPU token differs is accepted when the draw
/// sits within MARGIN of a CDF boundary next to that token. Returns (want, rows so accepted).
fn expected_tokens(got: &[u32], idx: &[u32], vals: &[f64], k: usize, t: f64, seed: u32) -> (Vec<u32>, usize) {
    let mut want = reference::sample(idx, vals, k, t, seed);
    let mut diverged = 0;
    let differing: Vec<usize> = (0..want.len()).filter(|&r| t > 0.0 && got[r] != want[r]).collect();
    for row in differing {
        let probs = reference::probabilities(&vals[row * k..][..k], t);
        let u = reference::draw(seed, row as u32);
        let mut cum = 0.0;
        for j in 0..k - 1 {
            cum += probs[j];
            if (u - cum).abs() < margin(k) && [idx[row * k + j], idx[row * k + j + 1]].contains(&got[row]) {
                want[row] = got[row];
                diverged += 1;
                break;
            }
        }
    }
    (want, diverged)
}

async fn sample_and_check(
    gpu: &Gpu,
    c: &mut Checks,
    (indices, values, tokens): (&Tensor, &Tensor, &Tensor),
    (ref_idx, ref_vals): (&[u32], &[f64]),
    k: usize,
    label: &str,
) {
    let mut rng = Rng::new(k as u64);
    let sampler = sm::top_k_sample(gpu, indices, values, k, 1.0, 0, tokens).unwrap();
    let (mut total, mut diverged) = (0, 0);
    for t in [0.0f32, 0.7, 1.0, 2.5, 1e-30] {
        let seed = rng.next_u64() as u32;
        sampler.set(gpu, t, seed).unwrap();
        gpu.run(&[&sampler.op]).unwrap();
        let got = gpu.read_u32(tokens).await.unwrap();
        let (want, flipped) = expected_tokens(&got, ref_idx, ref_vals, k, t as f64, seed);
        c.exact("top_k_sample", &format!("{label} T={t} seed={seed}"), &got, &want);
        total += got.len();
        diverged += flipped;
    }
    println!("top_k_sample: {label}: {diverged} of {total} draws differ at a CDF boundary");
    // Boundary draws are rare, and only some of those flip: at most 1 in 20 may differ.
    assert!(diverged * 20 <= total.max(20), "{label}: {diverged} of {total} draws differ at a CDF boundary");
}

pub async fn top_k(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(31);
    // (rows, vocab, k, grid limit): k = V = 1; k = V < 256; V not a multiple of 256 (1000,
    // 513, 300); k = 256 with 10 rows on a 2-D grid of limit 3.
    let cases = [(1, 1, 1, 65_535), (2, 7, 7, 65_535), (5, 1000, 10, 65_535), (4, 513, 5, 65_535), (10, 300, 256, 3)];
    for (rows, vocab, k, grid) in cases {
        gpu.set_grid_limit(grid);
        let data = logits(&mut rng, rows, vocab);
        let logits = gpu.tensor_from("logits", &[rows, vocab], &data).unwrap();
        let indices = gpu.tensor("indices", &[rows, k]).unwrap();
        let values = gpu.tensor("values", &[rows, k]).unwrap();
        let op = sm::top_k(gpu, &logits, vocab, k, &indices, &values).unwrap();
        if grid < 65_535 {
            assert!(op.workgroups[1] > 1, "expected a 2-D grid, got {:?}", op.workgroups);
        }
        gpu.run(&[&op]).unwrap();
        let (want_idx, want_vals) = reference::top_k(&f64s(&data), vocab, k);
        let label = format!("rows={rows} V={vocab} k={k}");
        c.exact("top_k", &format!("{label} indices"), &gpu.read_u32(&indices).await.unwrap(), &want_idx);
        c.close("top_k", &format!("{label} values"), &read(gpu, &values).await, &want_vals, 0.0, 0.0);

        let tokens = gpu.tensor("tokens", &[rows]).unwrap();
        sample_and_check(gpu, c, (&indices, &values, &tokens), (&want_idx, &want_vals), k, &label).await;

        // Bad parameters are errors naming the field.
        let field = |r: kiln::Result<kiln::Op>| match r {
            Err(KilnError::InvalidInput { field, .. }) => field,
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("accepted bad parameters"),
        };
        assert_eq!(field(sm::top_k(gpu, &logits, vocab, 0, &indices, &values)), "k");
        assert_eq!(field(sm::top_k(gpu, &logits, vocab, vocab.min(256) + 1, &indices, &values)), "k");
        if vocab > 1 {
            assert_eq!(field(sm::top_k(gpu, &logits, vocab * rows + 1, k, &indices, &values)), "vocab");
        }
        for t in [-1.0, f32::NAN, f32::INFINITY, 1e-40] {
            let err = sm::top_k_sample(gpu, &indices, &values, k, t, 0, &tokens).err();
            assert!(matches!(err, Some(KilnError::InvalidInput { ref field, .. }) if field == "temperature"), "T={t}");
        }
    }
}

/// Many draws of one distribution: exact per row, and frequencies close to the softmax.
pub async fn sampling_statistics(gpu: &Gpu, c: &mut Checks) {
    let (rows, vocab, k, t) = (2048, 40, 6, 0.8f32);
    gpu.set_grid_limit(7); // 2,048 top_k workgroups and 32 sampler workgroups: both 2-D
    let mut rng = Rng::new(32);
    let row = rng.vec_f32(vocab, -2.0, 2.0);
    let data: Vec<f32> = (0..rows).flat_map(|_| row.iter().copied()).collect();
    let logits = gpu.tensor_from("logits", &[rows, vocab], &data).unwrap();
    let indices = gpu.tensor("indices", &[rows, k]).unwrap();
    let values = gpu.tensor("values", &[rows, k]).unwrap();
    let tokens = gpu.tensor("tokens", &[rows]).unwrap();
    let op = sm::top_k(gpu, &logits, vocab, k, &indices, &values).unwrap();
    let sampler = sm::top_k_sample(gpu, &indices, &values, k, t, 0, &tokens).unwrap();
    assert!(sampler.op.workgroups[1] > 1, "expected a 2-D grid, got {:?}", sampler.op.workgroups);
    gpu.run(&[&op]).unwrap();
    let (want_idx, want_vals) = reference::top_k(&f64s(&data), vocab, k);
    c.exact("top_k", "2,048 identical rows (2-D grid)", &gpu.read_u32(&indices).await.unwrap(), &want_idx);
    let probs = reference::probabilities(&want_vals[..k], t as f64);
    let mut counts = vec![0usize; k];
    for seed in 1..=3u32 {
        sampler.set(gpu, t, seed).unwrap();
        gpu.run(&[&sampler.op]).unwrap();
        let got = gpu.read_u32(&tokens).await.unwrap();
        let (want, _) = expected_tokens(&got, &want_idx, &want_vals, k, t as f64, seed);
        c.exact("top_k_sample", &format!("2,048 rows (2-D grid) seed={seed}"), &got, &want);
        for tok in got {
            counts[want_idx[..k].iter().position(|&i| i == tok).expect("token among the picks")] += 1;
        }
    }
    let n = (3 * rows) as f64;
    let chi2: f64 = counts.iter().zip(&probs).map(|(&o, &p)| (o as f64 - n * p).powi(2) / (n * p)).sum();
    println!("top_k_sample: chi-square {chi2:.2} (5 dof, bound 25.74), counts {counts:?}");
    assert!(chi2 < 25.74, "chi-square {chi2:.2} over 5 dof: counts {counts:?}, probabilities {probs:?}");
}

crate::device_test!(sampling_top_k_matches_reference, top_k, checks);
crate::device_test!(sampling_frequencies_match_softmax, sampling_statistics, checks);

/// The references on hand-made rows: ties to the lower index, ±0 tie, greedy at T = 0.
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn sampling_reference_by_hand() {
    let row = [1.0, 3.0, 3.0, -1e30, -0.0, 0.0, 3.0];
    let (idx, vals) = reference::top_k(&row, 7, 7);
    assert_eq!(idx, [1, 2, 6, 0, 4, 5, 3]);
    assert_eq!(vals[..3], [3.0, 3.0, 3.0]);
    let p = reference::probabilities(&vals, 1.0);
    assert!((p[0] - p[2]).abs() < 1e-15 && p[6] < 1e-40 && (p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    assert_eq!(reference::pick(&p, 0.0), 0);
    assert_eq!(reference::pick(&p, 0.999_999), 5); // the -1e30 pick has weight e^-104
    assert_eq!(reference::sample(&idx, &vals, 7, 0.0, 9), [1]);
    // The draw is a function of (seed, row) only and lands in [0, 1).
    let us: Vec<f64> = (0..10_000).map(|r| reference::draw(5, r)).collect();
    assert!(us.iter().all(|u| (0.0..1.0).contains(u)));
    let mean = us.iter().sum::<f64>() / us.len() as f64;
    assert!((mean - 0.5).abs() < 0.01, "mean draw {mean}"); // sd of the mean ≈ 0.0029
}
