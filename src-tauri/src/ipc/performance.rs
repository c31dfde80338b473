//! Settings › Performance's wire types: threads, speculation and the page's view (twins of
//! `k3_app::performance`').

use crate::ipc::setup::SpeedSummary;
use crate::ipc::twin::wire_struct;

wire_struct! {
    /// Exact speculative decoding: how many tokens a reply may draft by prompt lookup and
    /// verify in one pass (0: off, the default). Replies are the same either way; only their
    /// speed changes (it pays where reads dominate, a streamed model).
    pub struct SpeculationChoice both ways k3_app::performance::SpeculationChoice {
        #[serde(default)]
        max_draft: u32,
    }
}

wire_struct! {
    /// The thread counts models open with; `None` = the default.
    pub struct Threads both ways k3_app::performance::Threads {
        /// Kernel threads (`None`: every core).
        #[serde(default)]
        compute: Option<u32>,
        /// Expert reads in flight (`None`: [`DEFAULT_IO_THREADS`]).
        #[serde(default)]
        io: Option<u32>,
    }
}

wire_struct! {
    /// The counts the loaded model runs with.
    pub struct ThreadsInUse both ways k3_app::performance::ThreadsInUse {
        compute: u32,
        io: u32,
        /// Streamed reads: bytes a piece and pieces in flight.
        read_request_bytes: u32,
        read_depth: u32,
    }
}

wire_struct! {
    /// What Settings › Performance shows.
    pub struct PerformanceView both ways k3_app::performance::PerformanceView {
        /// The saved choice (what the page edits).
        saved: Threads,
        /// What the environment asks for when nothing is saved.
        from_env: Threads,
        cores: u32,
        default_io: u32,
        max_io: u32,
        /// The loaded model's counts (`None`: no model is open).
        in_use: Option<ThreadsInUse>,
        /// The last drive speed test (the wizard's, or a re-run from this page).
        speed: Option<SpeedSummary>,
        /// Where "Re-run speed test" writes its scratch file: the model's folder (`None` for
        /// the bundled demo, which is read into RAM).
        speed_test_dir: Option<String>,
        /// The saved speculative decoding choice, and the most draft tokens it may ask for.
        speculation: SpeculationChoice,
        max_draft: u32,
        /// How many conversations keep their engine state, the most the page offers, and the
        /// states saved now.
        resume: crate::ipc::saved_states::ResumeChoice,
        max_keep: u32,
        saved_states: crate::ipc::saved_states::SavedStates,
    }
}
