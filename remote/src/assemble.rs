//! A whole chat-completion stream: events in order, deltas handed on as they arrive, and the
//! ending checked.
//!
//! A reply is whole when the server gave a finish reason (then `[DONE]`, or the end of the
//! body, which some servers send without `[DONE]`). A `[DONE]` with no finish reason before it
//! is accepted as an unstated finish. The end of the body with neither is
//! [`StreamError::EndedEarly`]: the server or the connection died mid-reply, and the text so far
//! comes back as the failure's partial.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};

use crate::chunk::{decode, FinishReason, StreamError, Usage};

/// Text added by one event (either part may be empty, never both).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delta {
    pub content: String,
    pub reasoning: String,
}

/// A finished remote reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteReply {
    pub content: String,
    pub reasoning: String,
    pub finish: FinishReason,
    /// The server's counts, when it sent them.
    pub usage: Option<Usage>,
    /// Data events read (comments and keep-alives not counted).
    pub events: usize,
}

/// A stream that did not make a whole reply: why, and what it had said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub error: StreamError,
    pub partial: Delta,
}

/// Events in, deltas out; [`Assembler::finish`] checks the ending.
#[derive(Debug, Default)]
pub struct Assembler {
    content: String,
    reasoning: String,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    done: bool,
    events: usize,
}

impl Assembler {
    /// Takes one event (`event` is its name, `message` when unnamed); returns the text it
    /// added, if any.
    pub fn push(&mut self, event: &str, data: &str) -> Result<Option<Delta>, StreamError> {
        if self.done {
            return Err(StreamError::AfterDone);
        }
        let decoded = decode(self.events, event, data)?;
        self.events += 1;
        self.done = decoded.done;
        if decoded.finish.is_some() {
            self.finish = decoded.finish;
        }
        if decoded.usage.is_some() {
            self.usage = decoded.usage;
        }
        if decoded.content.is_empty() && decoded.reasoning.is_empty() {
            return Ok(None);
        }
        self.content.push_str(&decoded.content);
        self.reasoning.push_str(&decoded.reasoning);
        Ok(Some(Delta { content: decoded.content, reasoning: decoded.reasoning }))
    }

    /// Takes one parsed event (or the framing's error), handing the text it added to
    /// `on_delta`; a failure carries the text so far.
    fn take<E: std::fmt::Display>(
        &mut self,
        event: Result<Event, EventStreamError<E>>,
        on_delta: &mut impl FnMut(&Delta),
    ) -> Result<(), Failure> {
        let step = match event {
            Ok(e) => self.push(&e.event, &e.data),
            Err(e) => Err(StreamError::Transport(e.to_string())),
        };
        match step {
            Ok(delta) => {
                if let Some(delta) = delta {
                    on_delta(&delta);
                }
                Ok(())
            }
            Err(error) => Err(Failure { error, partial: self.partial() }),
        }
    }

    /// The text so far.
    pub fn partial(&self) -> Delta {
        Delta { content: self.content.clone(), reasoning: self.reasoning.clone() }
    }

    /// The reply, once the body has ended.
    pub fn finish(self) -> Result<RemoteReply, Failure> {
        let finish = match (self.finish.clone(), self.done) {
            (Some(f), _) => f,
            (None, true) => FinishReason::Other("unstated".to_string()),
            (None, false) => return Err(Failure { error: StreamError::EndedEarly, partial: self.partial() }),
        };
        Ok(RemoteReply {
            content: self.content,
            reasoning: self.reasoning,
            finish,
            usage: self.usage,
            events: self.events,
        })
    }
}

/// Reads a response body's byte stream to the end, handing each delta to `on_delta` as it
/// arrives.
pub async fn assemble<S, B, E>(body: S, mut on_delta: impl FnMut(&Delta)) -> Result<RemoteReply, Failure>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    let mut events = body.eventsource();
    let mut assembler = Assembler::default();
    while let Some(event) = events.next().await {
        assembler.take(event, &mut on_delta)?;
    }
    assembler.finish()
}

/// What a watched stream is watched for.
pub struct Watch<'a> {
    /// Longest time with no byte of the body (keep-alive comments count as bytes).
    pub silence: Duration,
    /// Polled every [`CANCEL_POLL`]; true stops reading.
    pub cancelled: &'a (dyn Fn() -> bool + Sync),
}

/// How often a watched stream looks at its cancel flag.
pub const CANCEL_POLL: Duration = Duration::from_millis(20);

/// How a watched stream ended without failing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    Reply(RemoteReply),
    /// The caller cancelled; the text so far.
    Cancelled(Delta),
}

/// [`assemble`] that also stops when `watch.cancelled()` turns true (the caller then drops
/// the body, closing the connection) and fails with [`StreamError::Silent`] after
/// `watch.silence` without a byte.
pub async fn assemble_watched<S, B, E>(
    body: S,
    watch: Watch<'_>,
    mut on_delta: impl FnMut(&Delta),
) -> Result<Ended, Failure>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    let start = Instant::now();
    let last_piece_ms = AtomicU64::new(0);
    let body = body.inspect(|_| last_piece_ms.store(start.elapsed().as_millis() as u64, Ordering::Relaxed));
    let mut events = Box::pin(body.eventsource());
    let mut assembler = Assembler::default();
    let mut tick = tokio::time::interval(CANCEL_POLL);
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            _ = tick.tick() => {
                if (watch.cancelled)() {
                    return Ok(Ended::Cancelled(assembler.partial()));
                }
                let quiet = start.elapsed().saturating_sub(Duration::from_millis(last_piece_ms.load(Ordering::Relaxed)));
                if quiet > watch.silence {
                    let error = StreamError::Silent { after: watch.silence };
                    return Err(Failure { error, partial: assembler.partial() });
                }
                continue;
            }
        };
        let Some(event) = event else { break };
        assembler.take(event, &mut on_delta)?;
    }
    assembler.finish().map(Ended::Reply)
}
