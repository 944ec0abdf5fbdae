//! A real out-of-memory from the device: this test process caps its own address space
//! (setrlimit), so llvmpipe's allocation of a model that passes Kiln's up-front check fails for
//! real. The failure must arrive as the typed `OutOfMemory` error (no panic), and a smaller
//! config must then train normally. Native only: a browser cannot cap its own memory, and it
//! alone decides when to report it.

#![cfg(not(target_arch = "wasm32"))]

use kiln::model::ModelConfig;
use kiln::presets::preset;
use kiln::session::Session;
use kiln::{Gpu, KilnError};

/// Bytes of address space this process uses now.
fn address_space() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: u64 = status.lines().find_map(|l| l.strip_prefix("VmSize:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).expect("VmSize");
    kib * 1024
}

#[test]
fn device_out_of_memory_is_typed_and_a_smaller_model_runs_after() {
    pollster::block_on(async {
        // Start the device and compile every shader before capping, so only buffers can fail.
        let gpu = Gpu::new().await.expect("a GPU adapter");
        let headroom = 1u64 << 30;
        let cap = address_space() + headroom;
        let limit = libc::rlimit { rlim_cur: cap as libc::rlim_t, rlim_max: libc::RLIM_INFINITY };
        // SAFETY: setrlimit only reads the struct passed by reference.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0, "setrlimit failed");

        // About 2.7 GB of activations, each buffer within the binding limit: past the cap.
        let mut big = preset("mlp-spiral").unwrap();
        if let ModelConfig::Mlp(m) = &mut big.model {
            m.hidden = vec![1024; 4];
        }
        big.batch = 32 << 10;
        let result = Session::with_gpu(gpu, big);
        match result {
            Err(KilnError::OutOfMemory(message)) => println!("typed: {message}"),
            other => panic!("expected OutOfMemory, got {:?}", other.err()),
        }

        let mut small = preset("mlp-spiral").unwrap();
        small.batch = 16;
        let mut s = Session::with_gpu(Gpu::new().await.expect("a GPU adapter after OOM"), small).expect("a small model after OOM");
        s.train(20).unwrap();
        let losses = s.read_metrics().await.unwrap();
        assert_eq!(losses.len(), 20);
        assert!(losses.iter().all(|m| m.loss.is_finite()), "{losses:?}");
    });
}
