//! Issue 13 item 2, reads: faults injected through the storage seam (`MemoryOptions::
//! read_storage`, `k3_tests::faults::FaultyRead`) into the streamed reads of a generation —
//! routed experts from the shards, trunk layers from `trunk.bin` — on `tiny-mxfp4` with a
//! packed trunk at a small budget (layers stream through the ring, experts through a cache
//! of top-k + 1 slots).
//! Promises checked: `EIO` (and a read reporting more bytes than asked) is a named error
//! for that generation — `Error::ExpertRead` wrapping `Error::Read` with the shard and
//! offset, or `Error::Read` naming `trunk.bin` — never other tokens; `EINTR`, short reads
//! and slow reads are absorbed, giving the clean run's tokens and logits bit for bit; and
//! once the fault clears, the next generation on the same engine is the clean run again;
//! a generation on a slow disk still stops promptly when cancelled (SC-13).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use k3_engine::advanced::stream::expert_dir::{locate, Placement};
use k3_engine::pack_trunk;
use k3_engine::{BudgetChoice, CancelToken, Engine, EngineOptions, Error, MemoryOptions};
use k3_io::format::TensorIndex;
use k3_plan::Budget;
use k3_tests::faults::{FaultyRead, ReadFault, Target, Times};
use k3_tests::{copy_checkpoint, scratch_dir};

use crate::gates::Recorder;

const N_TOKENS: usize = 5;

/// A packed copy of tiny-mxfp4 streamed through a [`FaultyRead`] (not armed yet), with its
/// clean run's tokens and logits.
struct Rig {
    dir: PathBuf,
    trunk_bin: PathBuf,
    engine: Engine,
    faults: Arc<FaultyRead>,
    prompt: Vec<u32>,
    clean: (Vec<u32>, Vec<f32>),
}

fn rig(tag: &str) -> Rig {
    let dir = copy_checkpoint("tiny-mxfp4", tag);
    let trunk = scratch_dir(&format!("{tag}-trunk"));
    pack_trunk(&dir, &trunk, &mut |_| {}).unwrap();
    let faults = FaultyRead::new();
    let cfg = k3_engine::ModelConfig::load(&dir.join("config.json")).unwrap();
    let mut memory = MemoryOptions::resident();
    let cache_bytes = (cfg.moe.top_k as u64 + 1) * crate::streaming::slot_bytes("tiny-mxfp4");
    memory.budget = Some(BudgetChoice::Fixed(Budget { trunk_bytes: 300_000, cache_bytes }));
    memory.trunk_dir = Some(trunk.clone());
    memory.io_threads = 2;
    memory.record_trace = true;
    memory.read_storage = faults.clone();
    let engine = Engine::load(&EngineOptions { model_dir: dir.clone(), threads: Some(1), memory }).unwrap();
    let prompt = crate::gates::golden("tiny-mxfp4").prompt;
    let clean = generate(&engine, &prompt).expect("the unfaulted streamed run");
    assert!(engine.plan().is_some_and(|p| p.pinned_layers < cfg.n_layers), "layers stream");
    Rig { dir, trunk_bin: trunk.join("trunk.bin"), engine, faults, prompt, clean }
}

fn generate(e: &Engine, prompt: &[u32]) -> Result<(Vec<u32>, Vec<f32>), Error> {
    let mut rec = Recorder::default();
    let params = crate::streaming_params(N_TOKENS);
    let out = e.generate(&mut e.new_session(), prompt, &params, &CancelToken::new(), &mut rec)?;
    Ok((out.generated, rec.logits))
}

impl Rig {
    /// An expert the clean run used in a layer before the last (so it was evicted and is
    /// read again), with its shard and payload window.
    fn used_expert(&self) -> ((usize, usize), PathBuf, u64, usize) {
        let trace = self.engine.take_expert_trace();
        let n_layers = self.engine.config().n_layers as u32;
        let &(layer, expert) = trace.iter().find(|(l, _)| *l + 1 < n_layers).expect("experts were used");
        let (layer, expert) = (layer as usize, expert as usize);
        let (shard, start, len) = self.expert_window(layer, expert);
        ((layer, expert), shard, start, len)
    }

    /// The shard and payload window of one routed expert.
    fn expert_window(&self, layer: usize, expert: usize) -> (PathBuf, u64, usize) {
        let index = TensorIndex::open(&self.dir).unwrap();
        let Ok((Placement::Contiguous { shard_idx, start, len }, _)) = locate(&index, layer, expert) else {
            panic!("tiny-mxfp4's experts are contiguous")
        };
        (index.shard_paths()[shard_idx].clone(), start, len)
    }

    /// The clean run again, bit for bit, with no fault armed.
    fn assert_clean_again(&self, what: &str) {
        self.faults.clear();
        let again = generate(&self.engine, &self.prompt).unwrap_or_else(|e| panic!("{what}: after the fault: {e}"));
        assert_eq!(again.0, self.clean.0, "{what}: tokens after the fault cleared");
        assert!(same_bits(&again.1, &self.clean.1), "{what}: logits after the fault cleared");
    }

    /// Under `fault` on `target`, the generation gives the clean run bit for bit.
    fn assert_absorbed(&self, target: Target, times: Times, fault: ReadFault) {
        let before = self.faults.injected();
        self.faults.arm(target, times, fault);
        let got = generate(&self.engine, &self.prompt).unwrap_or_else(|e| panic!("{fault:?}: {e}"));
        let injected = self.faults.injected() - before;
        self.faults.clear();
        assert!(injected > 0, "{fault:?}: no fault was injected");
        assert_eq!(got.0, self.clean.0, "{fault:?} ({injected} injected): tokens");
        assert!(same_bits(&got.1, &self.clean.1), "{fault:?} ({injected} injected): logits");
    }
}

fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// `err` is `Error::Read` on `path` at an offset in `[from, to)` whose OS error satisfies `os`.
fn expect_read_error(err: &Error, path: &Path, (from, to): (u64, u64), os: impl Fn(&std::io::Error) -> bool) {
    match err {
        Error::Read { path: p, offset, source, .. } => {
            assert_eq!(p, path, "{err}");
            assert!((from..to).contains(offset), "offset {offset} outside {from}..{to}: {err}");
            assert!(os(source), "unexpected OS error: {err}");
            assert!(err.to_string().contains(&offset.to_string()), "the message names the offset: {err}");
            assert!(!err.is_input_error(), "a failure while running: {err}");
        }
        other => panic!("expected Error::Read on {}, got {other}", path.display()),
    }
}

fn is_eio(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::EIO)
}

#[test]
fn io_faults_eio_on_an_expert_read_fails_that_generation_naming_the_expert_shard_and_offset() {
    let rig = rig("fault-expert-eio");
    let ((layer, _), shard, start, len) = rig.used_expert();
    // A bad sector in the middle of the expert: every read of it fails until cleared.
    let bad_byte = start + len as u64 / 2;
    rig.faults.arm(Target::Byte(shard.clone(), bad_byte), Times::Always, ReadFault::Eio);
    match generate(&rig.engine, &rig.prompt) {
        Err(Error::ExpertRead { layer_idx, expert_idx, source }) => {
            // Tiny experts share 4 KiB sectors, and experts are computed in arrival order, so
            // the read that fails first may be a neighbour's: the named expert is one of this
            // layer whose aligned read window covers the bad byte.
            assert_eq!(layer_idx, layer, "the failed expert's layer is named");
            let (named_shard, named_start, named_len) = rig.expert_window(layer_idx, expert_idx);
            let (from, wide_len) = k3_io::direct::widen(named_start, named_len);
            assert_eq!(named_shard, shard, "the named expert ({layer_idx}, {expert_idx}) lives in the faulty shard");
            assert!(
                (from..from + wide_len as u64).contains(&bad_byte),
                "the named expert ({layer_idx}, {expert_idx}) reads {from}..{} which misses the bad byte {bad_byte}",
                from + wide_len as u64
            );
            expect_read_error(&source, &shard, (from, named_start + named_len as u64), is_eio);
        }
        other => panic!("expected Error::ExpertRead, got {:?}", other.map(|r| r.0)),
    }
    assert!(rig.faults.injected() > 0);
    rig.assert_clean_again("expert EIO");
}

#[test]
fn io_faults_eio_on_a_trunk_read_fails_that_generation_naming_trunk_bin() {
    let rig = rig("fault-trunk-eio");
    rig.faults.arm(Target::File(rig.trunk_bin.clone()), Times::First(1), ReadFault::Eio);
    match generate(&rig.engine, &rig.prompt) {
        Err(err) => expect_read_error(&err, &rig.trunk_bin, (0, u64::MAX), is_eio),
        Ok(_) => panic!("a failed trunk read gave tokens"),
    }
    assert_eq!(rig.faults.injected(), 1);
    rig.assert_clean_again("trunk EIO");
}

#[test]
fn io_faults_a_read_reporting_more_bytes_than_asked_is_a_named_error_not_bytes_never_read() {
    let rig = rig("fault-too-long");
    rig.faults.arm(Target::File(rig.trunk_bin.clone()), Times::First(1), ReadFault::TooLong);
    match generate(&rig.engine, &rig.prompt) {
        Err(err) => {
            expect_read_error(&err, &rig.trunk_bin, (0, u64::MAX), |e| e.kind() == std::io::ErrorKind::InvalidData)
        }
        Ok(_) => panic!("a read of the wrong length gave tokens"),
    }
    rig.assert_clean_again("trunk wrong length");
    let (_, shard, start, len) = rig.used_expert();
    rig.faults.arm(Target::Byte(shard.clone(), start + len as u64 / 2), Times::Always, ReadFault::TooLong);
    match generate(&rig.engine, &rig.prompt) {
        Err(Error::ExpertRead { source, .. }) => {
            expect_read_error(&source, &shard, (0, u64::MAX), |e| e.kind() == std::io::ErrorKind::InvalidData)
        }
        other => panic!("expected Error::ExpertRead, got {:?}", other.map(|r| r.0)),
    }
    rig.assert_clean_again("expert wrong length");
}

#[test]
fn io_faults_eintr_is_retried_and_gives_the_clean_tokens_and_logits() {
    let rig = rig("fault-eintr");
    let (_, shard, start, len) = rig.used_expert();
    rig.assert_absorbed(Target::File(rig.trunk_bin.clone()), Times::First(3), ReadFault::Eintr);
    rig.assert_absorbed(Target::Byte(shard, start + len as u64 / 2), Times::First(3), ReadFault::Eintr);
    rig.assert_absorbed(Target::Any, Times::First(50), ReadFault::Eintr);
    rig.assert_clean_again("EINTR");
}

#[test]
fn io_faults_short_reads_are_continued_and_give_the_clean_tokens_and_logits() {
    let rig = rig("fault-short");
    let (_, shard, start, len) = rig.used_expert();
    rig.assert_absorbed(Target::File(rig.trunk_bin.clone()), Times::Always, ReadFault::Short);
    rig.assert_absorbed(Target::Byte(shard, start + len as u64 / 2), Times::Always, ReadFault::Short);
    rig.assert_absorbed(Target::Any, Times::Always, ReadFault::Short);
    rig.assert_clean_again("short reads");
}

#[test]
fn io_faults_slow_reads_only_slow_the_generation() {
    let rig = rig("fault-delay");
    rig.assert_absorbed(Target::Any, Times::First(40), ReadFault::Delay(Duration::from_millis(5)));
    rig.assert_clean_again("slow reads");
}

/// Starts a generation on `rig`'s engine, sets its cancel token after `after`, and
/// returns how long the generation took to end once asked.
fn cancel_after(rig: &Rig, after: Duration) -> Duration {
    let cancel = CancelToken::new();
    let (out, waited) = std::thread::scope(|s| {
        let job = s.spawn(|| {
            let params = crate::streaming_params(64);
            rig.engine.generate(&mut rig.engine.new_session(), &rig.prompt, &params, &cancel, &mut Recorder::default())
        });
        std::thread::sleep(after);
        let asked = std::time::Instant::now();
        cancel.cancel();
        let out = job.join().expect("the generation thread");
        (out, asked.elapsed())
    });
    let out = out.expect("a cancelled generation is not an error");
    assert_eq!(out.finish, k3_engine::FinishReason::Cancelled, "the slow run was cancelled after {after:?}");
    waited
}

/// SC-13 and PRODUCT's Stop: on a disk where every read takes 50 ms, twelve generations
/// stopped at different moments (prefill, decode, mid-layer, mid-read) each end within
/// 250 ms — the streamed reads and their waits look at the cancel token, not only the
/// layer boundaries (with only those, at 2ec23bd, the worst of the twelve took 353 ms).
#[test]
fn io_faults_a_generation_on_a_slow_disk_still_cancels_promptly() {
    let rig = rig("fault-cancel");
    rig.faults.arm(Target::Any, Times::Always, ReadFault::Delay(Duration::from_millis(50)));
    let waits: Vec<Duration> = (0..12).map(|i| cancel_after(&rig, Duration::from_millis(40 + 37 * i))).collect();
    assert!(rig.faults.injected() > 0);
    rig.faults.clear();
    let worst = waits.iter().max().copied().unwrap_or_default();
    eprintln!("io_faults: 12 stops on a 50 ms/read disk took {waits:?} (worst {worst:?})");
    assert!(worst <= Duration::from_millis(250), "a stop took {worst:?} on a slow disk: {waits:?}");
    rig.assert_clean_again("slow disk, cancelled");
}
