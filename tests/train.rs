//! Training end to end on the GPU: the MLP learns spiral and sine, and bad configs are
//! rejected naming the field. Thresholds are outcomes a correct trainer reaches with margin
//! on these seeds; a broken gradient or optimizer misses them by far.

use kiln::config::{DataConfig, PointData, SessionConfig};
use kiln::data::batches::Batch;
use kiln::data::PointTask;
use kiln::kernels::elementwise::Activation;
use kiln::kernels::matmul::{plan, Adapter, MatmulDesc};
use kiln::kernels::mlp_fused::{reference, FusedLayer, FusedLoss};
use kiln::model::mlp::MlpConfig;
use kiln::model::ModelConfig;
use kiln::optim::{OptimConfig, OptimizerKind};
use kiln::presets::{preset, PRESETS};
use kiln::session::Session;
use kiln::{Gpu, KilnError};

fn config(task: PointTask, hidden: Vec<usize>, act: Activation) -> SessionConfig {
    let outputs = if task.is_regression() { 1 } else { 2 };
    SessionConfig {
        model: ModelConfig::Mlp(MlpConfig { input_dim: task.input_dim(), hidden, output_dim: outputs, activation: act }),
        data: DataConfig::Points(PointData { task, points: 1000, noise: 0.02, validation_fraction: 0.2, csv: None, standardize: false }),
        batch: 128,
        optimizer: OptimConfig { lr: 0.02, ..OptimConfig::default() },
        seed: 7,
    }
}

fn session(cfg: SessionConfig) -> Session {
    pollster::block_on(async { Session::with_gpu(Gpu::new().await.expect("GPU"), cfg).expect("valid config") })
}

#[test]
fn mlp_learns_spiral_to_95_percent_validation_accuracy() {
    let mut s = session(config(PointTask::Spiral, vec![32, 32], Activation::Tanh));
    pollster::block_on(async {
        let before = s.evaluate(true).await.unwrap();
        s.train(1500).unwrap();
        let metrics = s.read_metrics().await.unwrap();
        assert_eq!(metrics.len(), 1024, "the ring keeps the last 1024 steps");
        let after = s.evaluate(true).await.unwrap();
        let acc = after.accuracy.unwrap();
        println!("spiral: val loss {:.4} -> {:.4}, accuracy {:.3}, {} dispatches/step", before.loss, after.loss, acc, s.dispatches_per_step());
        assert!(acc >= 0.95, "validation accuracy {acc} < 0.95");
        let (first, last) = (metrics[0].loss, metrics.last().unwrap().loss);
        assert!(last < first, "train loss did not fall: {first} -> {last}");
        assert!(metrics.iter().all(|m| m.loss.is_finite() && m.grad_norm.is_finite()));
        let ratios = s.update_ratios();
        assert_eq!(ratios.len(), 6, "3 layers × (weight, bias)");
        // AdamW moves each tensor by about lr per element: a ratio far outside this range means
        // the ring or the kernel is wrong.
        for (name, r) in &ratios {
            assert!(r.is_finite() && *r > 1e-6 && *r < 0.5, "{name}: update/weight ratio {r}");
        }
    });
}

/// Widths over 64 (or more than four layers) train layer by layer, not in the fused pass: after one step on a known batch,
/// every gradient matches the f64 reference of the whole pass (mlp_fused's, over the same flat
/// layout), so the products, the fused bias + activation and its backward with the bias sums
/// are wired to the right layers. The 512-wide case splits its hidden products along k on
/// every adapter, so the forward's and the backward's split partials reach their consumers.
/// The 2-D input's and the 2-class output's products (k ≤ 16) are formed inside the fused
/// kernels; five narrow layers (too many to fuse) form every product that way, the output
/// layer's forward included; the regression case (MSE, one output) brings back a k of 1.
/// f32 dot products of ≤ 512 terms and sums over ≤ 512 rows of values of order 1 (the loss is
/// a mean, so the gradients are of order 1e-2): atol 2e-5, rtol 1e-4, as the fused pass's checks.
#[test]
fn layer_by_layer_mlp_gradients_match_the_reference() {
    let cases = [
        (PointTask::Spiral, vec![72, 40], Activation::Relu, 64),
        (PointTask::Spiral, vec![80], Activation::Silu, 64),
        (PointTask::Spiral, vec![66, 66], Activation::Tanh, 64),
        (PointTask::Spiral, vec![512, 512], Activation::Relu, 512),
        (PointTask::Spiral, vec![8, 12, 8, 8], Activation::Tanh, 64),
        (PointTask::Sine, vec![72, 40], Activation::Silu, 64),
    ];
    for (task, hidden, act, rows) in cases {
        let mut cfg = config(task, hidden.clone(), act);
        cfg.batch = rows;
        let ModelConfig::Mlp(m) = cfg.model.clone() else { unreachable!() };
        let x: Vec<f32> = (0..rows * m.input_dim).map(|i| ((i * 37 % 29) as f32 / 14.0) - 1.0).collect();
        let targets: Vec<f32> = (0..rows).map(|i| if task.is_regression() { (i as f32 * 0.3).sin() } else { f32::from(i % 3 == 0) }).collect();
        let mut s = session(cfg);
        let adapter = Adapter::of(&s.gpu);
        assert!(!m.fusable(adapter), "{hidden:?} must train layer by layer");
        if hidden[0] == 512 {
            assert!(plan(&MatmulDesc::new(rows, 512, 512).trans_b(), true, adapter).1 > 1, "the 512-wide product must split");
        }
        let layers: Vec<FusedLayer> = (m.layer_dims().into_iter().enumerate())
            .map(|(l, (fan_in, out))| FusedLayer {
                w: s.params.entry(&format!("layer{l}.weight")).offset,
                b: s.params.entry(&format!("layer{l}.bias")).offset,
                fan_in,
                out,
            })
            .collect();
        pollster::block_on(async {
            let w = s.gpu.read_f32(&s.params.weights).await.unwrap();
            let (batch, loss) = if task.is_regression() {
                (Batch::Values(x.clone(), targets.clone()), FusedLoss::Mse)
            } else {
                (Batch::Classes(x.clone(), targets.iter().map(|&t| t as u32).collect()), FusedLoss::CrossEntropy)
            };
            s.train_on(&[batch]).unwrap();
            let got = s.gpu.read_f32(&s.params.grads).await.unwrap();
            let f64s = |v: &[f32]| v.iter().map(|&a| f64::from(a)).collect::<Vec<f64>>();
            let (_, want) = reference::loss_and_grads(&layers, act, loss, &f64s(&w), &f64s(&x), &f64s(&targets));
            assert_eq!(got.len(), want.len());
            for (i, (&g, &r)) in got.iter().zip(&want).enumerate() {
                assert!((f64::from(g) - r).abs() <= 2e-5 + 1e-4 * r.abs(), "{hidden:?} {act:?}: gradient {i} is {g}, the reference {r}");
            }
        });
    }
}

#[test]
fn mlp_fits_sine_below_mse_0_01() {
    let mut cfg = config(PointTask::Sine, vec![32, 32], Activation::Tanh);
    cfg.optimizer.lr = 0.01;
    let mut s = session(cfg);
    pollster::block_on(async {
        let before = s.evaluate(true).await.unwrap();
        s.train(1000).unwrap();
        let after = s.evaluate(true).await.unwrap();
        println!("sine: val mse {:.5} -> {:.5}", before.loss, after.loss);
        // Noise std 0.02 puts the floor at 4e-4; 0.01 is a fit, a flat line scores ~0.5.
        assert!(after.loss < 0.01, "validation MSE {} >= 0.01", after.loss);
    });
}

#[test]
fn sgd_with_momentum_and_accumulation_also_learns() {
    let mut cfg = config(PointTask::Circles, vec![16], Activation::Relu);
    cfg.optimizer = OptimConfig { kind: OptimizerKind::Sgd, lr: 0.1, momentum: 0.9, accumulation: 2, ..OptimConfig::default() };
    let mut s = session(cfg);
    pollster::block_on(async {
        s.train(400).unwrap();
        let acc = s.evaluate(true).await.unwrap().accuracy.unwrap();
        assert!(acc >= 0.9, "circles accuracy {acc} < 0.9");
    });
}

#[test]
fn every_preset_is_valid() {
    for (name, _) in PRESETS {
        preset(name).unwrap_or_else(|| panic!("{name} missing")).validate().unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    assert!(preset("nope").is_none());
}

#[test]
fn bad_configs_name_the_field() {
    let gpu = pollster::block_on(Gpu::new()).expect("GPU");
    let mut cfg = config(PointTask::Spiral, vec![16, 0], Activation::Relu);
    let err = Session::with_gpu(gpu, cfg.clone()).err().expect("zero width must fail");
    assert!(matches!(&err, KilnError::InvalidInput { field, .. } if field == "model.mlp.hidden[1]"), "{err}");
    let ModelConfig::Mlp(m) = &mut cfg.model else { unreachable!() };
    m.hidden = vec![8];
    m.output_dim = 3;
    assert!(cfg.validate().unwrap_err().to_string().contains("model.mlp.output_dim"));
    let ModelConfig::Mlp(m) = &mut cfg.model else { unreachable!() };
    m.output_dim = 2;
    cfg.optimizer.lr = f32::NAN;
    assert!(cfg.validate().unwrap_err().to_string().contains("optimizer.lr"));
    cfg.optimizer.lr = 0.01;
    cfg.batch = 0;
    assert!(cfg.validate().unwrap_err().to_string().contains("`batch`"));
    let json = r#"{"model": {"llama": {"vocab": 60, "d_model": 64, "heads": 5, "layers": 1, "context": 8, "hidden": 64}},
                   "data": {"text": {"validation_fraction": 0.1}}, "batch": 2}"#;
    let err = SessionConfig::from_json(json).unwrap_err().to_string();
    assert!(err.contains("model.llama.heads") && err.contains("divide"), "{err}");
    let err = SessionConfig::from_json(r#"{"model": {"mlp": {}}}"#).unwrap_err().to_string();
    assert_eq!(err, "invalid `model.mlp.input_dim`: is missing");
}
