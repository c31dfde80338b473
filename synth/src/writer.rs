//! Streaming the planned shards to disk: generate a chunk, hand it to a writer thread,
//! generate the next one meanwhile.
//!
//! Owns: the output folder rule (absent or empty), temporary names (`.NAME.partial`,
//! hidden and without the `.safetensors` suffix, so a half-written folder never shows a
//! loadable shard) renamed when complete, the byte stream of a shard (u64 length, padded
//! header, tensors in plan order), progress, and the small files (config, index,
//! tokenizer).
//! Must not: hold more than a few chunks in memory (k3-mid is ~9 GB on a 24 GiB machine),
//! or write a byte that the plan's header does not account for.
//! Easy to break: progress counts bytes the writer thread has finished writing (buffers
//! come back through the recycle channel), not bytes generated; no fsync is done, so
//! "written" means handed to the OS.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::Instant;

use super::fill::{fill_chunk, BLOCK_BYTES};
use super::plan::ShardPlan;
use super::rng::tensor_seed;
use super::SynthProgress;
use k3_engine::{Error, Result};

/// Bytes generated per chunk (a whole number of blocks).
const CHUNK_BYTES: usize = 8 * BLOCK_BYTES;
/// Chunk buffers in circulation (one being filled, the rest queued or being written).
const POOL: usize = 3;

/// Refuses an existing non-empty folder (or a file); creates the folder if absent.
pub(crate) fn prepare_out_dir(dir: &Path) -> Result<()> {
    match fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => {
            Err(Error::OutputFolder { path: dir.to_path_buf(), reason: "output path exists and is not a folder" })
        }
        Ok(_) => {
            let mut entries = fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
            if entries.next().is_some() {
                return Err(Error::OutputFolder {
                    path: dir.to_path_buf(),
                    reason: "output folder exists and is not empty",
                });
            }
            Ok(())
        }
        Err(_) => fs::create_dir_all(dir).map_err(|e| Error::io(dir, e)),
    }
}

/// Writes `bytes` to `dir/name` through a temporary name.
pub(crate) fn write_small_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let tmp = dir.join(format!(".{name}.partial"));
    fs::write(&tmp, bytes).map_err(|e| Error::io(&tmp, e))?;
    let dest = dir.join(name);
    fs::rename(&tmp, &dest).map_err(|e| Error::io(&dest, e))
}

/// Best effort after a failure: deletes the `.NAME.partial` files left in `dir`.
pub(crate) fn remove_partials(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') && name.ends_with(".partial") {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// What the generator hands to the writer thread.
enum Piece {
    Open { tmp: PathBuf },
    Bytes(Vec<u8>),
    Close { tmp: PathBuf, dest: PathBuf },
}

/// Writes every shard of `shards` into `dir`, reporting progress over `total` bytes.
pub(crate) fn write_shards(
    dir: &Path,
    shards: &[ShardPlan],
    seed: u64,
    total: u64,
    progress: &mut dyn FnMut(SynthProgress),
) -> Result<()> {
    let start = Instant::now();
    let (piece_tx, piece_rx) = sync_channel::<Piece>(POOL + 2);
    let (recycle_tx, recycle_rx) = sync_channel::<Vec<u8>>(POOL + shards.len() + 2);
    for _ in 0..POOL {
        let _ = recycle_tx.send(Vec::with_capacity(CHUNK_BYTES));
    }
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || write_pieces(piece_rx, recycle_tx));
        let mut gen = Generator { dir, seed, tx: piece_tx, recycle: recycle_rx, written: 0, total, start, progress };
        let generated = shards.iter().enumerate().try_for_each(|(i, shard)| gen.shard(i, shards.len(), shard));
        let Generator { tx, recycle, mut written, progress, .. } = gen;
        drop(tx);
        let wrote = writer.join().unwrap_or_else(|_| Err(Error::io(dir, std::io::Error::other("writer panicked"))));
        // The writer failing makes the generator's send fail: report the writer's error.
        wrote.and(generated)?;
        while let Ok(buf) = recycle.try_recv() {
            written += buf.len() as u64;
        }
        let shard = shards.len();
        progress(SynthProgress {
            bytes_written: written,
            total_bytes: total,
            shard,
            n_shards: shard,
            elapsed: start.elapsed(),
        });
        Ok(())
    })
}

/// The writer thread: writes pieces in order and returns every byte buffer.
fn write_pieces(rx: Receiver<Piece>, recycle: SyncSender<Vec<u8>>) -> Result<()> {
    let mut file: Option<(File, PathBuf)> = None;
    for piece in rx {
        match piece {
            Piece::Open { tmp } => file = Some((File::create(&tmp).map_err(|e| Error::io(&tmp, e))?, tmp)),
            Piece::Bytes(buf) => {
                if let Some((f, path)) = file.as_mut() {
                    f.write_all(&buf).map_err(|e| Error::io(path.as_path(), e))?;
                }
                let _ = recycle.send(buf);
            }
            Piece::Close { tmp, dest } => {
                drop(file.take());
                fs::rename(&tmp, &dest).map_err(|e| Error::io(&dest, e))?;
            }
        }
    }
    Ok(())
}

/// The generating side: fills recycled buffers and sends them on.
struct Generator<'a, 'p> {
    dir: &'a Path,
    seed: u64,
    tx: SyncSender<Piece>,
    recycle: Receiver<Vec<u8>>,
    written: u64,
    total: u64,
    start: Instant,
    progress: &'p mut dyn FnMut(SynthProgress),
}

impl Generator<'_, '_> {
    fn send(&self, piece: Piece) -> Result<()> {
        // A closed channel means the writer stopped on an error, which `write_shards` reports.
        self.tx.send(piece).map_err(|_| Error::io(self.dir, std::io::Error::other("writer stopped")))
    }

    /// A written buffer back from the writer, counted as progress; `None` if it stopped.
    fn next_buffer(&mut self, shard: usize, n_shards: usize) -> Result<Vec<u8>> {
        loop {
            let buf = self.recycle.recv().map_err(|_| Error::io(self.dir, std::io::Error::other("writer stopped")))?;
            self.written += buf.len() as u64;
            (self.progress)(SynthProgress {
                bytes_written: self.written,
                total_bytes: self.total,
                shard,
                n_shards,
                elapsed: self.start.elapsed(),
            });
            if buf.capacity() >= CHUNK_BYTES {
                return Ok(buf);
            }
        }
    }

    fn shard(&mut self, idx: usize, n_shards: usize, shard: &ShardPlan) -> Result<()> {
        let tmp = self.dir.join(format!(".{}.partial", shard.file_name));
        self.send(Piece::Open { tmp: tmp.clone() })?;
        let mut head = Vec::with_capacity(8 + shard.header.len());
        head.extend_from_slice(&(shard.header.len() as u64).to_le_bytes());
        head.extend_from_slice(&shard.header);
        self.send(Piece::Bytes(head))?;
        for t in &shard.tensors {
            let seed = tensor_seed(self.seed, &t.name);
            let mut offset = 0u64;
            while offset < t.nbytes() {
                let len = (t.nbytes() - offset).min(CHUNK_BYTES as u64) as usize;
                let mut buf = self.next_buffer(idx, n_shards)?;
                buf.resize(len, 0);
                fill_chunk(t.init, t.dtype, seed, offset, &mut buf);
                self.send(Piece::Bytes(buf))?;
                offset += len as u64;
            }
        }
        self.send(Piece::Close { tmp, dest: self.dir.join(&shard.file_name) })
    }
}
