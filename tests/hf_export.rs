//! The Hugging Face export of a Llama, and its import back: every tensor under Transformers' name with Kiln's values
//! (the fused qkv split, up/gate renamed), the config, and a tokenizer whose vocabulary is the
//! text's characters. Transformers itself loads such a folder in bench/hf_check.py (on the GPU
//! machine, which has it; figures in bench/RESULTS.md).

use kiln::config::{DataConfig, PointData};
use kiln::data::PointTask;
use kiln::kernels::elementwise::Activation;
use kiln::model::mlp::MlpConfig;
use kiln::model::ModelConfig;
use kiln::session::Session;
use kiln::Gpu;
use std::collections::HashMap;

use safetensors::tensor::{Dtype, TensorView};
use safetensors::SafeTensors;

#[path = "support/export_folders.rs"]
mod export_folders;
use export_folders::{edit_json, text_llama};

fn session(model: ModelConfig, data: DataConfig) -> Session {
    export_folders::session(model, data, 8)
}

#[test]
fn a_llama_exports_as_a_transformers_folder() {
    let mut s = text_llama(2, 8);
    s.train(3).unwrap();
    pollster::block_on(async {
        let files = s.export_hf().await.unwrap();
        let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "config.json",
                "generation_config.json",
                "model.safetensors",
                "tokenizer.json",
                "tokenizer_config.json",
                "train.txt",
                "validation.txt",
                "train.py"
            ]
        );
        let file = |name: &str| String::from_utf8(files.iter().find(|(n, _)| *n == name).unwrap().1.clone()).unwrap();
        let corpus = s.data.corpus().unwrap();
        assert_eq!(file("train.txt") + &file("validation.txt"), corpus.decode(&corpus.tokens), "the two splits are the run's text");
        assert_eq!(file("train.txt").chars().count(), corpus.split);
        let json = |name: &str| serde_json::from_slice::<serde_json::Value>(&files.iter().find(|(n, _)| *n == name).unwrap().1).unwrap();
        let config = json("config.json");
        for (key, want) in [
            ("model_type", "\"llama\""),
            ("hidden_size", "16"),
            ("intermediate_size", "32"),
            ("num_hidden_layers", "2"),
            ("num_attention_heads", "2"),
            ("num_key_value_heads", "2"),
            ("vocab_size", "40"),
            ("tie_word_embeddings", "false"),
            ("hidden_act", "\"silu\""),
        ] {
            assert_eq!(config[key].to_string(), want, "config.json {key}");
        }
        let weights = s.gpu.read_f32(&s.params.weights).await.unwrap();
        let kiln = |name: &str| {
            let e = s.params.entries.iter().find(|e| e.spec.name == name).unwrap();
            weights[e.offset..e.offset + e.elements()].to_vec()
        };
        let st = SafeTensors::deserialize(&files[2].1).unwrap();
        assert_eq!(st.len(), 3 + 9 * 2);
        let hf = |name: &str| -> Vec<f32> { bytemuck::pod_collect_to_vec(st.tensor(name).unwrap_or_else(|_| panic!("{name} missing")).data()) };
        let qkv = kiln("blocks.1.qkv");
        assert_eq!(hf("model.layers.1.self_attn.q_proj.weight"), qkv[..256]);
        assert_eq!(hf("model.layers.1.self_attn.k_proj.weight"), qkv[256..512]);
        assert_eq!(hf("model.layers.1.self_attn.v_proj.weight"), qkv[512..]);
        // silu(up)·gate in Kiln is silu(gate_proj)·up_proj in Transformers.
        assert_eq!(hf("model.layers.0.mlp.gate_proj.weight"), kiln("blocks.0.up"));
        assert_eq!(hf("model.layers.0.mlp.up_proj.weight"), kiln("blocks.0.gate"));
        assert_eq!(hf("model.embed_tokens.weight"), kiln("wte"));
        assert_eq!(st.tensor("model.layers.0.mlp.down_proj.weight").unwrap().shape(), [16, 32]);
        let tokenizer = json("tokenizer.json");
        let vocab = tokenizer["model"]["vocab"].as_object().unwrap();
        assert_eq!(vocab.len(), corpus.chars.len());
        assert!(corpus.chars.iter().enumerate().all(|(i, c)| vocab[&c.to_string()] == i), "each character is its own token, id = its index");
        assert_eq!((tokenizer["model"]["merges"].as_array().unwrap().len(), tokenizer["decoder"]["type"].as_str()), (0, Some("Fuse")));
        let unused: Vec<u64> = (corpus.chars.len() as u64..40).collect();
        assert_eq!(json("generation_config.json")["suppress_tokens"], serde_json::json!(unused), "greedy never picks an id the text lacks");
    });
    let points = PointData { task: PointTask::Xor, points: 100, noise: 0.0, validation_fraction: 0.2, csv: None, standardize: false };
    let mlp = session(ModelConfig::Mlp(MlpConfig { input_dim: 2, hidden: vec![4], output_dim: 2, activation: Activation::Relu }), DataConfig::Points(points));
    let err = pollster::block_on(mlp.export_hf()).unwrap_err();
    assert!(err.to_string().contains("`model`") && err.to_string().contains("Llama"), "{err}");
}

/// The exported folder as the name → bytes map `from_hf` reads.
fn folder(s: &Session) -> HashMap<String, Vec<u8>> {
    pollster::block_on(s.export_hf()).unwrap().into_iter().map(|(n, b)| (n.to_string(), b)).collect()
}

#[test]
fn an_exported_folder_imports_back_exactly_and_what_kiln_cannot_hold_is_refused() {
    let mut s = text_llama(1, 8);
    s.train(4).unwrap();
    let good = folder(&s);
    let back = Session::from_hf(pollster::block_on(Gpu::new()).unwrap(), &good).unwrap();
    let window: Vec<u32> = (0..16).map(|i| i % 20).collect();
    let (a, b) = pollster::block_on(async { (s.predict(1, &window).await.unwrap(), back.predict(1, &window).await.unwrap()) });
    assert_eq!(a, b, "the imported run computes exactly the same logits");
    assert_eq!(back.step_count(), 4);

    let with_bias = {
        let st = SafeTensors::deserialize(&good["model.safetensors"]).unwrap();
        let bias = vec![0u8; 16 * 4];
        let mut views: Vec<(String, TensorView<'_>)> = st.tensors().into_iter().collect();
        views.push(("model.layers.0.self_attn.q_proj.bias".into(), TensorView::new(Dtype::F32, vec![16], &bias).unwrap()));
        safetensors::serialize(views, None).unwrap()
    };
    type Change = Box<dyn Fn(&mut HashMap<String, Vec<u8>>)>;
    let cases: Vec<(&str, Change, &str, &str)> = vec![
        (
            "a bias tensor",
            Box::new(move |f| drop(f.insert("model.safetensors".into(), with_bias.clone()))),
            "model.safetensors",
            "q_proj.bias`: biases are not supported",
        ),
        ("attention biases", Box::new(|f| edit_json(f, "config.json", |c| c["attention_bias"] = true.into())), "config.json: attention_bias", "biases"),
        (
            "grouped-query attention",
            Box::new(|f| edit_json(f, "config.json", |c| c["num_key_value_heads"] = 1.into())),
            "config.json: num_key_value_heads",
            "grouped-query attention is not supported",
        ),
        ("a vocabulary over 256", Box::new(|f| edit_json(f, "config.json", |c| c["vocab_size"] = 300.into())), "config.json: vocab_size", "at most 256"),
        (
            "another tokenizer",
            Box::new(|f| edit_json(f, "tokenizer.json", |t| t["model"]["merges"] = serde_json::json!(["t h"]))),
            "tokenizer.json: model.merges",
            "another tokenizer",
        ),
        (
            "a folder Kiln did not write, without its text",
            Box::new(|f| {
                edit_json(f, "config.json", |c| drop(c.as_object_mut().unwrap().remove("kiln_config")));
                f.remove("train.txt");
            }),
            "train.txt",
            "needs the text to train on",
        ),
        ("no weights", Box::new(|f| drop(f.remove("model.safetensors"))), "model.safetensors", "missing from the folder"),
    ];
    for (what, change, field, needle) in cases {
        let mut files = good.clone();
        change(&mut files);
        let err = Session::from_hf(pollster::block_on(Gpu::new()).unwrap(), &files).err().unwrap_or_else(|| panic!("{what}: accepted"));
        let named = matches!(&err, kiln::KilnError::InvalidInput { field: f, .. } if f == field);
        assert!(named && err.to_string().contains(needle), "{what}: {err}");
    }
}

#[test]
fn an_mlp_exports_as_a_pytorch_sequential_with_its_data() {
    let points = PointData { task: PointTask::Xor, points: 100, noise: 0.0, validation_fraction: 0.2, csv: None, standardize: false };
    let mut s =
        session(ModelConfig::Mlp(MlpConfig { input_dim: 2, hidden: vec![4, 3], output_dim: 2, activation: Activation::Tanh }), DataConfig::Points(points));
    s.train(3).unwrap();
    pollster::block_on(async {
        let files = s.export_torch().await.unwrap();
        assert_eq!(files.iter().map(|(n, _)| *n).collect::<Vec<_>>(), ["model.safetensors", "model.py", "data.csv", "kiln_config.json", "train.py"]);
        let st = SafeTensors::deserialize(&files[0].1).unwrap();
        let mut names = st.names();
        names.sort();
        assert_eq!(names, ["0.bias", "0.weight", "2.bias", "2.weight", "4.bias", "4.weight"]);
        let weights = s.gpu.read_f32(&s.params.weights).await.unwrap();
        let e = s.params.entries.iter().find(|e| e.spec.name == "layer1.weight").unwrap();
        let got: Vec<f32> = bytemuck::pod_collect_to_vec(st.tensor("2.weight").unwrap().data());
        assert_eq!(got, weights[e.offset..e.offset + 12], "Kiln's (out, in) weight is nn.Linear's");
        assert_eq!(st.tensor("2.weight").unwrap().shape(), [3, 4]);
        let py = String::from_utf8(files[1].1.clone()).unwrap();
        assert!(py.contains("nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))"), "{py}");
        let csv = String::from_utf8(files[2].1.clone()).unwrap();
        assert!(csv.starts_with("split,x0,x1,label\n"));
        assert_eq!(csv.lines().filter(|l| l.starts_with("train,")).count(), 80);
        assert_eq!(csv.lines().filter(|l| l.starts_with("validation,")).count(), 20);
    });
}
