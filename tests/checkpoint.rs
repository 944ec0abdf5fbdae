//! Checkpoints: a round trip is bit-exact, a loaded run continues with exactly the losses of an
//! uninterrupted one (all reductions are deterministic), and a truncated, corrupt or
//! mismatched file is rejected with a clear error while the running model stays untouched.

use kiln::presets::preset;
use kiln::session::checkpoint::{header, CheckpointDtype};
use kiln::session::Session;
use kiln::Gpu;
use safetensors::SafeTensors;

/// A run of preset `name` with `batch` examples a step (llvmpipe steps through 4 sequences of
/// llama-tiny in well under a second; the preset's 16 take seconds).
fn session(name: &str, batch: usize) -> Session {
    let mut cfg = preset(name).expect("preset");
    cfg.batch = batch;
    pollster::block_on(async { Session::with_gpu(Gpu::new().await.expect("GPU"), cfg).expect("valid") })
}

/// Same tensors (names, shapes, bytes) and metadata; the header's key order may differ.
fn same_contents(a: &[u8], b: &[u8]) -> bool {
    let (ta, tb) = (SafeTensors::deserialize(a).unwrap(), SafeTensors::deserialize(b).unwrap());
    let (ma, mb) = (SafeTensors::read_metadata(a).unwrap().1, SafeTensors::read_metadata(b).unwrap().1);
    let mut names = ta.names();
    names.sort();
    let mut names_b = tb.names();
    names_b.sort();
    names == names_b
        && ma.metadata() == mb.metadata()
        && names.iter().all(|n| {
            let (x, y) = (ta.tensor(n).unwrap(), tb.tensor(n).unwrap());
            x.shape() == y.shape() && x.data() == y.data()
        })
}

fn weights(s: &Session) -> Vec<u32> {
    pollster::block_on(s.gpu.read_u32(&s.params.weights)).unwrap()
}

#[test]
fn round_trip_is_bit_exact_and_training_continues_identically() {
    pollster::block_on(async {
        let mut a = session("mlp-spiral", 64);
        a.train(20).unwrap();
        a.read_metrics().await.unwrap();
        let bytes = a.save_checkpoint().await.unwrap();
        a.train(15).unwrap();
        let uninterrupted = a.read_metrics().await.unwrap();

        let gpu = Gpu::new().await.unwrap();
        let mut b = Session::from_checkpoint(gpu, &bytes).unwrap();
        assert_eq!(b.step_count(), 20);
        let again = b.save_checkpoint().await.unwrap();
        assert!(same_contents(&bytes, &again), "save → load → save must reproduce every tensor and field");
        b.train(15).unwrap();
        let resumed = b.read_metrics().await.unwrap();
        assert_eq!(resumed.len(), 15);
        for (x, y) in uninterrupted.iter().zip(&resumed) {
            assert_eq!((x.step, x.loss.to_bits(), x.grad_norm.to_bits()), (y.step, y.loss.to_bits(), y.grad_norm.to_bits()));
        }
        assert_eq!(weights(&a), weights(&b));
    });
}

#[test]
fn bad_files_are_rejected_and_leave_the_model_untouched() {
    pollster::block_on(async {
        let mut s = session("mlp-spiral", 64);
        s.train(5).unwrap();
        let good = s.save_checkpoint().await.unwrap();
        s.train(5).unwrap();
        let before = weights(&s);

        let mut corrupt_header = good.clone();
        corrupt_header[10] = b'}';
        let mut other = session("mlp-xor", 64);
        let xor = other.save_checkpoint().await.unwrap();
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            ("empty", vec![], "safetensors"),
            ("truncated", good[..good.len() - 7].to_vec(), "safetensors"),
            ("corrupt header", corrupt_header, "safetensors"),
            ("another model", xor, "different model"),
            ("random bytes", (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect(), "safetensors"),
        ];
        for (what, bytes, expect) in cases {
            let err = s.load_checkpoint(&bytes).expect_err(what).to_string();
            assert!(err.contains("checkpoint") && err.contains(expect), "{what}: {err}");
            assert_eq!(weights(&s), before, "{what}: the model changed");
            assert_eq!(s.step_count(), 10, "{what}: the step changed");
        }
        other.load_checkpoint(&good).expect_err("a spiral checkpoint into an XOR model");
        s.load_checkpoint(&good).unwrap();
        assert_eq!(s.step_count(), 5);
    });
}

/// |a − b| within f16's rounding of a: half an ulp of 11 significant bits (2^-11 relative), or
/// half the smallest subnormal (2^-25) near zero.
fn within_f16(a: f32, b: f32, scale: f32) -> bool {
    (a - b).abs() <= scale * (a.abs() * 2f32.powi(-11) + 2f32.powi(-25))
}

#[test]
fn an_f16_checkpoint_is_half_the_file_and_training_goes_on_from_it() {
    pollster::block_on(async {
        let mut a = session("llama-tiny", 4);
        a.train(3).unwrap();
        let (full, half) = (a.save_checkpoint().await.unwrap(), a.save_checkpoint_as(CheckpointDtype::F16).await.unwrap());
        println!("f32 checkpoint {} bytes, f16 {} bytes", full.len(), half.len());
        assert!(half.len() * 100 < full.len() * 52, "f16 {} bytes against f32 {}", half.len(), full.len());
        assert_eq!(header(&half).unwrap().step, 3);
        let b = Session::from_checkpoint(Gpu::new().await.unwrap(), &half).unwrap();
        let read = |s: &Session, t: &kiln::Tensor| pollster::block_on(s.gpu.read_f32(t)).unwrap();
        let pairs = [(&a.params.weights, &b.params.weights, 1.0), (&a.params.m, &b.params.m, 1.0), (&a.params.v, &b.params.v, 1.01)];
        for (i, (x, y, scale)) in pairs.into_iter().enumerate() {
            let (x, y) = (read(&a, x), read(&b, y));
            // v is stored as f16(sqrt(v)): compare the square roots, within one f16 rounding (and f32's).
            let bad = x.iter().zip(&y).filter(|(p, q)| !within_f16(if i == 2 { p.sqrt() } else { **p }, if i == 2 { q.sqrt() } else { **q }, scale)).count();
            assert_eq!(bad, 0, "buffer {i}: {bad} values off by more than f16 rounding");
        }
        let mut b = b;
        a.train(5).unwrap();
        b.train(5).unwrap();
        let (la, lb) = (a.read_metrics().await.unwrap(), b.read_metrics().await.unwrap());
        let (la, lb) = (la.last().unwrap().loss, lb.last().unwrap().loss);
        assert!(lb.is_finite() && (la - lb).abs() < 0.01 * la, "after 5 more steps: f32 {la}, from f16 {lb}");
    });
}
