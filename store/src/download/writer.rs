//! Chunks made durable off the async threads, one behind the network and in groups: while
//! chunk k is written on one blocking thread and hashed (SHA-256 and CRC-32) on another,
//! chunk k+1 is being received; every `sync_bytes` the written chunks are made durable with
//! one `fdatasync` and journaled with one `fsync` (riding along with the next chunk's
//! write), and [`ChunkWriter::settle`] makes durable whatever is left.
//!
//! Owns: [`ChunkWriter`]. Must not: journal a chunk before its bytes are synced (the
//! journal is never ahead of the data), start a chunk before the previous one landed (the
//! hash and the journal follow the file's order), or hide a failed write or sync (the error
//! is returned by the next call, the file is cut back to its durable end and the hash
//! rewound to it, and the bytes after it are dropped by the caller).

use std::sync::Arc;

use tokio::task::JoinHandle;

use super::chunk_buf::ChunkBuf;
use super::partial::{write_chunk, ChunkHasher, HashedChunk, PartialFile};

/// What the writing thread hands back: the partial when a group's commit rode along, and
/// how the write (and that commit) went.
struct Written {
    part: Option<PartialFile>,
    result: std::io::Result<()>,
}

/// The chunk in flight.
struct InFlight {
    write: JoinHandle<Written>,
    hash: JoinHandle<(ChunkHasher, HashedChunk)>,
    buf: Arc<ChunkBuf>,
}

pub struct ChunkWriter {
    /// `None` while a commit rides along with the write in flight.
    part: Option<PartialFile>,
    /// `None` while the chunk in flight is hashed.
    hasher: Option<ChunkHasher>,
    /// Written and hashed, not yet durable (journaled by the next commit).
    unsynced: Vec<HashedChunk>,
    in_flight: Option<InFlight>,
    spare: Option<ChunkBuf>,
    sync_bytes: u64,
    /// The end of the bytes written (durable or not), not counting the chunk in flight.
    written: u64,
    in_flight_len: u64,
}

fn task_failed(e: tokio::task::JoinError) -> std::io::Error {
    std::io::Error::other(format!("the write task failed: {e}"))
}

fn lost() -> std::io::Error {
    std::io::Error::other("the partial file was lost")
}

impl ChunkWriter {
    /// A writer after `part`'s durable end; the chunks it is given are made durable every
    /// `sync_bytes` (at least every chunk).
    pub fn new(part: PartialFile, sync_bytes: u64) -> ChunkWriter {
        let (hasher, written) = (part.hasher(), part.durable_end());
        ChunkWriter {
            part: Some(part),
            hasher: Some(hasher),
            unsynced: Vec::new(),
            in_flight: None,
            spare: None,
            sync_bytes,
            written,
            in_flight_len: 0,
        }
    }

    /// Bytes written (durable or not) plus the chunk in flight: where the next byte goes.
    pub fn end_with_in_flight(&self) -> u64 {
        self.written + self.in_flight_len
    }

    /// Bytes durable and journaled (0 while a commit rides along with the chunk in flight).
    pub fn durable_end(&self) -> u64 {
        self.part.as_ref().map_or(0, |p| p.durable_end())
    }

    fn unsynced_bytes(&self) -> u64 {
        self.unsynced.iter().map(|c| c.record.end - c.record.start).sum()
    }

    /// Waits for the chunk in flight; on success it joins the unsynced group.
    async fn land(&mut self) -> std::io::Result<()> {
        let Some(InFlight { write, hash, buf }) = self.in_flight.take() else { return Ok(()) };
        let len = std::mem::take(&mut self.in_flight_len);
        let (written, hashed) = tokio::join!(write, hash);
        let (written, (hasher, chunk)) = (written.map_err(task_failed)?, hashed.map_err(task_failed)?);
        if let Some(part) = written.part {
            self.part = Some(part);
        }
        self.spare = Arc::try_unwrap(buf).ok();
        match written.result {
            Ok(()) => {
                self.hasher = Some(hasher);
                self.unsynced.push(chunk);
                self.written += len;
                Ok(())
            }
            Err(e) => {
                // The chunks written before the failed one (a full drive) are kept.
                self.keep_group().await;
                self.rewind();
                Err(e)
            }
        }
    }

    /// Makes the unsynced group durable if it can (after a failed write past it); a commit
    /// that fails cuts the file back itself.
    async fn keep_group(&mut self) {
        if self.unsynced.is_empty() {
            return;
        }
        let Some(mut part) = self.part.take() else { return };
        let group = std::mem::take(&mut self.unsynced);
        // A task that cannot run leaves the partial lost: the next call says so.
        self.part = tokio::task::spawn_blocking(move || {
            let _ = part.commit(&group);
            part
        })
        .await
        .ok();
    }

    /// Back to the durable end after a failure: the file cut, the hash and the group
    /// dropped.
    fn rewind(&mut self) {
        self.unsynced.clear();
        if let Some(part) = &self.part {
            let _ = part.roll_back();
            self.hasher = Some(part.hasher());
            self.written = part.durable_end();
        }
    }

    /// Waits for the chunk in flight and makes every written chunk durable; the error of
    /// either, if one failed.
    pub async fn settle(&mut self) -> std::io::Result<()> {
        self.land().await?;
        if self.unsynced.is_empty() {
            return Ok(());
        }
        let mut part = self.part.take().ok_or_else(lost)?;
        let group = std::mem::take(&mut self.unsynced);
        let (part, result) = tokio::task::spawn_blocking(move || {
            let result = part.commit(&group);
            (part, result)
        })
        .await
        .map_err(task_failed)?;
        self.part = Some(part);
        if let Err(e) = result {
            self.rewind();
            return Err(e);
        }
        Ok(())
    }

    /// Starts writing `buf` after the previous chunk (and hashing it beside), with the
    /// group's commit when it is due; returns an empty buffer to fill next (the caller sets
    /// its limit: [`ChunkBuf::reset`]).
    pub async fn write(&mut self, buf: ChunkBuf) -> std::io::Result<ChunkBuf> {
        self.land().await?;
        let part = self.part.as_ref().ok_or_else(lost)?;
        let data = part.data();
        let commit = if self.unsynced_bytes() >= self.sync_bytes {
            Some((self.part.take().ok_or_else(lost)?, std::mem::take(&mut self.unsynced)))
        } else {
            None
        };
        let mut hasher = self.hasher.take().ok_or_else(lost)?;
        let (at, len) = (self.written, buf.bytes().len() as u64);
        let buf = Arc::new(buf);
        let (to_write, to_hash) = (buf.clone(), buf.clone());
        let write = tokio::task::spawn_blocking(move || {
            let wrote = write_chunk(&*data, to_write.bytes(), at);
            match commit {
                // The sync covers the new chunk too; only the group is journaled.
                Some((mut part, group)) => {
                    // A failed write still keeps the group written before it.
                    let committed = part.commit(&group);
                    Written { part: Some(part), result: wrote.and(committed) }
                }
                None => Written { part: None, result: wrote },
            }
        });
        let hash = tokio::task::spawn_blocking(move || {
            let chunk = hasher.hash(to_hash.bytes());
            (hasher, chunk)
        });
        self.in_flight = Some(InFlight { write, hash, buf });
        self.in_flight_len = len;
        Ok(self.spare.take().unwrap_or_else(|| ChunkBuf::new(0)))
    }

    /// Starts the file again from byte 0 (the server ignored a Range request): settled
    /// first, so the journal is reset after every write finished.
    pub async fn restart(&mut self) -> std::io::Result<Option<&mut PartialFile>> {
        self.settle().await?;
        self.written = 0;
        Ok(self.part.as_mut())
    }

    /// Points the hash at the partial's durable end again (after [`PartialFile::restart`]).
    pub fn restarted(&mut self) {
        if let Some(part) = &self.part {
            self.hasher = Some(part.hasher());
            self.written = part.durable_end();
        }
    }

    /// The partial file once every write has finished and is durable.
    pub async fn into_part(mut self) -> std::io::Result<PartialFile> {
        self.settle().await?;
        self.part.take().ok_or_else(lost)
    }
}
