//! A training step's GPU time by kernel: each dispatch of the step timed alone (repeated in one
//! pass, so it includes each dispatch's launch and barrier latency) and summed by entry point.
//! `kiln bench` measures it natively, `profileStep` (src/web_bench.rs) in the browser's engine,
//! so the two engines' tables line up row by row.

use serde::Serialize;

/// GPU time of one kind of dispatch within a training step.
#[derive(Debug, Serialize)]
pub struct ProfileEntry {
    pub preset: String,
    pub entry: String,
    pub dispatches: usize,
    pub us_per_step: f64,
}

/// Adds one dispatch of `entry`, which took `secs`, to its row of `profile`.
pub fn add(profile: &mut Vec<ProfileEntry>, preset: &str, entry: &str, secs: f64) {
    match profile.iter_mut().find(|e| e.entry == entry) {
        Some(e) => {
            e.dispatches += 1;
            e.us_per_step += secs * 1e6;
        }
        None => profile.push(ProfileEntry { preset: preset.into(), entry: entry.into(), dispatches: 1, us_per_step: secs * 1e6 }),
    }
}

/// The costliest entry points first.
pub fn sort(profile: &mut [ProfileEntry]) {
    profile.sort_by(|a, b| b.us_per_step.total_cmp(&a.us_per_step));
}
