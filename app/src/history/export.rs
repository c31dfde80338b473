//! Exports of one conversation: Markdown for people, JSON for programs (and re-import).
//!
//! Owns: both formats. The JSON is the conversation DTO inside a small envelope that names
//! the format and its version, so a later import can refuse what it does not understand.
//! Must not: drop messages: stopped and failed replies are exported with their status, tool
//! calls with their arguments and tool results with the call they answer.

use super::types::{Conversation, ExportFile, ExportFormat, MessageStatus, Role};

/// Name of the JSON envelope's format field.
pub const JSON_FORMAT: &str = "k3-desktop.conversation";
/// 2: tool messages, and assistant messages' tool calls.
pub const JSON_VERSION: u32 = 2;

/// The exported file for `conversation` in `format`.
pub fn export_conversation(conversation: &Conversation, format: ExportFormat) -> ExportFile {
    let content = match format {
        ExportFormat::Markdown => markdown(conversation),
        ExportFormat::Json => json(conversation),
    };
    ExportFile { file_name: export_file_name(&conversation.title, format), content }
}

/// A file name from the title: letters, digits and dashes only.
pub fn export_file_name(title: &str, format: ExportFormat) -> String {
    let slug = crate::slug::slug(title, char::is_alphanumeric, 48);
    let slug = if slug.is_empty() { "conversation".to_string() } else { slug };
    let ext = match format {
        ExportFormat::Markdown => "md",
        ExportFormat::Json => "json",
    };
    format!("{slug}.{ext}")
}

fn markdown(c: &Conversation) -> String {
    let mut out = format!("# {}\n\n", c.title);
    if !c.system_prompt.is_empty() {
        out.push_str(&format!("> **System:** {}\n\n", c.system_prompt.replace('\n', "\n> ")));
    }
    for m in &c.messages {
        let who = match (m.role, &m.tool_answer) {
            (Role::User, _) => "User".to_string(),
            (Role::Assistant, _) => "Assistant".to_string(),
            (Role::Tool, Some(a)) => format!("Tool result: {} (call {})", a.tool, a.index),
            (Role::Tool, None) => "Tool result".to_string(),
        };
        let status = match m.status {
            MessageStatus::Complete => "",
            MessageStatus::Stopped => " (stopped)",
            MessageStatus::Failed => " (failed)",
        };
        out.push_str(&format!("## {who}{status}\n\n"));
        if let Some(think) = m.think.as_deref().filter(|t| !t.is_empty()) {
            out.push_str(&format!("<details><summary>Thinking</summary>\n\n{think}\n\n</details>\n\n"));
        }
        if m.role == Role::Tool {
            out.push_str(&fenced(m.content.trim_end(), ""));
        } else {
            out.push_str(m.content.trim_end());
        }
        out.push_str("\n\n");
        for call in &m.tool_calls {
            out.push_str(&format!(
                "**Call {}: `{}`**\n\n{}\n\n",
                call.index,
                call.tool,
                fenced(&call.arguments, "json")
            ));
        }
        if let Some(s) = &m.stats {
            let spt = s.seconds_per_token.map(|v| format!(" · {v:.3} s/token")).unwrap_or_default();
            out.push_str(&format!(
                "_{} tokens · first token after {:.2} s{spt} · {}_\n\n",
                s.output_tokens,
                s.time_to_first_token_ms as f64 / 1000.0,
                s.model
            ));
        }
    }
    out
}

/// `text` in a code fence longer than any run of backticks it holds.
fn fenced(text: &str, lang: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{text}\n{fence}")
}

fn json(c: &Conversation) -> String {
    let envelope = serde_json::json!({ "format": JSON_FORMAT, "version": JSON_VERSION, "conversation": c });
    // A Conversation is plain data (strings, numbers, options): serialising it cannot fail.
    serde_json::to_string_pretty(&envelope).unwrap_or_default()
}
