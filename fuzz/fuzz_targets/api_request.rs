//! The JSON bodies of `POST /v1/chat/completions` and `POST /v1/completions`
//! (`k3_server::request`, `k3_server::turn::chat_turn`), as the routes check them.
//!
//! Input: one byte (even: chat, odd: completion), then the body.
//! Invariants of an accepted request (RELIABILITY AP-06, AP-07): the body is a JSON object
//! without a repeated key; `model` and the message count are the body's; the parameters are
//! within limits — max tokens in `1..=context`, temperature 0 (greedy) or a sampling rule
//! the engine accepts (`Sampling::validate`), at most 16 stop strings of 1..=256 bytes; a
//! chat turn splits every message into the system prompt, the history (up to the last
//! assistant message) and the input (the rest, ending with the user's message or a tool
//! result); every tool result answers a call made before it; the declared tools have
//! distinct names; a named tool choice names a declared tool; an effort comes only with
//! thinking. A completion's prompt is not empty. Every refusal's error body has OpenAI's
//! shape.
#![no_main]

use k3_engine::chat::{ChatMode, Role, ToolChoice};
use k3_fuzz::json_has_duplicate_keys;
use k3_server::request::{parse, ChatRequest, CompletionRequest, MAX_STOPS, MAX_STOP_BYTES};
use k3_server::turn::chat_turn;
use k3_server::ApiError;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const CONTEXT: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, body)) = data.split_first() else { return };
    let result = if kind % 2 == 0 { chat(body) } else { completion(body) };
    if let Err(e) = result {
        let b = e.body();
        assert!(b["error"]["message"].is_string() && b["error"]["type"].is_string(), "error shape {b}");
    }
});

fn accepted_json(body: &[u8]) -> Value {
    assert!(!json_has_duplicate_keys(body), "a body with a repeated key was accepted");
    let v: Value = serde_json::from_slice(body).expect("an accepted body is JSON");
    assert!(v.is_object(), "an accepted body is an object");
    v
}

fn check_sampling(fields: &k3_server::request::SamplingFields, default_max: usize) -> Result<(), ApiError> {
    let params = fields.params(default_max, CONTEXT)?;
    assert!((1..=CONTEXT).contains(&params.max_new_tokens), "max tokens {}", params.max_new_tokens);
    assert!(params.sampling.validate().is_ok(), "accepted sampling the engine refuses: {:?}", params.sampling);
    let stops = fields.stops()?;
    assert!(stops.len() <= MAX_STOPS);
    assert!(stops.iter().all(|s| (1..=MAX_STOP_BYTES).contains(&s.len())));
    Ok(())
}

fn chat(body: &[u8]) -> Result<(), ApiError> {
    let req: ChatRequest = parse(body)?;
    let v = accepted_json(body);
    assert_eq!(v["model"].as_str(), Some(req.model.as_str()));
    assert_eq!(v["messages"].as_array().map(Vec::len), Some(req.messages.len()));
    check_sampling(&req.sampling, 100)?;
    let params = req.sampling.params(100, CONTEXT)?;
    let (turn, mode) = chat_turn(&req, params)?;
    let input = &turn.input.messages;
    assert_eq!(turn.history.len() + input.len() + usize::from(turn.system.is_some()), req.messages.len());
    assert!(turn.history.last().is_none_or(|m| m.role == Role::Assistant), "the history ends with a reply");
    assert!(input.iter().all(|m| m.role != Role::Assistant), "a reply inside the input");
    assert!(matches!(input.last().map(|m| m.role), Some(Role::User | Role::Tool)), "the input ends with the user's or a tool's");
    let all: Vec<_> = turn.history.iter().chain(input).collect();
    for (i, m) in all.iter().enumerate() {
        if let Some(a) = &m.answers {
            let made = all[..i].iter().any(|e| e.tool_calls.iter().any(|c| c.tool == a.tool && c.index == a.index));
            assert!(made, "a tool result answers no earlier call");
        }
    }
    let options = &turn.input.options;
    let mut names: Vec<&str> = options.tools.iter().chain(all.iter().flat_map(|m| m.tools.iter())).map(|t| t.name.as_str()).collect();
    let declared = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), declared, "a tool declared twice");
    if let ToolChoice::Function(name) = &options.tool_choice {
        assert!(names.contains(&name.as_str()), "a named tool choice names no declared tool");
    }
    assert!(options.effort.is_none() || mode == ChatMode::Thinking, "an effort without thinking");
    Ok(())
}

fn completion(body: &[u8]) -> Result<(), ApiError> {
    let req: CompletionRequest = parse(body)?;
    let v = accepted_json(body);
    assert_eq!(v["model"].as_str(), Some(req.model.as_str()));
    check_sampling(&req.sampling, 16)?;
    let prompt = req.prompt.text()?;
    assert!(!prompt.is_empty());
    Ok(())
}
