//! The tiny Llama end to end on the GPU: it learns the shipped corpus far below ln(vocab), and
//! generates text from it.

use kiln::model::llama::Precision;
use kiln::model::ModelConfig;
use kiln::optim::Schedule;
use kiln::presets::preset;
use kiln::session::generate::GenerateOptions;
use kiln::session::Session;
use kiln::Gpu;

/// llama-tiny made small enough for llvmpipe: 8 sequences of 32 characters per step.
fn tiny() -> Session {
    let mut cfg = preset("llama-tiny").expect("preset");
    cfg.batch = 8;
    if let ModelConfig::Llama(l) = &mut cfg.model {
        l.context = 32;
    }
    cfg.optimizer.schedule = Schedule::WarmupCosine { warmup_steps: 10, total_steps: 150, min_lr_fraction: 0.1 };
    cfg.optimizer.lr = 1e-2;
    pollster::block_on(async { Session::with_gpu(Gpu::new().await.expect("GPU"), cfg).expect("valid") })
}

#[test]
fn llama_learns_genesis_below_2_5_nats_and_generates() {
    let mut s = tiny();
    pollster::block_on(async {
        let before = s.evaluate(true).await.unwrap();
        s.train(150).unwrap();
        let metrics = s.read_metrics().await.unwrap();
        let after = s.evaluate(true).await.unwrap();
        println!(
            "llama: val CE {:.3} -> {:.3} nats/char (ln 60 = {:.3}), train loss {:.3} -> {:.3}, {} dispatches/step",
            before.loss,
            after.loss,
            60f64.ln(),
            metrics[0].loss,
            metrics.last().unwrap().loss,
            s.dispatches_per_step()
        );
        assert!((before.loss - 60f64.ln()).abs() < 0.3, "an untrained model should be near uniform: {}", before.loss);
        assert!(after.loss < 2.5, "validation cross-entropy {} >= 2.5 nats/char", after.loss);

        let opts = GenerateOptions { max_tokens: 40, temperature: 0.8, top_k: 10, seed: 3, quantized: false };
        let text = s.generate("And God said", &opts).await.unwrap();
        println!("sample: And God said{text}");
        assert_eq!(text.chars().count(), 40);
        let corpus = s.data.corpus().unwrap();
        assert!(text.chars().all(|c| corpus.chars.contains(&c)));
        let greedy = GenerateOptions { temperature: 0.0, ..opts.clone() };
        assert_eq!(s.generate("And", &greedy).await.unwrap(), s.generate("And", &greedy).await.unwrap());
        assert!(s.generate("And Zeus ∆", &opts).await.unwrap_err().to_string().contains("prompt"));
        let bad = GenerateOptions { temperature: -1.0, ..opts };
        assert!(s.generate("And", &bad).await.unwrap_err().to_string().contains("temperature"));
    });
}

/// d_model 12 and SwiGLU 21: up's 252 weights end off the storage alignment, so gate starts
/// right after them at an unaligned offset (the two bind only as one (42, 12) matrix). Such a
/// model trains in both precisions, and its checkpoint holds exactly the weights it trained.
#[test]
fn llama_with_an_unaligned_gate_trains_and_checkpoints() {
    for precision in [Precision::Fp32, Precision::Mixed] {
        let mut cfg = preset("llama-tiny").expect("preset");
        cfg.batch = 4;
        if let ModelConfig::Llama(l) = &mut cfg.model {
            (l.d_model, l.heads, l.hidden, l.layers, l.context, l.precision) = (12, 2, 21, 1, 16, precision);
        }
        pollster::block_on(async {
            let mut s = Session::with_gpu(Gpu::new().await.expect("GPU"), cfg).expect("valid");
            let (up, gate) = (s.params.entry("blocks.0.up").offset, s.params.entry("blocks.0.gate").offset);
            let align = s.gpu.limits().min_storage_buffer_offset_alignment as usize / 4;
            assert_eq!(gate, up + 252, "{precision:?}: gate must follow up without padding");
            assert!(align < 8 || !gate.is_multiple_of(align), "{precision:?}: gate at {gate}, alignment {align}");
            assert!(s.params.entry("blocks.0.down").offset.is_multiple_of(align), "{precision:?}: down must start aligned");
            let before = s.evaluate(true).await.unwrap().loss;
            s.train(60).unwrap();
            let after = s.evaluate(true).await.unwrap().loss;
            println!("{precision:?} unaligned gate: val CE {before:.3} -> {after:.3}");
            assert!(after < before - 0.5, "{precision:?}: validation CE {before:.3} -> {after:.3}");
            let back = Session::from_checkpoint(Gpu::new().await.expect("GPU"), &s.save_checkpoint().await.unwrap()).unwrap();
            assert_eq!(back.evaluate(true).await.unwrap().loss, after, "{precision:?}: the checkpoint's weights evaluate the same");
        });
    }
}
