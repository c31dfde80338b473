//! The `POST /v1/messages` body (serde structs over strict JSON) and its mapping to a turn.
//!
//! Owns: `system` (a string or text blocks), messages of roles user and assistant whose
//! content is a string or blocks — `text`, `thinking`, `tool_use` (id, name, input object)
//! and `tool_result` (the `tool_use_id` it answers, its text, `is_error`) —, `tools`
//! (`input_schema`), `tool_choice` (`auto`, `any`, `tool`, `none`;
//! `disable_parallel_tool_use`), `thinking` (`enabled`/`adaptive`/`disabled`),
//! `output_config.effort` (the thinking effort), `max_tokens`
//! (required, except to count tokens), `temperature`, `top_p`, `stop_sequences`. A user message's tool results
//! become tool messages before its text, as Anthropic orders them.
//! Must not: accept what the OpenAI route refuses (an image, a result for no call, a bad
//! schema): both end in `turn::assemble`.

use k3_engine::chat::{ChatMessage, ChatMode, ChatOptions, Role, ToolAnswer, ToolCall, ToolChoice};
use k3_engine::GenerateParams;
use k3_runtime::ChatTurn;
use serde::Deserialize;

use crate::agent::{check_distinct, effort_named, named_tool};
use crate::api_error::ApiError;
use crate::request::{SamplingFields, Stop, MAX_MESSAGES};
use crate::turn::{assemble, Conversation};

/// `POST /v1/messages` (and `/v1/messages/count_tokens`, which has no `max_tokens`).
#[derive(Debug, Deserialize)]
pub struct MessagesRequest {
    pub model: String,
    /// Required by `/v1/messages` ([`MessagesRequest::sampling`] refuses it missing).
    pub max_tokens: Option<u64>,
    pub messages: Vec<Message>,
    pub system: Option<Text>,
    #[serde(default)]
    pub stream: bool,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub stop_sequences: Option<Vec<String>>,
    pub tools: Option<Vec<Tool>>,
    pub tool_choice: Option<Choice>,
    pub thinking: Option<Thinking>,
    /// `effort` (Claude Code sends it): K3's thinking effort, when thinking is on.
    pub output_config: Option<OutputConfig>,
}

impl MessagesRequest {
    /// The top-level fields `POST /v1/messages` reads.
    pub const FIELDS: &'static [&'static str] = &[
        "model",
        "max_tokens",
        "messages",
        "system",
        "stream",
        "temperature",
        "top_p",
        "stop_sequences",
        "tools",
        "tool_choice",
        "thinking",
        "output_config",
    ];
}

#[derive(Debug, Deserialize)]
pub struct OutputConfig {
    pub effort: Option<String>,
}

/// A string, or text blocks.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Text {
    Plain(String),
    Blocks(Vec<TextBlock>),
}

#[derive(Debug, Deserialize)]
pub struct TextBlock {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: String,
}

#[derive(Debug, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: Content,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Plain(String),
    Blocks(Vec<Block>),
}

/// One content block.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text { text: String },
    Thinking { thinking: String },
    RedactedThinking {},
    ToolUse { id: String, name: String, input: serde_json::Value },
    ToolResult { tool_use_id: String, content: Option<Text>, is_error: Option<bool> },
    Image {},
    Document {},
}

#[derive(Debug, Deserialize)]
pub struct Tool {
    pub name: Option<String>,
    pub description: Option<String>,
    pub input_schema: Option<serde_json::Value>,
    #[serde(rename = "type")]
    pub kind: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Choice {
    #[serde(rename = "type")]
    pub kind: String,
    pub name: Option<String>,
    pub disable_parallel_tool_use: Option<bool>,
}

#[derive(Debug, Deserialize)]
pub struct Thinking {
    #[serde(rename = "type")]
    pub kind: String,
    pub budget_tokens: Option<u64>,
}

fn invalid(param: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::Invalid { param, message: message.into() }
}

impl Text {
    fn joined(&self, param: &'static str) -> Result<String, ApiError> {
        match self {
            Text::Plain(t) => Ok(t.clone()),
            Text::Blocks(blocks) => blocks
                .iter()
                .map(|b| {
                    if b.kind == "text" {
                        Ok(b.text.as_str())
                    } else {
                        Err(invalid(param, "only text blocks are supported here"))
                    }
                })
                .collect::<Result<Vec<_>, _>>()
                .map(|t| t.concat()),
        }
    }
}

impl MessagesRequest {
    /// The sampling fields as the OpenAI routes read them; a 400 without `max_tokens`.
    /// Anthropic's `max_tokens` is a ceiling agents set for the largest models (Claude Code
    /// asks for 32,000): above `context` it is capped there, and a reply that fills the
    /// context ends as `max_tokens`.
    pub fn sampling(&self, context: usize) -> Result<SamplingFields, ApiError> {
        let max_tokens = self.max_tokens.ok_or_else(|| invalid("max_tokens", "max_tokens is required"))?;
        Ok(SamplingFields {
            temperature: self.temperature,
            top_p: self.top_p,
            max_tokens: Some(max_tokens.min(context as u64)),
            stop: self.stop_sequences.clone().map(Stop::Many),
            ..SamplingFields::default()
        })
    }
}

/// The turn `request` asks to answer.
pub fn messages_turn(request: &MessagesRequest, params: GenerateParams) -> Result<(ChatTurn, ChatMode), ApiError> {
    if request.messages.is_empty() || request.messages.len() > MAX_MESSAGES {
        return Err(invalid("messages", format!("give 1 to {MAX_MESSAGES} messages")));
    }
    let mode = match request.thinking.as_ref().map(|t| t.kind.as_str()) {
        None | Some("disabled") => ChatMode::Instruct,
        // `adaptive`: the model decides how long to think; K3 thinks at its effort.
        Some("enabled" | "adaptive") => ChatMode::Thinking,
        Some(other) => {
            return Err(invalid(
                "thinking",
                format!("thinking.type `{}`: use enabled, adaptive or disabled", cut(other)),
            ))
        }
    };
    let effort = match request.output_config.as_ref().and_then(|c| c.effort.as_deref()) {
        Some(name) if mode == ChatMode::Thinking => Some(effort_named(name, "output_config")?),
        _ => None,
    };
    let mut messages = Vec::new();
    for (at, m) in request.messages.iter().enumerate() {
        map_message(m, at, mode, &mut messages)?;
    }
    let tools = request
        .tools
        .iter()
        .flatten()
        .map(|t| match t.kind.as_deref() {
            None | Some("custom") => named_tool(t.name.clone(), t.description.clone(), t.input_schema.clone(), "tools"),
            Some(other) => Err(invalid("tools", format!("tool type `{}` is not supported", cut(other)))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    check_distinct(tools.iter())?;
    let (tool_choice, parallel_calls) = choice(request.tool_choice.as_ref(), &tools)?;
    let options = ChatOptions { tools, tool_choice, effort, ..ChatOptions::default() };
    let system = request.system.as_ref().map(|s| s.joined("system")).transpose()?;
    let turn = assemble(Conversation { system, messages, mode, options, parallel_calls }, params)?;
    Ok((turn, mode))
}

fn choice(choice: Option<&Choice>, tools: &[k3_engine::chat::ToolSpec]) -> Result<(ToolChoice, bool), ApiError> {
    let Some(c) = choice else { return Ok((ToolChoice::Auto, true)) };
    let parallel = c.disable_parallel_tool_use != Some(true);
    let chosen = match (c.kind.as_str(), &c.name) {
        ("auto", _) => ToolChoice::Auto,
        ("none", _) => ToolChoice::None,
        ("any", _) if tools.is_empty() => return Err(invalid("tool_choice", "`any` needs declared tools")),
        ("any", _) => ToolChoice::Required,
        ("tool", Some(name)) if tools.iter().any(|t| t.name == *name) => ToolChoice::Function(name.clone()),
        ("tool", Some(name)) => {
            return Err(invalid("tool_choice", format!("the tool `{}` is not declared", cut(name))))
        }
        ("tool", None) => return Err(invalid("tool_choice", "`tool` needs a `name`")),
        (other, _) => return Err(invalid("tool_choice", format!("`{}`: use auto, any, tool or none", cut(other)))),
    };
    Ok((chosen, parallel))
}

/// Appends the core messages of `m` (the message at `at`) to `out`.
fn map_message(m: &Message, at: usize, mode: ChatMode, out: &mut Vec<ChatMessage>) -> Result<(), ApiError> {
    let blocks: Vec<&Block> = match &m.content {
        Content::Plain(text) => {
            let role = role(&m.role, at)?;
            let mut message = ChatMessage::new(role, text.clone());
            if role == Role::Assistant && mode == ChatMode::Thinking {
                message.think = Some(String::new());
            }
            out.push(message);
            return Ok(());
        }
        Content::Blocks(blocks) => blocks.iter().collect(),
    };
    match role(&m.role, at)? {
        Role::Assistant => out.push(assistant(&blocks, at, mode)?),
        _ => user(&blocks, at, out)?,
    }
    Ok(())
}

fn role(name: &str, at: usize) -> Result<Role, ApiError> {
    match name {
        "user" => Ok(Role::User),
        "assistant" => Ok(Role::Assistant),
        other => Err(invalid("messages", format!("message {at}: role `{}`: use user or assistant", cut(other)))),
    }
}

fn assistant(blocks: &[&Block], at: usize, mode: ChatMode) -> Result<ChatMessage, ApiError> {
    let (mut text, mut think, mut calls) = (String::new(), String::new(), Vec::new());
    for block in blocks {
        match block {
            Block::Text { text: t } => text.push_str(t),
            Block::Thinking { thinking } => think.push_str(thinking),
            Block::RedactedThinking {} => {}
            Block::ToolUse { id, name, input } => calls.push(ToolCall {
                index: calls.len() as u32 + 1,
                id: id.clone(),
                tool: name.clone(),
                arguments: input.to_string(),
            }),
            Block::ToolResult { .. } | Block::Image {} | Block::Document {} => {
                return Err(invalid(
                    "messages",
                    format!("message {at}: an assistant message holds text, thinking and tool_use"),
                ))
            }
        }
    }
    Ok(ChatMessage::assistant(text, (mode == ChatMode::Thinking).then_some(think), calls))
}

fn user(blocks: &[&Block], at: usize, out: &mut Vec<ChatMessage>) -> Result<(), ApiError> {
    let mut text = String::new();
    for block in blocks {
        match block {
            Block::Text { text: t } => text.push_str(t),
            Block::ToolResult { tool_use_id, content, is_error } => {
                let answers = answered(out, tool_use_id, at)?;
                let body = content.as_ref().map(|c| c.joined("messages")).transpose()?.unwrap_or_default();
                let body = if *is_error == Some(true) { format!("Error: {body}") } else { body };
                out.push(ChatMessage::tool_result(answers, body));
            }
            Block::Image {} | Block::Document {} => {
                return Err(invalid(
                    "messages",
                    format!("message {at}: only text and tool_result blocks are supported"),
                ))
            }
            Block::Thinking { .. } | Block::RedactedThinking {} | Block::ToolUse { .. } => {
                return Err(invalid(
                    "messages",
                    format!("message {at}: a user message holds text and tool_result blocks"),
                ))
            }
        }
    }
    if !text.is_empty() || out.last().is_none_or(|m| m.role != Role::Tool) {
        out.push(ChatMessage::new(Role::User, text));
    }
    Ok(())
}

/// The call `tool_use_id` names among the messages so far.
fn answered(earlier: &[ChatMessage], id: &str, at: usize) -> Result<ToolAnswer, ApiError> {
    let call = earlier.iter().rev().flat_map(|m| m.tool_calls.iter()).find(|c| c.id == id).ok_or_else(|| {
        invalid("messages", format!("message {at}: tool_use_id `{}` matches no earlier tool_use", cut(id)))
    })?;
    Ok(ToolAnswer { tool: call.tool.clone(), index: call.index })
}

fn cut(text: &str) -> String {
    text.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use k3_engine::chat::{Effort, ToolChoice};
    use k3_engine::{DecodeMode, GenerateParams, Sampling};

    use super::*;
    use crate::agent::require_call;

    fn params() -> GenerateParams {
        GenerateParams {
            max_new_tokens: 8,
            sampling: Sampling::Greedy,
            stop_ids: vec![],
            mode: DecodeMode::Incremental,
        }
    }

    fn request(json: &str) -> MessagesRequest {
        serde_json::from_str(json).expect("a request")
    }

    const READ: &str =
        r#"[{"name":"Read","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}}}}]"#;

    #[test]
    fn claude_codes_thinking_and_effort_and_token_ceiling_are_read() {
        let r = request(&format!(
            r#"{{"model":"m","max_tokens":32000,"thinking":{{"type":"adaptive","display":"omitted"}},
                "output_config":{{"effort":"high"}},"context_management":{{"edits":[]}},"metadata":{{"user_id":"x"}},
                "tools":{READ},"messages":[{{"role":"user","content":[{{"type":"text","text":"hi","cache_control":{{"type":"ephemeral"}}}}]}}]}}"#
        ));
        let (turn, mode) = messages_turn(&r, params()).expect("accepted");
        assert_eq!((mode, turn.input.options.effort), (ChatMode::Thinking, Some(Effort::High)));
        assert_eq!(r.sampling(4096).expect("sampling").max_tokens, Some(4096), "capped at the context");
        let medium = request(
            r#"{"model":"m","max_tokens":8,"thinking":{"type":"enabled"},"output_config":{"effort":"medium"},
                "messages":[{"role":"user","content":"hi"}]}"#,
        );
        let refused = messages_turn(&medium, params()).expect_err("medium is not a K3 effort");
        assert!(matches!(refused, ApiError::Invalid { param: "output_config", .. }), "{refused:?}");
        let no_ceiling = request(r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#);
        assert!(matches!(no_ceiling.sampling(4096), Err(ApiError::Invalid { param: "max_tokens", .. })));
    }

    #[test]
    fn a_required_call_is_made_until_a_tool_result_is_answered() {
        let first = request(&format!(
            r#"{{"model":"m","max_tokens":8,"tools":{READ},"messages":[{{"role":"user","content":"read"}}]}}"#
        ));
        let (mut turn, _) = messages_turn(&first, params()).expect("accepted");
        require_call(&mut turn);
        assert_eq!(turn.input.options.tool_choice, ToolChoice::Required);
        let answered = request(&format!(
            r#"{{"model":"m","max_tokens":8,"tools":{READ},"messages":[{{"role":"user","content":"read"}},
                {{"role":"assistant","content":[{{"type":"tool_use","id":"c1","name":"Read","input":{{"file_path":"a"}}}}]}},
                {{"role":"user","content":[{{"type":"tool_result","tool_use_id":"c1","content":"text"}}]}}]}}"#
        ));
        let (mut turn, _) = messages_turn(&answered, params()).expect("accepted");
        require_call(&mut turn);
        assert_eq!(turn.input.options.tool_choice, ToolChoice::None, "a result is answered in text");
        let any = request(&format!(
            r#"{{"model":"m","max_tokens":8,"tools":{READ},"tool_choice":{{"type":"any"}},"messages":[{{"role":"user","content":"x"}}]}}"#
        ));
        let (mut turn, _) = messages_turn(&any, params()).expect("accepted");
        let asked = turn.input.options.tool_choice.clone();
        require_call(&mut turn);
        assert_eq!(turn.input.options.tool_choice, asked, "a choice the client made stands");
    }
}
