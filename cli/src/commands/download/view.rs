//! How `k3 download` shows its events: JSON lines (`--json`), a progress bar with notices
//! above it on a terminal (indicatif), or plain lines when stderr is not a terminal (a log,
//! a pipe), with progress at most every 5 s there. The lines' text is [`super::describe`]'s.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use k3_store::DownloadEvent;

use super::describe::{describe, progress_text};

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
