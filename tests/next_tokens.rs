//! The next-token view: softmax and top-k on the GPU after one forward pass, checked against an
//! f64 softmax of the same logits (read back through `predict`).

use kiln::config::{DataConfig, SessionConfig, TextData};
use kiln::model::llama::LlamaConfig;
use kiln::model::ModelConfig;
use kiln::session::Session;
use kiln::Gpu;

fn tiny() -> Session {
    let text = "the quick brown fox jumps over the lazy dog. ".repeat(20);
    let cfg = SessionConfig {
        model: ModelConfig::Llama(LlamaConfig::new(32, 16, 2, 1, 16, 32)),
        data: DataConfig::Text(TextData { text: Some(text), validation_fraction: 0.1 }),
        batch: 4,
        optimizer: Default::default(),
        seed: 5,
    };
    pollster::block_on(async { Session::with_gpu(Gpu::new().await.expect("GPU"), cfg) }).expect("valid")
}

#[test]
fn top_k_probabilities_match_an_f64_softmax_of_the_logits() {
    let mut s = tiny();
    s.train(30).unwrap();
    pollster::block_on(async {
        let prompt = "the qu";
        let k = 4;
        let guesses = s.next_tokens(prompt, k).await.unwrap();
        assert_eq!(guesses.iter().map(|g| g.text.as_str()).collect::<String>(), prompt);
        let corpus = s.data.corpus().unwrap();
        let mut window = corpus.encode(prompt).unwrap();
        window.resize(16, 0);
        let logits = s.predict(1, &window).await.unwrap();
        for (p, g) in guesses.iter().enumerate() {
            let row: Vec<f64> = logits[p * 32..(p + 1) * 32].iter().map(|&x| x as f64).collect();
            let max = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = row.iter().map(|x| (x - max).exp()).sum();
            let prob = |c: &str| {
                let t = corpus.encode(c).map(|t| t[0] as usize).unwrap_or(usize::MAX);
                (row[t] - max).exp() / sum
            };
            assert_eq!(g.next.len(), k);
            let mut sorted: Vec<f64> = row.iter().map(|x| (x - max).exp() / sum).collect();
            sorted.sort_by(|a, b| b.total_cmp(a));
            for (j, guess) in g.next.iter().enumerate() {
                // An f32 softmax over 32 logits: each probability within 1e-6 (a few ulps of 1).
                assert!((guess.probability as f64 - prob(&guess.text)).abs() < 1e-6, "position {p}: {guess:?} vs {}", prob(&guess.text));
                assert!((guess.probability as f64 - sorted[j]).abs() < 1e-6, "position {p}: rank {j} is {} not {}", guess.probability, sorted[j]);
            }
        }
        let err = s.next_tokens(prompt, 0).await.unwrap_err();
        assert!(err.to_string().starts_with("invalid `k`"), "{err}");
        // A prompt longer than the context: its last 16 characters are the window.
        let long = s.next_tokens("the quick brown fox jumps", 2).await.unwrap();
        assert_eq!(long.iter().map(|g| g.text.as_str()).collect::<String>(), " brown fox jumps");
    });
}
