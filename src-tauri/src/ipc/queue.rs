//! The Queue view's wire types and their conversions from `k3_app::queue`'s records.
//!
//! Owns: [`QueueState`] (the whole view), [`QueueEntry`] (one prompt), the import and
//! export formats the window names, and the `From` conversions (the app core's types never
//! reach the wire themselves).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use k3_app::queue::{ExportFormat, ImportFormat, ItemView, QueueView, RunView, Status};

/// Where one prompt of the queue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum QueueItemStatus {
    Waiting,
    Running,
    Done,
    Failed,
    Cancelled,
}

/// One prompt of the queue and, once it ran, its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct QueueEntry {
    #[ts(type = "number")]
    pub id: u64,
    pub label: String,
    pub prompt: String,
    pub system: Option<String>,
    pub status: QueueItemStatus,
    /// Prompt positions fed so far, of `prefillTotal` (running only).
    pub prefill_done: u32,
    pub prefill_total: u32,
    /// Tokens written so far (running), or in all (finished).
    pub tokens: u32,
    pub max_tokens: u32,
    /// Seconds it has run (running) or took (finished).
    pub seconds: f64,
    pub seconds_per_token: Option<f64>,
    pub text: String,
    pub error: Option<String>,
    /// `stop`, `length`, `context_full` or `cancelled`.
    pub finish: Option<String>,
}

/// The Queue view: its prompts, counts, ETA and what keeps it from running.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct QueueState {
    pub items: Vec<QueueEntry>,
    pub waiting: u32,
    pub running: u32,
    pub done: u32,
    pub failed: u32,
    pub cancelled: u32,
    pub paused: bool,
    /// Why the queue stopped itself (no model, a failure): Resume tries again.
    pub halted: Option<String>,
    /// Prompts answered at once.
    pub width: u32,
    /// Seconds until all are answered, from this queue's measured times; null before one is.
    pub eta_seconds: Option<f64>,
    /// Why the system would not keep the machine awake while the queue runs, when it refused.
    pub awake_refused: Option<String>,
    /// Why the queue cannot be used (its journal could not be read; the file is named).
    pub unavailable: Option<String>,
}

/// How the prompts to add are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum QueueImportFormat {
    /// One prompt per line (typed).
    Lines,
    Jsonl,
    Csv,
}

/// How to export the answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum QueueExportFormat {
    Jsonl,
    Csv,
}

impl From<QueueImportFormat> for ImportFormat {
    fn from(f: QueueImportFormat) -> Self {
        match f {
            QueueImportFormat::Lines => ImportFormat::Lines,
            QueueImportFormat::Jsonl => ImportFormat::Jsonl,
            QueueImportFormat::Csv => ImportFormat::Csv,
        }
    }
}

impl From<QueueExportFormat> for ExportFormat {
    fn from(f: QueueExportFormat) -> Self {
        match f {
            QueueExportFormat::Jsonl => ExportFormat::Jsonl,
            QueueExportFormat::Csv => ExportFormat::Csv,
        }
    }
}

impl From<&ItemView> for QueueEntry {
    fn from(v: &ItemView) -> Self {
        let item = &v.item;
        let mut entry = QueueEntry {
            id: item.id,
            label: item.label.clone(),
            prompt: item.prompt.clone(),
            system: item.system.clone(),
            status: QueueItemStatus::Waiting,
            prefill_done: 0,
            prefill_total: 0,
            tokens: 0,
            max_tokens: item.settings.max_tokens,
            seconds: 0.0,
            seconds_per_token: None,
            text: String::new(),
            error: None,
            finish: None,
        };
        match &v.run {
            RunView::Waiting => {}
            RunView::Running { prefill, tokens, seconds, seconds_per_token } => {
                entry.status = QueueItemStatus::Running;
                (entry.prefill_done, entry.prefill_total) = (prefill.0 as u32, prefill.1 as u32);
                (entry.tokens, entry.seconds, entry.seconds_per_token) = (*tokens as u32, *seconds, *seconds_per_token);
            }
            RunView::Finished(o) => {
                entry.status = match o.status {
                    Status::Done => QueueItemStatus::Done,
                    Status::Failed => QueueItemStatus::Failed,
                    Status::Cancelled => QueueItemStatus::Cancelled,
                };
                (entry.tokens, entry.seconds) = (o.output_tokens, o.seconds);
                entry.seconds_per_token = (o.output_tokens > 0).then(|| o.seconds / f64::from(o.output_tokens));
                (entry.text, entry.error, entry.finish) = (o.text.clone(), o.error.clone(), o.finish.clone());
            }
        }
        entry
    }
}

impl QueueState {
    /// The view of `v`; `awake_refused`: the system's refusal to keep the machine awake.
    pub fn of(v: &QueueView, awake_refused: Option<String>) -> QueueState {
        let c = &v.counts;
        QueueState {
            items: v.items.iter().map(QueueEntry::from).collect(),
            waiting: c.waiting as u32,
            running: c.running as u32,
            done: c.done as u32,
            failed: c.failed as u32,
            cancelled: c.cancelled as u32,
            paused: c.paused,
            halted: c.halted.clone(),
            width: v.width as u32,
            eta_seconds: v.eta_seconds,
            awake_refused,
            unavailable: None,
        }
    }

    /// The view when the queue could not open (`why` names the file).
    pub fn unavailable(why: String) -> QueueState {
        QueueState {
            items: Vec::new(),
            waiting: 0,
            running: 0,
            done: 0,
            failed: 0,
            cancelled: 0,
            paused: false,
            halted: None,
            width: 1,
            eta_seconds: None,
            awake_refused: None,
            unavailable: Some(why),
        }
    }
}
