//! `both!(name, body)`: one async test body run natively (pollster) and in headless Chromium
//! (wasm-bindgen-test), for the test files that take no `Gpu` argument.

#[macro_export]
macro_rules! both {
    ($name:ident, $body:ident) => {
        #[cfg(not(target_arch = "wasm32"))]
        #[test]
        fn $name() {
            pollster::block_on($body())
        }
        #[cfg(target_arch = "wasm32")]
        #[wasm_bindgen_test::wasm_bindgen_test]
        async fn $name() {
            $body().await
        }
    };
}
