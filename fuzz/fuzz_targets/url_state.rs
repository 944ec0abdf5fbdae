//! The URL-state decoder on arbitrary strings: it may refuse, never panic.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = kiln::share::decode(text);
    }
});
