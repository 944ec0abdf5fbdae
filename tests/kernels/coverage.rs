//! The coverage test: every `@compute` entry point in shaders/ is a registered `Kernel`, every
//! seed entry point is kept by name, and every registered kernel is verified against its f64
//! reference on the GPU by at least one check (collected by running every family's checks).

use std::collections::BTreeSet;

use kiln::kernels::{all_kernels, FAMILIES, SEED_ENTRY_POINTS};

use crate::common::{gpu, Checks};

/// Names of the functions marked `@compute` in a WGSL source.
fn compute_entry_points(source: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = source;
    while let Some(at) = rest.find("@compute") {
        rest = &rest[at..];
        if let Some(f) = rest.find("fn ") {
            let name: String = rest[f + 3..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            names.insert(name);
        }
        rest = &rest[1..];
    }
    names
}

#[test]
fn every_entry_point_is_registered_and_every_seed_name_kept() {
    let registered: BTreeSet<String> = all_kernels().iter().map(|k| k.entry.to_string()).collect();
    let mut in_shaders = BTreeSet::new();
    for family in FAMILIES {
        let entries = compute_entry_points(family.source);
        for k in all_kernels().iter().filter(|k| k.family.name == family.name) {
            assert!(entries.contains(k.entry), "{} is registered under {} but not defined there", k.entry, family.name);
        }
        in_shaders.extend(entries);
    }
    let unregistered: Vec<_> = in_shaders.difference(&registered).collect();
    assert!(unregistered.is_empty(), "entry points without a Kernel: {unregistered:?}");
    let missing: Vec<_> = SEED_ENTRY_POINTS.iter().filter(|e| !registered.contains(**e)).collect();
    assert!(missing.is_empty(), "seed entry points dropped: {missing:?}");
    assert_eq!(SEED_ENTRY_POINTS.len(), 33);
}

#[test]
fn every_kernel_has_a_gpu_vs_reference_check() {
    pollster::block_on(async {
        let mut all = Checks::default();
        // Each family's checks on a fresh device (some lower the grid limit).
        macro_rules! family {
            ($($module:ident :: $body:ident),* $(,)?) => {$(
                crate::$module::$body(&gpu().await, &mut all).await;
            )*};
        }
        family!(
            elementwise::run,
            elementwise::huge_silu,
            matmul::run,
            matmul::two_d_grid,
            matmul_swiglu::run,
            norm::run,
            softmax::run,
            loss::run,
            reduce::run,
            optimizer::run,
            rope::run,
            rope::decode_positions,
            attention::run,
            attention::two_d_grid,
            embedding::run,
            quant::run,
            conv::conv1d,
            conv::conv1d_shaped,
            sampling::top_k,
            sampling::sampling_statistics,
            metrics::run,
            inspect::run,
            mlp_fused::run,
        );
        let unchecked: Vec<&str> = all_kernels().iter().map(|k| k.entry).filter(|e| !all.entries.contains(e)).collect();
        assert!(unchecked.is_empty(), "kernels without a GPU-vs-reference check: {unchecked:?}");
        println!("coverage: {} kernels ({} seed entry points) verified by {} checks", all.entries.len(), SEED_ENTRY_POINTS.len(), all.count);
    });
}
