//! Build script: embeds the Tauri context and declares the app's commands, so that
//! `allow-<command>` permissions exist for `capabilities/default.json` to grant.
//! The command list is the one `lib.rs` registers (`src/command_names.rs`).

include!("src/command_names.rs");

fn main() {
    let manifest = tauri_build::AppManifest::new().commands(COMMANDS);
    tauri_build::try_build(tauri_build::Attributes::new().app_manifest(manifest)).expect("tauri build script");
}
