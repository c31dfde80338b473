//! Settings › Performance's saved-state wire types (twins of `k3_app::saved_states`').

use crate::ipc::twin::wire_struct;

wire_struct! {
    /// How many of the most recent conversations keep their engine state (0: none).
    pub struct ResumeChoice both ways k3_app::saved_states::ResumeChoice {
        keep: u32,
    }
}

wire_struct! {
    /// The saved states now and the bytes they take (Settings › Performance shows them).
    pub struct SavedStates both ways k3_app::saved_states::SavedStates {
        count: u32,
        #[ts(type = "number")]
        bytes: u64,
    }
}
