//! Links in replies open in the system browser, never inside the app's window.
//!
//! Must not: open anything but an absolute `https:` URL (model output is untrusted).

use tauri::{AppHandle, Runtime};
use tauri_plugin_opener::OpenerExt;

use crate::ipc::error::{ErrorCode, IpcError};

/// The URL, when it is one the app may hand to the system browser.
pub fn checked_link(url: &str) -> Result<tauri::Url, IpcError> {
    let parsed = tauri::Url::parse(url.trim()).map_err(|e| IpcError::invalid(format!("not a URL: {url}: {e}")))?;
    if parsed.scheme() != "https" || parsed.host_str().is_none_or(str::is_empty) {
        return Err(IpcError::invalid(format!("only https: links open outside the app, not {url}")));
    }
    Ok(parsed)
}

#[tauri::command]
pub async fn open_link<R: Runtime>(app: AppHandle<R>, url: String) -> Result<(), IpcError> {
    let url = checked_link(&url)?;
    app.opener()
        .open_url(url.as_str(), None::<&str>)
        .map_err(|e| IpcError::new(ErrorCode::Io, format!("opening {url} in the browser: {e}")))
}
