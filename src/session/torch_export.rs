//! An MLP run as a PyTorch model: model.safetensors holding the state dict of the matching
//! `nn.Sequential` (Linear layers at even indices, the activation between them, so keys are
//! "0.weight", "0.bias", "2.weight", …, each Linear's weight (out, in) as Kiln keeps it),
//! model.py defining that Sequential and loading the file, data.csv with every point of both
//! splits (a `split` column says which), kiln_config.json (Kiln's config and step, so
//! torch_import.rs can bring the folder back) and python/train.py, which keeps
//! training it with PyTorch (DistributedDataParallel under torchrun).

use std::fmt::Write;

use safetensors::tensor::{Dtype, TensorView};

use crate::data::points::Points;
use crate::data::scaling::InputScaling;
use crate::error::{KilnError, Result};
use crate::kernels::elementwise::Activation;
use crate::model::ModelConfig;
use crate::session::hf_export::{File, TRAIN_PY};
use crate::session::Session;

impl Session {
    /// The run as a PyTorch state dict with model.py and data.csv (see the module notes).
    pub async fn export_torch(&self) -> Result<Vec<File>> {
        let ModelConfig::Mlp(mlp) = &self.cfg.model else {
            return Err(KilnError::invalid("model", "a PyTorch nn.Sequential export needs an MLP run (a Llama exports as a Hugging Face folder)"));
        };
        let weights = self.gpu.read_f32(&self.params.weights).await?;
        let dims = mlp.layer_dims();
        let mut tensors = vec![];
        for (l, &(fan_in, out)) in dims.iter().enumerate() {
            for (part, shape) in [("weight", vec![out, fan_in]), ("bias", vec![out])] {
                let e = self.params.entry(&format!("layer{l}.{part}"));
                tensors.push((format!("{}.{part}", 2 * l), shape, &weights[e.offset..e.offset + e.elements()]));
            }
        }
        let views = tensors
            .iter()
            .map(|(name, shape, values)| {
                Ok((name.clone(), TensorView::new(Dtype::F32, shape.clone(), bytemuck::cast_slice(values)).map_err(|e| KilnError::Gpu(e.to_string()))?))
            })
            .collect::<Result<Vec<_>>>()?;
        let model = safetensors::serialize(views, None).map_err(|e| KilnError::Gpu(e.to_string()))?;
        let act = match mlp.activation {
            Activation::Relu => "nn.ReLU()",
            Activation::Silu => "nn.SiLU()",
            Activation::Tanh => "nn.Tanh()",
        };
        let layers: Vec<String> = dims.iter().map(|(i, o)| format!("nn.Linear({i}, {o})")).collect();
        let mut data = String::new();
        // data.csv holds the points as given; model.py standardizes them as Kiln does.
        let (train, validation) = (self.data.given_points(false), self.data.given_points(true));
        csv_header(&mut data, mlp.input_dim, train.is_some_and(|p| p.labels.is_empty()));
        for (split, points) in [("train", train), ("validation", validation)] {
            if let Some(p) = points {
                csv_rows(&mut data, split, p);
            }
        }
        // The scaling is recomputed from the config's points on import; it is here for readers.
        let kiln = serde_json::json!({ "kiln_config": self.cfg, "kiln_step": self.step, "kiln_input_scaling": self.data.scaling() });
        Ok(vec![
            ("model.safetensors", model),
            ("model.py", model_py(&layers.join(&format!(", {act}, ")), self.data.scaling()).into_bytes()),
            ("data.csv", data.into_bytes()),
            ("kiln_config.json", serde_json::to_vec_pretty(&kiln).expect("JSON values serialize")),
            ("train.py", TRAIN_PY.as_bytes().to_vec()),
        ])
    }
}

/// A run with standardized inputs gets an nn.Sequential subclass that standardizes its input
/// first (the state dict's keys stay the plain Sequential's).
fn standardized_py(scaling: Option<&InputScaling>) -> (String, &'static str) {
    let Some(s) = scaling else { return (String::new(), "nn.Sequential") };
    let list = |v: &[f32]| v.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>().join(", ");
    let text = format!(
        "# Kiln standardized the inputs (data.points.standardize): the network sees\n\
         # (x - INPUT_MEAN) / INPUT_STD, each column's mean and standard deviation on the training split.\n\
         INPUT_MEAN = [{}]\nINPUT_STD = [{}]\n\n\n\
         class Standardized(nn.Sequential):\n    \"\"\"nn.Sequential on the inputs as given: standardizes them first, as Kiln did.\"\"\"\n\n\
         \x20   def forward(self, x):\n\
         \x20       mean = torch.tensor(INPUT_MEAN, dtype=x.dtype, device=x.device)\n\
         \x20       std = torch.tensor(INPUT_STD, dtype=x.dtype, device=x.device)\n\
         \x20       return super().forward((x - mean) / std)\n\n\n",
        list(&s.mean),
        list(&s.std)
    );
    (text, "Standardized")
}

fn model_py(layers: &str, scaling: Option<&InputScaling>) -> String {
    let (standardized, net) = standardized_py(scaling);
    format!(
        "\"\"\"The MLP Kiln trained, as a PyTorch nn.Sequential (weights in model.safetensors, Kiln's values).\n\n\
         \x20   python model.py   # prints the model and its accuracy (or MSE) on each split of data.csv\n\"\"\"\n\
         import csv\nimport os\n\nimport torch\nfrom safetensors.torch import load_file\nfrom torch import nn\n\n\
         HERE = os.path.dirname(os.path.abspath(__file__))\n\n\n{standardized}\
         def model():\n    net = {net}({layers})\n    net.load_state_dict(load_file(os.path.join(HERE, \"model.safetensors\")))\n    return net.eval()\n\n\n\
         if __name__ == \"__main__\":\n    net = model()\n    print(net)\n    rows = list(csv.DictReader(open(os.path.join(HERE, \"data.csv\"))))\n\
         \x20   for split in (\"train\", \"validation\"):\n        part = [r for r in rows if r[\"split\"] == split]\n\
         \x20       xs = torch.tensor([[float(r[k]) for k in r if k.startswith(\"x\")] for r in part])\n\
         \x20       with torch.no_grad():\n            out = net(xs)\n\
         \x20       if \"label\" in part[0]:\n            labels = torch.tensor([int(r[\"label\"]) for r in part])\n\
         \x20           print(split, \"accuracy\", (out.argmax(1) == labels).double().mean().item())\n\
         \x20       else:\n            targets = torch.tensor([float(r[\"target\"]) for r in part])\n\
         \x20           print(split, \"mse\", ((out[:, 0].double() - targets.double()) ** 2).mean().item())\n"
    )
}

fn csv_header(out: &mut String, input_dim: usize, regression: bool) {
    let xs: Vec<String> = (0..input_dim).map(|i| format!("x{i}")).collect();
    let _ = writeln!(out, "split,{},{}", xs.join(","), if regression { "target" } else { "label" });
}

fn csv_rows(out: &mut String, split: &str, p: &Points) {
    for i in 0..p.len() {
        let xs: Vec<String> = p.inputs[i * p.input_dim..(i + 1) * p.input_dim].iter().map(|v| v.to_string()).collect();
        let y = if p.labels.is_empty() { p.targets[i].to_string() } else { p.labels[i].to_string() };
        let _ = writeln!(out, "{split},{},{y}", xs.join(","));
    }
}
