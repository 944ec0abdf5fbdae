//! In-memory snapshots for device-loss recovery. Every `every` steps a session copies its whole
//! state (weights and the optimizer's m and v) into mappable buffers, in the same queue as
//! training, and maps them. When the device is lost (driver reset, `destroy()`, the browser
//! reclaiming it), `Session::recover` (recover.rs) acquires a new device, rebuilds the run from
//! its config and uploads the latest snapshot; because data sampling and every kernel are
//! deterministic, the redone steps are the very same steps.
//!
//! When a snapshot reaches the CPU differs by platform. Natively the steps after a copy poll
//! for it without blocking, so it lands as soon as the GPU has run it, and at most `every`
//! steps plus the few the GPU runs behind the host are redone (waiting for it at once drained
//! the queue every `every` steps). The browser cannot poll: there the snapshot is taken when
//! metrics are read (at most once per `every` steps) and lands during that read, so at most
//! `every` steps plus the steps since the last read are redone (the page reads after every
//! ~150 ms chunk).

use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::gpu::{Gpu, Staging};
use crate::model::params::ParamStore;
use crate::rng::Rng;

/// Steps between two snapshots unless the session is told otherwise, for models of up to a
/// million parameters; see `default_every`.
pub const DEFAULT_SNAPSHOT_EVERY: u64 = 100;

/// 100 steps, and proportionally more for models over a million parameters, so copying the
/// state out (12 bytes per parameter) stays around 1% of training time: llama-small (3.3M
/// parameters, 40 MB a copy) snapshots every 400 steps.
pub fn default_every(parameters: usize) -> u64 {
    DEFAULT_SNAPSHOT_EVERY * (parameters as u64).div_ceil(1 << 20).max(1)
}

/// A run's whole state at the end of `step`, on the CPU.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub step: u64,
    /// The data sampler's state after `step`'s batches were drawn.
    pub rng: u64,
    /// Weights, optimizer m, optimizer v: each (P) in the flat parameter layout.
    pub state: Arc<[Vec<f32>; 3]>,
}

/// A copy on its way from the GPU: the parts mapped so far.
struct InFlight {
    step: u64,
    rng: u64,
    generation: u64,
    parts: [Option<Vec<f32>>; 3],
    failed: bool,
}

/// What the map callbacks share with the session.
#[derive(Default)]
struct Shared {
    latest: Option<Snapshot>,
    /// Bumped by `set_latest` (a checkpoint load, a recovery) so that a copy of the state
    /// before it, still in flight, never replaces it.
    generation: u64,
    in_flight: Option<InFlight>,
}

pub struct Snapshots {
    every: u64,
    /// (P) f32 each: weights, m, v on their way to the CPU.
    staging: [Staging; 3],
    /// The step of the last copy started (or restored).
    last: u64,
    shared: Arc<Mutex<Shared>>,
}

/// What `recover` did: why the device went, the step training had reached, and the step it
/// resumes from (the latest snapshot's).
///
/// Steps after `resumedAt` are trained again, identically.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Recovered {
    /// Why the device was lost.
    pub reason: String,
    /// The step training had reached.
    #[cfg_attr(test, ts(type = "number"))]
    pub lost_at: u64,
    /// The snapshot's step, where training continues.
    #[cfg_attr(test, ts(type = "number"))]
    pub resumed_at: u64,
}

impl Snapshots {
    pub fn new(gpu: &Gpu, params: &ParamStore) -> Snapshots {
        let staging = ["weights", "optimizer m", "optimizer v"].map(|name| Staging::new(gpu, name, params.weights.bytes()));
        Snapshots { every: default_every(params.count()), staging, last: 0, shared: Arc::default() }
    }

    pub fn every(&self) -> u64 {
        self.every
    }

    /// Snapshot every `every` steps; 0 turns snapshots off.
    pub fn set_every(&mut self, every: u64) {
        self.every = every;
    }

    /// The latest complete snapshot, if one has reached the CPU.
    pub fn latest(&self) -> Option<Snapshot> {
        self.lock().latest.clone()
    }

    /// Makes `snapshot` the latest; a copy still in flight from before is dropped when it lands.
    pub fn set_latest(&mut self, snapshot: Snapshot) {
        self.last = snapshot.step;
        let mut shared = self.lock();
        shared.generation += 1;
        shared.latest = Some(snapshot);
    }

    /// Natively, called after each step: every `every`-th step copies the state out and asks
    /// for it to be mapped; the steps after it poll, without waiting, until it has landed,
    /// which is as soon as the GPU has run the copy. (Waiting for it drained the queue every
    /// `every` steps: mlp-spiral spent about a fifth of its host time there.)
    pub fn after_step(&mut self, gpu: &Gpu, params: &ParamStore, step: u64, rng: &Rng) {
        if cfg!(target_arch = "wasm32") || self.every == 0 {
            return;
        }
        if step.is_multiple_of(self.every) {
            self.capture(gpu, params, step, rng);
        } else if self.lock().in_flight.is_some() {
            gpu.poll();
        }
    }

    /// In the browser, called by each metrics read before it waits: when `every` steps have
    /// passed since the last snapshot, starts one, which lands while the read waits.
    pub fn before_read(&mut self, gpu: &Gpu, params: &ParamStore, step: u64, rng: &Rng) {
        if cfg!(target_arch = "wasm32") && self.every > 0 && step >= self.last + self.every {
            self.capture(gpu, params, step, rng);
        }
    }

    /// Copies the state into the staging buffers and maps them; the callbacks make it the
    /// latest snapshot. Skipped while the previous copy is still in flight.
    fn capture(&mut self, gpu: &Gpu, params: &ParamStore, step: u64, rng: &Rng) {
        {
            let mut shared = self.lock();
            if shared.in_flight.is_some() {
                return;
            }
            let generation = shared.generation;
            shared.in_flight = Some(InFlight { step, rng: rng.state(), generation, parts: [None, None, None], failed: false });
        }
        self.last = step;
        let [w, m, v] = &self.staging;
        Staging::copy_in(gpu, &[(&params.weights, w), (&params.m, m), (&params.v, v)]);
        for (part, staging) in self.staging.iter().enumerate() {
            let shared = self.shared.clone();
            staging.map(move |bytes| {
                let words = bytes.map(|b| bytemuck::cast_slice::<u8, f32>(&b).to_vec());
                land(&mut shared.lock().unwrap_or_else(|p| p.into_inner()), part, words);
            });
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One mapped part arrived (None: its map failed). The last part makes the copy the latest
/// snapshot, unless a part failed (a device lost mid-copy) or the state was replaced since (a
/// checkpoint load, a recovery).
fn land(shared: &mut Shared, part: usize, words: Option<Vec<f32>>) {
    let Some(copy) = shared.in_flight.as_mut() else { return };
    copy.failed |= words.is_none();
    copy.parts[part] = words.or(Some(vec![]));
    if copy.parts.iter().any(Option::is_none) {
        return;
    }
    let Some(done) = shared.in_flight.take() else { return };
    if !done.failed && done.generation == shared.generation {
        let [w, m, v] = done.parts.map(Option::unwrap_or_default);
        shared.latest = Some(Snapshot { step: done.step, rng: done.rng, state: Arc::new([w, m, v]) });
    }
}
