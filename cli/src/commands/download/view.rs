//! How `k3 download` shows its events: JSON lines (`--json`), a progress bar with notices
//! above it on a terminal (indicatif), or plain lines when stderr is not a terminal (a log,
//! a pipe), with progress at most every 5 s there.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use k3_store::download::space::tb;
use k3_store::{DownloadEvent, FileState};

/// Seconds between progress lines when there is no bar.
const PLAIN_PROGRESS_EVERY: Duration = Duration::from_secs(5);

enum Mode {
    Json,
    Bar(ProgressBar),
    Plain(Mutex<Option<Instant>>),
}

pub struct View {
    mode: Mode,
}

impl View {
    pub fn new(json: bool) -> View {
        let mode = if json {
            Mode::Json
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template("{bar:30} {msg}").unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            Mode::Bar(bar)
        } else {
            Mode::Plain(Mutex::new(None))
        };
        View { mode }
    }

    pub fn event(&self, e: DownloadEvent) {
        match &self.mode {
            Mode::Json => {
                if let Ok(text) = serde_json::to_string(&e) {
                    outln!("{text}");
                }
            }
            Mode::Bar(bar) => match &e {
                DownloadEvent::Progress(p) => {
                    bar.set_length(p.total_bytes);
                    bar.set_position(p.done_bytes);
                    bar.set_message(progress_text(p));
                }
                other => {
                    if let Some(text) = describe(other) {
                        bar.println(text);
                    }
                }
            },
            Mode::Plain(last) => match &e {
                DownloadEvent::Progress(p) => {
                    let Ok(mut last) = last.lock() else { return };
                    if last.is_none_or(|t| t.elapsed() >= PLAIN_PROGRESS_EVERY) {
                        *last = Some(Instant::now());
                        outln!("{}", progress_text(p));
                    }
                }
                other => {
                    if let Some(text) = describe(other) {
                        outln!("{text}");
                    }
                }
            },
        }
    }

    /// A status that replaces the previous one (the bar's message; a line otherwise).
    pub fn transient(&self, value: serde_json::Value, text: &str) {
        match &self.mode {
            Mode::Json => outln!("{value}"),
            Mode::Bar(bar) => bar.set_message(text.to_string()),
            Mode::Plain(_) => {}
        }
    }

    pub fn line(&self, value: serde_json::Value, text: &str) {
        match &self.mode {
            Mode::Json => outln!("{value}"),
            Mode::Bar(bar) => bar.println(text),
            Mode::Plain(_) => outln!("{text}"),
        }
    }

    pub fn finish(&self) {
        if let Mode::Bar(bar) = &self.mode {
            bar.finish_and_clear();
        }
    }
}

fn progress_text(p: &k3_store::ProgressSnapshot) -> String {
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
fn describe(e: &DownloadEvent) -> Option<String> {
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
