//! The text `k3 download` shows for its events: the progress line, and a line for each
//! event worth one (none for the quiet ones).

use k3_store::download::space::tb;
use k3_store::{DownloadEvent, FileState};

pub(super) fn progress_text(p: &k3_store::ProgressSnapshot) -> String {
    let eta = p.eta_seconds.map_or("—".to_string(), format_eta);
    format!(
        "{} of {} · {:.1} MB/s · ETA {eta} · {} active",
        tb(p.done_bytes),
        tb(p.total_bytes),
        p.speed_bytes_per_s / 1e6,
        p.active_files
    )
}

fn format_eta(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        s if s >= 3600 => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
        s if s >= 60 => format!("{}m {:02}s", s / 60, s % 60),
        s => format!("{s} s"),
    }
}

/// The line an event deserves, `None` for the quiet ones.
pub(super) fn describe(e: &DownloadEvent) -> Option<String> {
    Some(match e {
        DownloadEvent::Progress(_) | DownloadEvent::Complete { .. } => return None,
        DownloadEvent::Pinned { repo, commit, files, total_bytes, kept_bytes } => {
            let kept = match kept_bytes {
                0 => "nothing kept from before".to_string(),
                k => format!("{} kept from before", tb(*k)),
            };
            format!("{repo} at commit {commit}: {files} files, {}; {kept}", tb(*total_bytes))
        }
        DownloadEvent::SpaceChecked { dir, need, free } => {
            format!("{}: {} free, {} needed", dir.display(), tb(*free), tb(need.total()))
        }
        DownloadEvent::FileState { path, state, detail } => {
            let word = match state {
                FileState::Verified => "verified",
                FileState::Failed => "FAILED",
                FileState::Queued | FileState::Downloading | FileState::Verifying => return None,
            };
            format!("{path}: {word}{}", detail.as_ref().map(|d| format!(" — {d}")).unwrap_or_default())
        }
        DownloadEvent::Retrying { path, reason, attempt, wait_seconds } => {
            format!("{path}: {reason}; retrying in {wait_seconds:.0} s (attempt {attempt})")
        }
        DownloadEvent::Paused { path, reason, free, needed } => {
            format!(
                "paused at {path}: {reason}; {} free, {} needed — free space and it resumes",
                tb(*free),
                tb(*needed)
            )
        }
        DownloadEvent::Notice { path, message } => format!("{path}: {message}"),
    })
}
