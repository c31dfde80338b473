//! Small JSON settings files in the app's data folder: read with a fallback, written
//! atomically (tmp → fsync → rename → fsync dir, `k3_store::durable`).
//!
//! Owns: the one rule for a settings file that cannot be read — it is kept aside as
//! `<name>.unreadable` (never silently lost) and the defaults are used.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::ipc::error::{ErrorCode, IpcError};

/// `data_dir/name` parsed, or `T::default()` when it is absent or unreadable (then kept
/// aside as `name.unreadable`).
pub fn load_or_default<T: DeserializeOwned + Default>(data_dir: &Path, name: &str) -> T {
    let path = data_dir.join(name);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|_| {
            let _ = std::fs::rename(&path, data_dir.join(format!("{name}.unreadable")));
            T::default()
        }),
        Err(_) => T::default(),
    }
}

/// Writes `value` to `data_dir/name` atomically.
pub fn save<T: Serialize>(data_dir: &Path, name: &str, value: &T) -> Result<(), IpcError> {
    let path = data_dir.join(name);
    let io = |e: String| IpcError::new(ErrorCode::Io, format!("saving {}: {e}", path.display()));
    let text = serde_json::to_vec_pretty(value).map_err(|e| io(e.to_string()))?;
    k3_store::durable::write_atomic(&path, &text).map_err(|e| io(e.to_string()))
}
