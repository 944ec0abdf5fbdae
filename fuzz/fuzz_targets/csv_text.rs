//! CSV points and user text on arbitrary input: parsed within their caps, or refused; text
//! windows never leave their split.
#![no_main]
use kiln::data::points::{from_csv, from_csv_any, MAX_POINTS};
use kiln::data::text::TextCorpus;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        for regression in [false, true] {
            if let Ok(points) = from_csv(text, regression) {
                assert!(points.len() <= MAX_POINTS && !points.is_empty());
                assert!(points.inputs.iter().all(|v| v.is_finite()));
            }
        }
        let _ = from_csv_any(text);
        if let Ok(corpus) = TextCorpus::new(text, 0.1) {
            assert!(corpus.tokens.iter().all(|&t| (t as usize) < corpus.vocab()));
            // Windows stay inside their split whenever the split check passes.
            let mut rng = kiln::rng::Rng::new(1);
            for context in [1, 7, 64] {
                if corpus.check_context(context, 0.1).is_ok() {
                    let (x, y, n) = corpus.windows(context, true, 8);
                    assert!(n >= 1 && x.len() == n * context && y.len() == n * context);
                    let (x, _) = corpus.batch(&mut rng, 3, context, false);
                    assert_eq!(x.len(), 3 * context);
                }
            }
            assert_eq!(corpus.decode(&corpus.encode(&corpus.decode(&corpus.tokens[..8])).unwrap()), corpus.decode(&corpus.tokens[..8]));
        }
    }
});
