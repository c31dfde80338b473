//! From an OpenAI `messages` list (and the request's agent options) to the runtime's
//! [`ChatTurn`].
//!
//! Owns: mapping each message to the chat core's (an assistant's `tool_calls` and
//! `reasoning_content`, a tool message's `tool_call_id` to the tool and index of the call
//! it answers, a system message's `tools`), where the history ends and the turn's input
//! begins (after the last assistant message), the checks that make a conversation the
//! template cannot render a 400 naming `messages`, and the server's conversation key.
//! The runtime reuses the engine state of an earlier request when this turn's rendered
//! conversation extends it — so a client that sends back the previous reply unchanged has
//! only the new part prefilled.
//! Must not: decide reuse itself (the runtime's `chat.rs` does).

use k3_constrain::{check_shape, ReplyShape};
use k3_engine::chat::{
    ChatMessage, ChatMode, ChatOptions, ResponseFormat, Role, ToolAnswer, ToolCall, ToolSpec, TurnInput,
};
use k3_engine::GenerateParams;
use k3_runtime::ChatTurn;

use crate::agent::{chat_options, thinking, tool_specs};
use crate::api_error::ApiError;
use crate::request::{ChatRequest, WireMessage, MAX_MESSAGES};

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::Invalid { param: "messages", message: message.into() }
}

fn role(name: &str) -> Result<Role, ApiError> {
    match name {
        "system" | "developer" => Ok(Role::System),
        "user" => Ok(Role::User),
        "assistant" => Ok(Role::Assistant),
        "tool" => Ok(Role::Tool),
        other => Err(invalid(format!("unsupported role `{}`", other.chars().take(32).collect::<String>()))),
    }
}

/// The message at `at` of `messages`, given the ones before it (already mapped).
fn message(m: &WireMessage, at: usize, earlier: &[ChatMessage], mode: ChatMode) -> Result<ChatMessage, ApiError> {
    let role = role(&m.role)?;
    if m.tools.is_some() && role != Role::System {
        return Err(invalid(format!("message {at}: tools may only be declared in a system message")));
    }
    if m.tool_calls.is_some() && role != Role::Assistant {
        return Err(invalid(format!("message {at}: only an assistant message has tool_calls")));
    }
    let content = match &m.content {
        Some(c) => c.text()?,
        None if role == Role::Assistant || (role == Role::System && m.tools.is_some()) => String::new(),
        None => return Err(invalid(format!("message {at} has no content"))),
    };
    let mut out = ChatMessage::new(role, content);
    match role {
        Role::Assistant => {
            if mode == ChatMode::Thinking {
                out.think = Some(m.reasoning_content.clone().unwrap_or_default());
            }
            out.tool_calls = tool_calls(m, at)?;
        }
        Role::Tool => out.answers = Some(answered_call(m, at, earlier)?),
        Role::System => {
            out.tools = m.tools.as_deref().map(|t| tool_specs(t, "messages")).transpose()?.unwrap_or_default()
        }
        Role::User => {}
    }
    Ok(out)
}

fn tool_calls(m: &WireMessage, at: usize) -> Result<Vec<ToolCall>, ApiError> {
    let calls = m.tool_calls.as_deref().unwrap_or_default();
    calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if c.kind.as_deref().is_some_and(|k| k != "function") {
                return Err(invalid(format!("message {at}: tool call type must be `function`")));
            }
            if c.id.is_empty() {
                return Err(invalid(format!("message {at}: a tool call needs an id")));
            }
            Ok(ToolCall {
                index: i as u32 + 1,
                id: c.id.clone(),
                tool: c.function.name.clone(),
                arguments: c.function.arguments.clone(),
            })
        })
        .collect()
}

/// The call a tool message answers: the latest earlier call with its `tool_call_id`.
fn answered_call(m: &WireMessage, at: usize, earlier: &[ChatMessage]) -> Result<ToolAnswer, ApiError> {
    let id =
        m.tool_call_id.as_deref().ok_or_else(|| invalid(format!("message {at}: a tool message needs tool_call_id")))?;
    let call = earlier.iter().rev().flat_map(|e| e.tool_calls.iter()).find(|c| c.id == id).ok_or_else(|| {
        invalid(format!(
            "message {at}: tool_call_id `{}` matches no earlier tool call",
            id.chars().take(64).collect::<String>()
        ))
    })?;
    if m.name.as_deref().is_some_and(|n| n != call.tool) {
        return Err(invalid(format!("message {at}: its name is not the tool `{}` of the call it answers", call.tool)));
    }
    Ok(ToolAnswer { tool: call.tool.clone(), index: call.index })
}

/// The turn `request` asks to answer.
pub fn chat_turn(request: &ChatRequest, params: GenerateParams) -> Result<(ChatTurn, ChatMode), ApiError> {
    let messages = &request.messages;
    if messages.is_empty() || messages.len() > MAX_MESSAGES {
        return Err(invalid(format!("give 1 to {MAX_MESSAGES} messages")));
    }
    // The mode decides whether assistant messages carry a think channel.
    let (mode, _) = thinking(request)?;
    let mut all: Vec<ChatMessage> = Vec::with_capacity(messages.len());
    for (at, m) in messages.iter().enumerate() {
        let mapped = message(m, at, &all, mode)?;
        all.push(mapped);
    }
    let message_tools: Vec<ToolSpec> = all.iter().flat_map(|m| m.tools.iter().cloned()).collect();
    let (_, options) = chat_options(request, &message_tools)?;
    let system = match all.first() {
        Some(first) if first.role == Role::System && first.tools.is_empty() => Some(all.remove(0).content),
        _ => None,
    };
    let parallel_calls = request.parallel_tool_calls != Some(false);
    let turn = assemble(Conversation { system, messages: all, mode, options, parallel_calls }, params)?;
    Ok((turn, mode))
}

/// A conversation mapped from a wire format, before it becomes a turn.
pub struct Conversation {
    pub system: Option<String>,
    /// Every message after the system prompt, the last one the user's or a tool's.
    pub messages: Vec<ChatMessage>,
    pub mode: ChatMode,
    pub options: ChatOptions,
    pub parallel_calls: bool,
}

/// The turn of `conversation`: its schemas checked (a 400 naming `tools` or
/// `response_format` when constrained decoding cannot hold to them), the history up to the
/// last assistant message, the rest its input.
pub fn assemble(conversation: Conversation, params: GenerateParams) -> Result<ChatTurn, ApiError> {
    let Conversation { system, mut messages, mode, options, parallel_calls } = conversation;
    let message_tools: Vec<&ToolSpec> = messages.iter().flat_map(|m| m.tools.iter()).collect();
    let all_tools: Vec<ToolSpec> = options.tools.iter().chain(message_tools).cloned().collect();
    let shape = ReplyShape { mode, tools: &all_tools, options: &options, parallel_calls };
    check_shape(&shape).map_err(|e| {
        let param = if options.response_format == ResponseFormat::Text { "tools" } else { "response_format" };
        ApiError::Invalid { param, message: e.to_string() }
    })?;
    if !messages.last().is_some_and(|m| matches!(m.role, Role::User | Role::Tool)) {
        return Err(invalid("the last message must be the user's or a tool result"));
    }
    let input_starts = messages.iter().rposition(|m| m.role == Role::Assistant).map_or(0, |i| i + 1);
    let input = messages.split_off(input_starts);
    Ok(ChatTurn {
        conversation: k3_runtime::ConversationKey::Api,
        system,
        mode,
        history: messages,
        input: TurnInput { messages: input, options, call_id_prefix: call_id_prefix(), single_call: !parallel_calls },
        params,
        state_file: None,
    })
}

/// A prefix no other reply's call ids share: `call_` and 48 bits of the clock and a
/// counter.
fn call_id_prefix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("call_{:012x}_", (nanos ^ n.rotate_left(40)) & 0xffff_ffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{parse, ChatRequest};
    use k3_engine::chat::{Effort, ToolChoice};
    use k3_engine::{DecodeMode, Sampling};

    fn turn(json: &str) -> Result<ChatTurn, ApiError> {
        let req: ChatRequest = parse(json.as_bytes())?;
        let params = GenerateParams {
            max_new_tokens: 1,
            sampling: Sampling::Greedy,
            stop_ids: vec![],
            mode: DecodeMode::Incremental,
        };
        chat_turn(&req, params).map(|(t, _)| t)
    }

    fn refused(json: &str) -> (&'static str, String) {
        match turn(json) {
            Err(ApiError::Invalid { param, message }) => (param, message),
            other => panic!("{json}: {other:?}"),
        }
    }

    const TOOL: &str = r#"{"type":"function","function":{"name":"search","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}"#;

    #[test]
    fn system_first_then_history_then_the_user_message() {
        let t = turn(
            r#"{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"a"},
            {"role":"assistant","content":"b"},{"role":"user","content":[{"type":"text","text":"c"}]}]}"#,
        )
        .expect("turn");
        assert_eq!(t.system.as_deref(), Some("S"));
        assert_eq!(t.history, vec![ChatMessage::new(Role::User, "a"), ChatMessage::new(Role::Assistant, "b")]);
        assert_eq!(t.input.messages, vec![ChatMessage::new(Role::User, "c")]);
        assert!(t.input.call_id_prefix.starts_with("call_"));
    }

    #[test]
    fn a_tool_loop_maps_calls_and_results_by_id() {
        let json = format!(
            r#"{{"model":"m","tools":[{TOOL}],"tool_choice":"required","messages":[
            {{"role":"user","content":"find tea"}},
            {{"role":"assistant","content":null,"tool_calls":[
              {{"id":"c1","type":"function","function":{{"name":"search","arguments":"{{\"q\":\"tea\"}}"}}}},
              {{"id":"c2","type":"function","function":{{"name":"search","arguments":"{{\"q\":\"cups\"}}"}}}}]}},
            {{"role":"tool","tool_call_id":"c2","content":"2 cups"}},
            {{"role":"tool","tool_call_id":"c1","name":"search","content":"green"}}]}}"#
        );
        let t = turn(&json).expect("turn");
        assert_eq!(t.history.len(), 2);
        let calls = &t.history[1].tool_calls;
        assert_eq!(calls.iter().map(|c| (c.index, c.id.as_str())).collect::<Vec<_>>(), [(1, "c1"), (2, "c2")]);
        assert_eq!(calls[0].arguments, r#"{"q":"tea"}"#);
        let answers: Vec<_> = t.input.messages.iter().map(|m| m.answers.clone().map(|a| (a.tool, a.index))).collect();
        assert_eq!(answers, [Some(("search".to_string(), 2)), Some(("search".to_string(), 1))]);
        assert_eq!(t.input.options.tool_choice, ToolChoice::Required);
        assert_eq!(t.input.options.tools[0].name, "search");
    }

    #[test]
    fn moonshot_thinking_object_and_reasoning_effort() {
        let t = turn(r#"{"model":"m","thinking":{"type":"enabled","effort":"high","keep":"all"},"messages":[{"role":"user","content":"x"}]}"#)
            .expect("turn");
        assert_eq!((t.mode, t.input.options.effort), (ChatMode::Thinking, Some(Effort::High)));
        let t = turn(r#"{"model":"m","thinking":{"type":"enabled","effort":"high"},"reasoning_effort":"max","messages":[{"role":"user","content":"x"}]}"#)
            .expect("turn");
        assert_eq!(t.input.options.effort, Some(Effort::Max), "reasoning_effort overrides");
        let t = turn(r#"{"model":"m","thinking":true,"messages":[{"role":"user","content":"x"}]}"#).expect("turn");
        assert_eq!((t.mode, t.input.options.effort), (ChatMode::Thinking, None));
        let t = turn(r#"{"model":"m","chat_template_kwargs":{"thinking":true,"thinking_effort":"low"},"messages":[{"role":"user","content":"x"}]}"#)
            .expect("turn");
        assert_eq!((t.mode, t.input.options.effort), (ChatMode::Thinking, Some(Effort::Low)));
        let t = turn(r#"{"model":"m","thinking":{"type":"disabled"},"reasoning_effort":"low","messages":[{"role":"user","content":"x"}]}"#)
            .expect("turn");
        assert_eq!((t.mode, t.input.options.effort), (ChatMode::Instruct, None), "explicitly off stays off");
    }

    #[test]
    fn a_system_message_declares_tools_where_it_stands() {
        let json = format!(
            r#"{{"model":"m","messages":[{{"role":"user","content":"a"}},{{"role":"assistant","content":"b"}},
            {{"role":"system","tools":[{TOOL}]}},{{"role":"user","content":"c"}}],"tool_choice":{{"type":"function","function":{{"name":"search"}}}}}}"#
        );
        let t = turn(&json).expect("turn");
        assert_eq!(t.input.messages[0].tools[0].name, "search");
        assert_eq!(t.input.options.tool_choice, ToolChoice::Function("search".into()));
    }

    #[test]
    fn shapes_the_template_cannot_render_are_refused() {
        for bad in [
            r#"{"model":"m","messages":[]}"#,
            r#"{"model":"m","messages":[{"role":"tool","content":"x"}]}"#,
            r#"{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}]}"#,
            r#"{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}"#,
            r#"{"model":"m","messages":[{"role":"user"}]}"#,
        ] {
            assert!(matches!(turn(bad), Err(ApiError::Invalid { .. })), "{bad}");
        }
    }

    #[test]
    fn every_agent_400_names_its_field() {
        let user = r#""messages":[{"role":"user","content":"x"}]"#;
        let cases: Vec<(String, &str, &str)> = vec![
            (format!(r#"{{"model":"m","tools":[{{"type":"function","function":{{}}}}],{user}}}"#), "tools", "needs a `function.name`"),
            (format!(r#"{{"model":"m","tools":[{{"type":"retrieval"}}],{user}}}"#), "tools", "not supported"),
            (format!(r#"{{"model":"m","tools":[{TOOL},{TOOL}],{user}}}"#), "tools", "declared twice"),
            (format!(r#"{{"model":"m","tools":[{TOOL}],"messages":[{{"role":"system","tools":[{TOOL}]}},{{"role":"user","content":"x"}}]}}"#), "tools", "declared twice"),
            (format!(r#"{{"model":"m","messages":[{{"role":"user","content":"x","tools":[{TOOL}]}}]}}"#), "messages", "only be declared in a system"),
            (r#"{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","content":"r"}]}"#.into(), "messages", "needs tool_call_id"),
            (r#"{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"b","content":"r"}]}"#.into(), "messages", "matches no earlier tool call"),
            (format!(r#"{{"model":"m","thinking":{{"type":"enabled","effort":"medium"}},{user}}}"#), "thinking", "not one this model was trained at"),
            (format!(r#"{{"model":"m","reasoning_effort":"extreme",{user}}}"#), "reasoning_effort", "unknown"),
            (format!(r#"{{"model":"m","thinking":{{"type":"enabled","keep":"last"}},{user}}}"#), "thinking", "only `all`"),
            (format!(r#"{{"model":"m","tool_choice":"required",{user}}}"#), "tool_choice", "needs declared tools"),
            (format!(r#"{{"model":"m","tools":[{TOOL}],"tool_choice":{{"type":"function","function":{{"name":"other"}}}},{user}}}"#), "tool_choice", "not declared"),
            (format!(r#"{{"model":"m","response_format":{{"type":"json_schema","json_schema":{{"name":"x","schema":true}}}},{user}}}"#), "response_format", "schema object"),
            (format!(r#"{{"model":"m","response_format":{{"type":"yaml"}},{user}}}"#), "response_format", "use text"),
            (format!(r#"{{"model":"m","tools":[{{"type":"function","function":{{"name":"f","parameters":{{"type":"object","properties":{{"x":{{"type":"integer","minimum":5,"maximum":1}}}},"required":["x"]}}}}}}],{user}}}"#), "tools", "cannot be compiled"),
        ];
        for (json, param, says) in cases {
            let (got_param, message) = refused(&json);
            assert_eq!(got_param, param, "{json}: {message}");
            assert!(message.contains(says), "{json}: {message:?} should say {says:?}");
        }
    }
}
