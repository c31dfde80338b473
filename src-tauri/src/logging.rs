//! The app's log: what the app did (models opened, plans changed, replies finished, the
//! local API, downloads), written by `tauri-plugin-log` to `k3-desktop.log` and read back
//! for Settings › Diagnostics' log viewer.
//!
//! Owns: where the file is (the data folder's `logs/` when `K3APP_DATA_DIR` is set, else
//! the platform's log folder), its size limit and rotation, and the level kept (the
//! viewer's parser of the file's last lines is `k3_app::log_tail`).
//! Must not: log what a person wrote or read: no prompt, reply, title or system prompt,
//! no key — only names of files, figures and errors (the viewer and "Copy diagnostics"
//! are for bug reports).

use std::path::{Path, PathBuf};

use log::LevelFilter;
use tauri_plugin_log::{RotationStrategy, Target, TargetKind};

/// The log file's name without its extension.
pub const LOG_NAME: &str = "k3-desktop";

/// A file past this size is renamed aside and a new one started (three are kept).
const MAX_FILE_BYTES: u128 = 1_000_000;

/// The logging plugin: info and above from the app and its crates, warnings from the
/// libraries below them, to stderr and the log file.
pub fn plugin<R: tauri::Runtime>(data_dir: Option<&Path>) -> tauri::plugin::TauriPlugin<R> {
    let file = match data_dir {
        Some(dir) => TargetKind::Folder { path: dir.join("logs"), file_name: Some(LOG_NAME.into()) },
        None => TargetKind::LogDir { file_name: Some(LOG_NAME.into()) },
    };
    tauri_plugin_log::Builder::new()
        .clear_targets()
        .targets([Target::new(TargetKind::Stderr), Target::new(file)])
        .level(LevelFilter::Warn)
        .level_for("k3_desktop", LevelFilter::Info)
        .level_for("k3_app", LevelFilter::Info)
        .level_for("k3_runtime", LevelFilter::Info)
        .level_for("k3_store", LevelFilter::Info)
        .level_for("k3_server", LevelFilter::Info)
        .max_file_size(MAX_FILE_BYTES)
        .rotation_strategy(RotationStrategy::KeepSome(3))
        .build()
}

/// The file [`plugin`] writes, given the platform's log folder.
pub fn log_file(data_dir: Option<&Path>, platform_log_dir: Option<PathBuf>) -> Option<PathBuf> {
    let dir = match data_dir {
        Some(d) => Some(d.join("logs")),
        None => platform_log_dir,
    };
    dir.map(|d| d.join(format!("{LOG_NAME}.log")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_goes_to_the_data_folder_when_one_is_set() {
        let file = log_file(Some(Path::new("/data")), Some("/platform/logs".into()));
        assert_eq!(file, Some(PathBuf::from("/data/logs/k3-desktop.log")));
        assert_eq!(log_file(None, Some("/p".into())), Some(PathBuf::from("/p/k3-desktop.log")));
    }
}
