//! Rebuilding a run on a new device after the old one was lost, from the latest in-memory
//! snapshot (recovery.rs), and restoring a snapshot (also how a checkpoint is loaded).

use crate::error::Result;
use crate::gpu::{Command, Gpu};
use crate::rng::Rng;
use crate::session::recovery::{Recovered, Snapshot};
use crate::session::Session;

impl Session {
    /// Rebuilds this run on a newly acquired device from the latest snapshot (or from its
    /// seeded start when none has landed yet), after the device was lost. Metrics restart at
    /// the snapshot's step; steps after it are trained again, identically.
    pub async fn recover(&mut self) -> Result<Recovered> {
        let reason = self.gpu.lost().unwrap_or_else(|| "recovery was asked for; the device was not lost".into());
        let latest = self.snapshots.latest();
        let mut fresh = Session::with_gpu(Gpu::new().await?, self.cfg.clone())?;
        fresh.snapshots.set_every(self.snapshots.every());
        if let Some(snapshot) = latest {
            fresh.restore(&snapshot)?;
        }
        fresh.skipped_steps = self.skipped_steps;
        let report = Recovered { reason, lost_at: self.step, resumed_at: fresh.step };
        *self = fresh;
        Ok(report)
    }

    /// Uploads a snapshot's state and continues from its step.
    pub(super) fn restore(&mut self, snapshot: &Snapshot) -> Result<()> {
        let [w, m, v] = &*snapshot.state;
        self.gpu.write(&self.params.weights, w)?;
        self.gpu.write(&self.params.m, m)?;
        self.gpu.write(&self.params.v, v)?;
        // No step has run from this state yet: its last update is zero, its gradients too.
        self.gpu.write(&self.prev_weights, w)?;
        self.gpu.submit(&[Command::Clear(&self.params.grads)]);
        self.step = snapshot.step;
        self.rng = Rng::from_state(snapshot.rng);
        self.reset_metrics_cursor();
        if let Some(scaler) = &self.loss_scale {
            // Like a new run: the checkpoint or snapshot does not carry the loss scale.
            scaler.set(&self.gpu, crate::loss_scale::INITIAL_SCALE)?;
        }
        self.snapshots.set_latest(snapshot.clone());
        Ok(())
    }
}
