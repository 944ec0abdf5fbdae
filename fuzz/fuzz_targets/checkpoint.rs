//! The checkpoint loader on arbitrary bytes: it may refuse, never panic or over-allocate.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(decoded) = kiln::session::checkpoint::decode(data, None) {
        assert!(decoded.flat[0].len() * 4 <= data.len() * 4 + 4096 * 64);
    }
});
