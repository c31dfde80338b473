//! The install pipeline, the one sequence behind `k3 download` and the app's setup wizard:
//! a checkpoint downloaded and verified into a store folder ([`Install::download`]), then
//! its trunk packed beside it ([`Install::pack`]), each step resumable (the download from
//! its journal, the pack from its last whole layer) and a pack that is already current
//! skipped. The packer is the engine's, handed in as a [`k3_io::TrunkPacker`]: k3-store
//! sits below the engine. The first load stays with each front end (the CLI proves the model opens;
//! the app opens it for use).
//!
//! Owns: [`Install`], [`PackStatus`], [`Packed`].
//! Must not: pack a trunk that is already current, or report pack progress more often
//! than every [`PACK_STATUS_EVERY`] (the report of the last byte always goes through).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k3_io::{PackProgress, PackStage, PackedTrunk, TrunkPacker};
use tokio_util::sync::CancellationToken;

use crate::download::layout::StoreLayout;
use crate::download::{download, DownloadOptions, DownloadSummary, EventSink};
use crate::error::StoreResult;
use crate::hub::HubClient;

/// The least time between two [`PackStatus`] reports.
pub const PACK_STATUS_EVERY: Duration = Duration::from_millis(100);

/// The pack's progress as a front end shows it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PackStatus {
    pub stage: PackStage,
    /// 1-based: the layer being written or checksummed.
    pub layer: usize,
    pub layers: usize,
    pub bytes_done: u64,
    pub bytes_total: u64,
    /// Bytes written per second since this pack started, in MB (10^6).
    pub mb_per_s: f64,
}

/// How the pack step ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Packed {
    /// The trunk was already packed from these shards; nothing was written.
    AlreadyCurrent,
    Written {
        trunk: PackedTrunk,
        seconds: f64,
    },
}

/// A store folder and the trunk folder beside it.
#[derive(Clone, Debug)]
pub struct Install {
    pub download: DownloadOptions,
}

impl Install {
    pub fn new(download: DownloadOptions) -> Install {
        Install { download }
    }

    pub fn store(&self) -> &Path {
        &self.download.store
    }

    /// Where the trunk goes: the folder asked for, or the store's own.
    pub fn trunk(&self) -> PathBuf {
        self.download.trunk_dir.clone().unwrap_or_else(|| StoreLayout::new(&self.download.store).default_trunk())
    }

    /// Step 1: every file of the repository downloaded and hashed in full (resumed from
    /// the store's journal).
    pub async fn download(
        &self,
        hub: HubClient,
        events: EventSink,
        stop: CancellationToken,
    ) -> StoreResult<DownloadSummary> {
        download(self.download.clone(), hub, events, stop).await
    }

    /// The repository holds a model to pack (a `config.json`); a tokenizer-only or other
    /// repository ends after its download.
    pub fn has_model(&self) -> bool {
        self.store().join("config.json").is_file()
    }

    /// Step 2: the trunk packed, unless it is already current. Blocking: run it off an
    /// async runtime's threads.
    pub fn pack<P: TrunkPacker>(&self, packer: &P, status: &mut dyn FnMut(PackStatus)) -> Result<Packed, P::Error> {
        let trunk = self.trunk();
        if packer.is_current(self.store(), &trunk) {
            return Ok(Packed::AlreadyCurrent);
        }
        let start = Instant::now();
        let mut throttle = Throttle::default();
        let written = packer.pack(self.store(), &trunk, &mut |s| {
            if throttle.due(s.bytes_done >= s.bytes_total) {
                status(pack_status(s, start.elapsed()));
            }
        })?;
        Ok(Packed::Written { trunk: written, seconds: start.elapsed().as_secs_f64() })
    }
}

fn pack_status(s: PackProgress, elapsed: Duration) -> PackStatus {
    PackStatus {
        stage: s.stage,
        layer: s.layer_idx + 1,
        layers: s.n_layers,
        bytes_done: s.bytes_done,
        bytes_total: s.bytes_total,
        mb_per_s: s.bytes_done as f64 / elapsed.as_secs_f64().max(1e-6) / 1e6,
    }
}

/// Lets a report through at most every [`PACK_STATUS_EVERY`], and always the one of the
/// last byte.
#[derive(Default)]
struct Throttle {
    last: Option<Instant>,
}

impl Throttle {
    fn due(&mut self, last_one: bool) -> bool {
        let due = last_one || self.last.is_none_or(|t| t.elapsed() >= PACK_STATUS_EVERY);
        if due {
            self.last = Some(Instant::now());
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    /// A packer that writes nothing: `current` says whether the trunk is current; each
    /// pack reports `layers` steps.
    struct FakePacker {
        current: bool,
        layers: usize,
        packs: Cell<usize>,
    }

    impl TrunkPacker for FakePacker {
        type Error = String;
        fn is_current(&self, _: &Path, _: &Path) -> bool {
            self.current
        }
        fn pack(&self, _: &Path, _: &Path, step: &mut dyn FnMut(PackProgress)) -> Result<PackedTrunk, String> {
            self.packs.set(self.packs.get() + 1);
            let (n_layers, bytes_total) = (self.layers, self.layers as u64 * 10);
            for layer_idx in 0..self.layers {
                let bytes_done = (layer_idx as u64 + 1) * 10;
                step(PackProgress { stage: PackStage::Trunk, layer_idx, n_layers, bytes_done, bytes_total });
            }
            Ok(PackedTrunk { file_bytes: self.layers as u64 * 10, resumed_layers: 0 })
        }
    }

    fn install() -> Install {
        Install::new(DownloadOptions::new("org/model", "main", PathBuf::from("/store")))
    }

    #[test]
    fn a_current_trunk_is_not_packed_again() {
        let packer = FakePacker { current: true, layers: 3, packs: Cell::new(0) };
        let got = install().pack(&packer, &mut |_| panic!("no progress for a current trunk"));
        assert_eq!(got, Ok(Packed::AlreadyCurrent));
        assert_eq!(packer.packs.get(), 0);
    }

    #[test]
    fn a_fast_pack_reports_its_first_and_last_layer_only() {
        let packer = FakePacker { current: false, layers: 50, packs: Cell::new(0) };
        let mut seen = Vec::new();
        let got = install().pack(&packer, &mut |s| seen.push((s.layer, s.layers, s.bytes_done)));
        assert!(matches!(got, Ok(Packed::Written { trunk: PackedTrunk { file_bytes: 500, resumed_layers: 0 }, .. })));
        assert_eq!(seen, vec![(1, 50, 10), (50, 50, 500)], "50 layers in well under 100 ms");
    }

    #[test]
    fn the_trunk_defaults_to_the_store_s_own_folder() {
        let mut i = install();
        assert_eq!(i.trunk(), PathBuf::from("/store/.k3-desktop/trunk"));
        i.download.trunk_dir = Some(PathBuf::from("/fast/trunk"));
        assert_eq!(i.trunk(), PathBuf::from("/fast/trunk"));
    }
}
