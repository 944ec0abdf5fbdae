//! The config parser on arbitrary text: a valid config must survive a URL-state round trip.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(cfg) = kiln::config::SessionConfig::from_json(text) {
            if let Ok(state) = kiln::share::encode(&cfg) {
                kiln::share::decode(&state.state).expect("an encoded valid config decodes");
            }
        }
    }
});
