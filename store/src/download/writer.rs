//! Chunks made durable off the async threads, one behind the network: while chunk k is
//! written, synced and journaled on a blocking thread, chunk k+1 is being received.
//!
//! Owns: [`ChunkWriter`]. Must not: start a write before the previous one finished (the
//! journal's order is the file's order), or hide a failed write (the error is returned by
//! the next call, and the bytes after it are dropped by the caller).

use tokio::task::JoinHandle;

use super::partial::PartialFile;

type Pending = JoinHandle<(PartialFile, Vec<u8>, std::io::Result<()>)>;

pub struct ChunkWriter {
    part: Option<PartialFile>,
    pending: Option<Pending>,
    spare: Vec<u8>,
    chunk_bytes: usize,
    in_flight: u64,
}

impl ChunkWriter {
    pub fn new(part: PartialFile, chunk_bytes: usize) -> ChunkWriter {
        ChunkWriter { part: Some(part), pending: None, spare: Vec::new(), chunk_bytes, in_flight: 0 }
    }

    /// Bytes durable plus the chunk being written.
    pub fn end_with_in_flight(&self) -> u64 {
        self.part.as_ref().map_or(0, |p| p.durable_end()) + self.in_flight
    }

    /// Waits for the write in flight; its error, if it failed.
    pub async fn settle(&mut self) -> std::io::Result<()> {
        let Some(handle) = self.pending.take() else { return Ok(()) };
        self.in_flight = 0;
        let (part, mut buf, result) =
            handle.await.map_err(|e| std::io::Error::other(format!("the write task failed: {e}")))?;
        self.part = Some(part);
        buf.clear();
        self.spare = buf;
        result
    }

    /// Starts making `buf` durable after the previous chunk; returns an empty buffer to
    /// fill next.
    pub async fn write(&mut self, buf: Vec<u8>) -> std::io::Result<Vec<u8>> {
        self.settle().await?;
        let mut part = self.part.take().ok_or_else(|| std::io::Error::other("the partial file was lost"))?;
        self.in_flight = buf.len() as u64;
        self.pending = Some(tokio::task::spawn_blocking(move || {
            let result = part.append(&buf);
            (part, buf, result)
        }));
        let mut next = std::mem::take(&mut self.spare);
        next.reserve(self.chunk_bytes);
        Ok(next)
    }

    /// The partial file once every write has finished.
    pub async fn into_part(mut self) -> std::io::Result<PartialFile> {
        self.settle().await?;
        self.part.take().ok_or_else(|| std::io::Error::other("the partial file was lost"))
    }

    pub fn part_mut(&mut self) -> Option<&mut PartialFile> {
        self.part.as_mut()
    }
}
