//! The matmul planner: which kernel (the 64, 128, lean or wide tile, or `matmul_small`) and how many
//! k chunks (split-K) a product gets, from its shape and the adapter. Measured on an H200
//! (bench/RESULTS.md); natively, `KILN_MATMUL_TILE` forces one tile and `KILN_MATMUL_SPLIT_TARGET` sets
//! the split's workgroup target, for A/B measurements.

use super::matmul::MatmulDesc;
use crate::gpu::Gpu;

/// k per workgroup-memory step of the 64-tile kernel; split chunks are multiples of it.
pub(super) const KT: usize = 16;

/// Workgroups a split product aims for: about two per multiprocessor of a large GPU (an
/// H200 has 132); a small GPU is full either way. `KILN_MATMUL_SPLIT_TARGET` overrides it
/// natively, for A/B measurements.
const SPLIT_TARGET_GROUPS: usize = 256;

/// Multiply-adds (m·n·k·batch) from which splitting is worth its extra dispatch.
const SPLIT_MIN_MACS: u64 = 1 << 26;

/// Most workgroups a GPU product planned on the 128 tile gets from a split: one wave of two a
/// multiprocessor on an H100 or H200 (132 each). llama-d512's dW qkv (48 tiles) split 6 ways
/// made 288, and a second wave of 24; split 5 ways (240) it went from 221 to 185–216 µs, and
/// llama-d512 from 283.6k / 284.5k to 287.3k / 288.4k tokens/s (H100, session 32). Applied
/// after the tile is chosen, so the lean and wide tiles' plans do not change.
const WAVE_128_GROUPS: usize = 264;

/// Shortest k chunk of a split: shorter ones spend more on the partials than they save.
const SPLIT_MIN_CHUNK: usize = 128;
/// A GPU's shortest k chunk for a product split on the 64 (or lean) tile, k < `LONG_K`:
/// chunks of 32 took mlp-w256 from 3,420 to 5,475 steps/s and llama-d128 from 351 to 396
/// (H100, session 25). Long weight gradients keep chunks of 128: more splits gained nothing
/// on llama-small and quadrupled the partials of its LM head's (4 tiles over k = 4096).
const SPLIT_MIN_CHUNK_64_GPU: usize = 32;
/// On a GPU, products from this many multiply-adds with fewer than `FEW_TILES` 64 tiles split
/// too: mlp-w256's (512, 256) × 256 products left most multiprocessors idle, walking k on 32
/// workgroups (≈ 39 µs each on an H100). Products with more tiles (llama-small's LM head, 64
/// tiles) measured ≈ 1% slower split.
const SPLIT_MIN_MACS_FEW_TILES: u64 = 1 << 24;
const FEW_TILES: usize = 64;
/// The 128 tile's shortest chunk of a long k (≥ `LONG_K`, as weight gradients over the tokens have):
/// llama-small's dW proj ((256, 256) over k = 4096) took 30.8 µs split 64 ways on it against
/// 44.3 split 32 ways on the 64 tile (H200).
const SPLIT_MIN_CHUNK_128: usize = 64;
/// A long k: every weight gradient over the tokens (k = batch · context, 4,096 for the Llama
/// presets), and also the longest forwards and input gradients (llama-d512's down projection,
/// k = 2,048, and its up projection's input gradient, k = 4,096).
const LONG_K: usize = 2048;

/// 128x128 output tiles from which the 128 kernel beats the 64 one without a split (measured
/// on an H200: 192 tiles of a (4096, 768) output already favour it).
const BIG_TILE_MIN_TILES: usize = 160;

/// Products up to this many multiply-adds, with k up to `small_max_k`, run on `matmul_small`
/// (one thread per output element): the forward and input-gradient products of tiny MLPs.
/// On a GPU a longer k (a weight gradient over the batch) is a serial loop per thread that
/// measured several times slower on an H200 than the split-K plan, so those keep it; on a CPU
/// adapter (llvmpipe) the plain loop wins there too (2.2× mlp-spiral steps/s).
const SMALL_MAX_MACS: u64 = 1 << 20;
const SMALL_MAX_K_GPU: usize = 64;
const SMALL_MAX_K_CPU: usize = 1024;
/// The `tile` that names `matmul_small` (in `MatmulDesc::tile` and `plan`).
pub const SMALL: usize = 1;
/// The `tile` that names `matmul_lean` (64x64 tiles of 64 threads, aligned products only).
pub const LEAN: usize = 2;

/// Workgroups of the 128 tile under which an aligned product runs on `matmul_lean` instead, on
/// GPUs: fewer than one per multiprocessor of an H200 (132) leaves some idle. llama-small's
/// projections (64 tiles) took 30.2 µs on the lean tile against 36.0 on the 128 one; its qkv
/// (192 tiles) 65.5 against 63.4, so it stays.
const LEAN_BELOW_GROUPS: usize = 132;

/// The `tile` that names `matmul_wide` (128x256 tiles, aligned f32 products only).
pub const WIDE: usize = 3;
/// Workgroups (wide tiles x splits) from which an aligned product the 128 tile would run takes
/// the wide tile instead, on GPUs. On an H200 (bench/RESULTS.md, session 14) it gained 5–7% on
/// 4096³ (512 tiles), 2048³ (128), llama-small's qkv (96) and up (128) products and its down
/// projection split 4 ways (32 tiles x 4); with 32 tiles unsplit it lost 40%.
const WIDE_MIN_GROUPS: usize = 96;
/// Workgroup memory `matmul_wide` declares: A 8 KiB + B 16 KiB.
const WIDE_STORAGE_BYTES: u32 = 24 * 1024;

/// Largest split-K scratch buffer, in elements (64 MiB).
const SPLIT_MAX_SCRATCH: u64 = 1 << 24;

/// Tile and k split for a product: (tile, splits, k_chunk). Measured on an H200 (bench/RESULTS.md):
/// enough output tiles → the 128 tile alone; few tiles and a long k (weight gradients, and
/// (tokens, 256) outputs with k ≥ 512) → the 128 tile split into chunks of ≥ 128 that bring
/// the workgroups to about SPLIT_TARGET_GROUPS (within one wave on a GPU), else the 64 tile split towards twice that
/// (chunks ≥ 128, or ≥ 32 on a GPU below LONG_K, where such products run on the lean tile
/// when aligned);
/// big products whose k is too short to split → the 128 tile alone; small ones (and batched
/// ones) → the 64 tile alone, except GPU products of few tiles, which split.
pub fn plan(d: &MatmulDesc, allow_split: bool, adapter: Adapter) -> (usize, usize, usize) {
    let forced = env_forced(d);
    let d = forced.as_ref().unwrap_or(d);
    let small_max_k = adapter.small_max_k();
    let tiles = |t: usize| d.m.div_ceil(t) * d.n.div_ceil(t) * d.batch;
    let split_target = split_target();
    // In u64: on wasm32 a usize overflows for the largest configs, which the fit check plans
    // before refusing them.
    let macs = d.m as u64 * d.n as u64 * d.k as u64 * d.batch as u64;
    // Split big products with few tiles, and small ones whose long k would run as one serial,
    // latency-bound loop: the weight gradients of tiny MLPs ((16, 16) outputs over k = 512),
    // and thin ones, a side under 16 (a wide MLP's first and last layers: (2, 1024) over the
    // batch), which leave a 64 tile mostly idle.
    let long_k = d.k >= 2 * SPLIT_MIN_CHUNK && (tiles(64) < 16 || d.m.min(d.n) < 16);
    let few_tiles = adapter == Adapter::Gpu && tiles(64) < FEW_TILES && macs >= SPLIT_MIN_MACS_FEW_TILES;
    let can_split = allow_split && d.batch == 1 && (macs >= SPLIT_MIN_MACS || long_k || few_tiles);
    let (tile, splits) = match (d.tile.or(env_tile()), d.splits) {
        (Some(t), Some(s)) => (t, s),
        (Some(t), None) if env_tile().is_some() && d.tile.is_none() => (t, 1),
        (Some(t), None) => (t, if can_split { split_target.div_ceil(tiles(t)) } else { 1 }),
        (None, forced) => {
            let s128 = split_target.div_ceil(tiles(128));
            let s64 = (2 * split_target).div_ceil(tiles(64));
            let small = macs <= SMALL_MAX_MACS && d.k <= small_max_k;
            let (t, s) = if small {
                (SMALL, 1)
            } else if tiles(128) >= BIG_TILE_MIN_TILES {
                (128, 1)
            } else if !can_split {
                (64, 1)
            } else if d.k / s128 >= SPLIT_MIN_CHUNK || (d.k >= LONG_K && d.k / s128 >= SPLIT_MIN_CHUNK_128) {
                (128, s128)
            } else if tiles(64) < split_target {
                (64, s64.min(d.k / adapter.split_min_chunk_64(d.k)).max(1))
            } else if adapter == Adapter::Gpu {
                // Big enough to split but k too short for chunks of SPLIT_MIN_CHUNK, with at
                // least 256 tiles of 64 (so ≥ 64 of 128): the 128 tile, unsplit. On an H200 a
                // (4096, 256) output over k = 256 took 42.7 µs on it against 50.4 on the 64 tile.
                // CPU adapters keep the 64 tile: with the 128 one there, the page's Llama
                // quantize report on SwiftShader no longer finished within its test's 60 s.
                (128, 1)
            } else {
                (64, 1)
            };
            (t, forced.unwrap_or(s))
        }
    };
    let tile = match tile {
        SMALL | LEAN | WIDE | 128 => tile,
        _ => 64,
    };
    let mut splits = if allow_split && d.batch == 1 { splits } else { 1 };
    // Chunks of at least 2 KT, a multiple of KT; the scratch stays bounded.
    splits = splits.clamp(1, d.k.div_ceil(2 * KT).clamp(1, 65_535));
    while splits > 1 && splits as u64 * d.m as u64 * d.n as u64 > SPLIT_MAX_SCRATCH {
        splits -= 1;
    }
    let k_chunk = d.k.div_ceil(splits).next_multiple_of(KT);
    let splits = d.k.div_ceil(k_chunk);
    // Products planned for the 64 tile (4x4 a thread), split or not, also go lean (8x8 a thread).
    let few = d.tile.is_none() && adapter == Adapter::Gpu && ((tile == 128 && tiles(128) * splits < LEAN_BELOW_GROUPS) || tile == 64) && !lean_off();
    // Many workgroups, unsplit, or split unless the product is a long weight gradient (k ≥
    // LONG_K over the tokens, A transposed): the wide tile. Long weight gradients split into ~128
    // workgroups measured level to 2% slower on it; long-k input gradients and forwards split in
    // two (llama-d512's up projection's input gradient, k = 4096, and its down projection, k =
    // 2048) took llama-d512 from 286.9k to 289.4k tokens/s (H200, session 31).
    let wide_pays = d.tile.is_none()
        && env_tile().is_none()
        && adapter == Adapter::Gpu
        && d.m.div_ceil(128) * d.n.div_ceil(256) * d.batch * splits >= WIDE_MIN_GROUPS
        && (splits == 1 || d.k < LONG_K || !d.trans_a);
    let tile = match tile {
        _ if (few || tile == LEAN) && lean_fits(d, k_chunk) => LEAN,
        LEAN => 128, // asked for, but the product is not one it takes
        WIDE | 128 if (tile == WIDE || wide_pays) && wide_fits(d, k_chunk) => WIDE,
        WIDE => 128, // asked for, but the product is not one it takes
        _ => tile,
    };
    match within_one_wave(tiles(128), splits, split_target) {
        // Fewer, longer chunks: a multiple of KT, as above.
        Some(fewer) if tile == 128 && adapter == Adapter::Gpu && d.tile.is_none() && d.splits.is_none() && env_tile().is_none() => {
            let k_chunk = d.k.div_ceil(fewer).next_multiple_of(KT);
            (tile, d.k.div_ceil(k_chunk), k_chunk)
        }
        _ => (tile, splits, k_chunk),
    }
}

/// The splits that keep a split product on the 128 tile within one wave, where rounding the
/// target up made more workgroups than that (`WAVE_128_GROUPS`, or the split target if higher);
/// None where it fits, or where one wave would leave fewer than two splits.
fn within_one_wave(tiles: usize, splits: usize, split_target: usize) -> Option<usize> {
    let wave = WAVE_128_GROUPS.max(split_target);
    let fewer = wave / tiles;
    (splits > 1 && tiles * splits > wave && fewer >= 2).then_some(fewer)
}

/// The 128 tile (and the lean one, on its 64 edge) skips its range checks when no tile or k step
/// reaches past the matrix.
pub fn aligned(d: &MatmulDesc, tile: usize, k_chunk: usize) -> bool {
    let (rows, cols) = match tile {
        LEAN => (64, 64),
        WIDE => (128, 256),
        _ => (128, 128),
    };
    (tile == 128 || tile == LEAN || tile == WIDE)
        && d.m.is_multiple_of(rows)
        && d.n.is_multiple_of(cols)
        && d.k.is_multiple_of(8)
        && k_chunk.is_multiple_of(8)
        && d.stride_a.is_multiple_of(4)
        && d.stride_b.is_multiple_of(4)
        && d.stride_c.is_multiple_of(4)
}

/// `matmul_lean` takes aligned products of f32 operands, one batch.
fn lean_fits(d: &MatmulDesc, k_chunk: usize) -> bool {
    !d.b_f16 && d.batch == 1 && aligned(d, LEAN, k_chunk)
}

/// `matmul_wide` takes aligned products of f32 operands (batched ones too).
fn wide_fits(d: &MatmulDesc, k_chunk: usize) -> bool {
    !d.b_f16 && aligned(d, WIDE, k_chunk)
}

/// Whether `gpu` allows `matmul_wide`'s workgroup memory (WebGPU's default limit is 16 KiB;
/// Kiln asks for the adapter's, which on GPUs is 32 KiB or more). Elsewhere the planned wide
/// tile runs as the 128 one, whose plan (splits, k chunks, alignment) it shares.
pub fn wide_allowed(gpu: &Gpu) -> bool {
    gpu.limits().max_compute_workgroup_storage_size >= WIDE_STORAGE_BYTES
}

/// `KILN_MATMUL_LEAN=0` natively keeps such products on the 128 tile, for A/B measurements.
fn lean_off() -> bool {
    #[cfg(not(target_arch = "wasm32"))]
    {
        std::env::var("KILN_MATMUL_LEAN").is_ok_and(|v| v == "0")
    }
    #[cfg(target_arch = "wasm32")]
    {
        false
    }
}

/// The kind of adapter a plan is for: some choices differ on CPU implementations of WebGPU
/// (llvmpipe, SwiftShader), which run a workgroup's threads as loops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adapter {
    Gpu,
    Cpu,
}

impl Adapter {
    pub fn of(gpu: &Gpu) -> Adapter {
        if gpu.on_cpu() {
            Adapter::Cpu
        } else {
            Adapter::Gpu
        }
    }

    /// The shortest k chunk of a product of this k split on the 64 (or lean) tile.
    fn split_min_chunk_64(self, k: usize) -> usize {
        match self {
            Adapter::Gpu if k < LONG_K => SPLIT_MIN_CHUNK_64_GPU,
            _ => SPLIT_MIN_CHUNK,
        }
    }

    /// The longest k `matmul_small` takes on this adapter.
    fn small_max_k(self) -> usize {
        match self {
            Adapter::Gpu => SMALL_MAX_K_GPU,
            Adapter::Cpu => SMALL_MAX_K_CPU,
        }
    }
}

fn split_target() -> usize {
    #[cfg(not(target_arch = "wasm32"))]
    {
        std::env::var("KILN_MATMUL_SPLIT_TARGET").ok().and_then(|v| v.parse().ok()).filter(|&t| t > 0).unwrap_or(SPLIT_TARGET_GROUPS)
    }
    #[cfg(target_arch = "wasm32")]
    {
        SPLIT_TARGET_GROUPS
    }
}

/// `KILN_PLAN_FORCE="m,n,k,trans_a,trans_b=tile,splits;..."` natively forces the tile (1 small,
/// 2 lean, 3 wide, 64, 128) and splits of the products of that shape (transposes 0 or 1), for
/// measuring one product's alternatives with `KILN_PROFILE_EACH` in an unchanged build. It
/// overrides a caller's own tile and splits too, batched products of the shape included; the
/// clamps below still apply. A product fused with its epilogue (`matmul_swiglu`) stays fused on
/// the 128 tile unless the force splits it or names the 64 or small tile. Entries that do not
/// parse are named once on stderr and ignored.
fn env_forced(d: &MatmulDesc) -> Option<MatmulDesc> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        static CHECKED: std::sync::Once = std::sync::Once::new();
        let spec = std::env::var("KILN_PLAN_FORCE").ok()?;
        let entries = || spec.split(';').filter(|e| !e.trim().is_empty());
        CHECKED.call_once(|| {
            for bad in entries().filter(|e| forced_entry(e).is_none()) {
                eprintln!("KILN_PLAN_FORCE: ignoring {bad:?} (expected m,n,k,trans_a,trans_b=tile,splits)");
            }
        });
        let key = [d.m, d.n, d.k, usize::from(d.trans_a), usize::from(d.trans_b)];
        entries().filter_map(forced_entry).find(|(shape, _)| *shape == key).map(|(_, [tile, splits])| MatmulDesc {
            tile: Some(tile),
            splits: Some(splits),
            ..*d
        })
    }
    #[cfg(target_arch = "wasm32")]
    {
        let _ = d;
        None
    }
}

/// One `KILN_PLAN_FORCE` entry: ([m, n, k, trans_a, trans_b], [tile, splits]).
#[cfg(not(target_arch = "wasm32"))]
fn forced_entry(entry: &str) -> Option<([usize; 5], [usize; 2])> {
    let numbers = |s: &str| s.split(',').map(|v| v.trim().parse::<usize>().ok()).collect::<Option<Vec<_>>>();
    let (shape, choice) = entry.split_once('=')?;
    Some((numbers(shape)?.try_into().ok()?, numbers(choice)?.try_into().ok()?))
}

/// `KILN_MATMUL_TILE=64|128|3` natively forces one tile (3: the wide one; no split) for A/B
/// measurements.
fn env_tile() -> Option<usize> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        std::env::var("KILN_MATMUL_TILE").ok().and_then(|v| v.parse().ok())
    }
    #[cfg(target_arch = "wasm32")]
    {
        None
    }
}
