// Every command the app registers, in one list shared by `build.rs` (which generates the
// `allow-<command>` permissions) and the lockstep test (`tests/contract.rs`), which checks
// it against `generate_handler!` in `lib.rs` and against `capabilities/default.json`.
// (No `//!` header: this file is `include!`d into the build script and into `lib.rs`.)

/// The app's IPC commands.
pub const COMMANDS: &[&str] = &[
    "current_model",
    "open_model",
    "pick_model_folder",
    "open_link",
    "history_notice",
    "list_conversations",
    "create_conversation",
    "get_conversation",
    "update_conversation",
    "delete_conversation",
    "export_conversation",
    "save_export",
    "send_message",
    "regenerate",
    "edit_message",
    "cancel_generation",
    "setup_status",
    "setup_examine",
    "setup_choose",
    "setup_next",
    "setup_speed_test",
    "setup_forecast",
    "setup_run",
    "setup_pause",
    "setup_adopt",
    "setup_dismiss",
    "setup_token",
    "api_status",
    "api_start",
    "api_stop",
];
