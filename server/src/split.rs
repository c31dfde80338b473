//! [`ReplyText`]: the streamed visible text of a reply, split into the OpenAI channels
//! (`reasoning_content`, `content`) and cut at the first stop string.
//!
//! Owns: holding back a tail that may still become a stop string, so no delta ever has
//! to be taken back; and, at the end, reconciling with the reply the runtime kept (its
//! `text` and `think`), so the streamed deltas add up to exactly the non-streamed message
//! — the text a client sends back for the runtime to reuse the conversation's engine
//! state. Which text is visible and in which channel is not decided here: the pieces
//! arrive read by `k3_engine::chat::ReplyReader`, markup already removed.
//! Must not: apply stop strings to the reasoning channel.
//! Easy to break: a held-back tail is cut on a character boundary only.

use k3_runtime::Channel;

/// Which channels a reply has: a raw completion and an instruct reply only `content`, a
/// thinking reply `reasoning_content` first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channels {
    Raw,
    Instruct,
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

    /// Takes the next piece of visible text, in its channel; returns what can be sent now.
    pub fn push(&mut self, text: &str, channel: Channel) -> Delta {
        let mut delta = Delta::default();
        if self.stopped {
            return delta;
        }
        match channel {
            Channel::Think => delta.reasoning.push_str(text),
            Channel::Response => {
                self.pending.push_str(text);
                delta.content = self.take_content();
            }
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
        let keep = held_back(&self.pending, self.stops.iter().map(String::as_str));
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

    fn feed(r: &mut ReplyText, pieces: &[(&str, Channel)]) -> Delta {
        let mut all = Delta::default();
        for (p, channel) in pieces {
            let d = r.push(p, *channel);
            all.reasoning.push_str(&d.reasoning);
            all.content.push_str(&d.content);
        }
        all
    }

    #[test]
    fn thinking_text_goes_to_reasoning_and_the_response_to_content() {
        let mut r = ReplyText::new(Channels::Thinking, vec!["END".into()]);
        let d = feed(&mut r, &[("hm", Channel::Think), ("m END", Channel::Think), ("Hi", Channel::Response)]);
        assert_eq!(d.reasoning, "hmm END", "stop strings do not apply to reasoning");
        assert_eq!(d.content, "Hi");
        assert!(r.finish(Some("hmm END"), "Hi").is_empty());
    }

    #[test]
    fn a_stop_string_cuts_the_content_and_ends_it() {
        let mut r = ReplyText::new(Channels::Instruct, vec!["END".into()]);
        let d = feed(&mut r, &[("abc E", Channel::Response), ("N", Channel::Response), ("Dxyz", Channel::Response)]);
        assert_eq!(d.content, "abc ");
        assert!(r.stopped());
        assert!(r.push("more", Channel::Response).is_empty());
        assert!(r.finish(None, "abc ENDxyz").is_empty());
    }

    #[test]
    fn the_end_reconciles_with_the_kept_reply() {
        let mut r = ReplyText::new(Channels::Instruct, vec!["ab".into()]);
        let d = feed(&mut r, &[("é a", Channel::Response)]);
        assert_eq!(d.content, "é ", "the tail that may become the stop string waits");
        assert_eq!(r.finish(None, "é a").content, "a");
        assert_eq!(r.content(), "é a");
    }

    #[test]
    fn a_held_back_tail_never_splits_a_character() {
        assert_eq!(held_back("xé", ["é!"]), 2);
        assert_eq!(held_back("abc", ["zz"]), 0);
        assert_eq!(held_back("ab<|cl", ["<|close|>"]), 4);
    }
}
