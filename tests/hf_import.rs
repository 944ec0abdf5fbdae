//! Folders coming back into Kiln: a Hugging Face Llama Kiln did not write (no kiln_config, its
//! text as train.txt, its tokenizer numbering the characters its own way, a tied head), Kiln's
//! MLP export, and the committed fixture made by Transformers itself (tests/fixtures/hf-foreign,
//! bench/make_hf_fixture.py): imported, it computes Transformers' logits.

use kiln::config::{DataConfig, PointData};
use kiln::data::PointTask;
use kiln::kernels::elementwise::Activation;
use kiln::model::mlp::MlpConfig;
use kiln::model::ModelConfig;
use kiln::session::generate::GenerateOptions;
use kiln::session::Session;
use kiln::{Gpu, KilnError};
use safetensors::tensor::{Dtype, TensorView};
use safetensors::SafeTensors;
use serde_json::{json, Value};

#[path = "support/export_folders.rs"]
mod export_folders;
use export_folders::{edit_json, Files};

fn gpu() -> Gpu {
    pollster::block_on(Gpu::new()).expect("GPU")
}

fn exported(s: &Session) -> Files {
    pollster::block_on(s.export_files()).unwrap().into_iter().map(|(n, b)| (n.to_string(), b)).collect()
}

/// model.safetensors with each tensor passed through `change(name, values) -> Some(values)` (None drops it).
fn edit_tensors(files: &mut Files, change: impl Fn(&str, Vec<f32>) -> Option<Vec<f32>>) {
    let st = SafeTensors::deserialize(&files["model.safetensors"]).unwrap();
    let mut kept: Vec<(String, Vec<usize>, Vec<f32>)> = vec![];
    for (name, view) in st.tensors() {
        if let Some(values) = change(&name, bytemuck::pod_collect_to_vec(view.data())) {
            // A changed length (a test's wrong-sized tensor) is stored as 1-D.
            let shape = if values.len() == view.data().len() / 4 { view.shape().to_vec() } else { vec![values.len()] };
            kept.push((name, shape, values));
        }
    }
    let views: Vec<(String, TensorView<'_>)> =
        kept.iter().map(|(n, shape, v)| (n.clone(), TensorView::new(Dtype::F32, shape.clone(), bytemuck::cast_slice(v)).unwrap())).collect();
    files.insert("model.safetensors".into(), safetensors::serialize(views, None).unwrap());
}

fn refused(files: &Files, field: &str, needle: &str) {
    let err = Session::from_export(gpu(), files).err().unwrap_or_else(|| panic!("{field}: accepted"));
    let named = matches!(&err, KilnError::InvalidInput { field: f, .. } if f == field);
    assert!(named && err.to_string().contains(needle), "expected `{field}` … {needle}: {err}");
}

/// `text_llama`'s vocabulary and width.
const VOCAB: usize = 40;
const C: usize = 16;

/// A trained `text_llama` of one layer.
fn llama_run() -> Session {
    let mut s = export_folders::text_llama(1, 3);
    s.train(3).unwrap();
    s
}

#[test]
fn a_foreign_llama_imports_with_its_text_in_its_own_token_order() {
    let s = llama_run();
    let chars = s.data.corpus().unwrap().chars.len();
    let mut files = exported(&s);
    // Another tool's folder: no Kiln config, and ids numbered backwards (file id = 39 − Kiln id).
    edit_json(&mut files, "config.json", |c| {
        let c = c.as_object_mut().unwrap();
        c.remove("kiln_config");
        c.remove("kiln_step");
    });
    edit_json(&mut files, "tokenizer.json", |t| {
        for id in t["model"]["vocab"].as_object_mut().unwrap().values_mut() {
            *id = json!(VOCAB as u64 - 1 - id.as_u64().unwrap());
        }
    });
    let reverse_rows = |v: Vec<f32>| -> Vec<f32> { v.chunks_exact(C).rev().flatten().copied().collect() };
    edit_tensors(&mut files, |name, v| Some(if name == "model.embed_tokens.weight" || name == "lm_head.weight" { reverse_rows(v) } else { v }));
    let mut back = Session::from_export(gpu(), &files).unwrap();
    assert_eq!(back.step_count(), 0, "a foreign folder starts at step 0");
    let window: Vec<u32> = (0..16).map(|i| i % chars as u32).collect();
    let (a, b) = pollster::block_on(async { (s.predict(1, &window).await.unwrap(), back.predict(1, &window).await.unwrap()) });
    for (row_a, row_b) in a.chunks_exact(VOCAB).zip(b.chunks_exact(VOCAB)) {
        assert_eq!(row_a[..chars], row_b[..chars], "the text's characters get the same logits");
        let (mut rest_a, mut rest_b) = (row_a[chars..].to_vec(), row_b[chars..].to_vec());
        rest_a.sort_by(f32::total_cmp);
        rest_b.sort_by(f32::total_cmp);
        assert_eq!(rest_a, rest_b, "the other ids keep their rows, in another order");
    }
    back.train(2).unwrap();
    let m = pollster::block_on(back.read_metrics()).unwrap();
    assert!(m.iter().all(|m| m.loss.is_finite()) && m.len() == 2, "the imported run trains: {m:?}");

    // A tied head: no lm_head tensor, the embedding serves as both.
    let mut tied = files.clone();
    edit_json(&mut tied, "config.json", |c| c["tie_word_embeddings"] = true.into());
    edit_tensors(&mut tied, |name, v| (name != "lm_head.weight").then_some(v));
    let t = Session::from_export(gpu(), &tied).unwrap();
    let weights = pollster::block_on(t.gpu.read_f32(&t.params.weights)).unwrap();
    let tensor = |n: &str| t.params.entries.iter().find(|e| e.spec.name == n).map(|e| weights[e.offset..e.offset + e.elements()].to_vec()).unwrap();
    assert_eq!(tensor("lm_head"), tensor("wte"), "a tied head is the embedding");

    let mut normalized = files.clone();
    edit_json(&mut normalized, "tokenizer.json", |t| t["normalizer"] = json!({"type": "Lowercase"}));
    refused(&normalized, "tokenizer.json: normalizer", "as they are");
    let mut lacking = files.clone();
    edit_json(&mut lacking, "tokenizer.json", |t| drop(t["model"]["vocab"].as_object_mut().unwrap().remove("q")));
    refused(&lacking, "tokenizer.json: model.vocab", "no token for the character 'q'");
    let mut scaled = files.clone();
    edit_json(&mut scaled, "config.json", |c| c["rope_parameters"] = json!({"rope_type": "linear", "factor": 2.0}));
    refused(&scaled, "config.json: rope_parameters.rope_type", "only plain RoPE");
    let mut odd_heads = files.clone();
    edit_json(&mut odd_heads, "config.json", |c| c["head_dim"] = 4.into());
    refused(&odd_heads, "config.json: head_dim", "8 wide");
    let mut bad_text = files.clone();
    bad_text.insert("train.txt".into(), vec![0xff, 0xfe]);
    refused(&bad_text, "train.txt", "UTF-8");
    let mut nothing = files;
    nothing.remove("config.json");
    refused(&nothing, "config.json", "kiln_config.json");
}

#[test]
fn an_mlp_export_imports_back_exactly() {
    let points = PointData { task: PointTask::Circles, points: 120, noise: 0.05, validation_fraction: 0.25, csv: None, standardize: false };
    let mlp = MlpConfig { input_dim: 2, hidden: vec![5, 3], output_dim: 2, activation: Activation::Silu };
    let mut s = export_folders::session(ModelConfig::Mlp(mlp), DataConfig::Points(points), 3);
    s.train(5).unwrap();
    let files = exported(&s);
    let back = Session::from_export(gpu(), &files).unwrap();
    assert_eq!(back.step_count(), 5);
    let inputs: Vec<f32> = (0..20).map(|i| i as f32 / 7.0 - 1.3).collect();
    let (a, b) = pollster::block_on(async { (s.predict(10, &inputs).await.unwrap(), back.predict(10, &inputs).await.unwrap()) });
    assert_eq!(a, b, "the imported MLP computes exactly the same outputs");
    let reference: Value = serde_json::from_slice(&files["kiln_reference.json"]).unwrap();
    assert_eq!(reference["inputs"].as_array().unwrap().len(), 30, "every validation point, up to 64");
    assert_eq!(reference["outputs"][0].as_array().unwrap().len(), 2);

    let mut extra = files.clone();
    let st = SafeTensors::deserialize(&files["model.safetensors"]).unwrap();
    let bias = vec![0f32; 2];
    let mut views: Vec<(String, TensorView<'_>)> = st.tensors().into_iter().collect();
    views.push(("6.bias".into(), TensorView::new(Dtype::F32, vec![2], bytemuck::cast_slice(&bias)).unwrap()));
    extra.insert("model.safetensors".into(), safetensors::serialize(views, None).unwrap());
    refused(&extra, "model.safetensors", "tensor `6.bias`: the MLP of kiln_config has no such layer");
    let mut narrow = files.clone();
    edit_tensors(&mut narrow, |name, v| Some(if name == "2.bias" { v[..2].to_vec() } else { v }));
    refused(&narrow, "model.safetensors", "Kiln needs [3]");
    let mut llama = files;
    edit_json(&mut llama, "kiln_config.json", |k| k["kiln_config"] = serde_json::to_value(llama_run().cfg).unwrap());
    refused(&llama, "kiln_config.json: kiln_config", "holds a Llama");
}

#[test]
fn the_transformers_fixture_imports_with_transformers_logits_and_greedy_text() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hf-foreign");
    let files: Files = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    let s = Session::from_export(gpu(), &files).unwrap();
    let ModelConfig::Llama(llama) = s.model() else { panic!("a Llama") };
    assert_eq!((llama.vocab, llama.d_model, llama.context, llama.rope_theta, llama.norm_eps), (48, 32, 64, 500.0, 1e-6), "Transformers' fields");
    let corpus = s.data.corpus().unwrap();
    let tokenizer: Value = serde_json::from_slice(&files["tokenizer.json"]).unwrap();
    let file_id = |c: char| tokenizer["model"]["vocab"][c.to_string()].as_u64().unwrap() as usize;
    let reference: Value = serde_json::from_slice(&files["transformers_logits.json"]).unwrap();
    let mut worst = 0f64;
    for case in reference["prompts"].as_array().unwrap() {
        let prompt = case["prompt"].as_str().unwrap();
        let mut window = corpus.encode(prompt).unwrap();
        let n = window.len();
        window.resize(llama.context, 0);
        let logits = pollster::block_on(s.predict(1, &window)).unwrap();
        for (pos, row) in case["logits"].as_array().unwrap().iter().enumerate().take(n) {
            for (kiln_id, &c) in corpus.chars.iter().enumerate() {
                let want = row[file_id(c)].as_f64().unwrap();
                worst = worst.max((logits[pos * llama.vocab + kiln_id] as f64 - want).abs());
            }
        }
        let greedy =
            pollster::block_on(s.generate(prompt, &GenerateOptions { max_tokens: 24, temperature: 0.0, top_k: 1, ..GenerateOptions::default() })).unwrap();
        assert_eq!(greedy, case["greedy"].as_str().unwrap(), "greedy continuation of {prompt:?}");
    }
    // Kiln computes in f32 (Transformers' figures are float64 with f32 RoPE tables).
    assert!(worst <= 1e-4, "logits within 1e-4 of Transformers', worst {worst:e}");
    println!("fixture: Kiln's logits within {worst:.2e} of Transformers'");
}
