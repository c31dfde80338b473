//! Issue 13 item 2, writes: `k3 pack` (`pack_trunk_with`) through a
//! `k3_tests::faults::FaultyStorage`, failing each of its operations in turn — every write,
//! read-back, sync, rename and removal of one pack of `tiny-mxfp4` — with `ENOSPC` or `EIO`,
//! or cutting the power there (unsynced data dropped, then a "reboot").
//! Promise checked for every operation: the pack reports the failure (only the clean-up
//! removals after the final `fsync(dir)` may fail unnoticed); what it leaves is refused by
//! the engine with a named error, except exactly where it must be accepted — a failure of
//! the very first operation (the old good trunk is still intact) and from the final
//! `fsync(dir)` on (the new one is complete) — and an accepted trunk is byte-identical to a
//! clean pack; and the next pack, on what was left, gives the clean pack's files.

use std::path::{Path, PathBuf};

use k3_engine::advanced::stream::expert_sums::EXPERT_TABLE;
use k3_engine::advanced::stream::trunk_codec::TrunkCodec;
use k3_engine::advanced::stream::trunk_manifest::open_packed_trunk;
use k3_engine::advanced::stream::trunk_pack::{pack_trunk, pack_trunk_with};
use k3_engine::{Error, ModelConfig};
use k3_io::format::TensorIndex;
use k3_tests::faults::{FaultyStorage, WriteFault};
use k3_tests::{copy_checkpoint, scratch_dir};

/// The files a pack publishes.
const OUTPUTS: [&str; 3] = ["trunk.bin", "trunk.json", EXPERT_TABLE];

fn outputs(trunk: &Path) -> Vec<Option<Vec<u8>>> {
    OUTPUTS.iter().map(|f| std::fs::read(trunk.join(f)).ok()).collect()
}

/// A checkpoint, a clean pack's files, and how many storage operations that pack made.
struct Reference {
    dir: PathBuf,
    cfg: ModelConfig,
    index: TensorIndex,
    files: Vec<Option<Vec<u8>>>,
    ops: usize,
    /// The operation that publishes: the `fsync` of the folder after the renames.
    published_at: usize,
}

fn reference(tag: &str) -> Reference {
    let dir = copy_checkpoint("tiny-mxfp4", tag);
    let trunk = scratch_dir(&format!("{tag}-clean"));
    // A good trunk already there: the sweep starts from the same state.
    pack_trunk(&dir, &trunk, &mut |_| {}).unwrap();
    let counting = FaultyStorage::new(WriteFault::None);
    pack_trunk_with(&dir, (&trunk, TrunkCodec::Raw), &counting, &mut |_| {}).unwrap();
    let files = outputs(&trunk);
    assert!(files.iter().all(Option::is_some), "a clean pack publishes {OUTPUTS:?}");
    let cfg = ModelConfig::load(&dir.join("config.json")).unwrap();
    let index = TensorIndex::open(&dir).unwrap();
    assert!(counting.ops() > 30, "a pack of 13 layers makes more operations than {}", counting.ops());
    let log = counting.log();
    let published_at = log.iter().rposition(|op| *op == "sync_dir").expect("a pack syncs its folder");
    assert_eq!(&log[published_at - 3..published_at], ["rename"; 3], "trunk.bin, the table, trunk.json");
    Reference { dir, cfg, index, files, ops: counting.ops(), published_at }
}

impl Reference {
    /// A folder holding the clean pack's files (the old good trunk a new pack replaces).
    fn old_good_trunk(&self, tag: &str) -> PathBuf {
        let trunk = scratch_dir(tag);
        for (name, bytes) in OUTPUTS.iter().zip(&self.files) {
            std::fs::write(trunk.join(name), bytes.as_deref().unwrap_or_default()).unwrap();
        }
        trunk
    }

    /// Where a failure must leave a trunk the engine accepts.
    fn must_accept(&self) -> Vec<usize> {
        std::iter::once(0).chain(self.published_at..self.ops).collect()
    }

    /// What a failed pack left is refused with a named error, or is the clean pack; and a
    /// pack run again there gives the clean pack.
    fn check_left(&self, trunk: &Path, what: &str) -> bool {
        let accepted = match open_packed_trunk(trunk, &self.cfg, &self.index) {
            Ok(_) => {
                assert!(outputs(trunk) == self.files, "{what}: the engine accepts a trunk that is not the clean pack");
                true
            }
            Err(Error::Trunk { .. } | Error::Io { .. }) => false,
            Err(other) => panic!("{what}: refused, but not with a trunk or I/O error: {other}"),
        };
        pack_trunk(&self.dir, trunk, &mut |_| {}).unwrap_or_else(|e| panic!("{what}: packing again: {e}"));
        assert!(outputs(trunk) == self.files, "{what}: packing again does not give the clean pack");
        accepted
    }
}

#[test]
fn pack_faults_enospc_or_eio_at_every_operation_leaves_nothing_the_engine_would_wrongly_accept() {
    let r = reference("pack-fail");
    let mut accepted = Vec::new();
    for at in 0..r.ops {
        let errno = if at % 2 == 0 { libc::ENOSPC } else { libc::EIO };
        let trunk = r.old_good_trunk(&format!("pack-fail-{at}"));
        let storage = FaultyStorage::new(WriteFault::Fail { at, errno });
        let result = pack_trunk_with(&r.dir, (&trunk, TrunkCodec::Raw), &storage, &mut |_| {});
        let what = format!("errno {errno} at operation {at} of {}", r.ops);
        match result {
            Err(e) => assert!(!e.to_string().is_empty(), "{what}"),
            Ok(_) => assert!(at > r.published_at, "{what}: the pack reported success"),
        }
        if r.check_left(&trunk, &what) {
            accepted.push(at);
        }
        let _ = std::fs::remove_dir_all(&trunk);
    }
    assert_eq!(accepted, r.must_accept(), "the failures after which a trunk was accepted ({} operations)", r.ops);
}

#[test]
fn pack_faults_a_power_cut_at_every_operation_leaves_nothing_the_engine_would_wrongly_accept() {
    let r = reference("pack-cut");
    let mut accepted = Vec::new();
    for at in 0..r.ops {
        let trunk = r.old_good_trunk(&format!("pack-cut-{at}"));
        let storage = FaultyStorage::new(WriteFault::PowerCut { at });
        let result = pack_trunk_with(&r.dir, (&trunk, TrunkCodec::Raw), &storage, &mut |_| {});
        let what = format!("power cut at operation {at} of {}", r.ops);
        if result.is_ok() {
            assert!(at > r.published_at, "{what}: the pack reported success");
        }
        storage.reboot().unwrap();
        if r.check_left(&trunk, &what) {
            accepted.push(at);
        }
        let _ = std::fs::remove_dir_all(&trunk);
    }
    assert_eq!(accepted, r.must_accept(), "the power cuts after which a trunk was accepted ({} operations)", r.ops);
}
