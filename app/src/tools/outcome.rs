//! A call's result as the model reads it: the text of its content blocks, other content
//! named in a line (an image is described, never passed on), cut at [`MAX_RESULT_BYTES`]
//! with a note saying so.
//!
//! Must not: drop an error's text (the model is told what went wrong), or cut inside a
//! character.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use super::ToolError;

/// The most bytes of one result the model is given (about 8 k tokens).
pub const MAX_RESULT_BYTES: usize = 32 * 1024;

/// What one call gave back, ready to be a tool message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallOutcome {
    /// The text the model reads (with the note when cut).
    pub text: String,
    /// The tool or the app reported a failure (the text says which).
    pub is_error: bool,
    /// The result's whole size when it was cut.
    pub cut_from_bytes: Option<usize>,
    /// The user stopped the call (the loop ends with it).
    pub stopped: bool,
}

impl CallOutcome {
    /// The outcome of a server's answer.
    pub fn of_result(result: &CallToolResult) -> CallOutcome {
        let mut parts: Vec<String> = result.content.iter().map(block_text).collect();
        if parts.is_empty() {
            if let Some(value) = &result.structured_content {
                parts.push(value.to_string());
            }
        }
        let (text, cut_from_bytes) = capped(parts.join("\n"), MAX_RESULT_BYTES);
        CallOutcome { text, is_error: result.is_error == Some(true), cut_from_bytes, stopped: false }
    }

    /// A call the app could not complete, told to the model as an error result.
    pub fn of_error(error: &ToolError) -> CallOutcome {
        CallOutcome { text: format!("Error: {error}"), is_error: true, cut_from_bytes: None, stopped: false }
    }

    /// [`CallOutcome::of_error`], marked stopped when the user stopped it.
    pub fn stopped_if(error: &ToolError) -> CallOutcome {
        CallOutcome { stopped: matches!(error, ToolError::Cancelled { .. }), ..CallOutcome::of_error(error) }
    }

    /// A call the user denied, told to the model so it can go on without it.
    pub fn denied(tool: &str) -> CallOutcome {
        let text = format!("Error: the user denied this call of {tool}.");
        CallOutcome { text, is_error: true, cut_from_bytes: None, stopped: false }
    }
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!("[image: {}, {} bytes of base64, not shown]", i.mime_type, i.data.len()),
        ContentBlock::Audio(a) => format!("[audio: {}, {} bytes of base64, not shown]", a.mime_type, a.data.len()),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => format!("[resource {uri}]\n{text}"),
            ResourceContents::BlobResourceContents { uri, blob, .. } => {
                format!("[resource {uri}: {} bytes of base64, not shown]", blob.len())
            }
            // rmcp's enums are non-exhaustive: content of a later protocol version.
            _ => "[a resource of a kind this app does not read]".to_string(),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link: {} ({})]", link.uri, link.name),
        _ => "[content of a kind this app does not read]".to_string(),
    }
}

/// `text` cut to at most `limit` bytes on a character boundary, with a note naming both
/// sizes; the original size when cut.
pub fn capped(text: String, limit: usize) -> (String, Option<usize>) {
    if text.len() <= limit {
        return (text, None);
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let whole = text.len();
    let note = format!("\n\n[The result was cut to its first {end} of {whole} bytes.]");
    (format!("{}{note}", &text[..end]), Some(whole))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_past_the_cap_is_cut_on_a_character_with_a_note() {
        let text = format!("{}é{}", "a".repeat(9), "b".repeat(20));
        let (cut, whole) = capped(text.clone(), 10);
        assert_eq!(whole, Some(text.len()));
        assert!(cut.starts_with(&"a".repeat(9)) && !cut.contains('é'), "{cut}");
        assert!(cut.ends_with("[The result was cut to its first 9 of 31 bytes.]"), "{cut}");
        assert_eq!(capped("short".into(), 10), ("short".to_string(), None));
    }

    #[test]
    fn blocks_become_text_and_an_image_is_named_not_passed_on() {
        let result =
            CallToolResult::success(vec![ContentBlock::text("first"), ContentBlock::image("AAAA", "image/png")]);
        let outcome = CallOutcome::of_result(&result);
        assert_eq!(outcome.text, "first\n[image: image/png, 4 bytes of base64, not shown]");
        assert!(!outcome.is_error);
        let failed = CallOutcome::of_result(&CallToolResult::error(vec![ContentBlock::text("no such file")]));
        assert!(failed.is_error && failed.text == "no such file");
    }
}
