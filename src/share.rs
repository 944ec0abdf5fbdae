//! Shareable URL state: a config as URL-safe base64 of its JSON. Decoding is strict and
//! size-capped — the string comes from a stranger's link — and ends in the same validation as
//! any config. The user's own text or points travel in the link while it stays under the cap;
//! beyond it they are left out (a link must stay a link) and the config falls back to data
//! that needs no upload, which `Shared::dropped` names.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::Serialize;

use crate::config::{DataConfig, SessionConfig};
use crate::data::PointTask;
use crate::error::{ensure, KilnError, Result};
use crate::model::ModelConfig;

/// Longest URL state accepted or written, in characters: room for a few thousand characters of
/// the user's own text, well below what strains a URL.
pub const MAX_URL_STATE: usize = 8192;
/// Vocabulary of the shipped corpus (Genesis), which a link without the user's text trains on.
const GENESIS_VOCAB: usize = 60;

/// A config as URL state.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Shared {
    /// URL-safe base64 of the config's JSON (no padding): the page puts it after `#c=`.
    pub state: String,
    /// What was left out to keep the link short: "your text" or "your points"; null if nothing.
    pub dropped: Option<String>,
}

/// The config as URL state, with the user's data when it fits.
pub fn encode(cfg: &SessionConfig) -> Result<Shared> {
    let state = to_state(cfg)?;
    if state.len() <= MAX_URL_STATE {
        return Ok(Shared { state, dropped: None });
    }
    let (slim, dropped) = without_user_data(cfg);
    let state = to_state(&slim)?;
    ensure(state.len() <= MAX_URL_STATE, "config", || format!("is {} characters as URL state; at most {MAX_URL_STATE}", state.len()))?;
    Ok(Shared { state, dropped })
}

fn to_state(cfg: &SessionConfig) -> Result<String> {
    let json = serde_json::to_string(cfg).map_err(|e| KilnError::invalid("config", e.to_string()))?;
    Ok(URL_SAFE_NO_PAD.encode(json))
}

/// The config on data that needs no upload: Genesis for text, a generated set for points.
fn without_user_data(cfg: &SessionConfig) -> (SessionConfig, Option<String>) {
    let mut slim = cfg.clone();
    let dropped = match (&mut slim.data, &mut slim.model) {
        (DataConfig::Text(t), ModelConfig::Llama(l)) if t.text.is_some() => {
            t.text = None;
            l.vocab = l.vocab.max(GENESIS_VOCAB);
            Some("your text")
        }
        (DataConfig::Points(p), ModelConfig::Mlp(m)) if p.csv.is_some() => {
            p.csv = None;
            p.task = if m.input_dim == 1 { PointTask::Sine } else { PointTask::Spiral };
            m.output_dim = if m.input_dim == 1 { 1 } else { 2 };
            Some("your points")
        }
        _ => None,
    };
    (slim, dropped.map(String::from))
}

/// Parses URL state back into a validated config; every failure names what was wrong.
pub fn decode(state: &str) -> Result<SessionConfig> {
    ensure(state.len() <= MAX_URL_STATE, "url state", || format!("is {} characters; at most {MAX_URL_STATE}", state.len()))?;
    let bytes = URL_SAFE_NO_PAD.decode(state.trim()).map_err(|e| KilnError::invalid("url state", format!("is not URL-safe base64: {e}")))?;
    let json = std::str::from_utf8(&bytes).map_err(|_| KilnError::invalid("url state", "does not decode to UTF-8 text"))?;
    SessionConfig::from_json(json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::{preset, PRESETS};

    #[test]
    fn every_preset_round_trips_and_bad_state_is_named() {
        for (name, _) in PRESETS {
            let cfg = preset(name).unwrap();
            let shared = encode(&cfg).unwrap();
            assert_eq!((decode(&shared.state).unwrap(), shared.dropped), (cfg, None), "{name}");
        }
        assert!(decode("!!!").unwrap_err().to_string().contains("base64"));
        assert!(decode(&"A".repeat(MAX_URL_STATE + 1)).unwrap_err().to_string().contains("at most"));
        assert!(decode(&URL_SAFE_NO_PAD.encode([0xFF, 0xFE])).unwrap_err().to_string().contains("UTF-8"));
        let bad = URL_SAFE_NO_PAD.encode(r#"{"model":{"mlp":{"input_dim":2,"hidden":[0],"output_dim":2,"activation":"relu"}},"data":{"points":{"task":"spiral","points":100,"noise":0.1,"validation_fraction":0.2}},"batch":8}"#);
        assert!(decode(&bad).unwrap_err().to_string().contains("model.mlp.hidden[0]"));
    }

    #[test]
    fn user_data_travels_while_it_fits() {
        let mut cfg = preset("llama-tiny").unwrap();
        let DataConfig::Text(t) = &mut cfg.data else { unreachable!() };
        t.text = Some("a short text of my own, long enough to train on: abcdefghijklmnopqrstuvwxyz".into());
        if let ModelConfig::Llama(l) = &mut cfg.model {
            l.vocab = 30;
        }
        let small = encode(&cfg).unwrap();
        assert_eq!((decode(&small.state).unwrap(), small.dropped), (cfg.clone(), None));
        let DataConfig::Text(t) = &mut cfg.data else { unreachable!() };
        t.text = Some("abcdefghij".repeat(1000));
        let big = encode(&cfg).unwrap();
        let opened = decode(&big.state).unwrap();
        assert_eq!(big.dropped.as_deref(), Some("your text"));
        assert!(matches!((&opened.data, &opened.model), (DataConfig::Text(t), ModelConfig::Llama(l)) if t.text.is_none() && l.vocab == 60));
    }
}
