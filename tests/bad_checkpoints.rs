//! The checkpoint loader against a committed corpus of malformed files (tests/corpus/checkpoints,
//! regenerate with KILN_WRITE_CORPUS=1): each is rejected with its own message and the running
//! model is untouched. Files are built from a valid mlp-spiral checkpoint by targeted damage.

use std::path::PathBuf;

use kiln::presets::preset;
use kiln::session::checkpoint::CheckpointDtype;
use kiln::session::Session;
use kiln::Gpu;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/checkpoints")
}

fn session(name: &str) -> Session {
    let mut cfg = preset(name).unwrap();
    cfg.batch = 8;
    pollster::block_on(async { Session::with_gpu(Gpu::new().await.unwrap(), cfg).unwrap() })
}

/// (header JSON, data) of a safetensors file.
fn split(file: &[u8]) -> (String, Vec<u8>) {
    let n = u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
    (String::from_utf8(file[8..8 + n].to_vec()).unwrap(), file[8 + n..].to_vec())
}

fn join(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// (file name, bytes, text the error must contain); `good16` is the same run saved as F16.
fn cases(good: &[u8], good16: &[u8]) -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let (header, data) = split(good);
    let (header16, mut data16) = split(good16);
    // F32 tensors in a file whose metadata says f16, an unknown dtype, a NaN half (0x7E00).
    let f32_as_f16 = header.replacen("\"dtype\":\"f32\"", "\"dtype\":\"f16\"", 1);
    assert_ne!(f32_as_f16, header, "the metadata names the dtype");
    let f8 = header16.replacen("\"dtype\":\"f16\"", "\"dtype\":\"f8\"", 1);
    data16[..2].copy_from_slice(&[0x00, 0x7E]);
    let zero = "\"data_offsets\":[0,";
    let first_offsets = header.find(zero).expect("a tensor at offset 0");
    let mut overlap = header.clone();
    overlap.replace_range(first_offsets..first_offsets + zero.len(), "\"data_offsets\":[4,");
    // A well-formed F16 tensor (twice the elements in the same bytes): safetensors accepts it,
    // Kiln's own check must not.
    let wrong_dtype = header.replacen("\"dtype\":\"F32\",\"shape\":[16,2]", "\"dtype\":\"F16\",\"shape\":[16,4]", 1);
    assert_ne!(wrong_dtype, header, "layer0.weight (16, 2) should be in the header");
    let huge_shape = header.replacen("\"shape\":[16,2]", "\"shape\":[4294967296,4294967296]", 1);
    let not_kiln = header.replace("kiln-checkpoint-1", "something-else");
    let mut long_header = (u64::MAX / 2).to_le_bytes().to_vec();
    long_header.extend_from_slice(&good[8..]);
    let mut past_end = ((good.len() as u64) + 100).to_le_bytes().to_vec();
    past_end.extend_from_slice(&good[8..]);
    let mut bad_utf8 = good.to_vec();
    bad_utf8[12] = 0xFF;
    let mut trailing = good.to_vec();
    trailing.extend_from_slice(&[0; 12]);
    vec![
        ("header_longer_than_file.safetensors", past_end, "safetensors"),
        ("oversized_header.safetensors", long_header, "safetensors"),
        ("non_utf8_header.safetensors", bad_utf8, "safetensors"),
        ("overlapping_offsets.safetensors", join(&overlap, &data), "safetensors"),
        ("gapped_offsets.safetensors", join(&header, &data[..data.len() - 4]), "safetensors"),
        ("shape_overflow.safetensors", join(&huge_shape, &data), "safetensors"),
        ("wrong_dtype.safetensors", join(&wrong_dtype, &data), "F16"),
        ("trailing_bytes.safetensors", trailing, "safetensors"),
        ("not_a_kiln_checkpoint.safetensors", join(&not_kiln, &data), "format"),
        ("truncated.safetensors", good[..good.len() / 2].to_vec(), "safetensors"),
        ("f16_metadata_f32_tensors.safetensors", join(&f32_as_f16, &data), "this F16 checkpoint stores F16"),
        ("f16_unknown_dtype.safetensors", join(&f8, &split(good16).1), "`dtype` must be `f32` or `f16`"),
        ("f16_nan.safetensors", join(&header16, &data16), "non-finite"),
        ("f16_truncated.safetensors", good16[..good16.len() * 3 / 4].to_vec(), "safetensors"),
    ]
}

#[test]
fn every_bad_file_is_rejected_with_its_own_message() {
    let mut s = session("mlp-spiral");
    let good = pollster::block_on(s.save_checkpoint()).unwrap();
    let good16 = pollster::block_on(s.save_checkpoint_as(CheckpointDtype::F16)).unwrap();
    let dir = corpus_dir();
    if std::env::var_os("KILN_WRITE_CORPUS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes, _) in cases(&good, &good16) {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
        let xor = pollster::block_on(session("mlp-xor").save_checkpoint()).unwrap();
        std::fs::write(dir.join("other_model.safetensors"), xor).unwrap();
        let circles = pollster::block_on(session("mlp-circles").save_checkpoint_as(CheckpointDtype::F16)).unwrap();
        std::fs::write(dir.join("f16_other_model.safetensors"), circles).unwrap();
    }
    s.train(2).unwrap();
    let before = pollster::block_on(s.gpu.read_u32(&s.params.weights)).unwrap();
    let mut messages = std::collections::BTreeSet::new();
    let mut expected: Vec<(&str, &str)> = cases(&good, &good16).into_iter().map(|(n, _, e)| (n, e)).collect();
    expected.push(("other_model.safetensors", "different model"));
    expected.push(("f16_other_model.safetensors", "different model"));
    for (name, expect) in expected {
        let bytes = std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e} (regenerate with KILN_WRITE_CORPUS=1)"));
        let err = s.load_checkpoint(&bytes).expect_err(name).to_string();
        println!("{name}: {err}");
        assert!(err.contains("checkpoint") && err.contains(expect), "{name}: {err}");
        assert!(messages.insert(err.clone()), "{name}: same message as another case: {err}");
        assert_eq!(pollster::block_on(s.gpu.read_u32(&s.params.weights)).unwrap(), before, "{name}: model changed");
        assert_eq!(s.step_count(), 2, "{name}: step changed");
    }
}
