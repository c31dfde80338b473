//! Settings › Performance: how many threads the kernels run on and how many expert reads
//! are kept in flight, saved across restarts and applied by reopening the model (the
//! engine sizes its thread pools and I/O buffers when it opens).
//!
//! Owns: [`Threads`] and its file (`performance.json`), the environment's defaults
//! (`OMP_NUM_THREADS`, `K3_ASYNC_IO_THREADS`, PRODUCT §4.4), [`SpeculationChoice`] and its
//! file (`speculation.json`: exact speculative decoding, applied from the next reply with
//! no reopen) and [`PerformanceView`], what the Settings page shows.
//! Precedence: the saved choice, else the environment, else all cores and 4 reads.

use crate::settings::records::{SpeculationRecord, ThreadsRecord};
use crate::settings::{Settings, SettingsRecord};
use k3_engine::speculate::MAX_DRAFT;
use k3_engine::DecodeMode;

use crate::error::AppError;
use crate::setup::SpeedSummary;

/// The settings file's name in the app's data folder.
pub const PERFORMANCE_FILE: &str = ThreadsRecord::FILE;

/// The speculative decoding choice's file in the app's data folder.
pub const SPECULATION_FILE: &str = SpeculationRecord::FILE;

/// Exact speculative decoding: how many tokens a reply may draft by prompt lookup and
/// verify in one pass (0: off, the default). Replies are the same either way; only their
/// speed changes (it pays where reads dominate, a streamed model).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpeculationChoice {
    pub max_draft: u32,
}

impl SpeculationChoice {
    /// `speculation.json`, or off when it is absent or unreadable.
    pub fn load(settings: &Settings) -> SpeculationChoice {
        SpeculationChoice { max_draft: settings.get::<SpeculationRecord>().max_draft }
    }

    pub fn save(&self, settings: &Settings) -> Result<(), AppError> {
        Ok(settings.set(SpeculationRecord { max_draft: self.max_draft })?)
    }

    /// Refuses more draft tokens than one verify pass may carry.
    pub fn check(&self) -> Result<(), AppError> {
        if self.max_draft as usize > MAX_DRAFT {
            return Err(AppError::invalid(format!(
                "speculative decoding: {} draft tokens is more than {MAX_DRAFT}",
                self.max_draft
            )));
        }
        Ok(())
    }

    /// How the engine decodes replies under this choice.
    pub fn decode_mode(&self) -> DecodeMode {
        match self.max_draft {
            0 => DecodeMode::Incremental,
            n => DecodeMode::Speculative { max_draft: (n as usize).min(MAX_DRAFT) },
        }
    }
}

/// Expert reads kept in flight when nothing says otherwise (PRODUCT §4.4).
pub const DEFAULT_IO_THREADS: u32 = 4;

/// The most expert reads the page offers (each holds one expert-sized buffer).
pub const MAX_IO_THREADS: u32 = 64;

/// The thread counts models open with; `None` = the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Threads {
    /// Kernel threads (`None`: every core).
    pub compute: Option<u32>,
    /// Expert reads in flight (`None`: [`DEFAULT_IO_THREADS`]).
    pub io: Option<u32>,
}

impl Threads {
    /// `performance.json`, or no choice when it is absent or unreadable.
    pub fn load(settings: &Settings) -> Threads {
        let r = settings.get::<ThreadsRecord>();
        Threads { compute: r.compute, io: r.io }
    }

    pub fn save(&self, settings: &Settings) -> Result<(), AppError> {
        Ok(settings.set(ThreadsRecord { compute: self.compute, io: self.io })?)
    }

    /// What `OMP_NUM_THREADS` and `K3_ASYNC_IO_THREADS` ask for (values that are not a
    /// positive whole number are ignored).
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Threads {
        let count = |name: &str| env(name).and_then(|v| v.trim().parse::<u32>().ok()).filter(|n| *n > 0);
        Threads { compute: count("OMP_NUM_THREADS"), io: count("K3_ASYNC_IO_THREADS") }
    }

    /// Each count of `self`, else `fallback`'s.
    pub fn or(self, fallback: Threads) -> Threads {
        Threads { compute: self.compute.or(fallback.compute), io: self.io.or(fallback.io) }
    }

    /// Refuses counts outside 1..=`cores` (compute) and 1..=[`MAX_IO_THREADS`] (reads).
    pub fn check(&self, cores: u32) -> Result<(), AppError> {
        if let Some(n) = self.compute.filter(|n| !(1..=cores).contains(n)) {
            return Err(AppError::invalid(format!(
                "compute threads: {n} is not between 1 and {cores} (this machine's cores)"
            )));
        }
        if let Some(n) = self.io.filter(|n| !(1..=MAX_IO_THREADS).contains(n)) {
            return Err(AppError::invalid(format!("I/O threads: {n} is not between 1 and {MAX_IO_THREADS}")));
        }
        Ok(())
    }

    /// The engine's `threads` option.
    pub fn compute_threads(&self) -> Option<usize> {
        self.compute.map(|n| n as usize)
    }

    /// The engine's `io_threads` option.
    pub fn io_threads(&self) -> usize {
        self.io.unwrap_or(DEFAULT_IO_THREADS) as usize
    }
}

/// The logical cores this process may use.
pub fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// The counts the loaded model runs with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThreadsInUse {
    pub compute: u32,
    pub io: u32,
    /// Streamed reads: bytes a piece and pieces in flight.
    pub read_request_bytes: u32,
    pub read_depth: u32,
}

/// What Settings › Performance shows.
#[derive(Debug, Clone, PartialEq)]
pub struct PerformanceView {
    /// The saved choice (what the page edits).
    pub saved: Threads,
    /// What the environment asks for when nothing is saved.
    pub from_env: Threads,
    pub cores: u32,
    pub default_io: u32,
    pub max_io: u32,
    /// The loaded model's counts (`None`: no model is open).
    pub in_use: Option<ThreadsInUse>,
    /// The last drive speed test (the wizard's, or a re-run from this page).
    pub speed: Option<SpeedSummary>,
    /// Where "Re-run speed test" writes its scratch file: the model's folder (`None` for
    /// the bundled demo, which is read into RAM).
    pub speed_test_dir: Option<String>,
    /// The saved speculative decoding choice, and the most draft tokens it may ask for.
    pub speculation: SpeculationChoice,
    pub max_draft: u32,
    /// How many conversations keep their engine state, the most the page offers, and the
    /// states saved now.
    pub resume: crate::saved_states::ResumeChoice,
    pub max_keep: u32,
    pub saved_states: crate::saved_states::SavedStates,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn the_saved_choice_wins_over_the_environment_which_wins_over_the_defaults() {
        let env = Threads::from_env(&env_of(&[("OMP_NUM_THREADS", " 3 "), ("K3_ASYNC_IO_THREADS", "0")]));
        assert_eq!(env, Threads { compute: Some(3), io: None }, "0 is not a count");
        let saved = Threads { compute: None, io: Some(8) };
        let used = saved.or(env);
        assert_eq!((used.compute_threads(), used.io_threads()), (Some(3), 8));
        assert_eq!(Threads::default().io_threads(), DEFAULT_IO_THREADS as usize);
        assert_eq!(Threads::from_env(&env_of(&[("OMP_NUM_THREADS", "many")])), Threads::default());
    }

    #[test]
    fn counts_outside_the_machine_are_refused_by_name() {
        assert!(Threads { compute: Some(2), io: Some(64) }.check(2).is_ok());
        let e = Threads { compute: Some(3), io: None }.check(2).unwrap_err();
        assert!(e.message.contains("compute threads: 3 is not between 1 and 2"), "{}", e.message);
        let e = Threads { compute: None, io: Some(0) }.check(2).unwrap_err();
        assert!(e.message.contains("I/O threads: 0"), "{}", e.message);
    }

    #[test]
    fn speculation_is_off_until_chosen_bounded_and_kept_in_its_own_file() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings::open(dir.path());
        let off = SpeculationChoice::load(&settings);
        assert_eq!((off, off.decode_mode()), (SpeculationChoice { max_draft: 0 }, DecodeMode::Incremental));
        let four = SpeculationChoice { max_draft: 4 };
        four.save(&settings).unwrap();
        let again = Settings::open(dir.path());
        assert_eq!(SpeculationChoice::load(&again).decode_mode(), DecodeMode::Speculative { max_draft: 4 });
        assert_eq!(Threads::load(&again), Threads::default(), "the thread counts are another file");
        assert!(SpeculationChoice { max_draft: MAX_DRAFT as u32 }.check().is_ok());
        let e = SpeculationChoice { max_draft: 33 }.check().unwrap_err();
        assert!(e.message.contains("33 draft tokens is more than 32"), "{}", e.message);
    }

    #[test]
    fn the_choice_round_trips_through_its_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Threads::load(&Settings::open(dir.path())), Threads::default());
        let t = Threads { compute: Some(1), io: Some(16) };
        t.save(&Settings::open(dir.path())).unwrap();
        assert_eq!(Threads::load(&Settings::open(dir.path())), t);
        std::fs::write(dir.path().join(PERFORMANCE_FILE), "{not json").unwrap();
        assert_eq!(Threads::load(&Settings::open(dir.path())), Threads::default(), "unreadable: the defaults");
        assert!(dir.path().join("performance.json.unreadable").exists(), "kept aside, not lost");
    }
}
