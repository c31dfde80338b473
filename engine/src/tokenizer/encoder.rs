//! `Tokenizer`: encode text to ids and decode ids to bytes with the released files.
//!
//! Owns: added-token matching (spec §12.3: earliest position, longest string first at a
//! position), the ordinary rank-BPE between them (delegated to `tiktoken-rs`'s
//! `CoreBPE`, the Rust port of the reference `tiktoken` core, with the Kimi pattern), and
//! decoding.
//! Must not: let `CoreBPE` match special tokens itself: its alternation picks by hash-map
//! order, not by the longest string.

use std::collections::HashMap;
use std::path::Path;

use tiktoken_rs::CoreBPE;

/// The longest whitespace run encoded in one piece (see [`Tokenizer::encode_plain`]).
pub const MAX_WHITESPACE_RUN: usize = 65_536;

use crate::error::{Error, Result};
use crate::tokenizer::files::{self, AddedToken};
use crate::tokenizer::pattern::kimi_pattern;

/// A loaded tokenizer.
pub struct Tokenizer {
    bpe: CoreBPE,
    /// `rank → bytes`.
    rank_bytes: Vec<Vec<u8>>,
    /// Added tokens by id.
    added_by_id: HashMap<u32, String>,
    /// Added tokens grouped by first byte, longest first (for matching in text).
    added_by_first_byte: HashMap<u8, Vec<(String, u32)>>,
    added_by_content: HashMap<String, u32>,
    bos_id: Option<u32>,
    eos_id: Option<u32>,
    chat_template: Option<String>,
    vocab_size: usize,
    /// The most bytes one token stands for (a rank's bytes or an added token's text).
    max_token_bytes: usize,
}

impl Tokenizer {
    /// Loads `tiktoken.model` and `tokenizer_config.json` from `model_dir`.
    pub fn load(model_dir: &Path) -> Result<Tokenizer> {
        let (ranks_path, config_path) = files::paths(model_dir);
        let ranks = files::read_ranks(&ranks_path)?;
        let config = files::read_config(&config_path, &ranks)?;
        Self::build(ranks, config, model_dir)
    }

    /// The tokenizer `load` would make of a folder `model_dir` holding these two files'
    /// bytes (no file is read; `model_dir` only names the files in errors).
    pub fn from_bytes(tiktoken_model: &[u8], tokenizer_config: &[u8], model_dir: &Path) -> Result<Tokenizer> {
        let (ranks_path, config_path) = files::paths(model_dir);
        let ranks = files::parse_ranks(tiktoken_model, &ranks_path)?;
        let config = files::parse_config(tokenizer_config, &config_path, &ranks)?;
        Self::build(ranks, config, model_dir)
    }

    fn build(ranks: files::Ranks, config: files::TokenizerConfig, model_dir: &Path) -> Result<Tokenizer> {
        let (ranks_path, config_path) = files::paths(model_dir);
        let lookup = |name: &Option<String>, key: &str| -> Result<Option<u32>> {
            match name {
                None => Ok(None),
                Some(n) => {
                    config.added.iter().find(|t| &t.content == n).map(|t| Some(t.id)).ok_or_else(|| Error::Tokenizer {
                        path: config_path.clone(),
                        line: None,
                        reason: format!("`{key}` {n:?} is not one of the added tokens"),
                    })
                }
            }
        };
        let bos_id = lookup(&config.bos_token, "bos_token")?;
        let eos_id = lookup(&config.eos_token, "eos_token")?;
        let map = ranks.bytes_of.iter().enumerate().map(|(r, b)| (b.clone(), r as u32)).collect();
        let bpe = CoreBPE::new(map, Default::default(), &kimi_pattern()).map_err(|e| Error::Tokenizer {
            path: ranks_path.clone(),
            line: None,
            reason: format!("building the BPE: {e}"),
        })?;
        let max_added = config.added.iter().map(|t| t.id as usize + 1).max().unwrap_or(0);
        let vocab_size = ranks.bytes_of.len().max(max_added);
        let longest_rank = ranks.bytes_of.iter().map(Vec::len).max().unwrap_or(1);
        let longest_added = config.added.iter().map(|t| t.content.len()).max().unwrap_or(1);
        let max_token_bytes = longest_rank.max(longest_added).max(1);
        Ok(Tokenizer {
            bpe,
            added_by_first_byte: group_by_first_byte(&config.added),
            added_by_id: config.added.iter().map(|t| (t.id, t.content.clone())).collect(),
            added_by_content: config.added.iter().map(|t| (t.content.clone(), t.id)).collect(),
            rank_bytes: ranks.bytes_of,
            bos_id,
            eos_id,
            chat_template: config.chat_template,
            vocab_size,
            max_token_bytes,
        })
    }

    /// The fewest tokens `bytes` of text can encode to (each token stands for at most
    /// [`Tokenizer::max_token_bytes`] bytes): a prompt can be refused as too long for the
    /// context from its size alone, before a byte of it is encoded.
    pub fn min_tokens_for(&self, bytes: usize) -> usize {
        bytes.div_ceil(self.max_token_bytes)
    }

    /// The most bytes one token stands for.
    pub fn max_token_bytes(&self) -> usize {
        self.max_token_bytes
    }

    /// Ids `0..vocab_size` cover every rank and added token.
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    pub fn bos_id(&self) -> Option<u32> {
        self.bos_id
    }

    /// The end-of-sequence id named by `eos_token` in the config.
    pub fn eos_id(&self) -> Option<u32> {
        self.eos_id
    }

    /// The id of an added token by its text (e.g. `<|end_of_msg|>`).
    pub fn added_id(&self, content: &str) -> Option<u32> {
        self.added_by_content.get(content).copied()
    }

    /// The checkpoint's own Jinja chat template, if `tokenizer_config.json` has one.
    pub fn chat_template(&self) -> Option<&str> {
        self.chat_template.as_deref()
    }

    /// Encodes `text`; added-token strings in it become their ids.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        let mut plain_start = 0;
        let mut i = 0;
        let bytes = text.as_bytes();
        while i < bytes.len() {
            if let Some((len, id)) = self.added_at(&text[i..]) {
                ids.extend(self.encode_plain(&text[plain_start..i]));
                ids.push(id);
                i += len;
                plain_start = i;
            } else {
                i += utf8_len(bytes[i]);
            }
        }
        ids.extend(self.encode_plain(&text[plain_start..]));
        ids
    }

    /// True when `text` holds an added token's string (which [`Tokenizer::encode`] would
    /// turn into its control id).
    pub fn holds_added_token(&self, text: &str) -> bool {
        text.char_indices().any(|(i, _)| self.added_at(&text[i..]).is_some())
    }

    /// Encodes `text` with no added-token matching (the strings stay ordinary text).
    pub fn encode_ordinary(&self, text: &str) -> Vec<u32> {
        self.encode_plain(text)
    }

    /// Rank-BPE of text without added tokens. A run of more than [`MAX_WHITESPACE_RUN`]
    /// whitespace characters is encoded in pieces of that many: the split pattern's
    /// whitespace branch backtracks once per character and `fancy-regex` gives up (inside
    /// `tiktoken-rs`, a panic) somewhere between 300,000 and 1,000,000; every shorter run is
    /// encoded exactly as `tiktoken` does.
    fn encode_plain(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        let (mut start, mut run) = (0, 0usize);
        for (at, c) in text.char_indices() {
            run = if c.is_whitespace() { run + 1 } else { 0 };
            if run > MAX_WHITESPACE_RUN {
                ids.extend(self.bpe.encode_ordinary(&text[start..at]));
                (start, run) = (at, 1);
            }
        }
        ids.extend(self.bpe.encode_ordinary(&text[start..]));
        ids
    }

    /// The longest added token that `rest` starts with: `(byte length, id)`.
    fn added_at(&self, rest: &str) -> Option<(usize, u32)> {
        let first = *rest.as_bytes().first()?;
        self.added_by_first_byte
            .get(&first)?
            .iter()
            .find(|(content, _)| rest.starts_with(content.as_str()))
            .map(|(content, id)| (content.len(), *id))
    }

    /// True for an added (special) token id such as `<|sep|>`.
    pub fn is_added(&self, id: u32) -> bool {
        self.added_by_id.contains_key(&id)
    }

    /// The raw bytes of one id (an added token's bytes are its text).
    pub fn token_bytes(&self, id: u32) -> Result<&[u8]> {
        if let Some(b) = self.rank_bytes.get(id as usize) {
            return Ok(b);
        }
        self.added_by_id.get(&id).map(|s| s.as_bytes()).ok_or(Error::TokenId { id, vocab_size: self.vocab_size })
    }

    /// Concatenated bytes of `ids` (may be invalid UTF-8 on its own).
    pub fn decode_bytes(&self, ids: &[u32]) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            out.extend_from_slice(self.token_bytes(id)?);
        }
        Ok(out)
    }

    /// Decodes to text, replacing invalid UTF-8 with U+FFFD.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.decode_bytes(ids)?).into_owned())
    }
}

fn group_by_first_byte(added: &[AddedToken]) -> HashMap<u8, Vec<(String, u32)>> {
    let mut groups: HashMap<u8, Vec<(String, u32)>> = HashMap::new();
    for t in added {
        if let Some(&b) = t.content.as_bytes().first() {
            groups.entry(b).or_default().push((t.content.clone(), t.id));
        }
    }
    for list in groups.values_mut() {
        // Longest first; equal lengths by id so the order is total.
        list.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
    }
    groups
}

/// Length of the UTF-8 sequence that starts with `lead` (1 for continuation bytes, which a
/// `&str` never starts with at a char boundary).
fn utf8_len(lead: u8) -> usize {
    match lead {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}
