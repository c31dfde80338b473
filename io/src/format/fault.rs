//! Every way a safetensors shard or the index file can be malformed.
//!
//! Owns: `CheckpointFault`, one variant per distinct defect, each with the context a person
//! needs (tensor name, offsets, expected vs actual). The offending file is not stored here:
//! it is the `path` of the `Error::Checkpoint` that wraps the fault.
//! Must not: carry a free-form message as the only information; `JsonSyntax` keeps serde's
//! text only next to its line and column.
//! Easy to break: tests match on the exact variant (RELIABILITY.md §2.1 IDs); renaming or
//! merging variants silently weakens the malformed-checkpoint corpus.

use std::path::PathBuf;

use super::dtype::Dtype;

/// A defect in a shard or in `model.safetensors.index.json`.
///
/// Offsets named `*_offset` or `*_len` are absolute file positions/sizes in bytes; `begin`
/// and `end` are the header's `data_offsets`, relative to the start of the data section.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointFault {
    // ---- the file itself (ST-01..04, ST-19, ST-20) ----
    /// The path is a directory, FIFO, device or socket (ST-20).
    #[error("not a regular file (it is a {kind})")]
    NotRegularFile { kind: &'static str },

    /// The file was swapped for another between the check and the open.
    #[error("file changed while it was being opened")]
    ChangedWhileOpening,

    /// Fewer than the 8 bytes of the header-length prefix (ST-01).
    #[error("file is {file_len} bytes, too small for the 8-byte header length")]
    TooSmall { file_len: u64 },

    /// The header length runs past the end of the file (ST-02).
    #[error("header length {header_len} runs past the end of the file ({file_len} bytes)")]
    HeaderPastEof { header_len: u64, file_len: u64 },

    /// The header length exceeds the reader's limit for a file of this size (ST-03,
    /// ST-04): 1 % of the file, at least 1 MiB, at most 16 MiB.
    #[error("header length {header_len} exceeds the limit of {max} bytes for this file (1% of its size, at least 1 MiB, at most 16 MiB)")]
    HeaderTooLarge { header_len: u64, max: u64 },

    /// The header length is zero.
    #[error("header length is 0; expected a JSON object")]
    HeaderEmpty,

    // ---- header text (ST-05, ST-16) ----
    /// The header is not UTF-8; `offset` is the file offset of the first bad byte (ST-05).
    #[error("header is not UTF-8 (first invalid byte at file offset {offset})")]
    NotUtf8 { offset: u64 },

    /// The header starts with a UTF-8 byte-order mark (ST-05).
    #[error("header starts with a byte-order mark")]
    ByteOrderMark,

    /// Whitespace before the opening `{` (ST-16: rejected by policy).
    #[error("header starts with whitespace byte {byte:#04x} before `{{`")]
    LeadingWhitespace { byte: u8 },

    /// The header's first byte does not open a JSON object (ST-05).
    #[error("header is not a JSON object (first byte {first_byte:#04x})")]
    NotAnObject { first_byte: u8 },

    /// The JSON is malformed (also: lone surrogates, nesting beyond serde_json's limit).
    #[error("invalid JSON at line {line}, column {column}: {detail}")]
    JsonSyntax { line: usize, column: usize, detail: String },

    /// Something other than 0x20 padding after the closing `}` (ST-16).
    #[error("byte {byte:#04x} after the header's closing `}}` at file offset {offset}; only spaces may pad a header")]
    TrailingJunk { offset: u64, byte: u8 },

    // ---- tensor names (ST-06, ST-07) ----
    /// The same tensor name twice in one header (ST-06).
    #[error("tensor {name:?} appears twice in the header")]
    DuplicateKey { name: String },

    /// An empty tensor name (ST-07).
    #[error("empty tensor name")]
    NameEmpty,

    /// A tensor name over the length cap; `prefix` is its start (ST-07).
    #[error("tensor name of {len} bytes exceeds the cap of {max} bytes (starts {prefix:?})")]
    NameTooLong { prefix: String, len: usize, max: usize },

    /// A tensor name holding a control character such as NUL (ST-07).
    #[error("tensor name {name:?} contains control character U+{code:04X}")]
    NameControlChar { name: String, code: u32 },

    /// A tensor name holding `/`, `\` or `..` (ST-07).
    #[error("tensor name {name:?} contains a path-like `/`, `\\` or `..`")]
    NamePathLike { name: String },

    /// Two tensor names equal except for letter case, in this shard or an earlier one (ST-07).
    #[error("tensor names {first:?} and {second:?} differ only in letter case")]
    NameCaseCollision { first: String, second: String },

    // ---- one header entry (ST-12..ST-15) ----
    /// A tensor entry that is not a JSON object.
    #[error("tensor {name:?}: entry must be an object, found {found}")]
    EntryNotObject { name: String, found: &'static str },

    /// A field given twice inside one entry.
    #[error("tensor {name:?}: field `{field}` given twice")]
    EntryDuplicateField { name: String, field: &'static str },

    /// A field other than `dtype`, `shape`, `data_offsets` (ST-14).
    #[error("tensor {name:?}: unknown field {field:?}")]
    EntryUnknownField { name: String, field: String },

    /// One of the three fields is absent (ST-14).
    #[error("tensor {name:?}: missing field `{field}`")]
    EntryMissingField { name: String, field: &'static str },

    /// `dtype` is not a string.
    #[error("tensor {name:?}: `dtype` must be a string, found {found}")]
    DtypeNotString { name: String, found: &'static str },

    /// `dtype` names no known type; spellings are case-sensitive (ST-13).
    #[error("tensor {name:?}: unknown dtype {dtype:?}")]
    UnknownDtype { name: String, dtype: String },

    /// `shape` is not an array.
    #[error("tensor {name:?}: `shape` must be an array, found {found}")]
    ShapeNotArray { name: String, found: &'static str },

    /// More dimensions than the cap (ST-12).
    #[error("tensor {name:?}: {ndim} dimensions exceed the cap of {max}")]
    TooManyDims { name: String, ndim: usize, max: usize },

    /// A dimension that is not a non-negative integer below 2^64 (ST-12).
    #[error("tensor {name:?}: dimension {index} must be a non-negative integer, found {found}")]
    DimNotInteger { name: String, index: usize, found: String },

    /// A dimension over the per-dimension cap (ST-12).
    #[error("tensor {name:?}: dimension {index} is {dim}, above the cap of {max}")]
    DimTooLarge { name: String, index: usize, dim: u64, max: u64 },

    /// `data_offsets` is not an array.
    #[error("tensor {name:?}: `data_offsets` must be an array, found {found}")]
    OffsetsNotArray { name: String, found: &'static str },

    /// `data_offsets` does not hold exactly two items (ST-14).
    #[error("tensor {name:?}: `data_offsets` must hold exactly 2 items, found {count}")]
    OffsetsCount { name: String, count: usize },

    /// An offset that is not a non-negative integer below 2^64 (ST-12).
    #[error("tensor {name:?}: data_offsets[{index}] must be a non-negative integer, found {found}")]
    OffsetNotInteger { name: String, index: usize, found: String },

    /// `begin > end` (ST-08).
    #[error("tensor {name:?}: data_offsets begin {begin} is after end {end}")]
    OffsetsReversed { name: String, begin: u64, end: u64 },

    /// Element count, byte size or absolute offset does not fit in u64 (ST-11).
    #[error("tensor {name:?}: {what} overflows 64 bits")]
    Overflow { name: String, what: &'static str },

    /// `end − begin ≠ numel × dtype size` (ST-10).
    #[error("tensor {name:?}: {dtype} {shape:?} needs {expected} bytes, data_offsets span {actual}")]
    SizeMismatch { name: String, dtype: Dtype, shape: Vec<u64>, expected: u64, actual: u64 },

    /// `__metadata__` is not an object (ST-15).
    #[error("`__metadata__` must be an object of strings, found {found}")]
    MetadataNotObject { found: &'static str },

    /// A `__metadata__` value that is not a string (ST-15).
    #[error("`__metadata__` key {key:?} must map to a string, found {found}")]
    MetadataValueNotString { key: String, found: &'static str },

    /// A key given twice inside `__metadata__`.
    #[error("`__metadata__` key {key:?} appears twice")]
    MetadataDuplicateKey { key: String },

    // ---- layout of the data section (ST-08, ST-09) ----
    /// The lowest data offset is not 0 (ST-08).
    #[error("tensor {name:?}: the data section must start at offset 0, first tensor starts at {begin}")]
    FirstNotAtZero { name: String, begin: u64 },

    /// Bytes `start..end` of the data section belong to no tensor (ST-08).
    #[error("data bytes {start}..{end} between tensors {before:?} and {after:?} belong to no tensor")]
    Hole { before: String, after: String, start: u64, end: u64 },

    /// Two tensors share bytes (zero-size tensors may share an offset, not lie inside data) (ST-08).
    #[error("tensor {second:?} starts at {second_begin}, inside tensor {first:?} which ends at {first_end}")]
    Overlap { first: String, second: String, first_end: u64, second_begin: u64 },

    /// The file ends before the last tensor does (ST-09).
    #[error("truncated: header and tensors need {expected_len} bytes, the file has {file_len}")]
    Truncated { expected_len: u64, file_len: u64 },

    /// Bytes after the last tensor (ST-08, polyglot files).
    #[error("{file_len} bytes, but header and tensors end at {expected_len}: trailing bytes")]
    TrailingBytes { expected_len: u64, file_len: u64 },

    // ---- across shards ----
    /// The same tensor name in two shards.
    #[error("tensor {name:?} is in both {} and {}", first.display(), second.display())]
    DuplicateAcrossShards { name: String, first: PathBuf, second: PathBuf },

    /// Shard names `P-i-of-N` with the same prefix disagree on N (IX-03).
    #[error("shard numbering: {file:?} says {total} shards, {other_file:?} says {other_total}")]
    ShardTotalMismatch { file: String, total: u64, other_file: String, other_total: u64 },

    /// A shard index of 0 or above the total (IX-03).
    #[error("shard numbering: index {index} is outside 1..={total}")]
    ShardNumberOutOfRange { index: u64, total: u64 },

    /// Two files carry the same shard index (IX-03).
    #[error("shard numbering: index {index} also used by {other_file:?}")]
    ShardNumberDuplicate { index: u64, other_file: String },

    /// Fewer or more shard files than the names announce (IX-03).
    #[error("shard numbering: names announce {total} shards, the folder has {found}")]
    ShardCountMismatch { total: u64, found: u64 },

    // ---- model.safetensors.index.json (IX-01..IX-03) ----
    /// The index file is over its cap (IX-03).
    #[error("index file is {len} bytes, above the cap of {max}")]
    IndexTooLarge { len: u64, max: u64 },

    /// The index's top level is not a JSON object.
    #[error("index must be a JSON object, found {found}")]
    IndexNotObject { found: &'static str },

    /// A key given twice in the index (`within` is "top level", "weight_map" or "metadata") (IX-02).
    #[error("index: key {key:?} appears twice in {within}")]
    IndexDuplicateKey { key: String, within: &'static str },

    /// No `weight_map` object.
    #[error("index has no `weight_map`")]
    IndexMissingWeightMap,

    /// `weight_map` is not an object.
    #[error("index `weight_map` must be an object, found {found}")]
    IndexWeightMapNotObject { found: &'static str },

    /// `metadata` is not an object.
    #[error("index `metadata` must be an object, found {found}")]
    IndexMetadataNotObject { found: &'static str },

    /// A `weight_map` value that is not a string.
    #[error("index: tensor {tensor:?} must map to a file name string, found {found}")]
    IndexShardNotString { tensor: String, found: &'static str },

    /// A shard file name that could escape the folder or is unusable on some OS (IX-01).
    #[error("index: tensor {tensor:?} maps to unsafe file name {shard:?} ({reason})")]
    IndexShardNameUnsafe { tensor: String, shard: String, reason: &'static str },

    /// A shard file name that is not among the folder's shards (IX-01).
    #[error("index: tensor {tensor:?} maps to {shard:?}, which is not a shard in the folder")]
    IndexShardMissing { tensor: String, shard: String },

    /// A `weight_map` tensor that no shard header holds (IX-02).
    #[error("index: tensor {tensor:?} (mapped to {shard:?}) is in no shard header")]
    IndexUnknownTensor { tensor: String, shard: String },

    /// The index puts a tensor in a different shard than the headers do (IX-02).
    #[error("index: tensor {tensor:?} is mapped to {index_shard:?} but its header is in {header_shard:?}")]
    IndexWrongShard { tensor: String, index_shard: String, header_shard: String },

    /// A header tensor absent from `weight_map` (IX-02).
    #[error("index: tensor {tensor:?} of {shard:?} is missing from `weight_map`")]
    IndexMissingTensor { tensor: String, shard: String },

    /// `metadata.total_size` is not a non-negative integer.
    #[error("index `metadata.total_size` must be a non-negative integer, found {found}")]
    IndexTotalSizeInvalid { found: String },

    /// `metadata.total_size` ≠ the sum of all tensors' bytes (IX-03).
    #[error("index `metadata.total_size` is {index_total}, the shards hold {actual_total} tensor bytes")]
    IndexTotalSize { index_total: u64, actual_total: u128 },

    // ---- reads through TensorIndex (ST-19, API misuse) ----
    /// A `TensorInfo` that this index did not produce.
    #[error("tensor {name:?}: this TensorInfo does not belong to the index")]
    TensorNotInIndex { name: String },

    /// `read_into` was given a buffer of the wrong size.
    #[error("tensor {name:?}: read buffer is {actual} bytes, the tensor is {expected}")]
    ReadBufferSize { name: String, expected: u64, actual: u64 },

    /// The shard shrank after it was indexed (ST-19).
    #[error("shard shrank from {expected_len} to {file_len} bytes after it was indexed")]
    ShardChangedAfterOpen { expected_len: u64, file_len: u64 },
}
