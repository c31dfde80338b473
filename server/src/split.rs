//! [`ReplyText`]: the streamed visible text of a reply, split into the OpenAI channels
//! (`reasoning_content`, `content`) and cut at the first stop string.
//!
//! Owns: holding back a tail that may still become a marker (the think → response
//! switch, the assistant close) or a stop string, so no delta ever has to be taken back;
//! and, at the end, reconciling with the reply the runtime kept (its `text` and `think`),
//! so the streamed deltas add up to exactly the non-streamed message — the text a client
//! sends back for the runtime to reuse the conversation's engine state.
//! Must not: apply stop strings to the reasoning channel.
//! Easy to break: a held-back tail is cut on a character boundary only.

use k3_engine::chat::template::ASSISTANT_CLOSE;

/// Between the think and the response channel of a thinking-mode reply (the template's
/// markup: `<|close|>think<|sep|>` then the generation prompt's `<|open|>response<|sep|>`).
pub const THINK_TO_RESPONSE: &str = "<|close|>think<|sep|><|open|>response<|sep|>";

/// How the generated text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channels {
    /// A raw completion: all text is `content`.
    Raw,
    /// A chat reply in the response channel, ending with the assistant close.
    Instruct,
    /// A chat reply that starts in the think channel.
    Thinking,
}

/// Text to send in one delta.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delta {
    pub reasoning: String,
    pub content: String,
}

impl Delta {
    pub fn is_empty(&self) -> bool {
        self.reasoning.is_empty() && self.content.is_empty()
    }
}

/// One reply's text as it streams.
#[derive(Debug)]
pub struct ReplyText {
    channels: Channels,
    in_response: bool,
    pending: String,
    stops: Vec<String>,
    content: String,
    reasoning: String,
    stopped: bool,
}

impl ReplyText {
    pub fn new(channels: Channels, stops: Vec<String>) -> Self {
        ReplyText {
            channels,
            in_response: channels != Channels::Thinking,
            pending: String::new(),
            stops,
            content: String::new(),
            reasoning: String::new(),
            stopped: false,
        }
    }

    /// True once a stop string was found (nothing more is sent).
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Everything sent as `content` so far.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// Everything sent as `reasoning_content` so far.
    pub fn reasoning(&self) -> &str {
        &self.reasoning
    }

    /// Takes the next piece of visible text; returns what can be sent now.
    pub fn push(&mut self, text: &str) -> Delta {
        let mut delta = Delta::default();
        if self.stopped {
            return delta;
        }
        self.pending.push_str(text);
        if !self.in_response {
            if let Some(at) = self.pending.find(THINK_TO_RESPONSE) {
                delta.reasoning.push_str(&self.pending[..at]);
                self.pending.drain(..at + THINK_TO_RESPONSE.len());
                self.in_response = true;
            } else {
                let keep = held_back(&self.pending, [THINK_TO_RESPONSE]);
                let send = self.pending.len() - keep;
                delta.reasoning.push_str(&self.pending[..send]);
                self.pending.drain(..send);
            }
        }
        if self.in_response {
            delta.content = self.take_content();
        }
        self.reasoning.push_str(&delta.reasoning);
        self.content.push_str(&delta.content);
        delta
    }

    /// The content that can go now: up to a stop string, or all but a held-back tail.
    fn take_content(&mut self) -> String {
        if let Some(at) = first_stop(&self.pending, &self.stops) {
            self.stopped = true;
            let content = self.pending[..at].to_string();
            self.pending.clear();
            return content;
        }
        let close = (self.channels != Channels::Raw).then_some(ASSISTANT_CLOSE);
        let guards = self.stops.iter().map(String::as_str).chain(close);
        let keep = held_back(&self.pending, guards);
        let send = self.pending.len() - keep;
        let content = self.pending[..send].to_string();
        self.pending.drain(..send);
        content
    }

    /// The rest, given the reply as the runtime kept it (`text` the response channel,
    /// `think` the think channel).
    pub fn finish(&mut self, think: Option<&str>, text: &str) -> Delta {
        let mut delta = Delta::default();
        if self.stopped {
            return delta;
        }
        self.pending.clear();
        if self.channels == Channels::Thinking {
            let rest = think.unwrap_or_default().strip_prefix(self.reasoning.as_str()).unwrap_or_default();
            delta.reasoning = rest.to_string();
        }
        let rest = text.strip_prefix(self.content.as_str()).unwrap_or_default();
        match first_stop(rest, &self.stops) {
            Some(at) => {
                self.stopped = true;
                delta.content = rest[..at].to_string();
            }
            None => delta.content = rest.to_string(),
        }
        self.reasoning.push_str(&delta.reasoning);
        self.content.push_str(&delta.content);
        delta
    }
}

/// Where the earliest stop string starts in `text`.
fn first_stop(text: &str, stops: &[String]) -> Option<usize> {
    stops.iter().filter_map(|s| text.find(s.as_str())).min()
}

/// Length of the longest tail of `text` that is a proper prefix of one of `guards`.
fn held_back<'a>(text: &str, guards: impl IntoIterator<Item = &'a str>) -> usize {
    guards
        .into_iter()
        .filter_map(|guard| {
            let longest = text.len().min(guard.len().saturating_sub(1));
            (1..=longest)
                .rev()
                .find(|&k| text.is_char_boundary(text.len() - k) && guard.starts_with(&text[text.len() - k..]))
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k3_engine::chat::{ChatMessage, ChatMode, ChatTemplate, Role};

    fn feed(r: &mut ReplyText, pieces: &[&str]) -> Delta {
        let mut all = Delta::default();
        for p in pieces {
            let d = r.push(p);
            all.reasoning.push_str(&d.reasoning);
            all.content.push_str(&d.content);
        }
        all
    }

    #[test]
    fn the_marker_matches_what_the_template_renders() {
        let m = ChatMessage { role: Role::Assistant, content: "C".into(), think: Some("T".into()) };
        let text = ChatTemplate::builtin().render(&[m], ChatMode::Thinking, false).expect("render");
        assert!(text.contains(&format!("T{THINK_TO_RESPONSE}C{ASSISTANT_CLOSE}")), "{text}");
    }

    #[test]
    fn thinking_splits_at_the_marker_even_split_across_pieces() {
        let mut r = ReplyText::new(Channels::Thinking, vec![]);
        let d = feed(&mut r, &["hm", "m<|close|>", "think<|sep|><|open|>resp", "onse<|sep|>Hi", "<|close|>response"]);
        assert_eq!(d.reasoning, "hmm");
        assert_eq!(d.content, "Hi");
        let rest = r.finish(Some("hmm"), "Hi");
        assert!(rest.is_empty());
    }

    #[test]
    fn a_stop_string_cuts_the_content_and_ends_it() {
        let mut r = ReplyText::new(Channels::Instruct, vec!["END".into()]);
        let d = feed(&mut r, &["abc E", "N", "Dxyz"]);
        assert_eq!(d.content, "abc ");
        assert!(r.stopped());
        assert!(r.push("more").is_empty());
        assert!(r.finish(None, "abc ENDxyz").is_empty());
    }

    #[test]
    fn the_end_reconciles_with_the_kept_reply() {
        let mut r = ReplyText::new(Channels::Instruct, vec![]);
        let d = feed(&mut r, &["é", "<|close|>response<|sep|><|close|>message<|sep|>"]);
        assert_eq!(d.content, "é");
        assert!(r.finish(None, "é").is_empty());
        let mut raw = ReplyText::new(Channels::Raw, vec![]);
        let d = feed(&mut raw, &["a<|close|>"]);
        assert_eq!(d.content, "a<|close|>");
        assert_eq!(raw.finish(None, "a<|close|><|end_of_msg|>").content, "<|end_of_msg|>");
    }

    #[test]
    fn a_held_back_tail_never_splits_a_character() {
        assert_eq!(held_back("xé", ["é!"]), 2);
        assert_eq!(held_back("abc", ["zz"]), 0);
        assert_eq!(held_back("ab<|cl", [ASSISTANT_CLOSE]), 4);
    }
}
