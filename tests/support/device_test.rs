//! `device_test!`: the one macro every device suite uses. A test body runs natively (pollster,
//! wgpu on the best Vulkan adapter) and in headless Chromium (wasm-bindgen-test, the browser's
//! WebGPU), the same code on both.
//!   device_test!(name, body)          body: async fn()
//!   device_test!(name, body, gpu)     body: async fn(&Gpu), on a fresh device
//!   device_test!(name, body, checks)  body: async fn(&Gpu, &mut Checks) of the kernel suite;
//!                                     its checks are counted and reported

#[macro_export]
macro_rules! device_test {
    ($name:ident, $body:path) => {
        $crate::device_test!(@both $name, $body());
    };
    ($name:ident, $body:path, gpu) => {
        $crate::device_test!(@both $name, async {
            let gpu = kiln::Gpu::new().await.expect("a GPU adapter");
            $body(&gpu).await
        });
    };
    ($name:ident, $body:path, checks) => {
        $crate::device_test!(@both $name, async {
            let gpu = $crate::common::gpu().await;
            let mut checks = $crate::common::Checks::default();
            $body(&gpu, &mut checks).await;
            checks.report(stringify!($name));
        });
    };
    (@both $name:ident, $future:expr) => {
        #[cfg(not(target_arch = "wasm32"))]
        #[test]
        fn $name() {
            pollster::block_on($future)
        }

        #[cfg(target_arch = "wasm32")]
        #[wasm_bindgen_test::wasm_bindgen_test]
        async fn $name() {
            $future.await
        }
    };
}
