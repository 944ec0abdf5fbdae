//! Shareable URL state: a config as URL-safe base64 of its JSON. Decoding is strict and
//! size-capped — the string comes from a stranger's link — and ends in the same validation as
//! any config. The user's own text or CSV is not put in links (it can be a megabyte).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use crate::config::{DataConfig, SessionConfig};
use crate::error::{ensure, KilnError, Result};

/// Longest URL state accepted, in characters: far above any config, far below what strains a URL.
pub const MAX_URL_STATE: usize = 4096;

/// The config without user data, as URL-safe base64 (no padding).
pub fn encode(cfg: &SessionConfig) -> Result<String> {
    let mut shared = cfg.clone();
    match &mut shared.data {
        DataConfig::Points(p) => p.csv = None,
        DataConfig::Text(t) => t.text = None,
        DataConfig::Sequence(_) => {}
    }
    let json = serde_json::to_string(&shared).map_err(|e| KilnError::invalid("config", e.to_string()))?;
    let state = URL_SAFE_NO_PAD.encode(json);
    ensure(state.len() <= MAX_URL_STATE, "config", || format!("is {} characters as URL state; at most {MAX_URL_STATE}", state.len()))?;
    Ok(state)
}

/// Parses URL state back into a validated config; every failure names what was wrong.
pub fn decode(state: &str) -> Result<SessionConfig> {
    ensure(state.len() <= MAX_URL_STATE, "url state", || format!("is {} characters; at most {MAX_URL_STATE}", state.len()))?;
    let bytes = URL_SAFE_NO_PAD
        .decode(state.trim())
        .map_err(|e| KilnError::invalid("url state", format!("is not URL-safe base64: {e}")))?;
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
            assert_eq!(decode(&encode(&cfg).unwrap()).unwrap(), cfg, "{name}");
        }
        assert!(decode("!!!").unwrap_err().to_string().contains("base64"));
        assert!(decode(&"A".repeat(MAX_URL_STATE + 1)).unwrap_err().to_string().contains("at most"));
        assert!(decode(&URL_SAFE_NO_PAD.encode([0xFF, 0xFE])).unwrap_err().to_string().contains("UTF-8"));
        let bad = URL_SAFE_NO_PAD.encode(r#"{"model":{"mlp":{"input_dim":2,"hidden":[0],"output_dim":2,"activation":"relu"}},"data":{"points":{"task":"spiral","points":100,"noise":0.1,"validation_fraction":0.2}},"batch":8}"#);
        assert!(decode(&bad).unwrap_err().to_string().contains("mlp.hidden[0]"));
    }
}
