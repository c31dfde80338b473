//! One server-sent event of a chat-completion stream, decoded.
//!
//! The shapes servers send (OpenAI and the engines that copy it): `chat.completion.chunk`
//! objects whose `choices[0].delta` holds `content` and, from reasoning models,
//! `reasoning_content` (vLLM, SGLang, DeepSeek, k3 serve) or `reasoning` (OpenRouter, newer
//! vLLM); `role` on the first chunk or on every one; `finish_reason` on the last choice;
//! `usage` on that last chunk or on a chunk of its own with no choices; `data: [DONE]` at the
//! end; an `{"error": …}` object instead of a chunk (with or without `event: error`) when the
//! server fails mid-stream. Unknown fields are ignored: servers add their own.

use serde::Deserialize;

/// Why the remote stopped writing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// A stop sequence or the end-of-message token.
    Stop,
    /// `max_tokens` reached.
    Length,
    /// Anything else the server names (`content_filter`, `tool_calls`, …).
    Other(String),
}

impl FinishReason {
    fn from_wire(s: &str) -> Self {
        match s {
            "stop" | "eos" => FinishReason::Stop,
            "length" => FinishReason::Length,
            other => FinishReason::Other(other.to_string()),
        }
    }
}

/// The server's own token counts for the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// What one event adds to the reply.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub content: String,
    pub reasoning: String,
    pub finish: Option<FinishReason>,
    pub usage: Option<Usage>,
    /// `data: [DONE]`: nothing follows.
    pub done: bool,
}

/// Why a stream cannot be read as a reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// The server reported an error inside the stream.
    #[error("the server stopped the reply: {message}{}", code.as_deref().map(|c| format!(" ({c})")).unwrap_or_default())]
    Server { message: String, code: Option<String> },
    /// An event's data is not a chunk this client understands.
    #[error("event {index} of the stream is not a chat-completion chunk ({reason}): {excerpt}")]
    NotAChunk { index: usize, reason: String, excerpt: String },
    /// The byte stream itself failed (connection reset, bad UTF-8 in the framing).
    #[error("the stream broke: {0}")]
    Transport(String),
    /// The stream ended before the server said the reply was finished.
    #[error("the stream ended before the reply did (no finish reason and no [DONE])")]
    EndedEarly,
    /// Nothing arrived for longer than the client waits between pieces.
    #[error("the server sent nothing for {after:?} in the middle of the reply")]
    Silent { after: std::time::Duration },
    /// Data after `[DONE]`.
    #[error("the server sent data after [DONE]")]
    AfterDone,
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    delta: Option<DeltaBody>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct DeltaBody {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
}

#[derive(Deserialize)]
struct ErrorEnvelope {
    error: ErrorBody,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
}

/// Decodes event number `index` (for messages), named `event` (`message` when the server
/// named none), whose data is `data`.
pub fn decode(index: usize, event: &str, data: &str) -> Result<Decoded, StreamError> {
    let data = data.trim();
    if data == "[DONE]" {
        return Ok(Decoded { done: true, ..Decoded::default() });
    }
    if let Ok(envelope) = serde_json::from_str::<ErrorEnvelope>(data) {
        return Err(server_error(envelope.error));
    }
    if event == "error" {
        let message = if data.is_empty() { "an error event with no message".to_string() } else { data.to_string() };
        return Err(StreamError::Server { message, code: None });
    }
    let chunk: Chunk = serde_json::from_str(data).map_err(|e| StreamError::NotAChunk {
        index,
        reason: e.to_string(),
        excerpt: data.chars().take(120).collect(),
    })?;
    let mut out = Decoded { usage: chunk.usage, ..Decoded::default() };
    // One reply is asked for (n = 1): choices other than index 0 are not ours to show.
    for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
        if let Some(delta) = choice.delta {
            out.content.push_str(delta.content.as_deref().unwrap_or(""));
            let reasoning = delta.reasoning_content.or(delta.reasoning);
            out.reasoning.push_str(reasoning.as_deref().unwrap_or(""));
        }
        if let Some(reason) = choice.finish_reason {
            out.finish = Some(FinishReason::from_wire(&reason));
        }
    }
    Ok(out)
}

fn server_error(e: ErrorBody) -> StreamError {
    let code = match e.code {
        Some(serde_json::Value::String(s)) => Some(s),
        Some(serde_json::Value::Null) | None => e.kind,
        Some(other) => Some(other.to_string()),
    };
    StreamError::Server { message: e.message.unwrap_or_else(|| "no message".to_string()), code }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_and_either_reasoning_field_are_read() {
        let d =
            decode(0, "message", r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}"#).unwrap();
        assert_eq!((d.content.as_str(), d.finish), ("Hi", None));
        let d = decode(1, "message", r#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#).unwrap();
        assert_eq!(d.reasoning, "think");
        let d = decode(2, "message", r#"{"choices":[{"delta":{"reasoning":"also"}}]}"#).unwrap();
        assert_eq!(d.reasoning, "also");
    }

    #[test]
    fn finish_usage_done_and_errors() {
        let d = decode(0, "message", r#"{"choices":[{"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}"#).unwrap();
        assert_eq!(d.finish, Some(FinishReason::Length));
        assert_eq!(d.usage, Some(Usage { prompt_tokens: 3, completion_tokens: 5 }));
        assert!(decode(1, "message", " [DONE] ").unwrap().done);
        let e = decode(2, "message", r#"{"error":{"message":"overloaded","code":503}}"#).unwrap_err();
        assert_eq!(e, StreamError::Server { message: "overloaded".into(), code: Some("503".into()) });
        let e = decode(3, "message", "{not json").unwrap_err();
        assert!(matches!(e, StreamError::NotAChunk { index: 3, .. }), "{e}");
    }
}
