//! Named, ready-to-train configurations: what the page's preset menu and `kiln train <preset>`
//! offer. Every preset passes `SessionConfig::validate` (a test checks them all).

use crate::config::{DataConfig, PointData, SequenceData, SessionConfig, TextData};
use crate::data::sequence::SequenceTask;
use crate::data::PointTask;
use crate::kernels::elementwise::Activation;
use crate::model::llama::LlamaConfig;
use crate::model::mlp::MlpConfig;
use crate::model::ModelConfig;
use crate::optim::{OptimConfig, Schedule};

/// (name, description)
pub const PRESETS: &[(&str, &str)] = &[
    ("mlp-spiral", "2→16→16→2 ReLU MLP on two interleaved spirals, batch 512, AdamW"),
    ("mlp-circles", "2→8→2 tanh MLP on a ring around a disc"),
    ("mlp-xor", "2→8→8→2 ReLU MLP on the four XOR quadrants"),
    ("mlp-gaussians", "2→4→2 tanh MLP on two overlapping gaussian blobs"),
    ("mlp-sine", "1→32→32→1 tanh MLP regressing a sine wave with MSE"),
    ("mlp-piecewise", "1→32→32→1 ReLU MLP regressing a step-ramp-flat function with MSE"),
    ("llama-tiny", "char-level Llama: d_model 64, 2 layers, 4 heads, context 64, on Genesis (KJV)"),
    ("llama-reverse", "char-level Llama learning to reverse digit strings (`3141>1413`)"),
    ("llama-addition", "char-level Llama learning multi-digit addition (`123+45=168`)"),
    ("llama-small", "char-level Llama: d_model 256, 4 layers, 8 heads, SwiGLU 1024, context 128, batch 32"),
];

pub fn preset(name: &str) -> Option<SessionConfig> {
    if let Some(cfg) = llama_preset(name) {
        return Some(cfg);
    }
    let (task, hidden, act, batch, lr) = match name {
        "mlp-spiral" => (PointTask::Spiral, vec![16, 16], Activation::Relu, 512, 0.02),
        "mlp-circles" => (PointTask::Circles, vec![8], Activation::Tanh, 128, 0.03),
        "mlp-xor" => (PointTask::Xor, vec![8, 8], Activation::Relu, 128, 0.03),
        "mlp-gaussians" => (PointTask::Gaussians, vec![4], Activation::Tanh, 128, 0.03),
        "mlp-sine" => (PointTask::Sine, vec![32, 32], Activation::Tanh, 128, 0.01),
        "mlp-piecewise" => (PointTask::Piecewise, vec![32, 32], Activation::Relu, 128, 0.01),
        _ => return None,
    };
    let outputs = if task.is_regression() { 1 } else { 2 };
    Some(SessionConfig {
        model: ModelConfig::Mlp(MlpConfig { input_dim: task.input_dim(), hidden, output_dim: outputs, activation: act }),
        data: DataConfig::Points(PointData { task, points: 2000, noise: 0.03, validation_fraction: 0.2, csv: None, standardize: false }),
        batch,
        optimizer: OptimConfig { lr, ..OptimConfig::default() },
        seed: 1,
    })
}

fn llama_preset(name: &str) -> Option<SessionConfig> {
    let task = match name {
        "llama-reverse" => Some(SequenceTask::Reverse),
        "llama-addition" => Some(SequenceTask::Addition),
        _ => None,
    };
    let (d_model, layers, heads, hidden, context, batch, lr, steps) = match name {
        "llama-tiny" | "llama-reverse" | "llama-addition" => (64, 2, 4, 192, 64, 16, 3e-3, 600),
        "llama-small" => (256, 4, 8, 1024, 128, 32, 1e-3, 5000),
        _ => return None,
    };
    let schedule = Schedule::WarmupCosine { warmup_steps: steps / 20, total_steps: steps, min_lr_fraction: 0.1 };
    Some(SessionConfig {
        model: ModelConfig::Llama(LlamaConfig::new(if task.is_some() { 16 } else { 60 }, d_model, heads, layers, context, hidden)),
        data: match task {
            Some(task) => DataConfig::Sequence(SequenceData { task, examples: 5000, digits: 6, validation_fraction: 0.1 }),
            None => DataConfig::Text(TextData { text: None, validation_fraction: 0.1 }),
        },
        batch,
        optimizer: OptimConfig { lr, weight_decay: 0.1, beta2: 0.99, schedule, ..OptimConfig::default() },
        seed: 1,
    })
}

/// The scaling table's configs (`kiln bench --scaling`, the Dawn bench, and through their JSON
/// bench/torch_reference.py): llama-small's shape at d_model 128, 256, 512 and 1024 (4 layers,
/// context 128, batch 32, heads of 32 up to 256 and of 64 above, SwiGLU 4×), and mlp-spiral at
/// hidden widths 16, 64, 256 and 1024 (two hidden layers, batch 512).
pub fn scaling() -> Vec<(String, SessionConfig)> {
    let llama = preset("llama-small").expect("llama-small is a preset");
    let mlp = preset("mlp-spiral").expect("mlp-spiral is a preset");
    let mut out = vec![];
    for d in [128, 256, 512, 1024] {
        let mut cfg = llama.clone();
        if let ModelConfig::Llama(l) = &mut cfg.model {
            (l.d_model, l.heads, l.hidden) = (d, d / if d <= 256 { 32 } else { 64 }, 4 * d);
        }
        out.push((format!("llama-d{d}"), cfg));
    }
    for w in [16, 64, 256, 1024] {
        let mut cfg = mlp.clone();
        if let ModelConfig::Mlp(m) = &mut cfg.model {
            m.hidden = vec![w, w];
        }
        out.push((format!("mlp-w{w}"), cfg));
    }
    out
}
