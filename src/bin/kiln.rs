//! `kiln`: the native command line. `kiln info` shows the GPU Kiln would train on.

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("info") => match pollster::block_on(kiln::Gpu::new()) {
            Ok(gpu) => {
                let s = gpu.summary();
                println!("adapter: {}\nbackend: {}\ndriver:  {}", s.name, s.backend, s.driver);
                println!("max storage binding: {} MiB", s.max_storage_binding_bytes >> 20);
                std::process::ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                std::process::ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!("usage: kiln info    show the GPU adapter Kiln uses");
            std::process::ExitCode::from(2)
        }
    }
}

#[cfg(target_arch = "wasm32")]
fn main() {}
