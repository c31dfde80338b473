//! [`ReplyReader`]: the one rule for which generated tokens are reply text a person sees,
//! and in which channel (think or response).
//!
//! Owns: reading generated ids as they stream into UTF-8 text (never half a character)
//! and XTML markup by token id: `<|open|>` or `<|close|>` starts a tag whose text up to
//! `<|sep|>` is markup; an opened `think` or `response` tag names the channel the text
//! after it belongs to, and closing the channel ends its text; every other added token
//! (the end of message, reserved ids) shows nothing. A raw completion shows every
//! ordinary token and hides the added ones alike.
//! Must not: differ between the window, the terminal, the server and the saved message
//! (all of them read replies through this type), or treat ordinary tokens that happen to
//! spell a marker (`<`, `|`, `close` …) as markup: only the ids are.

use crate::chat::calls::{element, CallDelta, CallError, CallReader};
use crate::chat::message::ToolCall;
use crate::chat::template::ChatMode;
use crate::tokenizer::{StreamDecoder, Tokenizer};

/// Which part of an assistant message a piece of text belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// The reasoning of a thinking-mode reply.
    Think,
    /// The answer (all of a raw completion).
    Response,
}

/// Visible text completed by one token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    pub channel: Channel,
    pub text: String,
}

/// The markup ids of the XTML template (absent from a tokenizer without them).
#[derive(Debug, Clone, Copy)]
struct Markup {
    open: Option<u32>,
    close: Option<u32>,
    sep: Option<u32>,
}

/// Where the reader is in the markup.
#[derive(Debug)]
enum State {
    /// Text goes to this channel; `None` after a channel closed (nothing shows).
    Text(Option<Channel>),
    /// Inside `<|open|>…<|sep|>` (`opening`) or `<|close|>…<|sep|>`: the tag's bytes, and
    /// the channel text went to before the tag.
    Tag { opening: bool, name: Vec<u8>, before: Option<Channel> },
}

/// Reads one reply, token by token.
pub struct ReplyReader<'a> {
    tokenizer: &'a Tokenizer,
    markup: Option<Markup>,
    decoder: StreamDecoder,
    state: State,
    /// The channel the decoder's held-back bytes belong to.
    decoding: Channel,
    think: String,
    response: String,
    /// Reads the tools channel (no tool declared unless [`ReplyReader::with_tools`]).
    calls: CallReader,
    /// True inside an open tools channel.
    in_tools: bool,
}

impl<'a> ReplyReader<'a> {
    /// A chat reply: it starts in the channel the generation prompt opened.
    pub fn chat(tokenizer: &'a Tokenizer, mode: ChatMode) -> Self {
        let first = match mode {
            ChatMode::Instruct => Channel::Response,
            ChatMode::Thinking => Channel::Think,
        };
        let markup = Markup {
            open: tokenizer.added_id("<|open|>"),
            close: tokenizer.added_id("<|close|>"),
            sep: tokenizer.added_id("<|sep|>"),
        };
        Self::new(tokenizer, Some(markup), first)
    }

    /// A raw completion: every ordinary token is response text.
    pub fn raw(tokenizer: &'a Tokenizer) -> Self {
        Self::new(tokenizer, None, Channel::Response)
    }

    fn new(tokenizer: &'a Tokenizer, markup: Option<Markup>, first: Channel) -> Self {
        ReplyReader {
            tokenizer,
            markup,
            decoder: StreamDecoder::new(),
            state: State::Text(Some(first)),
            decoding: first,
            think: String::new(),
            response: String::new(),
            calls: CallReader::new(Vec::new(), String::new()),
            in_tools: false,
        }
    }

    /// Accepts calls of the `declared` tools, with ids `id_prefix` + the call's position.
    pub fn with_tools(mut self, declared: Vec<String>, id_prefix: String) -> Self {
        self.calls = CallReader::new(declared, id_prefix);
        self
    }

    /// The tool calls finished so far.
    pub fn tool_calls(&self) -> &[ToolCall] {
        self.calls.calls()
    }

    /// What is wrong with the reply's tool calls, if anything.
    pub fn call_error(&self) -> Option<&CallError> {
        self.calls.error()
    }

    /// The tool-call pieces formed since the last call (OpenAI's streamed deltas).
    pub fn take_call_deltas(&mut self) -> Vec<CallDelta> {
        self.calls.take_deltas()
    }

    /// Reads `ids` to the end; returns the reader (see [`ReplyReader::think`] and
    /// [`ReplyReader::response`]).
    pub fn read_all(mut self, ids: &[u32]) -> Self {
        for &id in ids {
            self.push(id);
        }
        self.finish();
        self
    }

    /// The text `id` completes (none for markup, an added token, or the first bytes of a
    /// character split across tokens).
    pub fn push(&mut self, id: u32) -> Option<Piece> {
        if self.tokenizer.is_added(id) {
            let flushed = self.flush();
            self.markup_token(id);
            return flushed;
        }
        let bytes = self.tokenizer.token_bytes(id).unwrap_or_default();
        match &mut self.state {
            State::Tag { name, .. } => {
                name.extend_from_slice(bytes);
                None
            }
            State::Text(None) => {
                if self.in_tools {
                    self.calls.text(bytes);
                }
                None
            }
            State::Text(Some(channel)) => {
                let channel = *channel;
                self.decoding = channel;
                let text = self.decoder.push(bytes);
                self.keep(channel, text)
            }
        }
    }

    /// The end of the reply: bytes held back for an unfinished character, as U+FFFD.
    pub fn finish(&mut self) -> Option<Piece> {
        self.calls.finish();
        self.flush()
    }

    /// All think-channel text so far.
    pub fn think(&self) -> &str {
        &self.think
    }

    /// All response-channel text so far.
    pub fn response(&self) -> &str {
        &self.response
    }

    fn flush(&mut self) -> Option<Piece> {
        let text = self.decoder.finish();
        self.keep(self.decoding, text)
    }

    fn keep(&mut self, channel: Channel, text: String) -> Option<Piece> {
        if text.is_empty() {
            return None;
        }
        match channel {
            Channel::Think => self.think.push_str(&text),
            Channel::Response => self.response.push_str(&text),
        }
        Some(Piece { channel, text })
    }

    /// An added token: a tag starts or ends, or (any other) nothing shows.
    fn markup_token(&mut self, id: u32) {
        let Some(m) = self.markup else { return };
        if Some(id) == m.open || Some(id) == m.close {
            let before = match &self.state {
                State::Text(channel) => *channel,
                State::Tag { before, .. } => *before,
            };
            self.state = State::Tag { opening: Some(id) == m.open, name: Vec::new(), before };
        } else if Some(id) == m.sep {
            if let State::Tag { opening, name, before } = &self.state {
                let (opening, before) = (*opening, *before);
                let tag = String::from_utf8_lossy(name).into_owned();
                self.state = State::Text(self.after_tag(opening, &tag, before));
            }
        }
    }

    /// The channel text goes to after a tag; a tools channel's tags go to the call reader.
    fn after_tag(&mut self, opening: bool, tag: &str, before: Option<Channel>) -> Option<Channel> {
        if self.in_tools {
            if self.calls.tag(opening, tag) {
                self.in_tools = false;
            }
            return None;
        }
        if opening && element(tag) == "tools" {
            self.in_tools = true;
            return None;
        }
        channel_after_tag(opening, tag.as_bytes(), before)
    }
}

/// The channel after `<|open|>name<|sep|>` or `<|close|>name<|sep|>`: opening `think` or
/// `response` enters it; closing ends the text; any other tag keeps `current` (an opened
/// element inside a channel, such as a tool call, hides only its own tag).
fn channel_after_tag(opening: bool, name: &[u8], current: Option<Channel>) -> Option<Channel> {
    let element = name.split(|&b| b == b' ').next().unwrap_or_default();
    let named = match element {
        b"think" => Some(Channel::Think),
        b"response" => Some(Channel::Response),
        _ => None,
    };
    match (opening, named) {
        (true, Some(channel)) => Some(channel),
        (false, Some(_)) => None,
        (_, None) => current,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::template::ASSISTANT_CLOSE;

    fn tokenizer() -> Tokenizer {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/k3-demo");
        Tokenizer::load(std::path::Path::new(dir)).expect("the demo tokenizer")
    }

    /// Streams `ids` and returns the pieces, checking they add up to the totals.
    fn pieces(reader: &mut ReplyReader<'_>, ids: &[u32]) -> Vec<Piece> {
        let mut out: Vec<Piece> = ids.iter().filter_map(|&id| reader.push(id)).collect();
        out.extend(reader.finish());
        let joined = |c: Channel| out.iter().filter(|p| p.channel == c).map(|p| p.text.as_str()).collect::<String>();
        assert_eq!(joined(Channel::Think), reader.think());
        assert_eq!(joined(Channel::Response), reader.response());
        out
    }

    #[test]
    fn an_instruct_reply_shows_its_response_and_none_of_the_close() {
        let tok = tokenizer();
        let ids = tok.encode(&format!("Hello, Mr. Darcy.{ASSISTANT_CLOSE}"));
        let mut reader = ReplyReader::chat(&tok, ChatMode::Instruct);
        let got = pieces(&mut reader, &ids);
        assert_eq!(reader.response(), "Hello, Mr. Darcy.");
        assert!(got.iter().all(|p| p.channel == Channel::Response));
    }

    #[test]
    fn a_thinking_reply_splits_into_its_channels() {
        let tok = tokenizer();
        let text = format!("Let me see.<|close|>think<|sep|><|open|>response<|sep|>Yes.{ASSISTANT_CLOSE}");
        let mut reader = ReplyReader::chat(&tok, ChatMode::Thinking);
        pieces(&mut reader, &tok.encode(&text));
        assert_eq!((reader.think(), reader.response()), ("Let me see.", "Yes."));
    }

    #[test]
    fn reserved_and_other_added_tokens_show_nothing() {
        let tok = tokenizer();
        let reserved = tok.added_id("<|reserved_token_15|>").expect("a reserved token");
        let mut ids = tok.encode("Hi");
        ids.push(reserved);
        ids.extend(tok.encode("!"));
        ids.push(tok.eos_id().expect("an end of message"));
        let mut reader = ReplyReader::chat(&tok, ChatMode::Instruct);
        pieces(&mut reader, &ids);
        assert_eq!(reader.response(), "Hi!");
        let mut raw = ReplyReader::raw(&tok);
        pieces(&mut raw, &ids);
        assert_eq!(raw.response(), "Hi!");
    }

    #[test]
    fn ordinary_tokens_spelling_a_marker_are_text() {
        let tok = tokenizer();
        let text = "a <|close|>response<|sep|> b";
        let mut reader = ReplyReader::chat(&tok, ChatMode::Instruct);
        pieces(&mut reader, &tok.encode_ordinary(text));
        assert_eq!(reader.response(), text);
    }

    #[test]
    fn nothing_after_the_response_closes_shows() {
        let tok = tokenizer();
        let text = "Fine.<|close|>response<|sep|><|close|>message<|sep|><|open|>message role=\"user\"<|sep|>More?";
        let mut reader = ReplyReader::chat(&tok, ChatMode::Instruct);
        pieces(&mut reader, &tok.encode(text));
        assert_eq!(reader.response(), "Fine.");
    }

    #[test]
    fn another_element_inside_the_response_hides_only_its_tags() {
        let tok = tokenizer();
        let text = "Look: <|open|>note kind=\"x\"<|sep|>inside<|close|>note<|sep|> done";
        let mut reader = ReplyReader::chat(&tok, ChatMode::Instruct);
        pieces(&mut reader, &tok.encode(text));
        assert_eq!(reader.response(), "Look: inside done");
    }

    #[test]
    fn a_character_split_across_tokens_arrives_whole() {
        let tok = tokenizer();
        let text = "Tea ☕ and 𝄞 music";
        let ids = tok.encode_ordinary(text);
        let mut reader = ReplyReader::chat(&tok, ChatMode::Instruct);
        let got = pieces(&mut reader, &ids);
        assert_eq!(reader.response(), text);
        assert!(got.len() < ids.len(), "some token completed no character: {} pieces of {} ids", got.len(), ids.len());
        // Cut inside the character: the held-back bytes end as one replacement character.
        let cut = ids.iter().position(|&id| std::str::from_utf8(tok.token_bytes(id).unwrap()).is_err()).unwrap();
        let mut reader = ReplyReader::chat(&tok, ChatMode::Instruct);
        pieces(&mut reader, &ids[..=cut]);
        assert!(reader.response().ends_with('\u{FFFD}'), "{:?}", reader.response());
    }

    /// Streams `text` as one reply with the tool `search` and `run` declared; returns the
    /// reader and the arguments each call's deltas assembled to.
    fn read_calls<'a>(tok: &'a Tokenizer, text: &str) -> (ReplyReader<'a>, Vec<(String, String, String)>) {
        let mut reader = ReplyReader::chat(tok, ChatMode::Instruct)
            .with_tools(vec!["search".into(), "run".into()], "call_t_".into());
        let mut assembled: Vec<(String, String, String)> = Vec::new();
        for id in tok.encode(text) {
            reader.push(id);
            for d in reader.take_call_deltas() {
                if let Some((id, name)) = d.opened {
                    assert_eq!(d.position, assembled.len(), "calls open in order");
                    assembled.push((id, name, String::new()));
                }
                assembled[d.position].2.push_str(&d.arguments);
            }
        }
        reader.finish();
        for d in reader.take_call_deltas() {
            assembled[d.position].2.push_str(&d.arguments);
        }
        (reader, assembled)
    }

    #[test]
    fn a_tools_channel_streams_into_calls_whose_deltas_assemble_to_their_arguments() {
        let tok = tokenizer();
        let text = concat!(
            "Let me look.<|close|>response<|sep|><|open|>tools<|sep|>",
            "<|open|>call tool=\"search\" index=\"1\"<|sep|>",
            "<|open|>argument key=\"query\" type=\"string\"<|sep|>tea \"and\" ☕\nnow<|close|>argument<|sep|>",
            "<|open|>argument key=\"options\" type=\"object\"<|sep|>{\"timeout\": 150}<|close|>argument<|sep|>",
            "<|close|>call<|sep|>",
            "<|open|>call tool=\"run\" index=\"2\"<|sep|><|close|>call<|sep|>",
            "<|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>"
        );
        let (reader, assembled) = read_calls(&tok, text);
        assert_eq!(reader.call_error(), None);
        assert_eq!(reader.response(), "Let me look.");
        let calls = reader.tool_calls();
        assert_eq!(calls.len(), 2);
        assert_eq!((calls[0].tool.as_str(), calls[0].index, calls[0].id.as_str()), ("search", 1, "call_t_0"));
        assert_eq!(calls[0].arguments, r#"{"query":"tea \"and\" ☕\nnow","options":{"timeout": 150}}"#);
        assert_eq!((calls[1].tool.as_str(), calls[1].arguments.as_str()), ("run", "{}"));
        let want: Vec<_> = calls.iter().map(|c| (c.id.clone(), c.tool.clone(), c.arguments.clone())).collect();
        assert_eq!(assembled, want);
        // The calls render back to the text the model wrote.
        let m = crate::chat::message::ChatMessage::assistant("Let me look.", None, calls.to_vec());
        let rendered = crate::chat::xtml::render(&[m], &Default::default(), ChatMode::Instruct, false);
        let body =
            rendered.strip_prefix("<|open|>message role=\"assistant\"<|sep|><|open|>response<|sep|>").expect("prefix");
        assert_eq!(body, text);
    }

    #[test]
    fn malformed_calls_are_named_never_guessed() {
        let tok = tokenizer();
        let cases = [
            ("<|open|>call tool=\"rm\" index=\"1\"<|sep|><|close|>call<|sep|>", "not declared"),
            ("<|open|>call tool=\"run\" index=\"1\"<|sep|><|open|>argument key=\"n\" type=\"number\"<|sep|>12x<|close|>argument<|sep|><|close|>call<|sep|>", "not valid JSON"),
            ("<|open|>call tool=\"run\" index=\"1\"<|sep|><|open|>argument key=\"a\" type=\"string\"<|sep|>x", "ended inside a call of `run`"),
            ("<|open|>call tool=\"run\" index=\"1\"<|sep|><|close|>call<|sep|><|open|>call tool=\"run\" index=\"1\"<|sep|>", "new index"),
            ("<|open|>call tool=\"run\" index=\"1\"<|sep|>stray<|close|>call<|sep|>", "holds `stray`"),
            ("<|open|>call index=\"1\"<|sep|>", "names its tool"),
            ("<|open|>argument key=\"a\"<|sep|>", "a call or the channel's close"),
        ];
        for (body, want) in cases {
            let text = format!("<|close|>response<|sep|><|open|>tools<|sep|>{body}");
            let (reader, _) = read_calls(&tok, &text);
            let err = reader.call_error().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains(want), "{body}: {err:?} should say {want:?}");
        }
    }
}
