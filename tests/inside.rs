//! The "look inside" views through a real session: neuron outputs over the plane, attention
//! maps, and the distributions of weights, gradients, updates and activations, each checked
//! against what the CPU computes from buffers read back whole.

use kiln::config::{DataConfig, PointData, SessionConfig, TextData};
use kiln::data::batches::Batch;
use kiln::data::PointTask;
use kiln::kernels::elementwise::Activation;
use kiln::model::llama::LlamaConfig;
use kiln::model::mlp::MlpConfig;
use kiln::model::ModelConfig;
use kiln::session::inspect::Distribution;
use kiln::session::plane::PlaneBox;
use kiln::session::Session;
use kiln::Gpu;

fn session(model: ModelConfig, data: DataConfig, batch: usize) -> Session {
    let cfg = SessionConfig { model, data, batch, optimizer: Default::default(), seed: 3 };
    pollster::block_on(async { Session::with_gpu(Gpu::new().await.expect("GPU"), cfg) }).expect("valid")
}

/// Widths over 32 take the layer-by-layer pass on a CPU adapter (over 64 on a GPU), which keeps
/// each hidden activation.
fn mlp(hidden: Vec<usize>) -> Session {
    let points = PointData { task: PointTask::Circles, points: 200, noise: 0.05, validation_fraction: 0.2, csv: None, standardize: false };
    session(ModelConfig::Mlp(MlpConfig { input_dim: 2, hidden, output_dim: 2, activation: Activation::Tanh }), DataConfig::Points(points), 32)
}

fn llama() -> Session {
    let text = "the quick brown fox jumps over the lazy dog. ".repeat(20);
    let model = LlamaConfig::new(32, 16, 2, 2, 16, 32);
    session(ModelConfig::Llama(model), DataConfig::Text(TextData { text: Some(text), validation_fraction: 0.1 }), 4)
}

/// min and max exact, RMS within 1e-4 relative (an f32 sum of ≤ 5,000 squares), all counted.
fn assert_describes(d: &Distribution, values: &[f32], what: &str) {
    let min = values.iter().cloned().fold(f32::INFINITY, f32::min);
    let max = values.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    let rms = (values.iter().map(|&x| (x as f64).powi(2)).sum::<f64>() / values.len() as f64).sqrt();
    assert_eq!((d.min, d.max), (min, max), "{what}: range");
    assert!((d.rms as f64 - rms).abs() <= 1e-4 * rms + 1e-12, "{what}: rms {} vs {rms}", d.rms);
    assert_eq!(d.counts.iter().sum::<u32>() as usize, values.len(), "{what}: counts");
    assert_eq!((d.quantiles[0], d.quantiles[8]), (min, max), "{what}: the outer quantiles are the range");
    assert!(d.quantiles.windows(2).all(|w| w[0] <= w[1]), "{what}: quantiles in order {:?}", d.quantiles);
}

#[test]
fn neuron_outputs_are_the_forward_pass_at_every_point() {
    let mut s = mlp(vec![40, 3]);
    s.train(20).unwrap();
    pollster::block_on(async {
        let size = 12;
        // A box away from the origin, wider than tall, as a user's own points may need.
        let plane = PlaneBox::new(&[2.0, 4.0, -1.0, 0.5]).unwrap();
        let n = s.neuron_outputs(size, &plane).await.unwrap();
        let names: Vec<&str> = n.layers.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["input", "layer0", "layer1", "output"]);
        assert_eq!((n.points, n.layers.iter().map(|l| l.neurons).collect::<Vec<_>>()), (size * size, vec![2, 40, 3, 2]));
        // The output neurons are predict_grid's probabilities, transposed.
        let grid = s.predict_grid(size, &plane).await.unwrap();
        let out = &n.layers[3].values;
        assert!((0..size * size).all(|p| (0..2).all(|c| out[c * size * size + p] == grid[p * 2 + c])), "output layer differs from predict_grid");
        // Hidden layers: tanh(x·W0ᵀ + b0) in f64 from the weights read back (f32 matmul of 2 terms: 1e-5).
        let w = s.gpu.read_f32(&s.params.weights).await.unwrap();
        let at = |name: &str| s.params.entries.iter().find(|e| e.spec.name == name).map(|e| &w[e.offset..e.offset + e.elements()]).unwrap();
        let (w0, b0) = (at("layer0.weight"), at("layer0.bias"));
        let inputs = &n.layers[0].values;
        // Cell centres, row by row from the top: x steps 2/12 from 2 + 1/12, y 1.5/12 down from 0.5 - 0.75/12.
        let point = |p: usize| (inputs[p], inputs[size * size + p]);
        let centre = |col: usize, row: usize| ((2.0 + (col as f64 + 0.5) / 6.0) as f32, (0.5 - (row as f64 + 0.5) * 0.125) as f32);
        for (p, col, row) in [(0, 0, 0), (5, 5, 0), (size, 0, 1), (size * size - 1, size - 1, size - 1)] {
            assert_eq!(point(p), centre(col, row), "input point {p}");
        }
        for p in [0, 17, size * size - 1] {
            let (x, y) = (inputs[p] as f64, inputs[size * size + p] as f64);
            for j in [0, 39] {
                let want = (x * w0[2 * j] as f64 + y * w0[2 * j + 1] as f64 + b0[j] as f64).tanh();
                let got = n.layers[1].values[j * size * size + p] as f64;
                assert!((got - want).abs() < 1e-5, "neuron {j} at point {p}: {got} vs {want}");
            }
        }
        assert!(s.neuron_outputs(600, &plane).await.unwrap_err().to_string().contains("`size`"));
    });
}

#[test]
fn distributions_describe_the_weights_gradients_updates_and_activations() {
    let mut s = mlp(vec![40, 3]);
    pollster::block_on(async {
        let fresh = s.inspect(32).await.unwrap();
        assert!(fresh.tensors.iter().all(|t| t.updates.max == 0.0 && t.updates.min == 0.0), "no step yet: the last update is zero");
        s.train(5).unwrap();
        let before = s.gpu.read_f32(&s.params.weights).await.unwrap();
        s.train(1).unwrap();
        let after = s.gpu.read_f32(&s.params.weights).await.unwrap();
        let grads = s.gpu.read_f32(&s.params.grads).await.unwrap();
        let got = s.inspect(32).await.unwrap();
        assert_eq!(got.step, 6);
        for (e, t) in s.params.entries.iter().zip(&got.tensors) {
            let range = e.offset..e.offset + e.elements();
            assert_eq!(t.name, e.spec.name);
            assert_describes(&t.weights, &after[range.clone()], &format!("{} weights", t.name));
            assert_describes(&t.grads, &grads[range.clone()], &format!("{} grads", t.name));
            let update: Vec<f32> = range.map(|i| after[i] - before[i]).collect();
            assert_describes(&t.updates, &update, &format!("{} updates", t.name));
        }
        let layers: Vec<&str> = got.layers.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(layers, ["layer0", "layer1", "layer2"]);
        // layer0's gradient RMS over its weight and bias together.
        let of = |name: &str| s.params.entries.iter().find(|e| e.spec.name == name).unwrap();
        let sq: f64 = ["layer0.weight", "layer0.bias"].iter().flat_map(|n| grads[of(n).offset..][..of(n).elements()].iter()).map(|&g| (g as f64).powi(2)).sum();
        let want = (sq / (of("layer0.weight").elements() + of("layer0.bias").elements()) as f64).sqrt();
        assert!((got.layers[0].grad_rms as f64 - want).abs() <= 1e-4 * want, "layer0 grad rms {} vs {want}", got.layers[0].grad_rms);
        // Hidden layers show their activations (tanh: within [-1, 1]); the output layer has none.
        let act = got.layers[0].activation.as_ref().expect("layer0 activation");
        assert!(act.min >= -1.0 && act.max <= 1.0 && act.counts.iter().sum::<u32>() == 32 * 40, "{act:?}");
        assert!(got.layers[2].activation.is_none());
        assert!(s.inspect(0).await.unwrap_err().to_string().contains("`bins`"));
    });
}

/// Checks each hidden layer's activation distribution in `got` against f64 on the CPU:
/// tanh(W·x + b) layer by layer from `weights` (the flat buffer read back), for the (32, 2)
/// batch `x`. Tolerances: min and max within 1e-5 and RMS within 1e-4 relative (f32 dot
/// products of ≤ 40 terms of order 1).
fn assert_activations_of(s: &Session, weights: &[f32], got: &kiln::session::inspect::Inspection, x: &[f32], hidden: &[usize]) {
    let param = |name: &str| {
        let e = s.params.entries.iter().find(|e| e.spec.name == name).unwrap();
        weights[e.offset..e.offset + e.elements()].iter().map(|&v| v as f64).collect::<Vec<f64>>()
    };
    let mut h: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let fan_ins = std::iter::once(2).chain(hidden.iter().copied());
    for (l, (fan_in, &out)) in fan_ins.zip(hidden).enumerate() {
        let (wl, bl) = (param(&format!("layer{l}.weight")), param(&format!("layer{l}.bias")));
        h = (0..32 * out).map(|i| (bl[i % out] + (0..fan_in).map(|j| wl[(i % out) * fan_in + j] * h[(i / out) * fan_in + j]).sum::<f64>()).tanh()).collect();
        let d = got.layers[l].activation.as_ref().unwrap_or_else(|| panic!("layer{l} activation"));
        let (min, max) = h.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
        let rms = (h.iter().map(|v| v * v).sum::<f64>() / h.len() as f64).sqrt();
        assert!((d.min as f64 - min).abs() <= 1e-5 && (d.max as f64 - max).abs() <= 1e-5, "layer{l}: range {} {} vs {min} {max}", d.min, d.max);
        assert!((d.rms as f64 - rms).abs() <= 1e-4 * rms, "layer{l}: rms {} vs {rms}", d.rms);
        assert_eq!(d.counts.iter().sum::<u32>() as usize, 32 * out, "layer{l}: counts");
    }
    assert!(got.layers[hidden.len()].activation.is_none(), "the output layer has none");
}

/// The fused MLP pass (widths ≤ 32 on every adapter) keeps no activations: `inspect` runs the
/// last batch through the forward pass under the current weights, a batch the test chose.
#[test]
fn a_fused_mlp_shows_its_last_batch_activations() {
    let mut s = mlp(vec![8, 6]);
    pollster::block_on(async {
        s.train(3).unwrap();
        let x: Vec<f32> = (0..32 * 2).map(|i| ((i * 37 % 29) as f32 / 14.0) - 1.0).collect();
        s.train_on(&[Batch::Classes(x.clone(), (0..32).map(|i| i % 2).collect())]).unwrap();
        let w = s.gpu.read_f32(&s.params.weights).await.unwrap();
        assert_activations_of(&s, &w, &s.inspect(16).await.unwrap(), &x, &[8, 6]);
    });
}

/// Before the first step no batch has been through the model (its input buffer is zero): the
/// activations are those of the batch the first step will draw, on both passes (fused, and
/// layer by layer for 72 wide on every adapter), and looking does not change what is trained.
#[test]
fn before_the_first_step_mlps_show_the_first_batchs_activations() {
    for hidden in [vec![8, 6], vec![72]] {
        let mut s = mlp(hidden.clone());
        pollster::block_on(async {
            let got = s.inspect(16).await.unwrap();
            let w = s.gpu.read_f32(&s.params.weights).await.unwrap();
            let Batch::Classes(x, _) = s.sample_batch() else { panic!("a batch of points") };
            assert_activations_of(&s, &w, &got, &x, &hidden);
            let Batch::Classes(unseen, _) = mlp(hidden.clone()).sample_batch() else { panic!("a batch of points") };
            assert_eq!(x, unseen, "inspecting advanced the sampler");
        });
    }
}

/// A Llama's activations are what its last step kept: before the session's first step (a new
/// run, or one restored from a checkpoint) it has none to show (not the zeros its buffers
/// hold), and after one step every block has them.
#[test]
fn a_llama_shows_activations_from_its_first_step_on() {
    let mut s = llama();
    pollster::block_on(async {
        let before = s.inspect(8).await.unwrap();
        assert!(before.layers.iter().all(|l| l.activation.is_none()), "activations before any step");
        s.train(1).unwrap();
        let after = s.inspect(8).await.unwrap();
        let blocks: Vec<&str> = after.layers.iter().filter(|l| l.activation.is_some()).map(|l| l.name.as_str()).collect();
        assert_eq!(blocks, ["blocks.0", "blocks.1"]);
        let d = after.layers.iter().find(|l| l.name == "blocks.0").and_then(|l| l.activation.as_ref()).unwrap();
        assert!(d.rms > 0.0 && d.non_finite == 0, "blocks.0's output: {d:?}");
    });
}

#[test]
fn attention_maps_are_causal_rows_that_sum_to_one() {
    let mut s = llama();
    s.train(10).unwrap();
    pollster::block_on(async {
        let maps = s.attention_maps("the lazy").await.unwrap();
        assert_eq!(maps.tokens.concat(), "the lazy");
        let n = maps.tokens.len();
        assert_eq!((maps.layers, maps.heads, maps.probs.len()), (2, 2, 2 * 2 * n * n));
        for (r, row) in maps.probs.chunks_exact(n).enumerate() {
            let i = r % n;
            let sum: f64 = row.iter().map(|&p| p as f64).sum();
            assert!((sum - 1.0).abs() < 1e-5, "row {r} sums to {sum}");
            assert!(row[i + 1..].iter().all(|&p| p == 0.0), "row {r} attends to the future");
        }
        // Causal: a prompt's maps are the top-left corner of a longer prompt's.
        let longer = s.attention_maps("the lazy dog").await.unwrap();
        let m = longer.tokens.len();
        for lh in 0..4 {
            for i in 0..n {
                for j in 0..n {
                    let (a, b) = (maps.probs[lh * n * n + i * n + j], longer.probs[lh * m * m + i * m + j]);
                    assert!((a - b).abs() < 1e-6, "layer·head {lh} ({i}, {j}): {a} vs {b}");
                }
            }
        }
        let stats = s.inspect(16).await.unwrap();
        let with: Vec<&str> = stats.layers.iter().filter(|l| l.activation.is_some()).map(|l| l.name.as_str()).collect();
        assert_eq!(with, ["blocks.0", "blocks.1"]);
        assert!(s.attention_maps("").await.unwrap_err().to_string().contains("`prompt`"));
    });
}
