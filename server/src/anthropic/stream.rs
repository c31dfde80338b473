//! Anthropic's streaming event sequence: `message_start`, then per content block
//! `content_block_start`, `content_block_delta` (`thinking_delta`, `text_delta`,
//! `input_json_delta`) and `content_block_stop`, then `message_delta` (the stop reason and
//! output tokens) and `message_stop`; a failure is an `error` event.
//!
//! Owns: turning the reply's events, in order, into blocks: a change of channel or a new
//! call closes the open block and opens the next; block indices count from 0.
//! Must not: reorder or merge what the engine produced (the blocks concatenate to the
//! non-streamed message).

use std::convert::Infallible;

use axum::response::sse::Event;
use futures_util::{Stream, StreamExt};
use serde_json::{json, Value};

use crate::anthropic::response::{error_body, stop_reason, usage};
use crate::generation::{gone, Generation};
use crate::head::Head;
use crate::reply::ReplyEvent;

/// The block being streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Thinking,
    Text,
    Tool,
}

/// Where the sequence is.
struct Blocks {
    next: usize,
    open: Option<Open>,
}

fn event(name: &str, data: Value) -> Result<Event, Infallible> {
    Ok(Event::default().event(name).data(data.to_string()))
}

impl Blocks {
    fn close(&mut self, out: &mut Vec<Result<Event, Infallible>>) {
        if self.open.take().is_some() {
            out.push(event("content_block_stop", json!({"type": "content_block_stop", "index": self.next - 1})));
        }
    }

    fn open(&mut self, kind: Open, block: Value, out: &mut Vec<Result<Event, Infallible>>) {
        self.close(out);
        out.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": self.next, "content_block": block}),
        ));
        self.open = Some(kind);
        self.next += 1;
    }

    fn delta(&mut self, delta: Value, out: &mut Vec<Result<Event, Infallible>>) {
        out.push(event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": self.next - 1, "delta": delta}),
        ));
    }

    /// The events of one reply event; `true` when the sequence is over.
    fn events(&mut self, reply: ReplyEvent, out: &mut Vec<Result<Event, Infallible>>) -> bool {
        match reply {
            ReplyEvent::Delta(d) => {
                if !d.reasoning.is_empty() {
                    if self.open != Some(Open::Thinking) {
                        self.open(Open::Thinking, json!({"type": "thinking", "thinking": "", "signature": ""}), out);
                    }
                    self.delta(json!({"type": "thinking_delta", "thinking": d.reasoning}), out);
                }
                if !d.content.is_empty() {
                    if self.open != Some(Open::Text) {
                        self.open(Open::Text, json!({"type": "text", "text": ""}), out);
                    }
                    self.delta(json!({"type": "text_delta", "text": d.content}), out);
                }
                false
            }
            ReplyEvent::Call(c) => {
                if let Some((id, name)) = &c.opened {
                    self.open(Open::Tool, json!({"type": "tool_use", "id": id, "name": name, "input": {}}), out);
                }
                if !c.arguments.is_empty() {
                    self.delta(json!({"type": "input_json_delta", "partial_json": c.arguments}), out);
                }
                false
            }
            ReplyEvent::Done(done) => {
                if self.next == 0 {
                    self.open(Open::Text, json!({"type": "text", "text": ""}), out);
                }
                self.close(out);
                let delta = json!({"stop_reason": stop_reason(done.finish), "stop_sequence": null});
                out.push(event(
                    "message_delta",
                    json!({"type": "message_delta", "delta": delta, "usage": usage(&done)}),
                ));
                out.push(event("message_stop", json!({"type": "message_stop"})));
                true
            }
            ReplyEvent::Failed(e) => {
                out.push(event("error", error_body(&e)));
                true
            }
        }
    }
}

fn start(head: &Head) -> Result<Event, Infallible> {
    let message = json!({
        "id": head.id, "type": "message", "role": "assistant", "model": head.model, "content": [],
        "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 0, "output_tokens": 0},
    });
    event("message_start", json!({"type": "message_start", "message": message}))
}

/// The events of `generation`; dropping the stream stops the job.
pub fn events(generation: Generation) -> impl Stream<Item = Result<Event, Infallible>> {
    let first = futures_util::stream::iter(vec![start(&generation.head)]);
    let rest = futures_util::stream::unfold(Some((generation, Blocks { next: 0, open: None })), |state| async move {
        let (mut g, mut blocks) = state?;
        let mut out = Vec::new();
        let over = match g.events.recv().await {
            Some(reply) => blocks.events(reply, &mut out),
            None => blocks.events(ReplyEvent::Failed(gone()), &mut out),
        };
        Some((futures_util::stream::iter(out), (!over).then_some((g, blocks))))
    });
    first.chain(rest.flatten())
}
