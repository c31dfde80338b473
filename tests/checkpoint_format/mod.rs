//! Checkpoint format: a tiny safetensors builder, valid checkpoints read back byte-exact,
//! and the malformed-checkpoint corpus of RELIABILITY.md §2.1 (ST-01..ST-20, IX-01..IX-03),
//! each case asserting the exact `CheckpointFault` variant and that the error names the file.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k3_io::format::{CheckpointFault, Dtype, TensorIndex, TensorInfo};
use k3_io::Error;

// ------------------------------------------------------------------------------------------
// Helpers: temporary folders and a safetensors builder.
// ------------------------------------------------------------------------------------------

/// A fresh folder under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "k3-checkpoint-format-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir(&path).expect("create temp dir");
        TempDir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn name(&self) -> String {
        self.0.file_name().unwrap().to_string_lossy().into_owned()
    }

    fn write(&self, file: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(file);
        fs::write(&path, bytes).expect("write test file");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A tensor to write: name, dtype spelling, shape, raw bytes.
struct T {
    name: String,
    dtype: &'static str,
    shape: Vec<u64>,
    data: Vec<u8>,
}

fn t(name: &str, dtype: &'static str, shape: &[u64], data: Vec<u8>) -> T {
    T { name: name.to_owned(), dtype, shape: shape.to_vec(), data }
}

/// `n` distinct-looking bytes.
fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// One header entry: `"name":{"dtype":..,"shape":..,"data_offsets":[begin,end]}`.
fn e(name: &str, dtype: &str, shape: &[u64], begin: u64, end: u64) -> String {
    format!(
        "{}:{{\"dtype\":\"{dtype}\",\"shape\":{shape:?},\"data_offsets\":[{begin},{end}]}}",
        serde_json::to_string(name).unwrap()
    )
}

/// `{` entries joined by `,` `}`.
fn obj(entries: &[String]) -> String {
    format!("{{{}}}", entries.join(","))
}

/// `[u64 LE len(header)][header][data]`.
fn file_bytes(header: &[u8], data: &[u8]) -> Vec<u8> {
    file_with_len(header.len() as u64, header, data)
}

/// Like `file_bytes` with a chosen (possibly lying) header length.
fn file_with_len(header_len: u64, header: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = header_len.to_le_bytes().to_vec();
    out.extend_from_slice(header);
    out.extend_from_slice(data);
    out
}

/// A valid shard holding `tensors` back to back in the given order. With `pad_to_8` the
/// header is padded with spaces so the data starts at a multiple of 8 (as the release is);
/// `extra` is spliced into the header object verbatim (e.g. a `__metadata__` entry).
fn shard(tensors: &[T], pad_to_8: bool, extra: Option<&str>) -> Vec<u8> {
    let mut entries = Vec::new();
    let mut data = Vec::new();
    for x in tensors {
        let begin = data.len() as u64;
        data.extend_from_slice(&x.data);
        entries.push(e(&x.name, x.dtype, &x.shape, begin, data.len() as u64));
    }
    entries.extend(extra.map(str::to_owned));
    let mut header = obj(&entries).into_bytes();
    if pad_to_8 {
        // The data starts at 8 + N, a multiple of 8 exactly when N is.
        header.resize(header.len().next_multiple_of(8), b' ');
    }
    file_bytes(&header, &data)
}

const SHARD: &str = "model.safetensors";

/// Writes one shard named `model.safetensors` into a fresh folder and indexes it.
fn try_shard(bytes: &[u8]) -> Result<TensorIndex, Error> {
    let dir = TempDir::new();
    dir.write(SHARD, bytes);
    TensorIndex::open(dir.path())
}

/// A one-shard folder from header text and data bytes.
fn try_header(header: &str, data: &[u8]) -> Result<TensorIndex, Error> {
    try_shard(&file_bytes(header.as_bytes(), data))
}

/// A one-shard folder from header text followed by a sparse hole of `data_len` bytes (so a
/// header of megabytes can be ≤ 1 % of its file, as ST-03 requires above 1 MiB).
fn try_header_sparse(header: &str, data_len: u64) -> Result<TensorIndex, Error> {
    let dir = TempDir::new();
    let path = dir.write(SHARD, &file_bytes(header.as_bytes(), &[]));
    let len = 8 + header.len() as u64 + data_len;
    fs::OpenOptions::new().write(true).open(&path).expect("the test shard").set_len(len).expect("extend it");
    TensorIndex::open(dir.path())
}

/// The fault of an `Error::Checkpoint` on `file` (checked against the path and Display).
#[track_caller]
fn fault_of<X: std::fmt::Debug>(result: Result<X, Error>, file: &str) -> CheckpointFault {
    match result {
        Err(err @ Error::Checkpoint { .. }) => {
            let shown = err.to_string();
            let Error::Checkpoint { path, fault } = err else { unreachable!() };
            assert!(
                path.file_name().is_some_and(|n| n == file),
                "fault {fault:?} reported on {path:?}, expected file {file}"
            );
            assert!(shown.contains(file), "Display {shown:?} does not name {file}");
            *fault
        }
        Err(other) => panic!("expected Error::Checkpoint on {file}, got {other:?}"),
        Ok(value) => panic!("expected Error::Checkpoint on {file}, but got Ok({value:?})"),
    }
}

/// Asserts the exact fault variant (optionally with a guard) and returns the fault.
macro_rules! assert_fault {
    ($result:expr, $file:expr, $pattern:pat $(if $guard:expr)?) => {{
        let fault = fault_of($result, $file);
        assert!(
            matches!(&fault, $pattern $(if $guard)?),
            "expected {}, got {:?}",
            stringify!($pattern),
            fault
        );
        fault
    }};
}

/// A valid single-tensor header and its data, as a base to corrupt.
fn one_u8_tensor() -> (String, Vec<u8>) {
    (obj(&[e("a", "U8", &[4], 0, 4)]), vec![1, 2, 3, 4])
}

/// A model folder with `index.json` text next to two valid shards `a` (x, y) and `b` (z).
fn two_shards_with_index(index: &str) -> (TempDir, Result<TensorIndex, Error>) {
    let dir = TempDir::new();
    dir.write(
        "model-00001-of-00002.safetensors",
        &shard(&[t("x", "U8", &[2], vec![1, 2]), t("y", "F32", &[1], vec![0; 4])], true, None),
    );
    dir.write("model-00002-of-00002.safetensors", &shard(&[t("z", "BF16", &[3], vec![7; 6])], false, None));
    dir.write(INDEX, index.as_bytes());
    let result = TensorIndex::open(dir.path());
    (dir, result)
}

const INDEX: &str = "model.safetensors.index.json";
const S1: &str = "model-00001-of-00002.safetensors";
const S2: &str = "model-00002-of-00002.safetensors";

/// The correct index for `two_shards_with_index` (x, y in shard 1, z in shard 2; 12 bytes).
fn good_index() -> serde_json::Value {
    serde_json::json!({
        "metadata": {"total_size": 12},
        "weight_map": {"x": S1, "y": S1, "z": S2}
    })
}

// The topic files come after the helpers and the `assert_fault!` macro they use.
mod entries;
mod index_file;
mod names_and_layout;
mod shards;
mod sizes_and_text;
mod valid;
