//! CSV points and user text on arbitrary input: parsed within their caps, or refused.
#![no_main]
use kiln::data::points::{from_csv, MAX_POINTS};
use kiln::data::text::TextCorpus;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        for regression in [false, true] {
            if let Ok(points) = from_csv(text, regression) {
                assert!(points.len() <= MAX_POINTS && !points.is_empty());
                assert!(points.inputs.iter().all(|v| v.is_finite()));
            }
        }
        if let Ok(corpus) = TextCorpus::new(text, 0.1) {
            assert!(corpus.tokens.iter().all(|&t| (t as usize) < corpus.vocab()));
            assert_eq!(corpus.decode(&corpus.encode(&corpus.decode(&corpus.tokens[..8])).unwrap()), corpus.decode(&corpus.tokens[..8]));
        }
    }
});
