//! A Llama with the short conv (`short_conv: true`): at its identity start it computes exactly
//! what the same Llama without it computes, gradients included; its taps' gradients match
//! central finite differences of the loss through the whole model; and the option trains,
//! saves and reloads like any config.

use kiln::config::{DataConfig, SessionConfig, TextData};
use kiln::model::llama::LlamaConfig;
use kiln::model::params::ParamStore;
use kiln::model::ModelConfig;
use kiln::rng::Rng;
use kiln::session::Session;
use kiln::Gpu;

const B: usize = 2;
const T: usize = 8;

fn config(short_conv: bool, vocab: usize) -> LlamaConfig {
    LlamaConfig { short_conv, ..LlamaConfig::new(vocab, 8, 2, 2, T, 16) }
}

fn llama(short_conv: bool) -> ModelConfig {
    ModelConfig::Llama(config(short_conv, 12))
}

/// One forward + backward on a fixed batch: (loss, every gradient by name).
struct Pass {
    params: ParamStore,
    pass: kiln::model::training::TrainingPass,
    /// The pass's loss averaged into `loss` (in a session the optimizer's closing sum does it).
    mean: kiln::gpu::Op,
    loss: kiln::gpu::Tensor,
    gpu: Gpu,
}

impl Pass {
    fn new(model: &ModelConfig, tokens: &[u32], targets: &[u32]) -> Pass {
        let gpu = pollster::block_on(Gpu::new()).unwrap();
        let params = ParamStore::new(&gpu, model.param_specs(), 5, false).unwrap();
        let (targets, loss) = (gpu.tensor_from("targets", &[B * T], targets).unwrap(), gpu.tensor("loss", &[1]).unwrap());
        let pass = model.training_pass(&gpu, &params, B, &targets, &loss, false).unwrap();
        gpu.write(&pass.input, tokens).unwrap();
        let mean = pass.loss_sum.as_ref().expect("a layered pass leaves its loss to average").mean_op(&gpu, &loss).unwrap();
        Pass { params, pass, mean, loss, gpu }
    }

    /// Sets every shared weight to `values[name]` (larger than the init, so gradients are far
    /// above f32 noise).
    fn set(&self, name: &str, values: &[f32]) {
        self.gpu.write(&self.params.weight(name), values).unwrap();
    }

    /// The loss, after zeroing and recomputing the gradients.
    fn run(&self) -> f32 {
        self.gpu.write(&self.params.grads, &vec![0f32; self.params.total]).unwrap();
        self.gpu.run(&self.pass.ops.iter().chain([&self.mean]).collect::<Vec<_>>()).unwrap();
        pollster::block_on(self.gpu.read_f32(&self.loss)).unwrap()[0]
    }

    fn grad(&self, name: &str) -> Vec<f32> {
        pollster::block_on(self.gpu.read_f32(&self.params.grad(name))).unwrap()
    }
}

fn batch() -> (Vec<u32>, Vec<u32>) {
    let mut rng = Rng::new(9);
    ((0..B * T).map(|_| rng.below(12) as u32).collect(), (0..B * T).map(|_| rng.below(12) as u32).collect())
}

/// Random weights for every tensor of `model` (norms near 1), the same for a name in both models.
fn weights(model: &ModelConfig) -> Vec<(String, Vec<f32>)> {
    model
        .param_specs()
        .iter()
        .map(|s| {
            let mut rng = Rng::new(s.name.bytes().map(u64::from).sum());
            let n: usize = s.shape.iter().product();
            let around = if s.name.ends_with("norm") { 1.0 } else { 0.0 };
            (s.name.clone(), (0..n).map(|_| around + rng.range(-0.5, 0.5) as f32).collect())
        })
        .collect()
}

#[test]
fn at_its_identity_start_the_short_conv_changes_nothing_and_its_gradients_are_the_loss_slope() {
    let (tokens, targets) = batch();
    let (plain, conv) = (Pass::new(&llama(false), &tokens, &targets), Pass::new(&llama(true), &tokens, &targets));
    for (name, values) in weights(&llama(false)) {
        plain.set(&name, &values);
        conv.set(&name, &values);
    }
    let (a, b) = (plain.run(), conv.run());
    assert_eq!(a, b, "identity taps: the same loss");
    for spec in llama(false).param_specs() {
        assert_eq!(plain.grad(&spec.name), conv.grad(&spec.name), "identity taps: the same gradient of {}", spec.name);
    }

    // Taps away from the identity: the gradient is the slope of the loss (central differences
    // in f32: eps 1e-2 on O(1) weights keeps the truncation error near 1e-4 of the slope and
    // the loss's rounding (≈ 3e-7) near 1e-5 of it).
    let mut rng = Rng::new(4);
    for l in 0..2 {
        conv.set(&format!("blocks.{l}.conv"), &(0..24).map(|_| rng.range(-0.8, 0.8) as f32).collect::<Vec<_>>());
        conv.set(&format!("blocks.{l}.conv_bias"), &(0..8).map(|_| rng.range(-0.3, 0.3) as f32).collect::<Vec<_>>());
    }
    let eps = 1e-2f32;
    let mut worst = 0f32;
    for name in ["blocks.0.conv", "blocks.1.conv", "blocks.0.conv_bias", "blocks.1.conv_bias"] {
        conv.run(); // the gradients at the unperturbed weights
        let grad = conv.grad(name);
        let base = pollster::block_on(conv.gpu.read_f32(&conv.params.weight(name))).unwrap();
        let scale = grad.iter().fold(0f32, |m, g| m.max(g.abs()));
        assert!(scale > 1e-3, "{name}: gradients this small would test nothing ({scale})");
        for i in (0..base.len()).step_by(5) {
            let mut w = base.clone();
            w[i] = base[i] + eps;
            conv.set(name, &w);
            let up = conv.run();
            w[i] = base[i] - eps;
            conv.set(name, &w);
            let down = conv.run();
            conv.set(name, &base);
            let slope = (up - down) / (2.0 * eps);
            worst = worst.max((slope - grad[i]).abs() / scale);
            assert!((slope - grad[i]).abs() <= 2e-3 * scale + 2e-5, "{name}[{i}]: gradient {} against the loss's slope {slope}", grad[i]);
        }
    }
    println!("short conv: gradients within {worst:.1e} (relative to the largest) of the loss's slope");
}

#[test]
fn the_short_conv_option_trains_saves_and_reloads() {
    let text = "the quick brown fox jumps over the lazy dog. ".repeat(20);
    let cfg = SessionConfig {
        model: ModelConfig::Llama(config(true, 32)),
        data: DataConfig::Text(TextData { text: Some(text), validation_fraction: 0.1 }),
        batch: 4,
        optimizer: Default::default(),
        seed: 2,
    };
    let json = serde_json::to_string(&cfg).unwrap();
    assert!(json.contains("\"short_conv\":true"), "{json}");
    assert!(
        !serde_json::to_string(&SessionConfig { model: ModelConfig::Llama(config(false, 32)), ..cfg.clone() }).unwrap().contains("short_conv"),
        "off: left out, as configs were"
    );
    let mut s = Session::with_gpu(pollster::block_on(Gpu::new()).unwrap(), cfg).unwrap();
    s.train(20).unwrap();
    let m = pollster::block_on(s.read_metrics()).unwrap();
    assert!(m.last().unwrap().loss < m[0].loss, "the loss falls: {} → {}", m[0].loss, m.last().unwrap().loss);
    let bytes = pollster::block_on(s.save_checkpoint()).unwrap();
    let back = Session::from_checkpoint(pollster::block_on(Gpu::new()).unwrap(), &bytes).unwrap();
    let window: Vec<u32> = (0..T as u32).collect();
    let (a, b) = pollster::block_on(async { (s.predict(1, &window).await.unwrap(), back.predict(1, &window).await.unwrap()) });
    assert_eq!(a, b, "a checkpoint keeps the conv's taps");
    let err = pollster::block_on(s.export_hf()).unwrap_err();
    assert!(err.to_string().contains("short_conv"), "{err}");
}
