//! GPU-vs-reference checks for shaders/metrics.wgsl. Sums of ≤ 5,000 squares in f32 then a
//! sqrt and a ratio: rtol 1e-4 covers the summation error (n·ε ≈ 6e-4 worst case, ~1e-5 typical
//! for a tree), and loss/norm are copied (norm through one sqrt): rtol 1e-6.

use kiln::kernels::metrics::{record_metrics, reference, MetricsBuffers};
use kiln::Gpu;

use crate::common::*;

pub async fn run(gpu: &Gpu, c: &mut Checks) {
    let mut rng = Rng::new(41);
    // (tensor lengths, ring slots, row written, grid limit)
    let cases: [(&[usize], usize, usize, u32); 3] = [(&[3], 2, 1, 65_535), (&[300, 1, 4097, 64], 4, 3, 65_535), (&[5; 9], 3, 0, 2)];
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
        let prev64: Vec<f64> = w64.iter().map(|x| x + rng.range(-1e-3, 1e-3)).collect();
        let prev = gpu.tensor_from("prev", &[total], &to32(&prev64)).unwrap();
        let flat_table: Vec<u32> = table.iter().flat_map(|&(o, l)| [o as u32, l as u32]).collect();
        let table_t = gpu.tensor_from("table", &[lens.len(), 2], &flat_table).unwrap();
        let loss = gpu.tensor_from("loss", &[1], &[2.5f32]).unwrap();
        let norm_sq = gpu.tensor_from("norm_sq", &[1], &[9.0f32]).unwrap();
        let stride = 2 + lens.len();
        let ring = gpu.tensor_from("ring", &[slots, stride], &vec![-7.0f32; slots * stride]).unwrap();
        let b = MetricsBuffers { weights: &w, prev: &prev, table: &table_t, loss: &loss, norm_sq: &norm_sq, ring: &ring };
        let op = record_metrics(gpu, &b, lens.len(), row).unwrap();
        gpu.run(&[&op.op]).unwrap();
        let got = read(gpu, &ring).await;
        // The reference sees the f32-rounded inputs the GPU saw.
        let prev_seen = f64s(&to32(&prev64));
        let want = reference::update_ratios(&w64, &prev_seen, &table);
        let label = format!("tensors {lens:?} row {row}");
        c.close("record_metrics", &format!("{label}: ratios"), &got[row * stride + 2..(row + 1) * stride], &want, 1e-9, 1e-4);
        c.close("record_metrics", &format!("{label}: loss, norm"), &got[row * stride..row * stride + 2], &[2.5, 3.0], 0.0, 1e-6);
        let others: Vec<f32> = got.iter().enumerate().filter(|(i, _)| i / stride != row).map(|(_, v)| *v).collect();
        c.exact("record_metrics", &format!("{label}: other rows untouched"), &others, &vec![-7.0f32; others.len()]);
    }
}

crate::device_test!(metrics_kernel_matches_reference, run, checks);
