//! Prompts into the queue: typed (one per line), a JSONL file or a CSV file.
//!
//! Owns: [`parse`] and the accepted shapes. JSONL lines are a JSON string, an object with a
//! `prompt` (and optional `system`, `id` or `custom_id`), or an OpenAI Batch API request
//! line (`custom_id`, `body.messages`: an optional system message and one user message).
//! CSV has a header row with a `prompt` column (and optional `system`, `id`); a file of a
//! single column with no such header is all prompts.
//! Must not: accept half a file. Any bad line refuses the import, naming the line and why.

use serde_json::Value;

use super::error::QueueError;

/// How the text to import is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportFormat {
    /// One prompt per line; blank lines are skipped.
    Lines,
    Jsonl,
    Csv,
}

/// The most prompts one import adds.
pub const MAX_IMPORT: usize = 10_000;

/// One prompt to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewItem {
    /// The name it was given (`id` / `custom_id`), if any.
    pub label: Option<String>,
    pub prompt: String,
    /// Its own system prompt; `None`: the new-chat default.
    pub system: Option<String>,
}

impl NewItem {
    pub fn prompt(prompt: impl Into<String>) -> NewItem {
        NewItem { label: None, prompt: prompt.into(), system: None }
    }
}

/// The prompts in `text`, laid out as `format`.
pub fn parse(text: &str, format: ImportFormat) -> Result<Vec<NewItem>, QueueError> {
    let items = match format {
        ImportFormat::Lines => {
            text.lines().map(str::trim).filter(|l| !l.is_empty()).map(NewItem::prompt).collect::<Vec<_>>()
        }
        ImportFormat::Jsonl => parse_jsonl(text)?,
        ImportFormat::Csv => parse_csv(text)?,
    };
    if items.is_empty() {
        return Err(import(0, "there is no prompt to add".into()));
    }
    if items.len() > MAX_IMPORT {
        return Err(import(0, format!("{} prompts; one import adds at most {MAX_IMPORT}", items.len())));
    }
    Ok(items)
}

fn import(line: usize, reason: String) -> QueueError {
    QueueError::Import { line, reason }
}

fn parse_jsonl(text: &str) -> Result<Vec<NewItem>, QueueError> {
    let mut items = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let bad = |reason: String| import(n + 1, reason);
        let v: Value = serde_json::from_str(line).map_err(|e| bad(format!("not JSON ({e})")))?;
        items.push(jsonl_item(&v).map_err(bad)?);
    }
    Ok(items)
}

/// One JSONL line's prompt.
fn jsonl_item(v: &Value) -> Result<NewItem, String> {
    if let Some(prompt) = v.as_str() {
        return non_empty(prompt).map(NewItem::prompt);
    }
    let text = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let label = text("custom_id").or_else(|| text("id"));
    if let Some(prompt) = text("prompt") {
        return Ok(NewItem { label, prompt: non_empty(&prompt)?, system: text("system") });
    }
    let Some(messages) = v.pointer("/body/messages").and_then(Value::as_array) else {
        return Err("expected a string, an object with `prompt`, or a Batch API request with `body.messages`".into());
    };
    let content = |m: &Value| m["content"].as_str().map(str::to_string);
    match messages.as_slice() {
        [user] if user["role"] == "user" => {
            Ok(NewItem { label, prompt: non_empty(&content(user).unwrap_or_default())?, system: None })
        }
        [system, user] if system["role"] == "system" && user["role"] == "user" => {
            Ok(NewItem { label, prompt: non_empty(&content(user).unwrap_or_default())?, system: content(system) })
        }
        _ => Err("a queue item is one user message with an optional system message before it \
                  (k3 serve's Batch API takes whole conversations)"
            .into()),
    }
}

fn non_empty(prompt: &str) -> Result<String, String> {
    let prompt = prompt.trim();
    if prompt.is_empty() {
        return Err("the prompt is empty".into());
    }
    Ok(prompt.to_string())
}

fn parse_csv(text: &str) -> Result<Vec<NewItem>, QueueError> {
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text.as_bytes());
    let mut rows = reader.records();
    let header = match rows.next() {
        Some(row) => row.map_err(|e| import(1, format!("not CSV ({e})")))?,
        None => return Ok(Vec::new()),
    };
    let names: Vec<String> = header.iter().map(|h| h.trim().to_ascii_lowercase()).collect();
    let column = |name: &str| names.iter().position(|n| n == name);
    let (prompt_at, headed) = match column("prompt") {
        Some(at) => (at, true),
        None if names.len() == 1 => (0, false),
        None => {
            return Err(import(
                1,
                format!("no `prompt` column (the columns are: {})", header.iter().collect::<Vec<_>>().join(", ")),
            ));
        }
    };
    let (system_at, label_at) =
        if headed { (column("system"), column("id").or(column("custom_id"))) } else { (None, None) };
    let mut items = Vec::new();
    let first = (!headed).then_some(Ok(header));
    for (n, row) in first.into_iter().chain(rows).enumerate() {
        let line = n + if headed { 2 } else { 1 };
        let row = row.map_err(|e| import(line, format!("not CSV ({e})")))?;
        if row.iter().all(|f| f.trim().is_empty()) {
            continue;
        }
        let field = |at: Option<usize>| {
            at.and_then(|i| row.get(i)).map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
        };
        let prompt = field(Some(prompt_at)).ok_or_else(|| import(line, "the prompt is empty".into()))?;
        items.push(NewItem { label: field(label_at), prompt, system: field(system_at) });
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_prompts_are_one_per_line() {
        let items = parse("  first \n\n second\n", ImportFormat::Lines).unwrap();
        assert_eq!(items, vec![NewItem::prompt("first"), NewItem::prompt("second")]);
        assert!(parse(" \n", ImportFormat::Lines).is_err());
    }

    #[test]
    fn jsonl_takes_strings_objects_and_batch_api_lines() {
        let text = r#""plain"
{"prompt": "with id", "id": "a", "system": "be brief"}
{"custom_id": "req-1", "method": "POST", "url": "/v1/chat/completions", "body": {"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]}}
"#;
        let items = parse(text, ImportFormat::Jsonl).unwrap();
        assert_eq!(items[0], NewItem::prompt("plain"));
        assert_eq!(
            items[1],
            NewItem { label: Some("a".into()), prompt: "with id".into(), system: Some("be brief".into()) }
        );
        assert_eq!(items[2], NewItem { label: Some("req-1".into()), prompt: "hi".into(), system: Some("sys".into()) });
    }

    #[test]
    fn a_bad_jsonl_line_refuses_the_import_naming_it() {
        let e = parse("\"ok\"\n{\"prompt\": \n", ImportFormat::Jsonl).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("not JSON"), "{e}");
        let turns = r#"{"body": {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]}}"#;
        let e = parse(turns, ImportFormat::Jsonl).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("one user message"), "{e}");
        let e = parse("{\"prompt\": \"  \"}", ImportFormat::Jsonl).unwrap_err().to_string();
        assert!(e.contains("empty"), "{e}");
    }

    #[test]
    fn csv_reads_a_prompt_column_with_quotes_and_newlines() {
        let text = "id,Prompt,system\nq1,\"Hello, world\",\nq2,\"two\nlines\",terse\n";
        let items = parse(text, ImportFormat::Csv).unwrap();
        assert_eq!(items[0], NewItem { label: Some("q1".into()), prompt: "Hello, world".into(), system: None });
        assert_eq!(
            items[1],
            NewItem { label: Some("q2".into()), prompt: "two\nlines".into(), system: Some("terse".into()) }
        );
    }

    #[test]
    fn a_single_column_csv_without_header_is_all_prompts_and_other_columns_are_named() {
        let items = parse("first\n\"second, too\"\n", ImportFormat::Csv).unwrap();
        assert_eq!(items, vec![NewItem::prompt("first"), NewItem::prompt("second, too")]);
        let e = parse("question,answer\nwhy,because\n", ImportFormat::Csv).unwrap_err().to_string();
        assert!(e.contains("no `prompt` column") && e.contains("question, answer"), "{e}");
        let e = parse("prompt,id\nok,1\n,2\n", ImportFormat::Csv).unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("empty"), "{e}");
    }
}
