//! Conversations that resume without re-prefill: a session's tokens and carried state
//! (KDA states, conv histories, MLA caches, positions) saved to a file when a reply ends,
//! tied to the checkpoint that made them, and restored when the conversation reopens, so
//! its next turn prefills only the new message.
//!
//! Owns: the `.k3state` format — the magic `K3STATE\x01`, a little-endian u64 header
//! length, a JSON header (format version, the checkpoint's identity, the positions held,
//! the session's tokens, the caller's note), the carried numbers as f32 little-endian in
//! layer order (`SequenceState::write_carried`), then a CRC-32 of every byte before it —
//! [`CheckpointIdentity`] (config.json's CRC-32 and every shard's name, size and
//! modification time), and writing it atomically (a `.partial` file, fsync, rename, fsync
//! of the folder) — through a symbolic link to the file it names, never over the link.
//! A state file is a regular file or absent ([`check_state_path`]): a device, a FIFO, a
//! folder or a dangling link is refused by name before anything is read or written (probe
//! finding: `--resume /dev/null` replaced the device node; a FIFO hung; a link to
//! `/dev/zero` read until memory ran out).
//! Must not: restore a file that does not match: another checkpoint (or a changed shard),
//! a truncated or corrupted file, more positions than the context reserves, or a layout
//! other than this config's. Each is [`Error::StateFile`] naming the file and the reason,
//! and the caller falls back to a full prefill; nothing half-written is ever read.
//! Easy to break: the state holds `n_positions` of the session's tokens; the tokens may
//! hold one more (the last generated token is fed on the next call).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::model::SequenceState;

/// The file's first bytes.
pub const MAGIC: &[u8; 8] = b"K3STATE\x01";
/// The header's format version: 2 carries each MLA layer's latent cache (`[latent |
/// k_rope]` per position); format 1 carried the expanded `k_nope | v` of every head.
pub const FORMAT: u32 = 2;
/// The largest header read (tokens of a long context fit many times over).
const MAX_HEADER: u64 = 64 << 20;

/// What a saved state is tied to: the checkpoint's config and shards as they were.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointIdentity {
    pub config_crc32: u32,
    /// `(file name, bytes, modification time in ns since the epoch)` of every shard.
    pub shards: Vec<(String, u64, u128)>,
    /// Each shard's SHA-256 where the checkpoint's own records give one (the Hugging Face
    /// cache's blob name, the store's manifest): `k3_io::provenance::recorded_sha256`.
    /// Absent in states saved before 2026-12-07.
    #[serde(default)]
    pub sha256: Vec<Option<String>>,
}

impl CheckpointIdentity {
    /// The identity of the checkpoint in `model_dir` whose shards are `shards`.
    pub fn of(model_dir: &Path, shards: &[PathBuf]) -> Result<Self> {
        let config = model_dir.join("config.json");
        let bytes = std::fs::read(&config).map_err(|e| Error::io(&config, e))?;
        let mut list = Vec::with_capacity(shards.len());
        for p in shards {
            let meta = std::fs::metadata(p).map_err(|e| Error::io(p, e))?;
            let mtime = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            list.push((name, meta.len(), mtime.map_or(0, |d| d.as_nanos())));
        }
        let sha256 = shards.iter().map(|p| k3_io::provenance::recorded_sha256(model_dir, p)).collect();
        Ok(CheckpointIdentity { config_crc32: crc32fast::hash(&bytes), shards: list, sha256 })
    }

    /// Why `saved` is not this checkpoint, in words (`None`: it is). A shard with a
    /// recorded SHA-256 now and then is judged by it alone; others by name, size and time.
    fn mismatch(&self, saved: &CheckpointIdentity) -> Option<String> {
        if self.config_crc32 != saved.config_crc32 {
            return Some("it was saved with another config.json".into());
        }
        if self.shards.len() != saved.shards.len() {
            return Some(format!(
                "it was saved with {} shards, the checkpoint has {}",
                saved.shards.len(),
                self.shards.len()
            ));
        }
        let hash = |id: &CheckpointIdentity, i: usize| id.sha256.get(i).cloned().flatten();
        (0..self.shards.len()).find_map(|i| {
            let (now, then) = (&self.shards[i], &saved.shards[i]);
            match (hash(self, i), hash(saved, i)) {
                (Some(a), Some(b)) if a != b => Some(format!(
                    "shard {} is another file than when it was saved (SHA-256 {} then, {} now)",
                    now.0,
                    short(&b),
                    short(&a)
                )),
                (Some(_), Some(_)) if now.0 != then.0 => Some(format!("shard {} changed since it was saved", now.0)),
                (Some(_), Some(_)) => None,
                _ if now != then => Some(format!("shard {} changed since it was saved", now.0)),
                _ => None,
            }
        })
    }
}

/// The first 12 characters of a hash, enough to tell two apart in a message.
fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// The JSON header.
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    format: u32,
    checkpoint: CheckpointIdentity,
    n_positions: usize,
    tokens: Vec<u32>,
    #[serde(default)]
    note: Value,
}

/// A state read back: the session's tokens, its carried state and the caller's note.
pub struct Restored {
    pub tokens: Vec<u32>,
    pub state: SequenceState,
    pub note: Value,
}

fn state_error(path: &Path, reason: impl Into<String>) -> Error {
    Error::StateFile { path: path.to_path_buf(), reason: reason.into() }
}

/// Writes `tokens` and `state` (which holds a prefix of them) to `path` atomically, with
/// `note` (the caller's, e.g. the conversation it belongs to).
pub fn save(
    path: &Path,
    identity: &CheckpointIdentity,
    tokens: &[u32],
    state: &SequenceState,
    note: Value,
) -> Result<()> {
    let header = Header {
        format: FORMAT,
        checkpoint: identity.clone(),
        n_positions: state.n_positions(),
        tokens: tokens.to_vec(),
        note,
    };
    let json = serde_json::to_vec(&header).map_err(|e| state_error(path, e.to_string()))?;
    let mut bytes = Vec::with_capacity(16 + json.len() + 4);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&(json.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&json);
    state.write_carried(&mut bytes);
    let crc = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    write_atomically(path, &bytes)
}

/// Refuses a state file path that is neither absent nor a regular file (following symbolic
/// links): a device, a FIFO, a socket, a folder or a dangling link, named with what it is.
pub fn check_state_path(path: &Path) -> Result<()> {
    state_target(path).map(|_| ())
}

/// The file a state path stands for: the path itself, or the regular file its symbolic
/// links lead to; refused when it is anything but a regular file or absent.
fn state_target(path: &Path) -> Result<PathBuf> {
    let link = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(path.to_path_buf()),
        Err(e) => return Err(Error::io(path, e)),
    };
    let target = if link.file_type().is_symlink() {
        std::fs::canonicalize(path).map_err(|_| state_error(path, "a symbolic link to nothing"))?
    } else {
        path.to_path_buf()
    };
    let meta = std::fs::metadata(&target).map_err(|e| Error::io(&target, e))?;
    if meta.is_file() {
        return Ok(target);
    }
    let what = if meta.is_dir() { "a folder" } else { "not a regular file (a device, FIFO or socket)" };
    Err(state_error(path, format!("{what}; a conversation's state is kept in a regular file")))
}

/// The whole state file at `path`, a regular file (see [`state_target`]).
fn read_state(path: &Path) -> Result<Vec<u8>> {
    let target = state_target(path)?;
    std::fs::read(&target).map_err(|e| Error::io(path, e))
}

/// `bytes` to `path` (to the file its links lead to) through a fresh `.partial` beside it:
/// written, fsynced, renamed, folder fsynced.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let path = &state_target(path)?;
    let partial = path.with_extension("partial");
    // A stale partial (or a link planted there) goes; the new one is created, never opened
    // through whatever was at that name.
    match std::fs::remove_file(&partial) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(&partial, e)),
    }
    let mut f =
        std::fs::OpenOptions::new().write(true).create_new(true).open(&partial).map_err(|e| Error::io(&partial, e))?;
    f.write_all(bytes).and_then(|()| f.sync_all()).map_err(|e| Error::io(&partial, e))?;
    std::fs::rename(&partial, path).map_err(|e| Error::io(path, e))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::io::os::sync_dir(dir).map_err(|e| Error::io(dir, e))?;
    }
    Ok(())
}

/// Reads the state at `path` for the checkpoint `identity` of `cfg`, into a state with
/// room for `context_length` positions; every mismatch is [`Error::StateFile`].
pub fn load(path: &Path, identity: &CheckpointIdentity, cfg: &ModelConfig, context_length: usize) -> Result<Restored> {
    let bytes = read_state(path)?;
    let (header, carried) = parse(path, &bytes)?;
    check_format(path, header.format)?;
    if let Some(reason) = identity.mismatch(&header.checkpoint) {
        return Err(state_error(path, reason));
    }
    let n = header.n_positions;
    if n > header.tokens.len() || header.tokens.len() > n + 1 {
        return Err(state_error(path, format!("{n} positions for {} tokens", header.tokens.len())));
    }
    if header.tokens.iter().any(|&t| t as usize >= cfg.vocab_size) {
        return Err(state_error(path, "a token id outside the vocabulary"));
    }
    if header.tokens.len() > context_length {
        return Err(state_error(
            path,
            format!("{} tokens, more than the context length {context_length}", header.tokens.len()),
        ));
    }
    let mut state = SequenceState::new(cfg, context_length);
    if !state.read_carried(cfg, n, carried, context_length) {
        let want = SequenceState::carried_floats(cfg, n) * 4;
        return Err(state_error(
            path,
            format!("{} bytes of state where {n} positions of this model take {want}", carried.len()),
        ));
    }
    Ok(Restored { tokens: header.tokens, state, note: header.note })
}

/// The caller's note of the state file at `path` (its magic, CRC and format checked, not
/// its checkpoint: reading what a conversation held needs no model).
pub fn read_note(path: &Path) -> Result<Value> {
    let bytes = read_state(path)?;
    let (header, _) = parse(path, &bytes)?;
    check_format(path, header.format)?;
    Ok(header.note)
}

/// The caller's note of a state file whose CRC or carried numbers no longer hold (a damaged
/// file): its header read alone, so what a conversation said is recoverable apart from the
/// numbers (probe finding: a one-bit flip lost six saved messages).
pub fn recover_note(path: &Path) -> Result<Value> {
    let bytes = read_state(path)?;
    if bytes.len() < MAGIC.len() + 8 || &bytes[..MAGIC.len()] != MAGIC {
        return Err(state_error(path, "not a k3 state file (no K3STATE magic)"));
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&bytes[8..16]);
    let header_len = u64::from_le_bytes(len);
    let json = usize::try_from(header_len)
        .ok()
        .filter(|&n| header_len <= MAX_HEADER && n <= bytes.len() - 16)
        .map(|n| &bytes[16..16 + n])
        .ok_or_else(|| state_error(path, format!("a header of {header_len} bytes")))?;
    let header: Header = serde_json::from_slice(json).map_err(|e| state_error(path, format!("header: {e}")))?;
    Ok(header.note)
}

/// Refuses every format but [`FORMAT`], naming what the file holds.
fn check_format(path: &Path, format: u32) -> Result<()> {
    match format {
        FORMAT => Ok(()),
        1 => Err(state_error(
            path,
            format!(
                "format 1 holds the expanded MLA cache of earlier builds; this build reads format {FORMAT} \
                 (the latent cache), so the conversation is prefilled again"
            ),
        )),
        other => Err(state_error(path, format!("format {other} (this build reads {FORMAT})"))),
    }
}

/// The header and the carried bytes of a whole file, its magic and CRC checked.
fn parse<'a>(path: &Path, bytes: &'a [u8]) -> Result<(Header, &'a [u8])> {
    if bytes.len() < MAGIC.len() + 8 + 4 || &bytes[..MAGIC.len()] != MAGIC {
        return Err(state_error(path, "not a k3 state file (no K3STATE magic)"));
    }
    let (body, trailer) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    if crc32fast::hash(body) != stored {
        return Err(state_error(path, "its CRC-32 does not match: truncated or corrupted"));
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&body[8..16]);
    let header_len = u64::from_le_bytes(len);
    if header_len > MAX_HEADER || header_len as usize > body.len() - 16 {
        return Err(state_error(path, format!("a header of {header_len} bytes")));
    }
    let (json, carried) = body[16..].split_at(header_len as usize);
    let header: Header = serde_json::from_slice(json).map_err(|e| state_error(path, format!("header: {e}")))?;
    Ok((header, carried))
}
