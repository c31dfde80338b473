//! The setup wizard's wire types: steps, blockers, saved settings, the speed test, the
//! machine and drives, the forecast, the job's events and its problems (twins of
//! `k3_app::setup`').

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::ipc::dto::ModelInfo;
use crate::ipc::error::IpcError;
use crate::ipc::twin::{wire_enum, wire_struct, wire_tagged};

wire_struct! {
    /// One file of the download grid.
    pub struct FileCell both ways k3_app::setup::events::FileCell {
        path: String,
        /// `queued`, `downloading`, `verifying`, `verified` or `failed`.
        state: String,
        detail: Option<String>,
    }
}

wire_tagged! {
    /// Streamed over the `onEvent` channel of `setup_run` and `setup_speed_test`.
    #[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
    pub enum SetupEvent from k3_app::setup::events::SetupEvent {
        Step {
            step: SetupStep,
        },
        Pinned {
            commit: String,
            files: u32,
            #[ts(type = "number")]
            total_bytes: u64,
            #[ts(type = "number")]
            kept_bytes: u64,
        },
        /// At most one per tick: totals, the 10-s speed, and the cells that changed.
        Progress {
            #[ts(type = "number")]
            done_bytes: u64,
            #[ts(type = "number")]
            total_bytes: u64,
            speed_bytes_per_s: f64,
            eta_seconds: Option<f64>,
            files: Vec<FileCell>,
        },
        Retry {
            path: String,
            reason: String,
            attempt: u32,
            wait_seconds: f64,
        },
        Paused {
            reason: String,
            #[ts(type = "number")]
            free_bytes: u64,
            #[ts(type = "number")]
            needed_bytes: u64,
        },
        Notice {
            path: String,
            message: String,
        },
        Pack {
            layer: u32,
            layers: u32,
            #[ts(type = "number")]
            bytes_done: u64,
            #[ts(type = "number")]
            bytes_total: u64,
            mb_per_s: f64,
        },
        /// The first load, every 100 ms: trunk layers pinned so far (0 of 0 before pinning
        /// starts or when nothing is pinned) and the app's resident set.
        FirstLoad {
            layers_done: u32,
            layers_total: u32,
            #[ts(type = "number | null")]
            rss_bytes: Option<u64>,
            seconds: f64,
        },
        SpeedTest {
            depth: u32,
            #[ts(type = "number")]
            bytes_read: u64,
            mb_per_s: f64,
            fraction: f64,
        },
        Ready {
            model: ModelInfo,
        },
        Stopped,
        /// Whether the system keeps the machine awake while the job runs (`detail`: why not).
        Awake {
            held: bool,
            detail: Option<String>,
        },
        /// The failure about to be reported has its own screen.
        Problem {
            problem: SetupProblem,
        },
        Failed {
            error: IpcError,
        },
    }

}

wire_struct! {
    /// One green/amber/red finding.
    pub struct Card both ways k3_app::setup::facts::Card {
        item: String,
        /// `green`, `amber` or `red`.
        level: String,
        title: String,
        message: String,
    }
}

wire_struct! {
    /// One volume as a possible model store.
    pub struct DriveRow both ways k3_app::setup::facts::DriveRow {
        mount: String,
        fs: String,
        /// `ssd`, `hdd`, `virtual` or `unknown`.
        kind: String,
        #[ts(type = "number")]
        total_bytes: u64,
        #[ts(type = "number")]
        free_bytes: u64,
        level: String,
        message: String,
        /// The folders asked about that live here.
        paths: Vec<String>,
    }
}

wire_struct! {
    pub struct MachineView both ways k3_app::setup::facts::MachineView {
        cpu: Card,
        memory: Card,
        cpu_text: String,
        memory_text: String,
        drives: Vec<DriveRow>,
        recommended_preset: Option<String>,
    }
}

wire_enum! {
    /// The wizard's steps, in order.
    #[serde(rename_all = "camelCase")]
    pub enum SetupStep from k3_app::setup::flow::SetupStep {
        Welcome,
        Hardware,
        Drives,
        SpeedTest,
        Preset,
        /// Download and verification (hashed while each file streams in).
        Download,
        Pack,
        FirstLoad,
        Ready,
    }
}

wire_tagged! {
    /// Why a step cannot be left yet; `overridable` ones can be confirmed away.
    #[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
    pub enum Blocker from k3_app::setup::flow::Blocker {
        /// No AVX2/FMA: scalar kernels give identical output, much slower (overridable).
        CpuLacksAvx2 {
            message: String,
        },
        /// The `auto` preset refuses this machine's memory.
        TooLittleMemory {
            message: String,
        },
        NoStoreChosen,
        /// The store's drive lacks room (the shortfall in the message).
        NotEnoughSpace {
            message: String,
        },
        /// FAT or read-only: refused.
        UnsuitableDrive {
            message: String,
        },
        /// A network file system: slow and its locks untrustworthy (overridable).
        NetworkDrive {
            message: String,
        },
        NoSpeedTest,
        /// The forecast is over 60 s/token (overridable).
        SlowDrive {
            message: String,
        },
        NoPreset,
        /// The download, pack or first load has not finished.
        JobUnfinished,
    }

}

wire_struct! {
    pub struct PresetRow both ways k3_app::setup::forecast::PresetRow {
        name: String,
        /// The plan fits this machine's available memory.
        fits: bool,
        /// The planner's refusal, when it refuses.
        problem: Option<String>,
        pinned_layers: u32,
        layers: u32,
        ring_slots: u32,
        #[ts(type = "number")]
        expert_slots: u64,
        #[ts(type = "number")]
        peak_bytes: u64,
        /// Available memory minus the plan (negative: short by that much).
        headroom_bytes: f64,
        seconds_low: f64,
        seconds_high: f64,
        /// `io + compute` at the expected hit rate (what the bands judge).
        seconds_expected: f64,
        /// The largest context this preset keeps its trunk and cache at on this machine
        /// (`k3_plan::default_context`); `None` when none fits.
        #[ts(type = "number | null")]
        default_context: Option<u64>,
        /// RAM one position of context costs.
        #[ts(type = "number")]
        kv_bytes_per_position: u64,
    }
}

wire_struct! {
    /// A file that failed its integrity check twice.
    pub struct BadFile both ways k3_app::setup::problem::BadFile {
        path: String,
        expected: String,
        got: String,
    }
}

wire_tagged! {
    /// A failure with a screen of its own.
    #[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
    pub enum SetupProblem from k3_app::setup::problem::SetupProblem {
        /// HTTP 401/403: the licence is not accepted or the token is missing or wrong.
        Denied {
            url: String,
            status: u16,
            /// Where a saved token goes (`$HF_HOME/token`).
            token_path: String,
            /// `HF_TOKEN` is set: it wins over the file, so it is what must change.
            token_from_env: bool,
        },
        /// Files whose bytes failed SHA-256 twice; they were not kept.
        BadFiles { files: Vec<BadFile> },
    }

}

wire_struct! {
    #[serde(default)]
    pub struct SetupSettings both ways k3_app::setup::settings::SetupSettings {
        step: SetupStep,
        repo: String,
        /// The model store (the download's folder).
        store_dir: Option<String>,
        /// Where the packed trunk goes (the fastest drive); `None`: inside the store.
        trunk_dir: Option<String>,
        preset: Option<String>,
        speed: Option<SpeedSummary>,
        /// Warnings the user confirmed (`cpu`, `networkDrive`, `slowDrive`).
        overrides: Vec<String>,
        /// The user chose the demo model for now (the wizard stays one click away).
        dismissed: bool,
        /// The folder is one the user already had ("I already have the files").
        adopted: bool,
    }
}

wire_struct! {
    /// The speed test's figures (MB = 10⁶ bytes).
    pub struct SpeedSummary both ways k3_app::setup::settings::SpeedSummary {
        qd1_mb_per_s: f64,
        qd16_mb_per_s: f64,
        qd1_experts_per_s: f64,
        qd16_experts_per_s: f64,
        direct: bool,
        /// The drive's best read pattern (request size × requests in flight), which the
        /// engine then reads with; absent in settings saved before it was measured.
        #[serde(default)]
        read_pattern: Option<PatternSummary>,
    }
}

wire_struct! {
    /// The best point of the speed test's pattern sweep.
    pub struct PatternSummary both ways k3_app::setup::settings::PatternSummary {
        request_bytes: u32,
        depth: u32,
        mb_per_s: f64,
    }
}

impl Default for SetupSettings {
    fn default() -> Self {
        k3_app::setup::SetupSettings::default().into()
    }
}

/// Whether the wizard shows, and where it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetupStatus {
    pub settings: SetupSettings,
    pub wizard: bool,
    pub running: bool,
}

/// What a `setup_next` did: the settings after it, and what still blocks the step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SetupAdvance {
    pub settings: SetupSettings,
    pub blockers: Vec<Blocker>,
}

wire_struct! {
    /// A choice made on a screen; absent fields stay as they are.
    #[serde(default)]
    pub struct SetupChoice both ways k3_app::setup::choice::SetupChoice {
        store_dir: Option<String>,
        trunk_dir: Option<String>,
        preset: Option<String>,
        /// A warning confirmed (`cpu`, `networkDrive`, `slowDrive`).
        confirm: Option<String>,
        /// Go back to an earlier screen.
        back_to: Option<SetupStep>,
    }
}

impl Default for SetupChoice {
    fn default() -> Self {
        k3_app::setup::choice::SetupChoice::default().into()
    }
}
