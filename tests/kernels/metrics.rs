//! GPU-vs-reference checks for shaders/metrics.wgsl. Sums of ≤ 300,000 squares in f32 (a
//! 256-thread tree over strided loops, and for a tensor of several parts one more level), then
//! a sqrt and a ratio: rtol 1e-4 covers the summation error (each thread's loop sums ≤ 1,024
//! terms of one sign, n·ε ≈ 1.2e-4 at worst and far less in practice, plus ~ 10 tree levels),
//! and loss/norm are copied (norm through one sqrt): rtol 1e-6. The updates are 100× larger
//! next to every part boundary and in each tensor's last 333 elements, so one element lost or
//! counted twice at a boundary, or a short last part dropped, moves a ratio by ≥ 1%.

use kiln::kernels::metrics::{record_metrics, reference, MetricsBuffers, PART};
use kiln::Gpu;

use crate::common::*;

pub async fn run(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(41);
    // (tensor lengths, ring slots, row written, grid limit)
    // The fourth has tensors of two parts' length (summed whole) and of several parts (the last
    // one short), with a small grid limit so the parts' grid folds into two dimensions.
    let big: &[usize] = &[2 * PART, 10, 4 * PART + 333, 3 * PART];
    let cases: [(&[usize], usize, usize, u32); 4] = [(&[3], 2, 1, 65_535), (&[300, 1, 4097, 64], 4, 3, 65_535), (&[5; 9], 3, 0, 2), (big, 2, 1, 3)];
    for (lens, slots, row, grid) in cases {
        gpu.set_grid_limit(grid);
        let mut table = vec![];
        let mut off = 0;
        for &len in lens {
            table.push((off, len));
            off += len + 7; // gaps between tensors, like the flat buffer's alignment padding
        }
        let total = off;
        let (w, w64) = random_tensor(gpu, &mut rng, "w", &[total], -1.0, 1.0);
        let mut scale = vec![1e-3; total];
        for &(off, len) in &table {
            for i in 0..len {
                let near_boundary = i % PART == 0 || i % PART == PART - 1 || i + 333 >= len;
                scale[off + i] = if near_boundary { 0.1 } else { 1e-3 };
            }
        }
        let prev64: Vec<f64> = w64.iter().zip(&scale).map(|(x, s)| x + rng.range(-s, *s)).collect();
        let prev = gpu.tensor_from("prev", &[total], &to32(&prev64)).unwrap();
        let loss = gpu.tensor_from("loss", &[1], &[2.5f32]).unwrap();
        let norm_sq = gpu.tensor_from("norm_sq", &[1], &[9.0f32]).unwrap();
        let stride = 2 + lens.len();
        let ring = gpu.tensor_from("ring", &[slots, stride], &vec![-7.0f32; slots * stride]).unwrap();
        let b = MetricsBuffers { weights: &w, prev: &prev, loss: &loss, norm_sq: &norm_sq, ring: &ring };
        let record = record_metrics(gpu, &b, &table, row).unwrap();
        gpu.run(&record.ops().collect::<Vec<_>>()).unwrap();
        let got = read(gpu, &ring).await;
        // The reference sees the f32-rounded inputs the GPU saw.
        let prev_seen = f64s(&to32(&prev64));
        let want = reference::update_ratios(&w64, &prev_seen, &table);
        let label = format!("tensors {lens:?} row {row}");
        c.close("record_metrics", &format!("{label}: ratios"), &got[row * stride + 2..(row + 1) * stride], &want, 1e-9, 1e-4);
        // The tensors summed in parts are the ones metrics_partials computed.
        let split: Vec<usize> = (0..lens.len()).filter(|&i| lens[i] > 2 * PART).collect();
        if !split.is_empty() {
            let pick = |v: &[f32]| split.iter().map(|&i| v[i]).collect::<Vec<f32>>();
            let want_split: Vec<f64> = split.iter().map(|&i| want[i]).collect();
            c.close("metrics_partials", &format!("{label}: ratios of tensors summed in parts"), &pick(&got[row * stride + 2..]), &want_split, 1e-9, 1e-4);
        }
        c.close("record_metrics", &format!("{label}: loss, norm"), &got[row * stride..row * stride + 2], &[2.5, 3.0], 0.0, 1e-6);
        let others: Vec<f32> = got.iter().enumerate().filter(|(i, _)| i / stride != row).map(|(_, v)| *v).collect();
        c.exact("record_metrics", &format!("{label}: other rows untouched"), &others, &vec![-7.0f32; others.len()]);
    }
}

crate::device_test!(metrics_kernel_matches_reference, run, checks);
