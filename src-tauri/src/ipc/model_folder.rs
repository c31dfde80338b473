//! Settings › Model folder's wire types: the folder's view and "Verify now"'s progress and
//! outcome, twins of `k3_app::model_folder`'s.

use crate::ipc::twin::wire_struct;

wire_struct! {
    /// What Settings › Model folder shows.
    pub struct ModelFolderView both ways k3_app::model_folder::ModelFolderView {
        path: String,
        name: String,
        is_demo: bool,
        /// The trunk unpinned layers stream from (`None`: not packed; the trunk stays in RAM).
        trunk: Option<String>,
        /// From the store's manifest, when the folder was downloaded or adopted by k3.
        repo: Option<String>,
        commit: Option<String>,
        files: u32,
        verified_files: u32,
        #[ts(type = "number")]
        bytes: u64,
        /// Why there is no manifest, or what is wrong with it.
        note: Option<String>,
    }
}

wire_struct! {
    /// Progress of "Verify now".
    pub struct VerifyProgress both ways k3_app::model_folder::VerifyProgress {
        file: String,
        #[ts(type = "number")]
        done_bytes: u64,
        #[ts(type = "number")]
        total_bytes: u64,
    }
}

wire_struct! {
    /// How "Verify now" ended.
    pub struct VerifyOutcome both ways k3_app::model_folder::VerifyOutcome {
        files: u32,
        #[ts(type = "number")]
        bytes: u64,
        /// `path: problem` of each missing, resized or mismatching file.
        bad: Vec<String>,
        seconds: f64,
        view: ModelFolderView,
    }
}
