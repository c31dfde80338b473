//! What `k3 bench agent`'s loop sends: the system prompt, the tool it declares, the tool
//! results (numbered source lines of a given length), and the mask that holds replies to
//! plain words ([`PlainWords`]).

use k3_engine::chat::ToolSpec;
use k3_engine::constraint::{TokenConstraint, TokenMask};
use k3_engine::tokenizer::Tokenizer;
use serde_json::json;

pub(super) const SYSTEM: &str = "You are a coding agent. Read the files you are given, call tools to look further, \
                      and answer with the change to make.";

/// The tool an agent declares (its schema is part of every prompt).
pub(super) fn read_file_tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: Some("Read a file of the project".into()),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}, "lines": {"type": "integer"}},
                           "required": ["path"]}),
    }
}

/// A message of at least `tokens` tokens: numbered source lines, as a tool result holds.
pub(super) fn filler(tok: &Tokenizer, turn: usize, tokens: usize) -> String {
    let mut text = format!("src/module_{turn}.rs:\n");
    let mut line = 0;
    while tok.encode(&text).len() < tokens {
        line += 1;
        text.push_str(&format!("{line:4}  let value_{line} = compute(input, {line}) + offset_{turn};\n"));
    }
    text
}

/// Replies made of letters and digits only: the same mask before every pick.
#[derive(Clone)]
pub(super) struct PlainWords {
    mask: TokenMask,
}

impl PlainWords {
    pub(super) fn new(tok: &Tokenizer, vocab: usize) -> Self {
        let plain = |id: u32| {
            !tok.is_added(id)
                && tok.token_bytes(id).is_ok_and(|b| !b.is_empty() && b.iter().all(u8::is_ascii_alphanumeric))
        };
        let ids: Vec<u32> = (0..vocab as u32).filter(|&id| plain(id)).collect();
        PlainWords { mask: TokenMask::only(&ids, vocab) }
    }
}

impl TokenConstraint for PlainWords {
    fn mask(&mut self) -> Result<TokenMask, String> {
        Ok(self.mask.clone())
    }

    fn commit(&mut self, _token: u32) -> Result<(), String> {
        Ok(())
    }
}
