//! From an OpenAI `messages` list to the runtime's [`ChatTurn`].
//!
//! Owns: the message order the chat template can render (an optional leading system
//! message, then user and assistant turns, the last one the user's), mapping an assistant's
//! `reasoning_content` to its think channel, and the server's conversation key. The
//! runtime reuses the engine state of the request before when this turn's system prompt,
//! mode and history equal it exactly — so a client that sends back the previous reply
//! unchanged has only the new part prefilled.
//! Must not: decide reuse itself (the runtime's `chat.rs` does).

use k3_engine::chat::{ChatMessage, ChatMode, Role};
use k3_engine::GenerateParams;
use k3_runtime::ChatTurn;

use crate::api_error::ApiError;
use crate::request::{WireMessage, MAX_MESSAGES};

/// The conversation key of every API request: one the app never uses (its ids are
/// positive), so API turns reuse only API state, and only when the history matches.
pub const API_CONVERSATION: i64 = -0x4b33_4150_4900;

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::Invalid { param: "messages", message: message.into() }
}

fn role(name: &str) -> Result<Role, ApiError> {
    match name {
        "system" | "developer" => Ok(Role::System),
        "user" => Ok(Role::User),
        "assistant" => Ok(Role::Assistant),
        other => Err(invalid(format!("unsupported role `{}`", other.chars().take(32).collect::<String>()))),
    }
}

fn message(m: &WireMessage, mode: ChatMode) -> Result<ChatMessage, ApiError> {
    let role = role(&m.role)?;
    let content = match &m.content {
        Some(c) => c.text()?,
        None if role == Role::Assistant => String::new(),
        None => return Err(invalid("a message without content")),
    };
    let think = match (role, mode) {
        (Role::Assistant, ChatMode::Thinking) => Some(m.reasoning_content.clone().unwrap_or_default()),
        _ => None,
    };
    Ok(ChatMessage { role, content, think })
}

/// The turn `messages` asks to answer.
pub fn chat_turn(messages: &[WireMessage], mode: ChatMode, params: GenerateParams) -> Result<ChatTurn, ApiError> {
    if messages.is_empty() || messages.len() > MAX_MESSAGES {
        return Err(invalid(format!("give 1 to {MAX_MESSAGES} messages")));
    }
    let mut all = messages.iter().map(|m| message(m, mode)).collect::<Result<Vec<_>, _>>()?;
    let system = match all.first() {
        Some(first) if first.role == Role::System => Some(all.remove(0).content),
        _ => None,
    };
    if all.iter().any(|m| m.role == Role::System) {
        return Err(invalid("a system message may only come first"));
    }
    let Some(last) = all.pop().filter(|m| m.role == Role::User) else {
        return Err(invalid("the last message must be the user's"));
    };
    // The session's messages are exactly what it answered: a reply without thinking
    // carries an empty think channel in thinking mode (see `message`).
    Ok(ChatTurn {
        conversation: API_CONVERSATION,
        system,
        mode,
        history: all,
        user_text: last.content,
        params,
        state_file: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{parse, ChatRequest};
    use k3_engine::{DecodeMode, Sampling};

    fn turn(json: &str) -> Result<ChatTurn, ApiError> {
        let req: ChatRequest = parse(json.as_bytes())?;
        let params = GenerateParams {
            max_new_tokens: 1,
            sampling: Sampling::Greedy,
            stop_ids: vec![],
            mode: DecodeMode::Incremental,
        };
        chat_turn(&req.messages, ChatMode::Instruct, params)
    }

    #[test]
    fn system_first_then_history_then_the_user_message() {
        let t = turn(
            r#"{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"a"},
            {"role":"assistant","content":"b"},{"role":"user","content":[{"type":"text","text":"c"}]}]}"#,
        )
        .expect("turn");
        assert_eq!(t.system.as_deref(), Some("S"));
        assert_eq!(t.history, vec![ChatMessage::new(Role::User, "a"), ChatMessage::new(Role::Assistant, "b")]);
        assert_eq!(t.user_text, "c");
    }

    #[test]
    fn shapes_the_template_cannot_render_are_refused() {
        for bad in [
            r#"{"model":"m","messages":[]}"#,
            r#"{"model":"m","messages":[{"role":"tool","content":"x"}]}"#,
            r#"{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}]}"#,
            r#"{"model":"m","messages":[{"role":"user","content":"x"},{"role":"system","content":"y"},{"role":"user","content":"z"}]}"#,
            r#"{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}"#,
            r#"{"model":"m","messages":[{"role":"user"}]}"#,
        ] {
            assert!(matches!(turn(bad), Err(ApiError::Invalid { .. })), "{bad}");
        }
    }
}
