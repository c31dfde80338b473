//! The queue's answers out: JSONL (one object per finished item) or CSV (one row each).
//!
//! Owns: [`render`] and the exported fields: `id` (the item's label), `prompt`, `system`,
//! `status`, `text`, `think`, `finish`, `error`, `prompt_tokens`, `output_tokens`, `seconds`.
//! Must not: export an item that has not finished (it has no answer yet).

use serde::Serialize;

use super::journal::{Outcome, QueueItem, Status};

/// How to write the answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Jsonl,
    Csv,
}

/// A rendered export: the file name to suggest and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportFile {
    pub file_name: String,
    pub content: String,
}

#[derive(Serialize)]
struct Row<'a> {
    id: &'a str,
    prompt: &'a str,
    system: Option<&'a str>,
    status: &'a str,
    text: &'a str,
    think: Option<&'a str>,
    finish: Option<&'a str>,
    error: Option<&'a str>,
    prompt_tokens: u32,
    output_tokens: u32,
    seconds: f64,
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Done => "done",
        Status::Failed => "failed",
        Status::Cancelled => "cancelled",
    }
}

fn row<'a>(item: &'a QueueItem, outcome: &'a Outcome) -> Row<'a> {
    Row {
        id: &item.label,
        prompt: &item.prompt,
        system: item.system.as_deref(),
        status: status_name(outcome.status),
        text: &outcome.text,
        think: outcome.think.as_deref(),
        finish: outcome.finish.as_deref(),
        error: outcome.error.as_deref(),
        prompt_tokens: outcome.prompt_tokens,
        output_tokens: outcome.output_tokens,
        seconds: (outcome.seconds * 1000.0).round() / 1000.0,
    }
}

/// The finished items' answers, in queue order.
pub fn render(finished: &[(&QueueItem, &Outcome)], format: ExportFormat) -> ExportFile {
    match format {
        ExportFormat::Jsonl => {
            let mut content = String::new();
            for (item, outcome) in finished {
                // A row of strings and numbers always serializes.
                content.push_str(&serde_json::to_string(&row(item, outcome)).unwrap_or_default());
                content.push('\n');
            }
            ExportFile { file_name: "k3-queue-answers.jsonl".into(), content }
        }
        ExportFormat::Csv => {
            let mut writer = csv::Writer::from_writer(Vec::new());
            for (item, outcome) in finished {
                // Writing to a Vec cannot fail; a row that could not be written is left out.
                if let Err(e) = writer.serialize(row(item, outcome)) {
                    log::warn!("queue export: item {} left out: {e}", item.label);
                }
            }
            let bytes = writer.into_inner().unwrap_or_default();
            ExportFile {
                file_name: "k3-queue-answers.csv".into(),
                content: String::from_utf8_lossy(&bytes).into_owned(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::journal::ItemSettings;

    fn pair() -> (QueueItem, Outcome) {
        let settings = ItemSettings { temperature: 0.0, top_p: 1.0, max_tokens: 4, thinking: false };
        let item = QueueItem {
            id: 1,
            label: "q1".into(),
            prompt: "Say \"hi\", twice".into(),
            system: None,
            settings,
            seed: 0,
            added_at: 0,
        };
        let outcome = Outcome {
            status: Status::Done,
            text: "hi\nhi".into(),
            think: None,
            finish: Some("stop".into()),
            error: None,
            prompt_tokens: 9,
            output_tokens: 3,
            seconds: 1.23456,
            finished_at: 0,
        };
        (item, outcome)
    }

    #[test]
    fn jsonl_and_csv_carry_the_prompt_and_the_answer_exactly() {
        let (item, outcome) = pair();
        let jsonl = render(&[(&item, &outcome)], ExportFormat::Jsonl);
        let v: serde_json::Value = serde_json::from_str(jsonl.content.trim_end()).unwrap();
        assert_eq!(
            (v["id"].as_str(), v["text"].as_str(), v["seconds"].as_f64()),
            (Some("q1"), Some("hi\nhi"), Some(1.235))
        );
        let csv = render(&[(&item, &outcome)], ExportFormat::Csv);
        let mut reader = csv::Reader::from_reader(csv.content.as_bytes());
        let headers = reader.headers().unwrap().clone();
        let row = reader.records().next().unwrap().unwrap();
        let field = |name: &str| row.get(headers.iter().position(|h| h == name).unwrap()).unwrap().to_string();
        assert_eq!(
            (field("prompt"), field("text"), field("status")),
            (item.prompt.clone(), "hi\nhi".into(), "done".into())
        );
        assert!(csv.file_name.ends_with(".csv"));
    }
}
