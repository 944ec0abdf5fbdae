//! GPU-vs-reference checks for shaders/embedding.wgsl, the host-side token check, and a
//! finite-difference check of the reference backward.
//!
//! Tolerances: the forward copies floats, so it must match exactly; the fused lookup + norm
//! must have rms_norm's bits (same sums), and against the f64 norm rms_norm's own tolerance
//! (a 256-term sum of squares and a sqrt: rtol 1e-5). The backward adds up to
//! ~250 dout rows of values in [-1, 1] per dtable element in f32 (ascending n, like the
//! reference but rounded at each step): about sqrt(250)·|sum|·6e-8, so atol 1e-4 + rtol 1e-5;
//! and since each element is summed in ascending n from its old value, the same sums in f32 on
//! the CPU must give its bits exactly.

use kiln::kernels::embedding::{self as emb, reference};
use kiln::kernels::norm::reference::rms_norm as rms_norm_ref;
use kiln::{Gpu, KilnError};

use crate::common::*;

const ATOL: f64 = 1e-4;
const RTOL: f64 = 1e-5;

/// (N, V, C, grid limit): a tiny case; N > 2048 (several of the backward's token chunks) with
/// C not a multiple of 64; C > 256 on a 2-D grid (13 vocab rows of two 256-channel backward
/// workgroups, the second part-filled, and 235 forward workgroups, limit 5); a vocabulary too
/// big to split its rows (600 rows, one backward workgroup each walking its 300 channels); one
/// split three ways with each workgroup walking two 256-channel stretches, 768 apart (300 rows
/// of 1,024); and a tiny vocabulary where each row collects ~200 positions, on a 2-D grid.
const CASES: &[(usize, usize, usize, u32)] =
    &[(7, 5, 10, 65_535), (2100, 11, 70, 65_535), (50, 13, 300, 5), (40, 600, 300, 65_535), (30, 300, 1024, 65_535), (600, 3, 33, 2)];

/// Random tokens < vocab, with a few out-of-range ones the kernels must treat as zero rows.
fn tokens(rng: &mut Rng, n: usize, vocab: usize) -> Vec<u32> {
    let mut t: Vec<u32> = (0..n).map(|_| rng.below(vocab) as u32).collect();
    t[n / 2] = vocab as u32;
    t[n - 1] = u32::MAX;
    t
}

pub async fn run(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(41);
    for &(n, vocab, ch, limit) in CASES {
        gpu.set_grid_limit(limit);
        let label = format!("N={n} V={vocab} C={ch}");
        let tok = tokens(&mut rng, n, vocab);
        let tt = gpu.tensor_from("tokens", &[n], &tok).unwrap();
        let (table, table64) = random_tensor(gpu, &mut rng, "table", &[vocab, ch], -1.0, 1.0);
        let (out, _) = random_tensor(gpu, &mut rng, "out", &[n, ch], -1.0, 1.0);
        let fwd = emb::embedding_forward(gpu, &tt, &table, &out).unwrap();
        gpu.run(&[&fwd]).unwrap();
        let want = to32(&reference::embedding_forward(&tok, &table64, ch));
        c.exact("embedding_forward", &label, &read(gpu, &out).await, &want);

        // Looked up and normed in one dispatch: x exact, out and rstd with rms_norm's bits.
        let (w, w64) = random_tensor(gpu, &mut rng, "norm weight", &[ch], 0.5, 1.5);
        let (x, normed, rstd) = (gpu.tensor("x", &[n, ch]).unwrap(), gpu.tensor("n", &[n, ch]).unwrap(), gpu.tensor("rstd", &[n]).unwrap());
        gpu.run(&[&emb::embedding_rms_norm(gpu, &tt, &table, &w, (&x, &normed, &rstd), 1e-5).unwrap()]).unwrap();
        c.exact("embedding_rms_norm", &format!("x, {label}"), &read(gpu, &x).await, &want);
        let (n64, r64) = rms_norm_ref(&f64s(&want), &w64, 1e-5);
        c.close("embedding_rms_norm", &format!("normed, {label}"), &read(gpu, &normed).await, &n64, 1e-6, 1e-5);
        c.close("embedding_rms_norm", &format!("rstd, {label}"), &read(gpu, &rstd).await, &r64, 0.0, 1e-5);
        let (n2, r2) = (gpu.tensor("n2", &[n, ch]).unwrap(), gpu.tensor("rstd2", &[n]).unwrap());
        gpu.run(&[&kiln::kernels::norm::rms_norm(gpu, &out, &w, &n2, &r2, 1e-5).unwrap()]).unwrap();
        let bits = |v: Vec<f32>| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
        c.exact("embedding_rms_norm", &format!("rms_norm's bits, {label}"), &bits(read(gpu, &normed).await), &bits(read(gpu, &n2).await));
        c.exact("embedding_rms_norm", &format!("rms_norm's rstd bits, {label}"), &bits(read(gpu, &rstd).await), &bits(read(gpu, &r2).await));

        // dtable starts non-zero: the backward accumulates.
        let (dout, dout64) = random_tensor(gpu, &mut rng, "dout", &[n, ch], -1.0, 1.0);
        let (dtable, dtable0) = random_tensor(gpu, &mut rng, "dtable", &[vocab, ch], -1.0, 1.0);
        let bwd = emb::embedding_backward(gpu, &dout, &tt, &dtable).unwrap();
        let groups = vocab as u32 * emb::backward_blocks(vocab as u32, ch as u32);
        assert_eq!(bwd.workgroups[1] > 1, groups > limit, "2-D grid expected iff V × blocks > limit");
        gpu.run(&[&bwd]).unwrap();
        let got = read(gpu, &dtable).await;
        let want: Vec<f64> = reference::embedding_backward(&dout64, &tok, vocab).iter().zip(&dtable0).map(|(a, b)| a + b).collect();
        c.close("embedding_backward", &label, &got, &want, ATOL, RTOL);
        // The kernel's order, replayed in f32: dtable's value, then dout rows in ascending n.
        let mut ordered = to32(&dtable0);
        for (n, &t) in tok.iter().enumerate().filter(|&(_, &t)| (t as usize) < vocab) {
            for i in 0..ch {
                ordered[t as usize * ch + i] += dout64[n * ch + i] as f32;
            }
        }
        c.exact("embedding_backward", &format!("ascending-n f32 sums, {label}"), &got, &ordered);

        // Deterministic: the same inputs give the same bits.
        gpu.write(&dtable, &to32(&dtable0)).unwrap();
        gpu.run(&[&bwd]).unwrap();
        let again = read(gpu, &dtable).await;
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
        c.exact("embedding_backward", &format!("bitwise repeat, {label}"), &bits(&again), &bits(&got));
    }
    // Tensors that do not fit are errors naming the tensor.
    let tt = gpu.tensor("tokens", &[4]).unwrap();
    let table = gpu.tensor("table", &[5, 3]).unwrap();
    let out = gpu.tensor("out", &[4, 3]).unwrap();
    let odd = gpu.tensor("odd", &[10]).unwrap();
    let field = |r: kiln::Result<kiln::Op>| match r {
        Err(KilnError::InvalidInput { field, .. }) => field,
        other => panic!("expected InvalidInput, got {:?}", other.map(|o| o.entry)),
    };
    assert_eq!(field(emb::embedding_forward(gpu, &tt, &table, &odd)), "odd");
    assert_eq!(field(emb::embedding_forward(gpu, &tt, &odd, &out)), "odd");
    assert_eq!(field(emb::embedding_backward(gpu, &out, &tt, &odd)), "odd");
    let (w, rstd) = (gpu.tensor("w", &[3]).unwrap(), gpu.tensor("rstd", &[4]).unwrap());
    assert_eq!(field(emb::embedding_rms_norm(gpu, &tt, &table, &odd, (&out, &out, &rstd), 1e-5)), "odd");
    assert_eq!(field(emb::embedding_rms_norm(gpu, &tt, &table, &w, (&out, &out, &odd), 1e-5)), "odd");
    assert_eq!(field(emb::embedding_rms_norm(gpu, &tt, &table, &w, (&out, &out, &rstd), 0.0)), "eps");
}

crate::device_test!(embedding_kernels_match_reference, run, checks);

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn check_tokens_names_the_bad_position() {
    assert!(emb::check_tokens(&[0, 4, 2], 5).is_ok());
    match emb::check_tokens(&[0, 4, 5, 9], 5) {
        Err(KilnError::InvalidInput { field, message }) => {
            assert_eq!(field, "tokens");
            assert!(message.contains("position 2") && message.contains("token 5"), "{message}");
        }
        other => panic!("expected InvalidInput, got {other:?}"),
    }
}

/// The backward splits rows into 256-channel workgroups only while the grid stays small: the
/// CASES above take every path (two workgroups a row for 13 × 300, one for 600 × 300, three
/// walking two stretches each for 300 × 1,024).
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn backward_splits_rows_only_for_small_vocabularies() {
    assert_eq!(emb::backward_blocks(13, 300), 2);
    assert_eq!(emb::backward_blocks(600, 300), 1);
    assert_eq!(emb::backward_blocks(300, 1024), 3);
    assert_eq!(emb::backward_blocks(60, 1024), 4); // the char-level Llamas at d_model 1,024
    assert_eq!(emb::backward_blocks(60, 256), 1);
    assert_eq!(emb::backward_blocks(32_000, 4096), 1); // an imported Llama's vocabulary
}

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn embedding_reference_backward_matches_finite_differences() {
    let mut rng = Rng::new(42);
    let (n, vocab, ch) = (9, 4, 3);
    let tok = tokens(&mut rng, n, vocab);
    let table: Vec<f64> = (0..vocab * ch).map(|_| rng.range(-1.0, 1.0)).collect();
    let g: Vec<f64> = (0..n * ch).map(|_| rng.range(-1.0, 1.0)).collect();
    let numeric = numeric_grad(|t| dot(&reference::embedding_forward(&tok, t, ch), &g), &table, 1e-6);
    let got = to32(&reference::embedding_backward(&g, &tok, vocab));
    assert_close("embedding d/table", &got, &numeric, 1e-6, 1e-5);
}
