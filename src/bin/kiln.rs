//! `kiln`: the native command line.
//!   kiln info                      the GPU adapter Kiln trains on
//!   kiln presets                   the presets `train` accepts
//!   kiln train <preset> [--steps N] [--seed S] [--save FILE] [--f16] [--short-conv] [--mixed] [--standardize] [--resume FILE]
//!   kiln quantize <checkpoint> [--bits 8|4] [--group 32|64|128] [--out FILE]
//!   kiln eval <checkpoint or quantized file>   validation loss (and a sample for a Llama)
//!   kiln export <checkpoint> --to DIR          a Llama as a Hugging Face folder, an MLP as PyTorch
//!   kiln import DIR [--save FILE]              such a folder (trained on anywhere) as a checkpoint

#[cfg(not(target_arch = "wasm32"))]
mod cli {
    use std::process::ExitCode;
    use std::time::Instant;

    use indicatif::{ProgressBar, ProgressStyle};
    use kiln::config::DataConfig;
    use kiln::model::llama::Precision;
    use kiln::model::ModelConfig;
    use kiln::presets::{preset, PRESETS};
    use kiln::quantize::QuantizeOptions;
    use kiln::session::checkpoint::CheckpointDtype;
    use kiln::session::export::IMPORT_FILES;
    use kiln::session::generate::GenerateOptions;
    use kiln::session::Session;
    use kiln::{Gpu, KilnError, Result};

    pub fn main() -> ExitCode {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let result = match args.first().map(String::as_str) {
            Some("info") => pollster::block_on(info()),
            Some("presets") => {
                PRESETS.iter().for_each(|(name, what)| println!("{name:16} {what}"));
                Ok(())
            }
            Some("config") => config(args.get(1).map(String::as_str)),
            Some("-h" | "--help" | "help") => {
                println!("kiln info | kiln presets | kiln train <preset> [--steps N] [--seed S] [--save FILE] [--f16] [--short-conv] [--mixed] [--standardize] [--resume FILE] | kiln quantize <checkpoint> [--bits 8|4] [--group 32|64|128] [--out FILE] | kiln eval <file> | kiln export <checkpoint> --to DIR | kiln import DIR [--save FILE] | kiln bench [--quick] [--scaling | --mixed] [--seconds S] [--json FILE]");
                Ok(())
            }
            Some("train") => pollster::block_on(train(&args[1..])),
            Some("bench") => bench(&args[1..]),
            Some("quantize") => pollster::block_on(quantize(&args[1..])),
            Some("eval") => pollster::block_on(eval(&args[1..])),
            Some("export") => pollster::block_on(export(&args[1..])),
            Some("import") => pollster::block_on(import(&args[1..])),
            _ => {
                eprintln!("usage: kiln info | kiln presets | kiln train <preset> [--steps N] [--seed S] [--save FILE] [--f16] [--short-conv] [--mixed] [--standardize] [--resume FILE] | kiln quantize <checkpoint> [--bits 8|4] [--group 32|64|128] [--out FILE] | kiln eval <file> | kiln export <checkpoint> --to DIR | kiln import DIR [--save FILE] | kiln bench [--quick] [--scaling | --mixed] [--seconds S] [--json FILE]");
                return ExitCode::from(2);
            }
        };
        match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        }
    }

    /// `kiln bench [--quick] [--scaling | --mixed] [--seconds S] [--json FILE]`
    fn bench(args: &[String]) -> Result<()> {
        only_options(
            args,
            &["--quick", "--scaling", "--mixed"],
            &["--seconds", "--json"],
            "kiln bench [--quick] [--scaling | --mixed] [--seconds S] [--json FILE]",
        )?;
        let quick = args.iter().any(|a| a == "--quick");
        let seconds = flag(args, "--seconds", 3)? as f64;
        let json = if args.iter().any(|a| a == "--scaling") {
            serde_json::to_string_pretty(&pollster::block_on(kiln::bench::scaling(seconds))?)
        } else if args.iter().any(|a| a == "--mixed") {
            serde_json::to_string_pretty(&pollster::block_on(kiln::bench::precision(quick, seconds))?)
        } else {
            let report = pollster::block_on(kiln::bench::run(quick, seconds))?;
            kiln::bench::print(&report);
            serde_json::to_string_pretty(&report)
        };
        if let Some(path) = text_flag(args, "--json")? {
            let json = json.map_err(|e| KilnError::invalid("--json", e.to_string()))?;
            std::fs::write(path, json).map_err(|e| KilnError::invalid("--json", format!("cannot write {path}: {e}")))?;
            println!("\nwrote {path}");
        }
        Ok(())
    }

    /// `kiln config <preset>`: the preset's config as JSON, to edit and share.
    fn config(name: Option<&str>) -> Result<()> {
        let name = name.ok_or_else(|| KilnError::invalid("preset", "name one: see `kiln presets`"))?;
        let cfg = preset(name).ok_or_else(|| KilnError::invalid("preset", format!("unknown preset `{name}`; see `kiln presets`")))?;
        println!("{}", serde_json::to_string_pretty(&cfg).map_err(|e| KilnError::invalid("config", e.to_string()))?);
        Ok(())
    }

    async fn info() -> Result<()> {
        let s = Gpu::new().await?.summary();
        println!("adapter: {}\nbackend: {}\ndriver:  {}", s.name, s.backend, s.driver);
        println!("max storage binding: {} MiB", s.max_storage_binding_bytes >> 20);
        Ok(())
    }

    /// Fails on anything in `args` but the given switches and `--name value` options (so that
    /// a mistyped or unsupported option, `--help` included, is not silently ignored).
    fn only_options(args: &[String], switches: &[&str], valued: &[&str], usage: &str) -> Result<()> {
        let mut rest = args.iter();
        while let Some(a) = rest.next() {
            if valued.contains(&a.as_str()) {
                rest.next();
            } else if !switches.contains(&a.as_str()) {
                return Err(KilnError::invalid("arguments", format!("unexpected `{a}`; usage: {usage}")));
            }
        }
        Ok(())
    }

    fn flag(args: &[String], name: &str, default: u64) -> Result<u64> {
        match text_flag(args, name)? {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| KilnError::invalid(name, format!("expects a whole number, got `{v}`"))),
        }
    }

    fn text_flag<'a>(args: &'a [String], name: &str) -> Result<Option<&'a str>> {
        match args.iter().position(|a| a == name) {
            None => Ok(None),
            Some(i) => args.get(i + 1).map(|v| Some(v.as_str())).ok_or_else(|| KilnError::invalid(name, "expects a value")),
        }
    }

    fn read_file(path: Option<&String>, what: &str) -> Result<Vec<u8>> {
        let path = path.ok_or_else(|| KilnError::invalid(what, "name a file"))?;
        std::fs::read(path).map_err(|e| KilnError::invalid(what, format!("cannot read {path}: {e}")))
    }

    /// `kiln quantize <checkpoint> [--bits 8|4] [--group 32|64|128] [--out FILE]`
    async fn quantize(args: &[String]) -> Result<()> {
        let usage = "kiln quantize <checkpoint> [--bits 8|4] [--group 32|64|128] [--out FILE]";
        let bytes = read_file(args.first(), "checkpoint")?;
        only_options(&args[1..], &[], &["--bits", "--group", "--out"], usage)?;
        let opts = QuantizeOptions { bits: flag(args, "--bits", 8)? as u32, group_size: flag(args, "--group", 64)? as usize };
        let mut session = Session::from_checkpoint(Gpu::new().await?, &bytes)?;
        let r = session.quantize(&opts).await?;
        println!("{}-bit, groups of {} (step {}):", r.bits, r.group_size, r.step);
        for t in &r.tensors {
            match &t.kept_because {
                None => println!("  {:24} {:>10} → {:>9} bytes  relative error {:.2e}", t.name, t.bytes_before, t.bytes_after, t.relative_error),
                Some(why) => println!("  {:24} kept in f32: {why}", t.name),
            }
        }
        let acc = |a: Option<f64>| a.map_or(String::new(), |a| format!(", accuracy {:.1}%", a * 100.0));
        println!("bytes {} → {}", r.bytes_before, r.bytes_after);
        println!("validation: full loss {:.4}{} · quantized loss {:.4}{}", r.full.loss, acc(r.full.accuracy), r.quantized.loss, acc(r.quantized.accuracy));
        let path = text_flag(args, "--out")?.map(str::to_string).unwrap_or_else(|| format!("quantized-{}bit.safetensors", r.bits));
        std::fs::write(&path, session.quantized_file()?).map_err(|e| KilnError::invalid("--out", format!("cannot write {path}: {e}")))?;
        println!("MLX-layout file: {path} (check it with `kiln eval {path}`)");
        Ok(())
    }

    /// `kiln eval <checkpoint or quantized file>`
    async fn eval(args: &[String]) -> Result<()> {
        let bytes = read_file(args.first(), "file")?;
        only_options(&args[1..], &[], &[], "kiln eval <checkpoint or quantized file>")?;
        let gpu = Gpu::new().await?;
        // A quantized file says so in its metadata; anything else is read as a checkpoint.
        let session = if kiln::mlx::is_quantized_file(&bytes) { Session::from_quantized(gpu, &bytes)? } else { Session::from_checkpoint(gpu, &bytes)? };
        let eval = session.evaluate(true).await?;
        match eval.accuracy {
            Some(acc) => println!("validation at step {}: loss {:.4}, accuracy {:.1}%", session.step_count(), eval.loss, acc * 100.0),
            None => println!("validation at step {}: mse {:.5}", session.step_count(), eval.loss),
        }
        if matches!(session.model(), ModelConfig::Llama(_)) {
            let opts = GenerateOptions { max_tokens: 200, temperature: 0.0, ..GenerateOptions::default() };
            // An empty prompt starts from a newline: every text (and sequence task) has one.
            println!("greedy sample:\n{}", session.generate("", &opts).await?);
        }
        Ok(())
    }

    /// `kiln export <checkpoint> --to DIR`: a Llama as a Hugging Face folder, an MLP as a
    /// PyTorch nn.Sequential, each with kiln_reference.json (Kiln's own outputs, to check against).
    async fn export(args: &[String]) -> Result<()> {
        let bytes = read_file(args.first(), "checkpoint")?;
        only_options(&args[1..], &[], &["--to"], "kiln export <checkpoint> --to DIR")?;
        let dir = text_flag(args, "--to")?.ok_or_else(|| KilnError::invalid("--to", "name the folder to write"))?;
        let session = Session::from_checkpoint(Gpu::new().await?, &bytes)?;
        let files = session.export_files().await?;
        std::fs::create_dir_all(dir).map_err(|e| KilnError::invalid("--to", format!("cannot create {dir}: {e}")))?;
        for (name, data) in &files {
            let path = std::path::Path::new(dir).join(name);
            std::fs::write(&path, data).map_err(|e| KilnError::invalid("--to", format!("cannot write {}: {e}", path.display())))?;
            println!("{:>10} bytes  {}", data.len(), path.display());
        }
        if matches!(session.model(), ModelConfig::Llama(_)) {
            println!("load it with: AutoModelForCausalLM.from_pretrained({dir:?}), AutoTokenizer.from_pretrained({dir:?})");
        } else {
            println!("run it with: python {dir}/model.py");
        }
        println!("train on with: torchrun --nproc_per_node=1 {dir}/train.py {dir} --steps 500 --out {dir}-2");
        Ok(())
    }

    /// `kiln import DIR [--save FILE]`: an export folder (trained on anywhere), or another
    /// char-level Hugging Face Llama with train.txt beside it, as a Kiln checkpoint (scored first).
    async fn import(args: &[String]) -> Result<()> {
        let dir = args.first().ok_or_else(|| KilnError::invalid("folder", "name the folder to import"))?;
        only_options(&args[1..], &[], &["--save"], "kiln import DIR [--save FILE]")?;
        let mut files = std::collections::HashMap::new();
        for name in IMPORT_FILES {
            if let Ok(bytes) = std::fs::read(std::path::Path::new(dir).join(name)) {
                files.insert(name.to_string(), bytes);
            }
        }
        let session = Session::from_export(Gpu::new().await?, &files)?;
        let eval = session.evaluate(true).await?;
        println!(
            "imported at step {}: validation loss {:.6}{}",
            session.step_count(),
            eval.loss,
            eval.accuracy.map_or(String::new(), |a| format!(", accuracy {:.1}%", a * 100.0))
        );
        let path = text_flag(args, "--save")?.map(str::to_string).unwrap_or_else(|| "imported.safetensors".into());
        std::fs::write(&path, session.save_checkpoint().await?).map_err(|e| KilnError::invalid("--save", format!("cannot write {path}: {e}")))?;
        println!("checkpoint: {path} (train on with `kiln train <preset> --resume {path}`, or load it in the page)");
        Ok(())
    }

    async fn train(args: &[String]) -> Result<()> {
        let name = args.first().ok_or_else(|| KilnError::invalid("preset", "name one: see `kiln presets`"))?;
        let mut cfg = preset(name).ok_or_else(|| KilnError::invalid("preset", format!("unknown preset `{name}`; see `kiln presets`")))?;
        only_options(
            &args[1..],
            &["--f16", "--short-conv", "--mixed", "--standardize"],
            &["--steps", "--seed", "--save", "--resume"],
            "kiln train <preset> [--steps N] [--seed S] [--save FILE] [--f16] [--short-conv] [--mixed] [--standardize] [--resume FILE]",
        )?;
        for option in ["--short-conv", "--mixed"] {
            if args.iter().any(|a| a == option) {
                let ModelConfig::Llama(llama) = &mut cfg.model else {
                    return Err(KilnError::invalid(option, "is a Llama option; this preset is an MLP"));
                };
                match option {
                    "--short-conv" => llama.short_conv = true,
                    _ => llama.precision = Precision::Mixed,
                }
            }
        }
        if args.iter().any(|a| a == "--standardize") {
            let DataConfig::Points(points) = &mut cfg.data else {
                return Err(KilnError::invalid("--standardize", "is an option of point data (MLPs); this preset trains on text"));
            };
            points.standardize = true;
        }
        let steps = flag(args, "--steps", 2000)?;
        cfg.seed = flag(args, "--seed", cfg.seed)?;
        let gpu = Gpu::new().await?;
        println!("training {name} on {} ({})", gpu.summary().name, gpu.summary().backend);
        let mut session = match text_flag(args, "--resume")? {
            Some(path) => {
                let bytes = std::fs::read(path).map_err(|e| KilnError::invalid("--resume", format!("cannot read {path}: {e}")))?;
                // The checkpoint's run, switched to mixed precision by --mixed.
                let mixed = cfg.model.mixed();
                Session::from_checkpoint_with(gpu, &bytes, |c| {
                    if let ModelConfig::Llama(l) = &mut c.model {
                        l.precision = if mixed { Precision::Mixed } else { l.precision };
                    }
                })?
            }
            None => Session::with_gpu(gpu, cfg)?,
        };
        println!("{} parameters, {} dispatches per step", session.params.count(), session.dispatches_per_step());
        let bar = ProgressBar::new(steps);
        bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} steps  {msg}  ETA {eta}").map_err(|e| KilnError::Gpu(e.to_string()))?);
        let start = Instant::now();
        let first_step = session.step_count();
        let tokens_per_step = (session.cfg.batch * session.model().rows_per_example()) as f64;
        let (mut last_loss, mut loss_scale) = (f32::NAN, String::new());
        let chunk = if matches!(session.model(), ModelConfig::Llama(_)) { 10 } else { 100 };
        while session.step_count() < steps {
            let n = chunk.min(steps - session.step_count());
            session.train(n)?;
            if let Some(m) = session.read_metrics().await?.last() {
                last_loss = m.loss;
                loss_scale = m.loss_scale.map(|s| format!("  loss scale {s}")).unwrap_or_default();
            }
            let rate = (session.step_count() - first_step) as f64 / start.elapsed().as_secs_f64();
            bar.set_position(session.step_count());
            bar.set_message(format!("loss {last_loss:.4}{loss_scale}  {rate:.1} steps/s  {:.0} tokens/s", rate * tokens_per_step));
        }
        bar.finish();
        let eval = session.evaluate(true).await?;
        match eval.accuracy {
            Some(acc) => println!("validation: loss {:.4}, accuracy {:.1}%", eval.loss, acc * 100.0),
            None => println!("validation: mse {:.5}", eval.loss),
        }
        if matches!(session.model(), ModelConfig::Llama(_)) {
            let opts = GenerateOptions { max_tokens: 300, seed: session.step_count(), ..GenerateOptions::default() };
            // Genesis starts from "And God said"; other texts (sequence tasks) from a newline.
            let prompt = if session.data.corpus().is_some_and(|c| c.encode("And God said").is_ok()) { "And God said" } else { "" };
            println!("sample:\n{prompt}{}", session.generate(prompt, &opts).await?);
        }
        let path = text_flag(args, "--save")?.map(str::to_string).unwrap_or_else(|| format!("{name}.safetensors"));
        let dtype = if args.iter().any(|a| a == "--f16") { CheckpointDtype::F16 } else { CheckpointDtype::F32 };
        std::fs::write(&path, session.save_checkpoint_as(dtype).await?).map_err(|e| KilnError::invalid("--save", format!("cannot write {path}: {e}")))?;
        println!("checkpoint: {path} (resume with --resume {path})");
        Ok(())
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    cli::main()
}

#[cfg(target_arch = "wasm32")]
fn main() {}
