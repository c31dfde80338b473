//! The JSON of answers: `chat.completion`, `chat.completion.chunk`, `text_completion`,
//! `usage`, and the figures the last chunk adds (PRODUCT.md §4.1).
//!
//! Owns: the wire names. `usage.prompt_tokens` counts the whole conversation before the
//! reply; `usage.prompt_tokens_details.cached_tokens` the positions whose engine state was
//! reused (not prefilled again); `usage.prefilled_tokens` those computed now. The extras
//! `seconds_per_token`, `io_wait_seconds`, `true_hit_rate`, `bytes_read` and `token_ids`
//! (the generated ids, for exact comparison with `k3 run`) sit beside `usage`.
//! Must not: compute a figure: they come from the runtime's `ReplyFigures`.

use k3_engine::chat::{CallDelta, ToolCall};
use serde_json::{json, Map, Value};

pub use crate::head::{Endpoint, Head};
use crate::reply::Done;
use crate::split::Delta;

/// The fields every object of the answer starts with, around its one `choice`.
fn object(head: &Head, object: &str, choice: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("id".into(), json!(head.id));
    m.insert("object".into(), json!(object));
    m.insert("created".into(), json!(head.created));
    m.insert("model".into(), json!(head.model));
    m.insert("choices".into(), json!([choice]));
    m
}

/// `usage` and the figures.
fn add_figures(m: &mut Map<String, Value>, done: &Done) {
    let f = &done.figures;
    let prompt = f.prompt_tokens;
    let cached = prompt.saturating_sub(f.prefilled_tokens);
    let completion = done.token_ids.len();
    m.insert(
        "usage".into(),
        json!({
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": { "cached_tokens": cached },
            "prefilled_tokens": f.prefilled_tokens,
        }),
    );
    m.insert("seconds_per_token".into(), json!(f.seconds_per_token));
    m.insert("io_wait_seconds".into(), json!(f.io_wait.as_secs_f64()));
    m.insert("true_hit_rate".into(), json!(f.true_hit_rate));
    m.insert("bytes_read".into(), json!(f.bytes_read));
    m.insert("time_to_first_token_seconds".into(), json!(f.time_to_first_token.as_secs_f64()));
    m.insert("token_ids".into(), json!(done.token_ids));
}

fn message_fields(head: &Head, done: &Done) -> Value {
    let mut msg = json!({ "role": "assistant", "content": done.content });
    if head.thinking {
        msg["reasoning_content"] = json!(done.reasoning);
    }
    if !done.tool_calls.is_empty() {
        msg["tool_calls"] = done.tool_calls.iter().map(tool_call).collect();
    }
    msg
}

/// A finished call as OpenAI writes it.
fn tool_call(call: &ToolCall) -> Value {
    json!({ "id": call.id, "type": "function", "function": { "name": call.tool, "arguments": call.arguments } })
}

/// A streamed piece of a call: `delta.tool_calls[0]` with the call's `index`, its `id`,
/// `type` and `function.name` on its first piece, then `function.arguments` fragments.
pub fn call_chunk(head: &Head, delta: &CallDelta) -> Value {
    let mut call = json!({ "index": delta.position, "function": { "arguments": delta.arguments } });
    if let Some((id, name)) = &delta.opened {
        call["id"] = json!(id);
        call["type"] = json!("function");
        call["function"]["name"] = json!(name);
    }
    let choice = json!({ "index": 0, "delta": { "tool_calls": [call] }, "finish_reason": null });
    Value::Object(object(head, "chat.completion.chunk", choice))
}

/// The whole answer of a non-streaming request.
pub fn complete(head: &Head, done: &Done) -> Value {
    let mut m = match head.endpoint {
        Endpoint::Chat => object(
            head,
            "chat.completion",
            json!({ "index": 0, "message": message_fields(head, done),
                    "logprobs": null, "finish_reason": done.finish }),
        ),
        Endpoint::Completion => object(
            head,
            "text_completion",
            json!({ "index": 0, "text": done.content, "logprobs": null, "finish_reason": done.finish }),
        ),
        Endpoint::Messages => return crate::anthropic::response::message(head, done),
    };
    add_figures(&mut m, done);
    Value::Object(m)
}

/// The first chunk of a chat stream (the role).
pub fn role_chunk(head: &Head) -> Value {
    let choice = json!({ "index": 0, "delta": { "role": "assistant", "content": "" }, "finish_reason": null });
    Value::Object(object(head, "chat.completion.chunk", choice))
}

/// One delta.
pub fn delta_chunk(head: &Head, delta: &Delta) -> Value {
    match head.endpoint {
        Endpoint::Chat | Endpoint::Messages => {
            let mut d = Map::new();
            if !delta.reasoning.is_empty() {
                d.insert("reasoning_content".into(), json!(delta.reasoning));
            }
            if !delta.content.is_empty() {
                d.insert("content".into(), json!(delta.content));
            }
            let choice = json!({ "index": 0, "delta": d, "finish_reason": null });
            Value::Object(object(head, "chat.completion.chunk", choice))
        }
        Endpoint::Completion => {
            let choice = json!({ "index": 0, "text": delta.content, "logprobs": null, "finish_reason": null });
            Value::Object(object(head, "text_completion", choice))
        }
    }
}

/// The last chunk: the finish reason, `usage` and the figures.
pub fn final_chunk(head: &Head, done: &Done) -> Value {
    let mut m = match head.endpoint {
        Endpoint::Chat | Endpoint::Messages => {
            object(head, "chat.completion.chunk", json!({ "index": 0, "delta": {}, "finish_reason": done.finish }))
        }
        Endpoint::Completion => object(
            head,
            "text_completion",
            json!({ "index": 0, "text": "", "logprobs": null, "finish_reason": done.finish }),
        ),
    };
    add_figures(&mut m, done);
    Value::Object(m)
}
