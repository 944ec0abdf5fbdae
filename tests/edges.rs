//! The edges a new user meets first, on the GPU: your own points (three classes) and the
//! probability of every class over the plane; evaluation that covers the validation split;
//! text splits that windows never cross; a checkpoint with a NaN weight refused by name.

use kiln::config::{DataConfig, PointData, SessionConfig, TextData};
use kiln::data::PointTask;
use kiln::kernels::elementwise::Activation;
use kiln::model::llama::LlamaConfig;
use kiln::model::mlp::MlpConfig;
use kiln::model::ModelConfig;
use kiln::session::plane::PlaneBox;
use kiln::session::Session;
use kiln::{ErrorCode, Gpu, KilnError};

fn session(cfg: SessionConfig) -> kiln::error::Result<Session> {
    pollster::block_on(async { Session::with_gpu(Gpu::new().await.expect("GPU"), cfg) })
}

/// Three rings of your own points, labels 0, 1, 2.
fn three_classes() -> SessionConfig {
    let csv: String = (0..120)
        .map(|i| {
            let r = 0.3 + 0.3 * (i % 3) as f64;
            format!("{:.4},{:.4},{}\n", r * (i as f64).cos(), r * (i as f64).sin(), i % 3)
        })
        .collect();
    SessionConfig {
        model: ModelConfig::Mlp(MlpConfig { input_dim: 2, hidden: vec![8], output_dim: 3, activation: Activation::Tanh }),
        data: DataConfig::Points(PointData {
            task: PointTask::Custom,
            points: 0,
            noise: 0.0,
            validation_fraction: 0.25,
            csv: Some(format!("x,y,label\n# three rings\n{csv}")),
            standardize: false,
        }),
        batch: 32,
        optimizer: Default::default(),
        seed: 2,
    }
}

#[test]
fn own_points_give_every_class_probability_on_the_grid() {
    let mut s = session(three_classes()).expect("a 3-class run on your own points");
    pollster::block_on(async {
        s.train(20).unwrap();
        let grid = s.predict_grid(8, &PlaneBox::square(1.0).unwrap()).await.unwrap();
        assert_eq!(grid.len(), 8 * 8 * 3);
        for cell in grid.chunks_exact(3) {
            let sum: f32 = cell.iter().sum();
            // softmax in f64, stored as f32: each probability carries ≤ 1 ulp (6e-8) of rounding.
            assert!(cell.iter().all(|p| (0.0..=1.0).contains(p)) && (sum - 1.0).abs() < 1e-6, "{cell:?}");
        }
        let e = s.evaluate(true).await.unwrap();
        assert_eq!((e.scored, e.available), (30, 30), "every validation point is scored");
    });
}

#[test]
fn a_plane_box_is_a_square_a_range_or_four_bounds_and_bad_ones_name_the_value() {
    assert_eq!(PlaneBox::new(&[1.5]).unwrap().bounds(), [-1.5, 1.5, -1.5, 1.5]);
    assert_eq!(PlaneBox::new(&[2.0, 4.0]).unwrap().bounds(), [2.0, 4.0, 2.0, 4.0]);
    assert_eq!(PlaneBox::new(&[2.0, 4.0, -1.0, 0.5]).unwrap().bounds(), [2.0, 4.0, -1.0, 0.5]);
    let refused = |values: &[f64], field: &str, says: &str| {
        let e = PlaneBox::new(values).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidInput, "{values:?}");
        assert!(e.to_string().contains(&format!("`{field}`")) && e.to_string().contains(says), "{values:?}: {e}");
    };
    refused(&[], "extent", "got 0 numbers");
    refused(&[1.0, 2.0, 3.0], "extent", "[xmin, xmax, ymin, ymax]");
    refused(&[0.0], "extent", "above 0");
    refused(&[4.0, 2.0], "extent", "xmin (4) must be below xmax (2)");
    refused(&[0.0, 1.0, 1.0, 1.0], "extent", "ymin (1) must be below ymax (1)");
    refused(&[0.0, f64::NAN], "extent[1]", "finite");
    refused(&[0.0, 1.0, -2e7, 1.0], "extent[2]", "within ±10000000");
}

#[test]
fn own_points_that_do_not_fit_name_the_field() {
    let mut cfg = three_classes();
    if let ModelConfig::Mlp(m) = &mut cfg.model {
        m.output_dim = 2;
    }
    let err = session(cfg).err().expect("2 outputs for 3 classes");
    assert!(matches!(&err, KilnError::InvalidInput { field, .. } if field == "model.mlp.output_dim"), "{err}");
    let mut cfg = three_classes();
    if let DataConfig::Points(p) = &mut cfg.data {
        p.csv = Some("1,2,0\n3,oops,1\n".into());
    }
    let err = session(cfg).err().expect("a bad CSV row");
    assert_eq!(err.to_string(), "invalid `data.points.csv`: line 2, column y: `oops` is not a number");
    assert_eq!(err.code(), ErrorCode::InvalidInput);
}

fn llama_on(text: &str, context: usize) -> SessionConfig {
    SessionConfig {
        model: ModelConfig::Llama(LlamaConfig::new(32, 16, 2, 1, context, 32)),
        data: DataConfig::Text(TextData { text: Some(text.into()), validation_fraction: 0.1 }),
        batch: 4,
        optimizer: Default::default(),
        seed: 1,
    }
}

#[test]
fn text_evaluation_covers_the_split_and_short_splits_are_refused() {
    let text = "the quick brown fox jumps over the lazy dog. ".repeat(20); // 900 characters
    let s = session(llama_on(&text, 16)).unwrap();
    let e = pollster::block_on(s.evaluate(true)).unwrap();
    // The last 90 characters validate: 89 next tokens, in 5 whole windows of 16.
    assert_eq!((e.scored, e.available), (80, 89));
    let err = session(llama_on(&text, 100)).err().expect("context 100 on a 90-character validation split");
    let message = err.to_string();
    assert!(
        message.starts_with("invalid `model.llama.context`") && message.contains("at most 89") && message.contains("at least 1001 characters"),
        "{message}"
    );
}

#[test]
fn a_checkpoint_with_a_nan_weight_is_refused_naming_the_tensor() {
    let s = session(three_classes()).unwrap();
    let bytes = pollster::block_on(s.save_checkpoint()).unwrap();
    let header = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut bad = bytes.clone();
    bad[8 + header..12 + header].copy_from_slice(&f32::NAN.to_le_bytes());
    let mut s = s;
    let err = s.load_checkpoint(&bad).unwrap_err();
    assert_eq!(err.code(), ErrorCode::BadCheckpoint);
    assert!(err.to_string().contains("holds a non-finite value (NaN) at index 0"), "{err}");
    s.load_checkpoint(&bytes).expect("the good file still loads");
}

#[test]
fn csv_errors_name_the_line_and_column_and_say_what_is_wrong() {
    use kiln::data::points::from_csv_any;
    let message = |text: &str| match from_csv_any(text) {
        Ok(_) => panic!("{text:?} must be refused"),
        Err(e) => e.to_string(),
    };
    for empty in ["", "\n\n", "# only a comment\nx,y,label\n"] {
        assert!(message(empty).contains("the file has no rows of numbers"), "{empty:?}: {}", message(empty));
    }
    let semicolons = message("1;2;0\n3;4;1\n");
    assert!(
        semicolons.ends_with("line 2: expected 3 columns (x,y,label) or 2 (x,target), found 1; the values look separated by ';': use commas"),
        "{semicolons}"
    );
    let tabs = message("x\ty\tlabel\n1\t2\t0\n");
    assert!(tabs.ends_with("found 1; the values look separated by '\\t': use commas"), "{tabs}");
    assert!(message("x,y,label\n1,2,0\n1,2,x\n").ends_with("line 3, column label: `x` must be a class 0..=9"));
    assert!(message("1,2,12\n").ends_with("line 1, column label: `12` must be a class 0..=9"));
    assert!(message("1,2\nnope,3\n").ends_with("line 2, column x: `nope` is not a number"));
    assert!(message("1,2\n3,1e9\n").ends_with("line 2, column target: `1e9` must be finite and within ±1e6"));
    assert!(message("1,2,0\n1,2\n").ends_with("line 2: expected 3 comma-separated values (x,y,label), found 2"));
}

#[test]
fn too_few_points_name_the_csv() {
    let mut cfg = three_classes();
    if let DataConfig::Points(p) = &mut cfg.data {
        p.csv = Some("1,2,0\n3,4,1\n5,6,0\n".into());
    }
    let err = session(cfg).err().expect("3 points are too few");
    assert_eq!(err.to_string(), "invalid `data.points.csv`: at least 4 points are needed, got 3");
}

/// An XOR of 200 points away from the origin: x in [2, 4], y in [10, 16].
fn far_xor(standardize: bool) -> SessionConfig {
    let rows: Vec<String> = (0..200)
        .map(|i| {
            let (x, y) = (2.0 + (i % 20) as f64 / 9.5, 10.0 + (i / 20) as f64 / 1.5);
            format!("{x},{y},{}", u8::from((x - 3.0) * (y - 13.0) > 0.0))
        })
        .collect();
    let mut cfg = kiln::presets::preset("mlp-spiral").unwrap();
    let points = PointData { task: PointTask::Custom, points: 0, noise: 0.0, validation_fraction: 0.2, csv: Some(rows.join("\n")), standardize };
    cfg.data = DataConfig::Points(points);
    cfg
}

#[test]
fn standardized_inputs_train_far_points_and_keep_them_as_given() {
    let mut s = session(far_xor(true)).unwrap();
    let plain = session(far_xor(false)).unwrap();
    let scaling = s.data.scaling().expect("the run standardizes").clone();
    // The network's training inputs have mean 0 and standard deviation 1 in each column
    // (f32 values of ~1: 1e-5 covers their rounding).
    let seen = s.data.points(false).unwrap();
    for c in 0..2 {
        let col: Vec<f64> = seen.inputs.iter().skip(c).step_by(2).map(|&v| v as f64).collect();
        let mean = col.iter().sum::<f64>() / col.len() as f64;
        let var = col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / col.len() as f64;
        assert!(mean.abs() < 1e-5 && (var - 1.0).abs() < 1e-5, "column {c}: mean {mean}, variance {var}");
    }
    // Shown and exported as given: the same split as the run without standardization.
    assert_eq!(s.data.given_points(false), plain.data.points(false));
    assert!(plain.data.scaling().is_none());
    pollster::block_on(async {
        // The plane's box is in the given coordinates; the network sees them standardized.
        let n = s.neuron_outputs(4, &PlaneBox::new(&[2.0, 4.0, 10.0, 16.0]).unwrap()).await.unwrap();
        let first = |c: usize| n.layers[0].values[c * 16];
        assert_eq!((first(0), first(1)), ((2.25 - scaling.mean[0]) / scaling.std[0], (15.25 - scaling.mean[1]) / scaling.std[1]));
        // And it learns the XOR (seeded, so the same every run).
        s.train(300).unwrap();
        let e = s.evaluate(true).await.unwrap();
        assert!(e.accuracy.unwrap() >= 0.95, "standardized: validation accuracy {:?}", e.accuracy);
    });
}
