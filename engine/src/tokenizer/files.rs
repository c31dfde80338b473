//! Strict readers for the released tokenizer files (spec §12.1).
//!
//! Owns: `tiktoken.model` (`<base64 bytes> <rank>` per line; ranks must be exactly
//! `0..n`, each once, each byte string once) and `tokenizer_config.json`
//! (`added_tokens_decoder` keyed by id, `bos_token`, `eos_token`, optional `chat_template`).
//! Must not: accept a gap or duplicate in the ranks, a byte without a rank of its own, or
//! an added token whose id or text collides with a rank.
//! Easy to break: tolerate `\r\n` line ends; keys are bytes even when they look like text.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::Value;

use crate::error::{Error, Result};

/// Largest `tiktoken.model` accepted (the real one is ~2.8 MB).
const MAX_RANKS_FILE_BYTES: u64 = 64 << 20;
/// Largest `tokenizer_config.json` accepted.
const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The BPE ranks: `bytes_of[rank]`.
pub struct Ranks {
    pub bytes_of: Vec<Vec<u8>>,
}

/// One added (special) token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedToken {
    pub id: u32,
    pub content: String,
}

/// What `tokenizer_config.json` provides.
pub struct TokenizerConfig {
    pub added: Vec<AddedToken>,
    pub bos_token: Option<String>,
    pub eos_token: Option<String>,
    pub chat_template: Option<String>,
}

fn fault(path: &Path, line: Option<usize>, reason: impl Into<String>) -> Error {
    Error::Tokenizer { path: path.to_path_buf(), line, reason: reason.into() }
}

fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(fault(path, None, "not a regular file"));
    }
    if meta.len() > cap {
        return Err(fault(path, None, format!("{} bytes exceeds the {cap}-byte cap", meta.len())));
    }
    std::fs::read(path).map_err(|e| Error::io(path, e))
}

/// Reads `tiktoken.model`.
pub fn read_ranks(path: &Path) -> Result<Ranks> {
    parse_ranks(&read_capped(path, MAX_RANKS_FILE_BYTES)?, path)
}

/// The checks of [`read_ranks`] on the file's bytes (`path` is named in errors).
pub fn parse_ranks(raw: &[u8], path: &Path) -> Result<Ranks> {
    let text = std::str::from_utf8(raw).map_err(|e| fault(path, None, format!("not UTF-8 ({e})")))?;
    let mut by_rank: Vec<Option<Vec<u8>>> = Vec::new();
    let mut seen: HashMap<Vec<u8>, usize> = HashMap::new();
    for (idx, line) in text.split('\n').enumerate() {
        let line_no = idx + 1;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let (b64, rank) =
            line.split_once(' ').ok_or_else(|| fault(path, Some(line_no), "expected `<base64> <rank>`"))?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| fault(path, Some(line_no), format!("bad base64 {b64:?}: {e}")))?;
        let rank: usize = rank
            .parse()
            .ok()
            .filter(|&r: &usize| r < u32::MAX as usize)
            .ok_or_else(|| fault(path, Some(line_no), format!("bad rank {rank:?}")))?;
        if bytes.is_empty() {
            return Err(fault(path, Some(line_no), "empty token"));
        }
        if let Some(first) = seen.insert(bytes.clone(), line_no) {
            return Err(fault(path, Some(line_no), format!("token bytes already given on line {first}")));
        }
        if rank >= by_rank.len() {
            if rank > 16 * (text.len() + 1) {
                return Err(fault(path, Some(line_no), format!("rank {rank} is implausibly large for the file")));
            }
            by_rank.resize(rank + 1, None);
        }
        if by_rank[rank].is_some() {
            return Err(fault(path, Some(line_no), format!("duplicate rank {rank}")));
        }
        by_rank[rank] = Some(bytes);
    }
    if by_rank.is_empty() {
        return Err(fault(path, None, "no ranks"));
    }
    let bytes_of = by_rank
        .into_iter()
        .enumerate()
        .map(|(r, b)| b.ok_or_else(|| fault(path, None, format!("ranks have a gap: rank {r} is missing"))))
        .collect::<Result<Vec<_>>>()?;
    // Byte-level BPE encodes any text only if every single byte has a rank; without one,
    // `tiktoken-rs` panics on text containing that byte (a fuzz finding).
    if let Some(byte) = (0..=255u8).find(|&b| !seen.contains_key(&[b][..])) {
        return Err(fault(path, None, format!("byte {byte:#04x} has no rank: every single byte must have one")));
    }
    Ok(Ranks { bytes_of })
}

/// Reads `tokenizer_config.json`; `ranks` is used to refuse colliding added tokens.
pub fn read_config(path: &Path, ranks: &Ranks) -> Result<TokenizerConfig> {
    parse_config(&read_capped(path, MAX_CONFIG_BYTES)?, path, ranks)
}

/// The checks of [`read_config`] on the file's bytes (`path` is named in errors).
pub fn parse_config(raw: &[u8], path: &Path, ranks: &Ranks) -> Result<TokenizerConfig> {
    let root = crate::json::parse_object(raw).map_err(|m| fault(path, None, m))?;
    let decoder = root
        .get("added_tokens_decoder")
        .and_then(Value::as_object)
        .ok_or_else(|| fault(path, None, "`added_tokens_decoder` (an object keyed by id) is missing"))?;
    let n_ranks = ranks.bytes_of.len() as u64;
    let rank_of: HashMap<&[u8], usize> = ranks.bytes_of.iter().enumerate().map(|(r, b)| (b.as_slice(), r)).collect();
    let mut added = Vec::with_capacity(decoder.len());
    let mut contents: HashMap<String, u32> = HashMap::new();
    for (key, entry) in decoder {
        // Only the canonical decimal form: "0600", "+600" and "600" must not all be id 600.
        let id: u32 = key
            .parse()
            .ok()
            .filter(|id: &u32| id.to_string() == *key)
            .ok_or_else(|| fault(path, None, format!("added_tokens_decoder key {key:?} is not a token id")))?;
        let content = entry
            .get("content")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .ok_or_else(|| fault(path, None, format!("added token {id}: `content` must be a non-empty string")))?;
        if u64::from(id) < n_ranks {
            return Err(fault(
                path,
                None,
                format!("added token {content:?} has id {id}, which is a BPE rank (0..{n_ranks})"),
            ));
        }
        if let Some(rank) = rank_of.get(content.as_bytes()) {
            return Err(fault(
                path,
                None,
                format!("added token {content:?} (id {id}) has the same bytes as rank {rank}"),
            ));
        }
        if let Some(other) = contents.insert(content.to_string(), id) {
            return Err(fault(path, None, format!("added token {content:?} is given twice (ids {other} and {id})")));
        }
        added.push(AddedToken { id, content: content.to_string() });
    }
    added.sort_by_key(|t| t.id);
    let name = |key: &str| -> Result<Option<String>> {
        match root.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            // Hugging Face also writes {"content": "..."} objects.
            Some(Value::Object(o)) => Ok(o.get("content").and_then(Value::as_str).map(str::to_string)),
            Some(_) => Err(fault(path, None, format!("`{key}` must be a string"))),
        }
    };
    let chat_template = match root.get("chat_template") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(fault(path, None, "`chat_template` must be a string")),
    };
    Ok(TokenizerConfig { added, bos_token: name("bos_token")?, eos_token: name("eos_token")?, chat_template })
}

/// Paths of the two files inside a model folder.
pub fn paths(model_dir: &Path) -> (PathBuf, PathBuf) {
    (model_dir.join("tiktoken.model"), model_dir.join("tokenizer_config.json"))
}
