//! The vocabulary-sized tensors at both ends of the model — the embedding table and the
//! output head — held in RAM, or read from their shard when used, as the memory plan's
//! `VocabPlacement` says (spec §4.1, §4.7).
//!
//! Owns: [`Embedding`] (held: the whole table; read: each row a token needs read from the
//! shard with O_DIRECT and kept in a cache of `k3_plan::EMBEDDING_CACHE_ROWS` rows, least
//! recently used out first) and [`OutputHead`] (held: the whole matrix; read: chunks of
//! `k3_plan::vocab::head_chunk_rows` whole rows read into two reused buffers, the next
//! chunk read on its own thread while the current one is multiplied).
//! Must not: change a number: a logit is one head row's dot product under the FP contract
//! whichever chunk holds the row, and an embedding row is the same bytes widened the same
//! way. Nor hold more than the plan counted ([`k3_plan::vocab_bytes`]).
//! Easy to break: logits are laid out `[token][vocab]`, a chunk's products
//! `[token][chunk rows]`; a chunk's rows are whole rows aligned for their dtype inside the
//! read window (a misaligned tensor offset costs a copy, never a wrong value).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::format::{Dtype, TensorIndex, TensorInfo};
use crate::io::{Blob, BlobPool, ByteView, DirectFile};
use crate::model::matrix::{Matrix, MatrixData};

/// A `[rows, cols]` BF16 or F32 tensor read in row ranges from its shard.
pub(crate) struct TensorRows {
    file: DirectFile,
    info: TensorInfo,
    rows: usize,
    cols: usize,
    /// Bytes read so far, summed with the engine's other counters.
    bytes_read: Arc<AtomicU64>,
}

impl TensorRows {
    /// The tensor `info` of `index` (already validated as a `[rows, cols]` float matrix);
    /// its reads are added to `bytes_read`.
    pub fn open(
        index: &TensorIndex,
        info: &TensorInfo,
        (rows, cols): (usize, usize),
        bytes_read: Arc<AtomicU64>,
    ) -> Result<TensorRows> {
        let path =
            index.shard_paths().get(info.shard_idx).ok_or_else(|| Error::MissingTensor { name: info.name.clone() })?;
        Ok(TensorRows { file: DirectFile::open(path)?, info: info.clone(), rows, cols, bytes_read })
    }

    fn row_bytes(&self) -> usize {
        self.cols * self.info.dtype.size_bytes() as usize
    }

    /// Bytes of a buffer able to hold the read window of `n` rows.
    fn window_bytes(&self, n: usize) -> usize {
        (n * self.row_bytes()).div_ceil(4096) * 4096 + 4096
    }

    /// Rows `first..first + n` read into `blob`, as a matrix whose views keep `blob`.
    fn read(&self, first: usize, n: usize, mut blob: Blob) -> Result<Matrix> {
        let len = n * self.row_bytes();
        let offset = self.info.offset + (first * self.row_bytes()) as u64;
        let start = self.file.read_window_into(&mut blob, offset, len)?;
        self.bytes_read.fetch_add(len as u64, Ordering::Relaxed);
        let view = ByteView::new(Arc::new(blob), start, len)
            .ok_or_else(|| Error::MissingTensor { name: format!("{} rows {first}..{}", self.info.name, first + n) })?;
        let data = match self.info.dtype {
            Dtype::BF16 => MatrixData::Bf16(view.aligned_for::<u16>()),
            _ => MatrixData::F32(view.aligned_for::<f32>()),
        };
        Ok(Matrix::new(n, self.cols, data))
    }
}

/// The embedding table: whole in RAM, or rows read when a token needs them.
pub enum Embedding {
    Held(Matrix),
    Read(EmbeddingReader),
}

impl Embedding {
    /// Row `id` widened to f32 into `out` (`id < vocab` was checked by the caller).
    pub fn row_f32(&self, id: usize, out: &mut [f32]) -> Result<()> {
        match self {
            Embedding::Held(m) => {
                m.row_f32(id, out);
                Ok(())
            }
            Embedding::Read(r) => r.row_f32(id, out),
        }
    }
}

/// Embedding rows read from the shard, the last `capacity` kept widened.
pub struct EmbeddingReader {
    rows: TensorRows,
    capacity: usize,
    cache: Mutex<RowCache>,
}

/// Rows kept, by token id, with the tick each was last used at.
#[derive(Default)]
struct RowCache {
    rows: HashMap<usize, (Vec<f32>, u64)>,
    tick: u64,
}

impl EmbeddingReader {
    pub(crate) fn new(rows: TensorRows, capacity: usize) -> EmbeddingReader {
        EmbeddingReader { rows, capacity: capacity.max(1), cache: Mutex::new(RowCache::default()) }
    }

    fn row_f32(&self, id: usize, out: &mut [f32]) -> Result<()> {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.tick += 1;
        let tick = cache.tick;
        if let Some((row, used)) = cache.rows.get_mut(&id) {
            *used = tick;
            out.copy_from_slice(row);
            return Ok(());
        }
        let blob = Blob::zeroed(self.rows.window_bytes(1));
        self.rows.read(id, 1, blob)?.row_f32(0, out);
        if cache.rows.len() >= self.capacity {
            let oldest = cache.rows.iter().min_by_key(|(_, (_, used))| *used).map(|(&k, _)| k);
            oldest.map(|k| cache.rows.remove(&k));
        }
        cache.rows.insert(id, (out.to_vec(), tick));
        Ok(())
    }
}

/// The output head: whole in RAM, or read in chunks of rows every time it is used.
pub enum OutputHead {
    Held(Matrix),
    Read(HeadReader),
}

impl OutputHead {
    /// `logits[t] = head · xs[t]` for every token of `xs` (`[n][E]`), `logits` `[n][vocab]`.
    pub fn logits(&self, xs: &[f32], logits: &mut [f32]) -> Result<()> {
        match self {
            OutputHead::Held(m) => {
                m.matmul(xs, logits);
                Ok(())
            }
            OutputHead::Read(r) => r.logits(xs, logits),
        }
    }
}

/// The head read from its shard in chunks of whole rows, two buffers reused.
pub struct HeadReader {
    rows: TensorRows,
    chunk_rows: usize,
    buffers: BlobPool,
}

impl HeadReader {
    pub(crate) fn new(rows: TensorRows, chunk_rows: usize) -> HeadReader {
        let chunk_rows = chunk_rows.clamp(1, rows.rows.max(1));
        let buffers = BlobPool::new(rows.window_bytes(chunk_rows), 2);
        HeadReader { rows, chunk_rows, buffers }
    }

    fn read_chunk(&self, first: usize) -> Result<Matrix> {
        let n = self.chunk_rows.min(self.rows.rows - first);
        self.rows.read(first, n, self.buffers.take())
    }

    fn logits(&self, xs: &[f32], logits: &mut [f32]) -> Result<()> {
        let (vocab, cols) = (self.rows.rows, self.rows.cols);
        let n = xs.len() / cols;
        if n == 0 {
            return Ok(());
        }
        let firsts: Vec<usize> = (0..vocab).step_by(self.chunk_rows).collect();
        std::thread::scope(|scope| -> Result<()> {
            let mut next = Some(scope.spawn(|| self.read_chunk(firsts[0])));
            let mut part = Vec::new();
            for (k, &first) in firsts.iter().enumerate() {
                // A read is in flight for every chunk: the first before the loop, each
                // next one below.
                let Some(reading) = next.take() else { break };
                let chunk = join(reading)?;
                if let Some(&after) = firsts.get(k + 1) {
                    next = Some(scope.spawn(move || self.read_chunk(after)));
                }
                let rows = chunk.rows();
                part.resize(n * rows, 0.0);
                chunk.matmul(xs, &mut part);
                for (t, products) in part.chunks_exact(rows).enumerate() {
                    logits[t * vocab + first..t * vocab + first + rows].copy_from_slice(products);
                }
                if let Some(blob) = chunk.into_blob() {
                    self.buffers.give(blob);
                }
            }
            Ok(())
        })
    }
}

/// The chunk a reader thread read (its panic, if any, carried on).
fn join(handle: std::thread::ScopedJoinHandle<'_, Result<Matrix>>) -> Result<Matrix> {
    handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::bind::Binder;
    use crate::model::names;

    fn tiny() -> TensorIndex {
        TensorIndex::open(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/tiny-mxfp4")).unwrap()
    }

    fn rows_of(index: &TensorIndex, name: &str) -> TensorRows {
        TensorRows::open(index, index.get(name).unwrap(), (768, 128), Arc::default()).unwrap()
    }

    #[test]
    fn the_head_read_in_chunks_gives_the_held_heads_logits_bit_for_bit() {
        let index = tiny();
        let held = OutputHead::Held(Binder::new(&index, true).matrix(&names::lm_head(), 768, 128).unwrap());
        let xs: Vec<f32> = (0..3 * 128).map(|i| ((i * 37 % 101) as f32 - 50.0) / 17.0).collect();
        let mut want = vec![0.0f32; 3 * 768];
        held.logits(&xs, &mut want).unwrap();
        // 7 rows a chunk: 110 chunks, the last one of 5 rows; and one chunk of the whole head.
        for chunk_rows in [7, 768] {
            let read = OutputHead::Read(HeadReader::new(rows_of(&index, &names::lm_head()), chunk_rows));
            let mut got = vec![f32::NAN; 3 * 768];
            read.logits(&xs, &mut got).unwrap();
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "{chunk_rows} rows a chunk");
        }
    }

    #[test]
    fn embedding_rows_read_when_used_equal_the_held_rows_through_evictions() {
        let index = tiny();
        let held = Embedding::Held(Binder::new(&index, true).matrix(&names::embed_tokens(), 768, 128).unwrap());
        let read = Embedding::Read(EmbeddingReader::new(rows_of(&index, &names::embed_tokens()), 3));
        for id in [5usize, 700, 5, 9, 11, 13, 5, 767, 0, 700] {
            let (mut want, mut got) = (vec![0.0f32; 128], vec![f32::NAN; 128]);
            held.row_f32(id, &mut want).unwrap();
            read.row_f32(id, &mut got).unwrap();
            assert_eq!(
                got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                want.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                "row {id}"
            );
        }
        let Embedding::Read(r) = &read else { unreachable!() };
        assert_eq!(r.cache.lock().unwrap().rows.len(), 3, "the cache keeps its capacity");
    }
}
