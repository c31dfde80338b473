//! The stream decoder over streams in the shapes other servers send (`tests/streams/*.sse`,
//! written from their documented formats: OpenAI with usage in a chunk of its own; vLLM with
//! the role on every chunk and usage on the last; `reasoning_content` (vLLM, SGLang,
//! DeepSeek) and `reasoning` with `:` comment keep-alives (OpenRouter); an `event: error` and
//! an error object mid-stream; CRLF framing with no `[DONE]`; a body cut mid-reply), and one
//! recorded from `k3 serve` itself. Each is
//! fed in pieces of every size from 1 to 17 bytes, so events, lines and UTF-8 characters are
//! split at every offset, and must decode the same as when fed whole.

use futures_util::stream;
use k3_remote::{assemble, assemble::Failure, Delta, FinishReason, RemoteReply, StreamError, Usage};

fn recorded(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/streams/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Decodes `bytes` fed `piece` bytes at a time; returns the outcome and the deltas seen.
fn decode_in_pieces(bytes: &[u8], piece: usize) -> (Result<RemoteReply, Failure>, Vec<Delta>) {
    let pieces: Vec<Result<Vec<u8>, std::io::Error>> = bytes.chunks(piece).map(|c| Ok(c.to_vec())).collect();
    let mut deltas = Vec::new();
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let outcome = runtime.block_on(assemble(stream::iter(pieces), |d| deltas.push(d.clone())));
    (outcome, deltas)
}

/// The outcome of `name`, checked to be the same at every piece size.
fn decode(name: &str) -> (Result<RemoteReply, Failure>, Vec<Delta>) {
    let bytes = recorded(name);
    let whole = decode_in_pieces(&bytes, bytes.len());
    for piece in 1..=17 {
        let split = decode_in_pieces(&bytes, piece);
        assert_eq!(split.0, whole.0, "{name} in {piece}-byte pieces");
        let joined = |ds: &[Delta]| ds.iter().map(|d| d.content.clone() + "|" + &d.reasoning).collect::<Vec<_>>();
        assert_eq!(joined(&split.1), joined(&whole.1), "{name}: deltas in {piece}-byte pieces");
    }
    whole
}

fn reply(name: &str) -> (RemoteReply, Vec<Delta>) {
    let (outcome, deltas) = decode(name);
    (outcome.unwrap_or_else(|f| panic!("{name}: {f:?}")), deltas)
}

fn failure(name: &str) -> Failure {
    decode(name).0.expect_err(name)
}

#[test]
fn usage_in_a_chunk_of_its_own() {
    let (r, deltas) = reply("openai-usage-in-own-chunk.sse");
    assert_eq!(r.content, "Hello, wörld ☃");
    assert_eq!((r.finish, r.usage), (FinishReason::Stop, Some(Usage { prompt_tokens: 9, completion_tokens: 4 })));
    assert_eq!(deltas.len(), 2, "the role-only chunk adds no delta");
    assert_eq!(r.events, 6);
}

#[test]
fn role_on_every_chunk_and_usage_on_the_last() {
    let (r, deltas) = reply("role-on-every-chunk-usage-on-last.sse");
    assert_eq!(deltas.iter().map(|d| d.content.as_str()).collect::<Vec<_>>(), ["One", " two", " three"]);
    assert_eq!((r.finish, r.usage.map(|u| u.completion_tokens)), (FinishReason::Length, Some(3)));
}

#[test]
fn reasoning_comes_in_reasoning_content_or_reasoning() {
    let (r, _) = reply("reasoning-content-field.sse");
    assert_eq!((r.reasoning.as_str(), r.content.as_str()), ("The user greets me.", "Hi!"));
    let (r, _) = reply("reasoning-field-with-comments.sse");
    assert_eq!((r.reasoning.as_str(), r.content.as_str()), ("Short", "Yes."));
    assert_eq!(r.usage, Some(Usage { prompt_tokens: 20, completion_tokens: 2 }));
    assert_eq!(r.events, 5, "comment lines are not events");
}

#[test]
fn an_error_mid_stream_fails_with_the_servers_message_and_keeps_the_partial() {
    let f = failure("error-event.sse");
    assert_eq!(f.error, StreamError::Server { message: "The model crashed".into(), code: Some("server_error".into()) });
    assert_eq!(f.partial.content, "Partial");
    let f = failure("error-object-in-data.sse");
    assert_eq!(f.error.to_string(), "the server stopped the reply: Upstream timed out (502)");
    assert_eq!(f.partial.content, "So far");
}

#[test]
fn a_body_cut_mid_reply_is_an_error_never_a_short_reply() {
    let f = failure("ended-early.sse");
    assert_eq!((f.error, f.partial.content.as_str()), (StreamError::EndedEarly, "Cut off"));
}

#[test]
fn crlf_framing_and_a_finish_without_done() {
    let (r, _) = reply("crlf-no-done.sse");
    assert_eq!((r.content.as_str(), r.finish), ("crlf", FinishReason::Stop));
}

#[test]
fn data_after_done_and_a_transport_error_are_failures() {
    let mut bytes = recorded("openai-usage-in-own-chunk.sse");
    bytes.extend_from_slice(b"data: {\"choices\":[]}\n\n");
    let (outcome, _) = decode_in_pieces(&bytes, 5);
    assert_eq!(outcome.expect_err("after [DONE]").error, StreamError::AfterDone);
    let body = stream::iter(vec![
        Ok(b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n".to_vec()),
        Err("connection reset"),
    ]);
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let f = runtime.block_on(assemble(body, |_| {})).expect_err("reset");
    assert!(matches!(&f.error, StreamError::Transport(m) if m.contains("connection reset")), "{:?}", f.error);
    assert_eq!(f.partial.content, "a");
}

/// Recorded from `k3 serve --model fixtures/tiny-mxfp4` (`curl -sN …/v1/chat/completions`, greedy,
/// `max_tokens` 6, `include_usage`): an empty role chunk, five content chunks for six tokens
/// (k3 holds back a token whose bytes complete no character and sends it with the next; one
/// chunk is a reserved token's text, two are U+FFFD), then k3's own figures and the usage
/// beside `finish_reason`.
#[test]
fn a_stream_recorded_from_k3_serve() {
    let (r, deltas) = reply("k3-serve-recorded.sse");
    assert_eq!(r.content, "\u{FFFD} covered<|reserved_token_226|>\u{FFFD}\u{FFFD}the");
    assert_eq!(deltas.len(), 5, "one delta per chunk with text");
    assert_eq!((r.finish, r.usage), (FinishReason::Length, Some(Usage { prompt_tokens: 50, completion_tokens: 6 })));
}
