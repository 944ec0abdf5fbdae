//! Generates shader variants that WGSL, having no generics, cannot express once:
//! - attention_hd64.wgsl from attention_hd32.wgsl: the same kernels for head_dim <= 64, with
//!   16 vec4s per head vector, 16-token tiles (the same 256-vec4 workgroup tiles) and one key a
//!   step, so the per-thread arrays keep constant bounds and stay in registers.
//! - matmul_b16.wgsl from matmul.wgsl + matmul_small.wgsl + matmul_swiglu.wgsl: the same products
//!   with B stored as packed f16 pairs (mixed-precision weights), read through `mm_b_at` /
//!   `mm_b4_at`.
//!
//! Each substitution states how often its text must occur, so a change to a source that breaks
//! one fails the build here instead of compiling a half-renamed shader.
//!
//! Every shader (shaders/*.wgsl and the generated ones) is written to OUT_DIR/shaders/, which
//! src/kernels/mod.rs embeds. For the browser (wasm32) the copies drop comments, indentation and
//! blank lines: the page downloads the WGSL inside its wasm, and the comments are a third of it
//! (~20 KB gzipped). Native builds keep them, so a validation error natively quotes the commented
//! source; the browser tests run the stripped shaders the page ships.

use std::{env, fs, path::Path};

/// (from, to, how many times `from` must occur; 0 = at least once)
type Substitutions = &'static [(&'static str, &'static str, usize)];

const ATTENTION_HD64: Substitutions = &[
    ("const ATT_S4: u32 = 8u;", "const ATT_S4: u32 = 16u;", 1),
    ("const ATT_SROWS: u32 = 32u;", "const ATT_SROWS: u32 = 16u;", 1),
    ("const ATT_KEYS: u32 = 4u;", "const ATT_KEYS: u32 = 1u;", 1),
    ("array<vec4<f32>, 8>", "array<vec4<f32>, 16>", 9),
    ("ATT_SROWS", "ATT_SROWS_HD64", 0),
    ("ATT_S4", "ATT_S4_HD64", 0),
    ("ATT_KEYS", "ATT_KEYS_HD64", 0),
    ("attb_store4", "attb_store4_hd64", 0),
    ("_hd32", "_hd64", 0),
];

/// B's loads go through two accessors; everything else (A, C, tiles, split-K) is unchanged.
const B16_ACCESSORS: &str = "var<storage, read> mm_b4: array<vec2<u32>>;
// B is packed f16 pairs: element i is half i & 1 of word i >> 1; four halves per vec2<u32>.
fn mm_b_at(i: u32) -> f32 { return unpack2x16float(mm_b[i >> 1u])[i & 1u]; }
fn mm_b4_at(i: u32) -> vec4<f32> { let p = mm_b4[i]; return vec4<f32>(unpack2x16float(p.x), unpack2x16float(p.y)); }";

const MATMUL_B16: Substitutions = &[
    ("var<storage, read> mm_b: array<f32>;", "var<storage, read> mm_b: array<u32>; ", 1),
    ("var<storage, read> mm_b4: array<vec4<f32>>;", B16_ACCESSORS, 1),
    ("mm_b[off + col * mm.k + kg]", "mm_b_at(off + col * mm.k + kg)", 1),
    ("mm_b[off + kg * mm.n + col]", "mm_b_at(off + kg * mm.n + col)", 1),
    (
        "mm_b4[(s.b_off + (col0 + lid / 2u) * mm.k + k0 + (lid % 2u) * 4u) / 4u]",
        "mm_b4_at((s.b_off + (col0 + lid / 2u) * mm.k + k0 + (lid % 2u) * 4u) / 4u)",
        1,
    ),
    ("mm_b4[(s.b_off + (k0 + lid / 32u) * mm.n + col0) / 4u + lid % 32u]", "mm_b4_at((s.b_off + (k0 + lid / 32u) * mm.n + col0) / 4u + lid % 32u)", 1),
    ("fn matmul(", "fn matmul_b16(", 1),
    ("fn matmul_128(", "fn matmul_128_b16(", 1),
    ("fn matmul_128_aligned(", "fn matmul_128_aligned_b16(", 1),
    ("fn matmul_small(", "fn matmul_small_b16(", 1),
    ("fn matmul_128_swiglu_backward(", "fn matmul_128_swiglu_backward_b16(", 1),
];

fn generate(sources: &[&str], substitutions: Substitutions, out_name: &str, header: &str) {
    let mut wgsl = String::new();
    for path in sources {
        println!("cargo:rerun-if-changed={path}");
        wgsl.push_str(&fs::read_to_string(path).unwrap_or_else(|e| panic!("{path} is readable: {e}")));
    }
    for &(from, to, count) in substitutions {
        let found = wgsl.matches(from).count();
        assert!(found > 0 && (count == 0 || found == count), "build.rs: `{from}` occurs {found} times in {sources:?}, expected {count}");
        wgsl = wgsl.replace(from, to);
    }
    write_shader(out_name, &format!("{header}{wgsl}"));
}

/// Writes a shader to OUT_DIR/shaders/, without its comments when building for the browser.
fn write_shader(name: &str, wgsl: &str) {
    let dir = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("shaders");
    fs::create_dir_all(&dir).expect("OUT_DIR is writable");
    let browser = env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "wasm32");
    let text = if browser { strip_comments(name, wgsl) } else { wgsl.to_string() };
    fs::write(dir.join(name), text).expect("OUT_DIR is writable");
}

/// The WGSL without `//` comments, indentation and blank lines. WGSL has no string literals, so
/// `//` always starts a comment, and whitespace only separates tokens; block comments are
/// refused rather than parsed (none are used).
fn strip_comments(name: &str, wgsl: &str) -> String {
    assert!(!wgsl.contains("/*"), "build.rs: {name} has a block comment; use // comments");
    let lines = wgsl.lines().map(|l| l.split("//").next().unwrap_or("").trim()).filter(|l| !l.is_empty());
    lines.map(|l| format!("{l}\n")).collect()
}

/// data/genesis.txt's FNV-1a 64-bit hash as KILN_GENESIS_FNV1A, by which a build that fetches
/// the corpus (the page's) knows the file it is given (src/data/text.rs).
fn hash_genesis() {
    println!("cargo:rerun-if-changed=data/genesis.txt");
    let bytes = fs::read("data/genesis.txt").expect("data/genesis.txt is readable");
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    println!("cargo:rustc-env=KILN_GENESIS_FNV1A={hash:016x}");
}

fn main() {
    hash_genesis();
    println!("cargo:rerun-if-changed=shaders");
    for entry in fs::read_dir("shaders").expect("shaders/ is readable") {
        let path = entry.expect("shaders/ is readable").path();
        if path.extension().is_some_and(|e| e == "wgsl") {
            let name = path.file_name().and_then(|n| n.to_str()).expect("shader names are UTF-8");
            write_shader(name, &fs::read_to_string(&path).unwrap_or_else(|e| panic!("{} is readable: {e}", path.display())));
        }
    }
    generate(
        &["shaders/attention_hd32.wgsl"],
        ATTENTION_HD64,
        "attention_hd64.wgsl",
        "// attention_hd64.wgsl — GENERATED by build.rs from attention_hd32.wgsl (edit that file):\n// the same kernels for head_dim <= 64, 16 vec4s per head vector, 16-token tiles.\n",
    );
    generate(
        &["shaders/matmul.wgsl", "shaders/matmul_small.wgsl", "shaders/matmul_swiglu.wgsl"],
        MATMUL_B16,
        "matmul_b16.wgsl",
        "// matmul_b16.wgsl — GENERATED by build.rs from matmul.wgsl + matmul_small.wgsl + matmul_swiglu.wgsl\n// (edit those): the same products with B stored as packed f16 pairs.\n",
    );
}
