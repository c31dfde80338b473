//! While a long setup job runs (download, verify, pack, first load), the machine is kept
//! from idle sleep (`keepawake`: systemd-logind / the freedesktop ScreenSaver on Linux,
//! IOKit assertions on macOS, SetThreadExecutionState on Windows), and when the job ends a
//! desktop notification says so (tauri-plugin-notification).
//!
//! Owns: [`AwakeGuard`] — the inhibition lives on its own thread (the platform calls block;
//! they never run on the async runtime) and ends when the guard drops — and [`notify`].
//! Must not: fail a job because the system refused to inhibit sleep or show a notice: both
//! are reported and the job goes on.

use std::sync::mpsc;
use std::thread::JoinHandle;

use tauri::{AppHandle, Manager, Runtime};

/// Keeps the machine awake until dropped.
pub struct AwakeGuard {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// Asks the system to stay awake for `reason`; the guard, and the system's refusal (in
/// words) when it refused — a container without D-Bus, say.
pub fn hold(reason: &str) -> (AwakeGuard, Result<(), String>) {
    let (stop, stopped) = mpsc::channel::<()>();
    let (told, outcome) = mpsc::channel::<Result<(), String>>();
    let reason = reason.to_string();
    let thread = std::thread::Builder::new().name("k3-keep-awake".into()).spawn(move || {
        let awake = keepawake::Builder::default()
            .idle(true)
            .sleep(true)
            .reason(reason)
            .app_name("k3-desktop")
            .app_reverse_domain("dev.k3.desktop")
            .create();
        let _ = told.send(awake.as_ref().map(|_| ()).map_err(|e| e.to_string()));
        // Held until the guard drops (or its sender is gone).
        let _ = stopped.recv();
        drop(awake);
    });
    match thread {
        Ok(thread) => {
            let result = outcome.recv().unwrap_or_else(|_| Err("the keep-awake thread ended".into()));
            (AwakeGuard { stop: Some(stop), thread: Some(thread) }, result)
        }
        Err(e) => (AwakeGuard { stop: None, thread: None }, Err(e.to_string())),
    }
}

impl Drop for AwakeGuard {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Posts a desktop notification; `Err` (in words) when the app has no notification plugin
/// or the desktop refused.
pub fn notify<R: Runtime>(app: &AppHandle<R>, title: &str, body: &str) -> Result<(), String> {
    let Some(plugin) = app.try_state::<tauri_plugin_notification::Notification<R>>() else {
        return Err("notifications are not available in this build".into());
    };
    plugin.builder().title(title).body(body).show().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_or_granted_inhibition_never_blocks_and_the_guard_ends_it() {
        let start = std::time::Instant::now();
        let (guard, outcome) = hold("k3-desktop test");
        eprintln!("keep-awake on this machine: {outcome:?}");
        // Either way it is reported, not panicked on; on this CI machine there is no
        // session bus, so it is usually refused with the reason.
        if let Err(reason) = &outcome {
            assert!(!reason.is_empty());
        }
        drop(guard);
        assert!(start.elapsed() < std::time::Duration::from_secs(30), "holding and releasing returned");
    }
}
