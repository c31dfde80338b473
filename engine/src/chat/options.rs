//! Request options a conversation is rendered with, and the one place their option
//! messages are worded (tech report §F: every option is a short natural-language
//! instruction in context, not special syntax).
//!
//! Owns: [`ChatMode`], thinking [`Effort`], [`ToolChoice`], [`ResponseFormat`], the
//! [`ChatOptions`] that bundle them with the request's tools, and the text of each option
//! message ([`effort_text`], [`tool_choice_text`], [`response_format_text`]).
//! Must not: decide placement (the renderers do: global options before the input
//! messages, one-shot options after them), or know a wire format.

use serde::{Deserialize, Serialize};

use crate::chat::message::ToolSpec;

/// Instruct (answer directly) or thinking (reason in the `think` channel first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatMode {
    Instruct,
    Thinking,
}

/// How hard to think: the four levels K3's template reserves (tech report §F).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    Low,
    Medium,
    High,
    Max,
}

impl Effort {
    pub const ALL: [Effort; 4] = [Effort::Low, Effort::Medium, Effort::High, Effort::Max];

    /// The levels K3 was trained at (tech report §4.1.2: one expert per domain "at every
    /// reasoning effort level", {low, high, max}); a request for another is refused.
    pub const SUPPORTED_BY_K3: [Effort; 3] = [Effort::Low, Effort::High, Effort::Max];

    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Max => "max",
        }
    }

    /// The level named `name` (`low`, `medium`, `high`, `max`).
    pub fn parse(name: &str) -> Option<Effort> {
        Effort::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

/// Whether and which tool the reply must call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (no option message).
    #[default]
    Auto,
    /// No call in this reply.
    None,
    /// At least one call of a declared tool.
    Required,
    /// A call of this tool.
    Function(String),
}

/// The shape of the response channel.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Free text (no option message).
    #[default]
    Text,
    /// One JSON object.
    JsonObject,
    /// One JSON value matching `schema`.
    JsonSchema { name: String, schema: serde_json::Value },
}

/// The options a request renders with beside its messages.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatOptions {
    /// Tools declared for the whole conversation (a global option message).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// Thinking effort (thinking mode only; `None`: the model's default, no message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// One-shot: which tool this reply calls.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// One-shot: the response's shape.
    #[serde(default)]
    pub response_format: ResponseFormat,
}

impl ChatOptions {
    /// The options that govern the whole session (tools and effort): a change re-renders
    /// the conversation from its start.
    pub fn global(&self) -> (&[ToolSpec], Option<Effort>) {
        (&self.tools, self.effort)
    }
}

/// The thinking-effort option message.
pub fn effort_text(effort: Effort) -> String {
    let how = match effort {
        Effort::Low => "Think briefly, only as much as the answer needs.",
        Effort::Medium => "Think with moderate care before answering.",
        Effort::High => "Think thoroughly before answering.",
        Effort::Max => "Think as long and as carefully as the task allows.",
    };
    format!("Reasoning effort: {}. {how}", effort.as_str())
}

/// The tool-choice option message (`None` for `auto`: no message).
pub fn tool_choice_text(choice: &ToolChoice) -> Option<String> {
    match choice {
        ToolChoice::Auto => None,
        ToolChoice::None => Some("Do not call any tool in this reply.".into()),
        ToolChoice::Required => Some("Call at least one of the declared tools in this reply.".into()),
        ToolChoice::Function(name) => Some(format!("Call the tool \"{name}\" in this reply.")),
    }
}

/// The response-format option message (`None` for text: no message). The schema is
/// written as JSON with `<`, `>`, `&` and `'` escaped (see `escape::json_text`).
pub fn response_format_text(format: &ResponseFormat) -> Option<String> {
    match format {
        ResponseFormat::Text => None,
        ResponseFormat::JsonObject => {
            Some("Write the response as one JSON object, with nothing before or after it.".into())
        }
        ResponseFormat::JsonSchema { schema, .. } => Some(format!(
            "Write the response as one JSON value that matches this JSON schema, with nothing before or after it: {}",
            crate::chat::escape::json_text(schema)
        )),
    }
}
