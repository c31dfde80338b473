//! The messages of a conversation, with K3's tool calls and tool results (tech report §F).
//!
//! Owns: [`ChatMessage`] (system, user, assistant or tool), an assistant's [`ToolCall`]s,
//! the call a tool message answers ([`ToolAnswer`]) and a tool's declaration
//! ([`ToolSpec`]): what every front end hands the template, whatever its wire format.
//! Must not: know a wire format (OpenAI's `tool_call_id`, Anthropic's `tool_use` blocks
//! are mapped to these at the edge).
//! Easy to break: a call's `arguments` keep the key order and the text the model wrote
//! (re-rendering them must reproduce the generated tokens, or a session re-prefills).

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    /// The result of a tool call, sent back to the model.
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One tool call of an assistant message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Its position among the message's calls, from 1 (the template's `index`).
    pub index: u32,
    /// The client's handle for it (OpenAI's `id`, Anthropic's `tool_use` id); not rendered.
    pub id: String,
    /// The declared tool it calls.
    pub tool: String,
    /// Its arguments as JSON text (an object, keys in the order written).
    pub arguments: String,
}

/// The call a tool message answers: the same tool and index (tech report §F).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolAnswer {
    pub tool: String,
    pub index: u32,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A JSON schema of its arguments (an object schema).
    pub parameters: serde_json::Value,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    /// The visible text (the `response` channel for the assistant; the result for a tool).
    pub content: String,
    /// The assistant's `think` channel (thinking mode only).
    pub think: Option<String>,
    /// The assistant's tool calls (its `tools` channel), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<ToolAnswer>,
    /// For a system message: tools declared from here on (K3's dynamic tools).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
}

impl ChatMessage {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        ChatMessage {
            role,
            content: content.into(),
            think: None,
            tool_calls: Vec::new(),
            answers: None,
            tools: Vec::new(),
        }
    }

    /// An assistant reply: its response, think channel and calls.
    pub fn assistant(content: impl Into<String>, think: Option<String>, tool_calls: Vec<ToolCall>) -> Self {
        ChatMessage { think, tool_calls, ..ChatMessage::new(Role::Assistant, content) }
    }

    /// The result of the call `answers`.
    pub fn tool_result(answers: ToolAnswer, content: impl Into<String>) -> Self {
        ChatMessage { answers: Some(answers), ..ChatMessage::new(Role::Tool, content) }
    }
}
