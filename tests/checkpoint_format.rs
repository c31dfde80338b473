//! Checkpoint format: a tiny safetensors builder, valid checkpoints read back byte-exact,
//! and the malformed-checkpoint corpus of RELIABILITY.md §2.1 (ST-01..ST-20, IX-01..IX-03),
//! each case asserting the exact `CheckpointFault` variant and that the error names the file.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k3_engine::format::{CheckpointFault, Dtype, TensorIndex, TensorInfo};
use k3_engine::Error;

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
            fault
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

// ------------------------------------------------------------------------------------------
// Valid checkpoints.
// ------------------------------------------------------------------------------------------

#[test]
fn valid_three_shard_checkpoint_with_index_reads_back_exact_bytes() {
    let dir = TempDir::new();
    let s1 = "model-00001-of-00003.safetensors";
    let s2 = "model-00002-of-00003.safetensors";
    let s3 = "model-00003-of-00003.safetensors";

    // Shard 1: padded header; BF16 matrix, F32 vector, F32 scalar, zero-element U8.
    let shard1 = vec![
        t("layers.0.w", "BF16", &[2, 3], pattern(12, 1)),
        t("layers.0.bias", "F32", &[4], pattern(16, 2)),
        t("layers.0.scale", "F32", &[], pattern(4, 3)),
        t("layers.0.empty", "U8", &[0, 5], vec![]),
    ];
    dir.write(s1, &shard(&shard1, true, None));

    // Shard 2: unpadded header, data starting at an odd file offset; U8, F16, BF16.
    let shard2 = vec![
        t("layers.1.q", "U8", &[7], pattern(7, 4)),
        t("layers.1.h", "F16", &[3], pattern(6, 5)),
        t("layers.1.g", "BF16", &[1, 5], pattern(10, 6)),
    ];
    let mut bytes2 = shard(&shard2, false, None);
    if (u64::from_le_bytes(bytes2[..8].try_into().unwrap()) + 8) % 2 == 0 {
        // Rebuild with one padding space so that 8 + N is odd.
        let n = u64::from_le_bytes(bytes2[..8].try_into().unwrap()) as usize;
        let mut header = bytes2[8..8 + n].to_vec();
        header.push(b' ');
        bytes2 = file_bytes(&header, &bytes2[8 + n..]);
    }
    dir.write(s2, &bytes2);

    // Shard 3: names written with JSON escapes, and a `__metadata__` entry to skip.
    let esc_data = pattern(8, 7);
    let emoji_data = pattern(2, 8);
    let header3 = r#"{"__metadata__":{"format":"pt"},"esc\"aped\u00e9\u0041":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},"smile\ud83d\ude00":{"dtype":"I16","shape":[1],"data_offsets":[8,10]}}"#;
    let mut data3 = esc_data.clone();
    data3.extend_from_slice(&emoji_data);
    dir.write(s3, &file_bytes(header3.as_bytes(), &data3));
    let esc_name = "esc\"apedéA";
    let emoji_name = "smile😀";

    let mut weight_map = serde_json::Map::new();
    let mut total = 0u64;
    for (file, tensors) in [(s1, &shard1), (s2, &shard2)] {
        for x in tensors.iter() {
            weight_map.insert(x.name.clone(), file.into());
            total += x.data.len() as u64;
        }
    }
    weight_map.insert(esc_name.into(), s3.into());
    weight_map.insert(emoji_name.into(), s3.into());
    total += 10;
    let index = serde_json::json!({"metadata": {"total_size": total}, "weight_map": weight_map});
    dir.write(INDEX, index.to_string().as_bytes());

    let index = TensorIndex::open(dir.path()).expect("valid checkpoint");
    assert_eq!(index.len(), 9);
    assert!(!index.is_empty());
    let paths: Vec<_> = index.shard_paths().iter().map(|p| p.file_name().unwrap().to_owned()).collect();
    assert_eq!(paths, [s1, s2, s3]);
    assert_eq!(index.tensors().count(), 9);

    let expect = |x: &T, shard_idx: usize, dtype: Dtype| {
        let info = index.get(&x.name).unwrap_or_else(|| panic!("{} missing", x.name));
        assert_eq!(info.name, x.name);
        assert_eq!(info.dtype, dtype);
        assert_eq!(info.shape, x.shape);
        assert_eq!(info.shard_idx, shard_idx);
        assert_eq!(info.nbytes, x.data.len() as u64);
        assert_eq!(index.read(info).unwrap(), x.data, "{}", x.name);
        let mut buf = vec![0xAA; x.data.len()];
        index.read_into(info, &mut buf).unwrap();
        assert_eq!(buf, x.data);
        info.clone()
    };
    expect(&shard1[0], 0, Dtype::BF16);
    expect(&shard1[1], 0, Dtype::F32);
    let scalar = expect(&shard1[2], 0, Dtype::F32);
    assert_eq!(scalar.numel(), 1);
    let empty = expect(&shard1[3], 0, Dtype::U8);
    assert_eq!(empty.numel(), 0);
    let q = expect(&shard2[0], 1, Dtype::U8);
    assert_eq!(q.offset % 2, 1, "shard 2's data must start at an odd offset");
    expect(&shard2[1], 1, Dtype::F16);
    expect(&shard2[2], 1, Dtype::BF16);

    let esc = index.get(esc_name).expect("escaped name decoded");
    assert_eq!(index.read(esc).unwrap(), esc_data);
    let smile = index.get(emoji_name).expect("surrogate pair decoded");
    assert_eq!(smile.dtype, Dtype::I16);
    assert_eq!(index.read(smile).unwrap(), emoji_data);
    assert!(index.get("__metadata__").is_none());
    assert!(index.get("absent").is_none());
}

#[test]
fn every_dtype_spelling_round_trips() {
    let tensors: Vec<T> = Dtype::ALL
        .iter()
        .enumerate()
        .map(|(i, d)| t(&format!("t{i}"), d.name(), &[3], pattern(3 * d.size_bytes() as usize, i as u8)))
        .collect();
    let index = try_shard(&shard(&tensors, false, None)).expect("all dtypes");
    for (i, d) in Dtype::ALL.iter().enumerate() {
        let info = index.get(&format!("t{i}")).unwrap();
        assert_eq!(info.dtype, *d);
        assert_eq!(info.dtype.to_string(), d.name());
        assert_eq!(Dtype::from_name(d.name()), Some(*d));
        assert_eq!(index.read(info).unwrap(), tensors[i].data);
    }
    assert_eq!(Dtype::BF16.name(), "BF16");
    assert_eq!(Dtype::F8E4M3.name(), "F8_E4M3");
    assert_eq!(Dtype::Bool.size_bytes(), 1);
    assert_eq!(Dtype::F64.size_bytes(), 8);
}

#[test]
fn data_order_differs_from_header_order() {
    // Header lists b before a, but a's bytes come first; zero-size tensors share offsets.
    let header = obj(&[
        e("b", "U8", &[2], 3, 5),
        e("z_end", "F32", &[0], 5, 5),
        e("a", "U8", &[3], 0, 3),
        e("z_start", "BF16", &[4, 0], 0, 0),
        e("z_mid", "U8", &[0], 3, 3),
    ]);
    let index = try_header(&header, &[1, 2, 3, 4, 5]).expect("accepted");
    assert_eq!(index.read(index.get("a").unwrap()).unwrap(), [1, 2, 3]);
    assert_eq!(index.read(index.get("b").unwrap()).unwrap(), [4, 5]);
    for z in ["z_end", "z_start", "z_mid"] {
        assert!(index.read(index.get(z).unwrap()).unwrap().is_empty());
    }
}

#[test]
fn empty_header_object_is_a_shard_without_tensors() {
    let index = try_header("{}", &[]).expect("accepted");
    assert!(index.is_empty());
    assert_eq!(index.len(), 0);
}

#[test]
fn st_07_name_of_exactly_1_kib_is_accepted() {
    let name = "n".repeat(1024);
    let index = try_header(&obj(&[e(&name, "U8", &[1], 0, 1)]), &[9]).expect("1 KiB name");
    assert!(index.get(&name).is_some());
}

#[test]
fn st_15_metadata_of_strings_is_skipped() {
    let (header, data) = one_u8_tensor();
    let header = header.replacen('{', r#"{"__metadata__":{"format":"pt","note":"x"},"#, 1);
    let index = try_header(&header, &data).expect("metadata skipped");
    assert_eq!(index.len(), 1);
}

#[test]
fn st_16_space_padding_after_the_object_is_accepted() {
    let (header, data) = one_u8_tensor();
    let index = try_header(&format!("{header}       "), &data).expect("padded");
    assert_eq!(index.read(index.get("a").unwrap()).unwrap(), data);
}

#[test]
fn st_18_garbage_data_with_a_valid_header_is_accepted() {
    let garbage = vec![0xFF; 16];
    let index = try_header(&obj(&[e("w", "F32", &[4], 0, 16)]), &garbage).expect("accepted");
    assert_eq!(index.read(index.get("w").unwrap()).unwrap(), garbage);
}

#[test]
fn hidden_and_other_files_are_not_shards() {
    let dir = TempDir::new();
    dir.write(SHARD, &shard(&[t("a", "U8", &[1], vec![5])], true, None));
    dir.write("._model.safetensors", b"AppleDouble junk");
    dir.write("config.json", b"{}");
    dir.write("model.safetensors.bak", b"junk");
    let index = TensorIndex::open(dir.path()).expect("only model.safetensors is a shard");
    assert_eq!(index.shard_paths().len(), 1);
}

#[test]
fn folder_without_shards_is_no_shards() {
    let dir = TempDir::new();
    dir.write(".hidden.safetensors", b"x");
    match TensorIndex::open(dir.path()) {
        Err(Error::NoShards { path }) => assert_eq!(path, dir.path()),
        other => panic!("expected NoShards, got {other:?}"),
    }
}

#[test]
fn missing_folder_is_an_io_error_naming_it() {
    let dir = TempDir::new();
    let gone = dir.path().join("nope");
    match TensorIndex::open(&gone) {
        Err(err @ Error::Io { .. }) => assert!(err.to_string().contains("nope")),
        other => panic!("expected Io, got {other:?}"),
    }
}

#[test]
fn st_20_symlink_to_a_regular_shard_is_followed() {
    let dir = TempDir::new();
    let blobs = TempDir::new();
    let blob = blobs.write("blob", &shard(&[t("a", "U8", &[2], vec![1, 2])], true, None));
    std::os::unix::fs::symlink(&blob, dir.path().join(SHARD)).unwrap();
    let index = TensorIndex::open(dir.path()).expect("symlinked shard");
    assert_eq!(index.read(index.get("a").unwrap()).unwrap(), [1, 2]);
}

#[test]
fn index_is_send_sync_and_reads_from_many_threads() {
    fn assert_send_sync<X: Send + Sync>() {}
    assert_send_sync::<TensorIndex>();
    let tensors: Vec<T> = (0..16).map(|i| t(&format!("w{i}"), "F32", &[5], pattern(20, i as u8))).collect();
    let index = try_shard(&shard(&tensors, false, None)).unwrap();
    std::thread::scope(|s| {
        for worker in 0..4 {
            let (index, tensors) = (&index, &tensors);
            s.spawn(move || {
                for round in 0..50 {
                    let x = &tensors[(worker * 7 + round) % tensors.len()];
                    assert_eq!(index.read(index.get(&x.name).unwrap()).unwrap(), x.data);
                }
            });
        }
    });
}

#[test]
fn header_just_under_the_cap_is_parsed_quickly() {
    // ~16 MiB of zero-size entries: the worst header the cap lets through.
    let mut header = String::from("{");
    let mut i = 0u64;
    while header.len() < (16 << 20) - 200 {
        if i > 0 {
            header.push(',');
        }
        header.push_str(&e(&format!("t{i:08}"), "U8", &[0], 0, 0));
        i += 1;
    }
    header.push('}');
    let start = Instant::now();
    let index = try_header(&header, &[]).expect("under the cap");
    let took = start.elapsed();
    assert_eq!(index.len() as u64, i);
    // RELIABILITY §3 targets 200 ms on an optimised build; allow for shared CI cores.
    assert!(took < Duration::from_secs(5), "{i} entries took {took:?}");
    eprintln!("header of {} bytes / {i} tensors indexed in {took:?}", header.len());
}

// ------------------------------------------------------------------------------------------
// ST-01..ST-04: sizes, before any allocation.
// ------------------------------------------------------------------------------------------

#[test]
fn st_01_empty_file_is_too_small() {
    assert_fault!(try_shard(&[]), SHARD, CheckpointFault::TooSmall { file_len: 0 });
}

#[test]
fn st_01_seven_byte_file_is_too_small() {
    assert_fault!(try_shard(&[1; 7]), SHARD, CheckpointFault::TooSmall { file_len: 7 });
}

#[test]
fn st_02_header_length_past_eof_is_refused() {
    let bytes = file_with_len(100, b"{}", &[]);
    assert_fault!(try_shard(&bytes), SHARD, CheckpointFault::HeaderPastEof { header_len: 100, file_len: 10 });
}

#[test]
fn st_02_header_length_u64_max_and_2_pow_63_are_refused_without_allocating() {
    for claim in [u64::MAX, 1 << 63, (1 << 63) - 1] {
        let start = Instant::now();
        let bytes = file_with_len(claim, b"{}", &[]);
        assert_fault!(
            try_shard(&bytes),
            SHARD,
            CheckpointFault::HeaderPastEof { header_len, .. } if *header_len == claim
        );
        assert!(start.elapsed() < Duration::from_millis(100));
    }
}

#[test]
fn st_03_header_claim_over_16_mib_is_refused_fast_without_allocating() {
    // A 64 GiB sparse file whose header claims all of it: reading or zero-filling the claim
    // would take seconds and gigabytes; the cap must refuse it from the 8-byte prefix alone.
    let dir = TempDir::new();
    let path = dir.write(SHARD, &file_with_len((64 << 30) - 8, b"{", &[]));
    let file = fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(64 << 30).unwrap();
    drop(file);
    let start = Instant::now();
    let result = TensorIndex::open(dir.path());
    let took = start.elapsed();
    assert_fault!(
        result,
        SHARD,
        CheckpointFault::HeaderTooLarge {
            header_len,
            max: 16777216
        } if *header_len == (64 << 30) - 8
    );
    assert!(took < Duration::from_millis(100), "took {took:?}");
}

#[test]
fn st_03_header_one_byte_over_the_cap_is_refused() {
    let dir = TempDir::new();
    let claim = (16 << 20) + 1;
    let path = dir.write(SHARD, &file_with_len(claim, b"{}", &[]));
    let file = fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(8 + claim).unwrap();
    drop(file);
    assert_fault!(
        TensorIndex::open(dir.path()),
        SHARD,
        CheckpointFault::HeaderTooLarge { header_len, .. } if *header_len == claim
    );
}

#[test]
fn st_04_huge_header_of_empty_tensors_is_refused_fast() {
    // ~20 MiB of genuine zero-size entries (the reference parser spends seconds on these).
    let mut header = String::from("{");
    let mut i = 0u64;
    while header.len() < 20 << 20 {
        if i > 0 {
            header.push(',');
        }
        header.push_str(&e(&format!("e{i}"), "U8", &[0], 0, 0));
        i += 1;
    }
    header.push('}');
    let dir = TempDir::new();
    dir.write(SHARD, &file_bytes(header.as_bytes(), &[]));
    let start = Instant::now();
    let result = TensorIndex::open(dir.path());
    let took = start.elapsed();
    assert_fault!(result, SHARD, CheckpointFault::HeaderTooLarge { .. });
    assert!(took < Duration::from_millis(100), "took {took:?}");
}

#[test]
fn zero_header_length_is_header_empty() {
    assert_fault!(try_shard(&file_with_len(0, b"", &[])), SHARD, CheckpointFault::HeaderEmpty);
}

// ------------------------------------------------------------------------------------------
// ST-05, ST-16: header text.
// ------------------------------------------------------------------------------------------

#[test]
fn st_05_header_not_utf8_names_the_offset() {
    let header = b"{\"a\xff\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}";
    assert_fault!(try_shard(&file_bytes(header, &[])), SHARD, CheckpointFault::NotUtf8 { offset: 11 });
}

#[test]
fn st_05_byte_order_mark_is_refused() {
    let (header, data) = one_u8_tensor();
    let mut bytes = vec![0xEF, 0xBB, 0xBF];
    bytes.extend_from_slice(header.as_bytes());
    assert_fault!(try_shard(&file_bytes(&bytes, &data)), SHARD, CheckpointFault::ByteOrderMark);
}

#[test]
fn st_05_lone_surrogate_escape_is_refused() {
    let header = r#"{"a\ud800":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}"#;
    assert_fault!(try_header(header, &[]), SHARD, CheckpointFault::JsonSyntax { .. });
}

#[test]
fn st_05_header_that_is_not_an_object_is_refused() {
    for (text, first) in [("[]", b'['), ("\"x\"", b'"'), ("12", b'1'), ("null", b'n')] {
        assert_fault!(
            try_header(text, &[]),
            SHARD,
            CheckpointFault::NotAnObject { first_byte } if *first_byte == first
        );
    }
}

#[test]
fn st_05_malformed_json_is_json_syntax() {
    for text in [r#"{"a":"#, r#"{"a" {}}"#, r#"{"a":{"dtype":"U8",}}"#, "{"] {
        assert_fault!(try_header(text, &[]), SHARD, CheckpointFault::JsonSyntax { .. });
    }
}

#[test]
fn st_16_leading_whitespace_is_refused() {
    let (header, data) = one_u8_tensor();
    for pad in [" ", "\n", "\t"] {
        assert_fault!(try_header(&format!("{pad}{header}"), &data), SHARD, CheckpointFault::LeadingWhitespace { .. });
    }
}

#[test]
fn st_16_nul_after_the_object_is_trailing_junk() {
    let (header, data) = one_u8_tensor();
    let mut bytes = header.clone().into_bytes();
    bytes.extend_from_slice(b"  \0 ");
    let offset = 8 + header.len() as u64 + 2;
    assert_fault!(
        try_shard(&file_bytes(&bytes, &data)),
        SHARD,
        CheckpointFault::TrailingJunk { offset: o, byte: 0 } if *o == offset
    );
}

#[test]
fn st_16_other_junk_after_the_object_is_refused() {
    let (header, data) = one_u8_tensor();
    for junk in ["x", "\n", "  }", "{}", "\t"] {
        assert_fault!(try_header(&format!("{header}{junk}"), &data), SHARD, CheckpointFault::TrailingJunk { .. });
    }
}

// ------------------------------------------------------------------------------------------
// ST-06, ST-07: names.
// ------------------------------------------------------------------------------------------

#[test]
fn st_06_duplicate_key_with_identical_entries() {
    let header = obj(&[e("a", "U8", &[2], 0, 2), e("a", "U8", &[2], 0, 2)]);
    assert_fault!(
        try_header(&header, &[1, 2]),
        SHARD,
        CheckpointFault::DuplicateKey { name } if name == "a"
    );
}

#[test]
fn st_06_duplicate_key_with_different_entries() {
    let header = obj(&[e("a", "U8", &[2], 0, 2), e("b", "U8", &[1], 2, 3), e("a", "U8", &[1], 3, 4)]);
    assert_fault!(
        try_header(&header, &[1, 2, 3, 4]),
        SHARD,
        CheckpointFault::DuplicateKey { name } if name == "a"
    );
}

#[test]
fn st_06_duplicate_zero_size_entries_are_a_duplicate_key() {
    let header = obj(&[e("z", "U8", &[0], 0, 0), e("a", "U8", &[1], 0, 1), e("z", "F32", &[0], 1, 1)]);
    assert_fault!(
        try_header(&header, &[1]),
        SHARD,
        CheckpointFault::DuplicateKey { name } if name == "z"
    );
}

#[test]
fn st_06_duplicate_key_spelled_with_an_escape() {
    let header = r#"{"ab":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a\u0062":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}"#;
    assert_fault!(try_header(header, &[1, 2]), SHARD, CheckpointFault::DuplicateKey { .. });
}

#[test]
fn st_06_duplicate_metadata_is_a_duplicate_key() {
    let (header, data) = one_u8_tensor();
    let header = header.replacen('{', r#"{"__metadata__":{},"__metadata__":{},"#, 1);
    assert_fault!(
        try_header(&header, &data),
        SHARD,
        CheckpointFault::DuplicateKey { name } if name == "__metadata__"
    );
}

#[test]
fn st_07_empty_name_is_refused() {
    assert_fault!(try_header(&obj(&[e("", "U8", &[1], 0, 1)]), &[1]), SHARD, CheckpointFault::NameEmpty);
}

#[test]
fn st_07_nul_and_control_characters_in_names_are_refused() {
    for (name, code) in [("a\0b", 0u32), ("a\nb", 10), ("\u{1b}[31m", 0x1b), ("a\u{7f}", 0x7f), ("a\u{85}", 0x85)] {
        assert_fault!(
            try_header(&obj(&[e(name, "U8", &[1], 0, 1)]), &[1]),
            SHARD,
            CheckpointFault::NameControlChar { code: c, .. } if *c == code
        );
    }
}

#[test]
fn st_07_name_over_1_kib_is_refused() {
    let name = "n".repeat(1025);
    assert_fault!(
        try_header(&obj(&[e(&name, "U8", &[1], 0, 1)]), &[1]),
        SHARD,
        CheckpointFault::NameTooLong { len: 1025, max: 1024, .. }
    );
}

#[test]
fn st_07_path_like_names_are_refused() {
    for name in ["a/b", "/abs", "..", "layers..0", "a\\b"] {
        assert_fault!(
            try_header(&obj(&[e(name, "U8", &[1], 0, 1)]), &[1]),
            SHARD,
            CheckpointFault::NamePathLike { .. }
        );
    }
}

#[test]
fn st_07_names_differing_only_in_case_collide() {
    let header = obj(&[e("Layer.W", "U8", &[1], 0, 1), e("layer.w", "U8", &[1], 1, 2)]);
    assert_fault!(try_header(&header, &[1, 2]), SHARD, CheckpointFault::NameCaseCollision { .. });
}

#[test]
fn st_07_case_collision_across_shards_names_the_later_shard() {
    let dir = TempDir::new();
    dir.write("a.safetensors", &shard(&[t("A_log", "F32", &[1], vec![0; 4])], true, None));
    dir.write("b.safetensors", &shard(&[t("a_LOG", "F32", &[1], vec![0; 4])], true, None));
    assert_fault!(
        TensorIndex::open(dir.path()),
        "b.safetensors",
        CheckpointFault::NameCaseCollision { first, second } if first == "A_log" && second == "a_LOG"
    );
}

// ------------------------------------------------------------------------------------------
// ST-08..ST-11: layout and sizes.
// ------------------------------------------------------------------------------------------

#[test]
fn st_08_overlapping_tensors_are_refused() {
    let header = obj(&[e("a", "U8", &[4], 0, 4), e("b", "U8", &[4], 2, 6)]);
    assert_fault!(
        try_header(&header, &[0; 6]),
        SHARD,
        CheckpointFault::Overlap { first, second, first_end: 4, second_begin: 2 } if first == "a" && second == "b"
    );
}

#[test]
fn st_08_identical_ranges_are_an_overlap() {
    let header = obj(&[e("a", "U8", &[4], 0, 4), e("b", "U8", &[4], 0, 4)]);
    assert_fault!(try_header(&header, &[0; 4]), SHARD, CheckpointFault::Overlap { .. });
}

#[test]
fn st_08_hole_between_tensors_is_refused() {
    let header = obj(&[e("a", "U8", &[2], 0, 2), e("b", "U8", &[2], 3, 5)]);
    assert_fault!(
        try_header(&header, &[0; 5]),
        SHARD,
        CheckpointFault::Hole { before, after, start: 2, end: 3 } if before == "a" && after == "b"
    );
}

#[test]
fn st_08_first_tensor_not_at_zero_is_refused() {
    let header = obj(&[e("a", "U8", &[2], 1, 3)]);
    assert_fault!(
        try_header(&header, &[0; 3]),
        SHARD,
        CheckpointFault::FirstNotAtZero { name, begin: 1 } if name == "a"
    );
}

#[test]
fn st_08_zero_size_tensor_past_the_data_is_a_hole() {
    let header = obj(&[e("a", "U8", &[2], 0, 2), e("z", "U8", &[0], 7, 7)]);
    assert_fault!(try_header(&header, &[0; 2]), SHARD, CheckpointFault::Hole { start: 2, end: 7, .. });
}

#[test]
fn st_17_zero_size_tensor_inside_another_is_an_overlap() {
    let header = obj(&[e("a", "U8", &[4], 0, 4), e("z", "U8", &[0], 2, 2)]);
    assert_fault!(
        try_header(&header, &[0; 4]),
        SHARD,
        CheckpointFault::Overlap { second, .. } if second == "z"
    );
}

#[test]
fn st_08_begin_after_end_is_refused() {
    let header = obj(&[e("a", "U8", &[2], 4, 2)]);
    assert_fault!(try_header(&header, &[0; 4]), SHARD, CheckpointFault::OffsetsReversed { begin: 4, end: 2, .. });
}

#[test]
fn st_08_trailing_bytes_after_the_last_tensor_are_refused() {
    let (header, mut data) = one_u8_tensor();
    data.extend_from_slice(b"PK\x03\x04 polyglot");
    let expected = 8 + header.len() as u64 + 4;
    assert_fault!(
        try_header(&header, &data),
        SHARD,
        CheckpointFault::TrailingBytes { expected_len, file_len } if *expected_len == expected && *file_len == expected + 13
    );
}

#[test]
fn st_09_file_shorter_than_the_last_end_is_truncated() {
    let header = obj(&[e("a", "U8", &[4], 0, 4), e("b", "F32", &[4], 4, 20)]);
    let expected = 8 + header.len() as u64 + 20;
    assert_fault!(
        try_header(&header, &[0; 11]),
        SHARD,
        CheckpointFault::Truncated { expected_len, file_len } if *expected_len == expected && *file_len == expected - 9
    );
}

#[test]
fn st_10_span_not_matching_shape_and_dtype_is_refused() {
    let header = obj(&[e("w", "BF16", &[2, 3], 0, 10)]);
    assert_fault!(
        try_header(&header, &[0; 10]),
        SHARD,
        CheckpointFault::SizeMismatch { expected: 12, actual: 10, dtype: Dtype::BF16, .. }
    );
}

#[test]
fn st_10_scalar_needs_one_element() {
    let header = obj(&[e("s", "F32", &[], 0, 0)]);
    assert_fault!(try_header(&header, &[]), SHARD, CheckpointFault::SizeMismatch { expected: 4, actual: 0, .. });
}

#[test]
fn st_11_element_count_overflow_is_refused_without_panic() {
    let header = obj(&[e("w", "U8", &[1 << 40, 1 << 40], 0, 0)]);
    assert_fault!(try_header(&header, &[]), SHARD, CheckpointFault::Overflow { what: "element count", .. });
}

#[test]
fn st_11_byte_size_overflow_is_refused_without_panic() {
    let header = obj(&[e("w", "F32", &[1 << 48, 1 << 15], 0, 0)]);
    assert_fault!(try_header(&header, &[]), SHARD, CheckpointFault::Overflow { what: "byte size", .. });
}

#[test]
fn st_11_absolute_end_offset_overflow_is_refused_without_panic() {
    let header = obj(&[e("w", "U8", &[4], u64::MAX - 4, u64::MAX)]);
    assert_fault!(try_header(&header, &[]), SHARD, CheckpointFault::Overflow { what: "absolute end offset", .. });
}

// ------------------------------------------------------------------------------------------
// ST-12..ST-15: entry fields.
// ------------------------------------------------------------------------------------------

/// A header whose only entry has `shape` and `data_offsets` given as raw JSON text.
fn raw_entry(dtype: &str, shape: &str, offsets: &str) -> String {
    format!(r#"{{"w":{{"dtype":{dtype},"shape":{shape},"data_offsets":{offsets}}}}}"#)
}

#[test]
fn st_12_non_integer_dims_are_refused() {
    for (shape, shown) in [
        ("[-1]", "-1"),
        ("[2.0]", "2.0"),
        ("[2e0]", "2.0"),
        ("[\"4\"]", "string"),
        ("[18446744073709551616]", "1.8446744073709552e19"),
        ("[null]", "null"),
        ("[[4]]", "array"),
    ] {
        assert_fault!(
            try_header(&raw_entry("\"U8\"", shape, "[0,4]"), &[0; 4]),
            SHARD,
            CheckpointFault::DimNotInteger { index: 0, found, .. } if found == shown
        );
    }
}

#[test]
fn st_12_dim_above_2_pow_48_is_refused() {
    let shape = format!("[2,{}]", (1u64 << 63) - 1);
    assert_fault!(
        try_header(&raw_entry("\"BF16\"", &shape, "[0,4]"), &[0; 4]),
        SHARD,
        CheckpointFault::DimTooLarge { index: 1, .. }
    );
}

#[test]
fn st_12_more_than_8_dims_is_refused() {
    assert_fault!(
        try_header(&raw_entry("\"U8\"", "[1,1,1,1,1,1,1,1,1]", "[0,1]"), &[0]),
        SHARD,
        CheckpointFault::TooManyDims { ndim: 9, max: 8, .. }
    );
}

#[test]
fn st_12_non_integer_offsets_are_refused() {
    for (offsets, index) in
        [("[-1,3]", 0usize), ("[0,4.0]", 1), ("[\"0\",4]", 0), ("[0,4e0]", 1), ("[0,18446744073709551616]", 1)]
    {
        assert_fault!(
            try_header(&raw_entry("\"U8\"", "[4]", offsets), &[0; 4]),
            SHARD,
            CheckpointFault::OffsetNotInteger { index: i, .. } if *i == index
        );
    }
}

#[test]
fn st_13_unknown_or_lowercase_dtype_is_refused() {
    for dtype in ["F4", "bf16", "f32", "Q4_0", "", "BF16 "] {
        assert_fault!(
            try_header(&raw_entry(&format!("\"{dtype}\""), "[4]", "[0,4]"), &[0; 4]),
            SHARD,
            CheckpointFault::UnknownDtype { dtype: d, .. } if d == dtype
        );
    }
}

#[test]
fn st_13_dtype_that_is_not_a_string_is_refused() {
    assert_fault!(
        try_header(&raw_entry("1", "[4]", "[0,4]"), &[0; 4]),
        SHARD,
        CheckpointFault::DtypeNotString { found: "number", .. }
    );
}

#[test]
fn st_14_missing_fields_are_named() {
    for (header, field) in [
        (r#"{"w":{"shape":[1],"data_offsets":[0,1]}}"#, "dtype"),
        (r#"{"w":{"dtype":"U8","data_offsets":[0,1]}}"#, "shape"),
        (r#"{"w":{"dtype":"U8","shape":[1]}}"#, "data_offsets"),
        (r#"{"w":{}}"#, "dtype"),
    ] {
        assert_fault!(
            try_header(header, &[0]),
            SHARD,
            CheckpointFault::EntryMissingField { field: f, .. } if *f == field
        );
    }
}

#[test]
fn st_14_data_offsets_with_one_or_three_items_are_refused() {
    for (offsets, n) in [("[4]", 1usize), ("[0,4,4]", 3), ("[]", 0)] {
        assert_fault!(
            try_header(&raw_entry("\"U8\"", "[4]", offsets), &[0; 4]),
            SHARD,
            CheckpointFault::OffsetsCount { count, .. } if *count == n
        );
    }
}

#[test]
fn st_14_unknown_extra_field_is_refused() {
    let header = r#"{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"quant":"q4"}}"#;
    assert_fault!(
        try_header(header, &[0]),
        SHARD,
        CheckpointFault::EntryUnknownField { field, .. } if field == "quant"
    );
}

#[test]
fn st_14_field_given_twice_is_refused() {
    let header = r#"{"w":{"dtype":"U8","shape":[1],"dtype":"F32","data_offsets":[0,1]}}"#;
    assert_fault!(try_header(header, &[0]), SHARD, CheckpointFault::EntryDuplicateField { field: "dtype", .. });
}

#[test]
fn st_14_entry_that_is_not_an_object_is_refused() {
    for (value, kind) in [("[0,1]", "array"), ("\"U8\"", "string"), ("7", "number"), ("null", "null")] {
        assert_fault!(
            try_header(&format!(r#"{{"w":{value}}}"#), &[]),
            SHARD,
            CheckpointFault::EntryNotObject { found, .. } if *found == kind
        );
    }
}

#[test]
fn st_14_shape_or_offsets_that_are_not_arrays_are_refused() {
    assert_fault!(
        try_header(&raw_entry("\"U8\"", "4", "[0,4]"), &[0; 4]),
        SHARD,
        CheckpointFault::ShapeNotArray { found: "number", .. }
    );
    assert_fault!(
        try_header(&raw_entry("\"U8\"", "[4]", r#"{"0":4}"#), &[0; 4]),
        SHARD,
        CheckpointFault::OffsetsNotArray { found: "object", .. }
    );
}

#[test]
fn st_15_metadata_with_non_string_values_is_refused() {
    let (header, data) = one_u8_tensor();
    for (meta, kind) in [
        (r#"{"a":1}"#, "number"),
        (r#"{"a":{"b":"c"}}"#, "object"),
        (r#"{"a":["x"]}"#, "array"),
        (r#"{"a":null}"#, "null"),
    ] {
        let header = header.replacen('{', &format!(r#"{{"__metadata__":{meta},"#), 1);
        assert_fault!(
            try_header(&header, &data),
            SHARD,
            CheckpointFault::MetadataValueNotString { key, found } if key == "a" && *found == kind
        );
    }
}

#[test]
fn st_15_metadata_that_is_not_an_object_is_refused() {
    let (header, data) = one_u8_tensor();
    let header = header.replacen('{', r#"{"__metadata__":"pt","#, 1);
    assert_fault!(try_header(&header, &data), SHARD, CheckpointFault::MetadataNotObject { found: "string" });
}

#[test]
fn st_15_metadata_with_a_duplicate_key_is_refused() {
    let (header, data) = one_u8_tensor();
    let header = header.replacen('{', r#"{"__metadata__":{"k":"1","k":"2"},"#, 1);
    assert_fault!(
        try_header(&header, &data),
        SHARD,
        CheckpointFault::MetadataDuplicateKey { key } if key == "k"
    );
}

#[test]
fn st_15_deeply_nested_values_are_refused_without_stack_overflow() {
    // 100k levels (RELIABILITY ST-15) and 2M levels (the most the 16 MiB cap allows for objects),
    // in metadata, in a shape and in an unknown field: drained iteratively, then refused.
    for depth in [100_000, 2_000_000] {
        let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let header = format!(r#"{{"__metadata__":{{"a":{arrays}}}}}"#);
        assert_fault!(try_header(&header, &[]), SHARD, CheckpointFault::MetadataValueNotString { found: "array", .. });
        let objects = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
        let header = format!(r#"{{"__metadata__":{{"k":{objects}}}}}"#);
        assert_fault!(try_header(&header, &[]), SHARD, CheckpointFault::MetadataValueNotString { found: "object", .. });
        let header = raw_entry("\"U8\"", &format!("[{arrays}]"), "[0,0]");
        assert_fault!(try_header(&header, &[]), SHARD, CheckpointFault::DimNotInteger { index: 0, .. });
        let header = format!(r#"{{"w":{{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":{objects}}}}}"#);
        assert_fault!(try_header(&header, &[]), SHARD, CheckpointFault::EntryUnknownField { .. });
    }
}

// ------------------------------------------------------------------------------------------
// ST-19, ST-20: the files themselves.
// ------------------------------------------------------------------------------------------

#[test]
fn st_19_shard_truncated_after_indexing_is_caught_on_read() {
    let dir = TempDir::new();
    let path = dir.write(SHARD, &shard(&[t("a", "U8", &[4], vec![1; 4]), t("b", "U8", &[4], vec![2; 4])], true, None));
    let index = TensorIndex::open(dir.path()).unwrap();
    let b = index.get("b").unwrap().clone();
    let full = fs::metadata(&path).unwrap().len();
    fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(full - 2).unwrap();
    assert_fault!(
        index.read(&b),
        SHARD,
        CheckpointFault::ShardChangedAfterOpen { expected_len, file_len } if *expected_len == full && *file_len == full - 2
    );
    // Bytes before the cut are still served.
    assert_eq!(index.read(index.get("a").unwrap()).unwrap(), [1; 4]);
}

#[test]
fn st_20_directory_named_like_a_shard_is_refused() {
    let dir = TempDir::new();
    fs::create_dir(dir.path().join(SHARD)).unwrap();
    assert_fault!(TensorIndex::open(dir.path()), SHARD, CheckpointFault::NotRegularFile { kind: "directory" });
}

#[test]
fn st_20_fifo_named_like_a_shard_is_refused_without_hanging() {
    let dir = TempDir::new();
    let fifo = dir.path().join(SHARD);
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("mkfifo unavailable; FIFO case skipped");
        return;
    }
    assert_fault!(TensorIndex::open(dir.path()), SHARD, CheckpointFault::NotRegularFile { kind: "FIFO" });
}

#[test]
fn st_20_socket_named_like_a_shard_is_refused() {
    let dir = TempDir::new();
    let _listener = std::os::unix::net::UnixListener::bind(dir.path().join(SHARD)).unwrap();
    assert_fault!(TensorIndex::open(dir.path()), SHARD, CheckpointFault::NotRegularFile { kind: "socket" });
}

#[test]
fn st_20_symlink_to_a_device_or_directory_is_refused() {
    for (target, kind) in [("/dev/null", "character device"), ("/", "directory")] {
        let dir = TempDir::new();
        std::os::unix::fs::symlink(target, dir.path().join(SHARD)).unwrap();
        assert_fault!(
            TensorIndex::open(dir.path()),
            SHARD,
            CheckpointFault::NotRegularFile { kind: k } if *k == kind
        );
    }
}

// ------------------------------------------------------------------------------------------
// Across shards and shard numbering (IX-03).
// ------------------------------------------------------------------------------------------

#[test]
fn duplicate_tensor_across_shards_names_both_files() {
    let dir = TempDir::new();
    dir.write("a.safetensors", &shard(&[t("w", "U8", &[1], vec![1])], true, None));
    dir.write("b.safetensors", &shard(&[t("w", "U8", &[1], vec![1])], true, None));
    let result = TensorIndex::open(dir.path());
    let shown = result.as_ref().map(|_| ()).unwrap_err().to_string();
    assert!(shown.contains("a.safetensors") && shown.contains("b.safetensors"), "{shown}");
    assert_fault!(
        result,
        "b.safetensors",
        CheckpointFault::DuplicateAcrossShards { name, first, second }
            if name == "w" && first.ends_with("a.safetensors") && second.ends_with("b.safetensors")
    );
}

fn numbered_folder(files: &[&str]) -> (TempDir, Result<TensorIndex, Error>) {
    let dir = TempDir::new();
    for (i, f) in files.iter().enumerate() {
        dir.write(f, &shard(&[t(&format!("t{i}"), "U8", &[1], vec![i as u8])], true, None));
    }
    let result = TensorIndex::open(dir.path());
    (dir, result)
}

#[test]
fn ix_03_missing_shard_in_a_numbered_set_is_refused() {
    let (dir, result) = numbered_folder(&["model-00001-of-00003.safetensors", "model-00003-of-00003.safetensors"]);
    assert_fault!(result, &dir.name(), CheckpointFault::ShardCountMismatch { total: 3, found: 2 });
}

#[test]
fn ix_03_extra_shard_beyond_the_total_is_refused() {
    let (_dir, result) = numbered_folder(&[
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
        "model-00003-of-00002.safetensors",
    ]);
    assert_fault!(
        result,
        "model-00003-of-00002.safetensors",
        CheckpointFault::ShardNumberOutOfRange { index: 3, total: 2 }
    );
}

#[test]
fn ix_03_shards_disagreeing_on_the_total_are_refused() {
    let (_dir, result) = numbered_folder(&["model-00001-of-00002.safetensors", "model-00002-of-00003.safetensors"]);
    assert_fault!(
        result,
        "model-00002-of-00003.safetensors",
        CheckpointFault::ShardTotalMismatch { total: 2, other_total: 3, .. }
    );
}

#[test]
fn ix_03_two_files_with_the_same_shard_number_are_refused() {
    // Sorted byte-wise, "model-00001-…" comes first; the later file is the one reported.
    let (_dir, result) = numbered_folder(&["model-00001-of-00002.safetensors", "model-0001-of-00002.safetensors"]);
    assert_fault!(
        result,
        "model-0001-of-00002.safetensors",
        CheckpointFault::ShardNumberDuplicate { index: 1, other_file } if other_file == "model-00001-of-00002.safetensors"
    );
}

#[test]
fn ix_03_release_naming_with_six_digit_total_is_accepted() {
    let (_dir, result) = numbered_folder(&["model-00001-of-000002.safetensors", "model-00002-of-000002.safetensors"]);
    assert_eq!(result.expect("complete set").len(), 2);
}

// ------------------------------------------------------------------------------------------
// IX-01..IX-03: model.safetensors.index.json.
// ------------------------------------------------------------------------------------------

#[test]
fn index_that_matches_the_headers_is_accepted() {
    let (_dir, result) = two_shards_with_index(&good_index().to_string());
    let index = result.expect("good index");
    assert_eq!(index.len(), 3);
    assert_eq!(index.read(index.get("z").unwrap()).unwrap(), [7; 6]);
}

#[test]
fn index_without_metadata_and_with_extra_keys_is_accepted() {
    let text = format!(r#"{{"weight_map":{{"x":"{S1}","y":"{S1}","z":"{S2}"}},"format":"hf"}}"#);
    let (_dir, result) = two_shards_with_index(&text);
    result.expect("metadata is optional");
}

#[test]
fn ix_01_unsafe_shard_names_are_refused() {
    for shard in [
        "../model-00001-of-00002.safetensors",
        "/etc/passwd",
        "sub/model.safetensors",
        "C:\\model.safetensors",
        "\\\\server\\share\\m.safetensors",
        "model\u{0}.safetensors",
        "CON.safetensors",
        "nul",
        "lpt1.safetensors",
        "..",
        "model.safetensors.",
        "a:stream",
        "",
    ] {
        let mut index = good_index();
        index["weight_map"]["x"] = shard.into();
        let (_dir, result) = two_shards_with_index(&index.to_string());
        assert_fault!(
            result,
            INDEX,
            CheckpointFault::IndexShardNameUnsafe { tensor, shard: s, .. } if tensor == "x" && s == shard
        );
    }
}

#[test]
fn ix_01_shard_named_in_the_index_but_absent_is_refused() {
    let mut index = good_index();
    index["weight_map"]["z"] = "model-00003-of-00003.safetensors".into();
    let (_dir, result) = two_shards_with_index(&index.to_string());
    assert_fault!(result, INDEX, CheckpointFault::IndexShardMissing { tensor, .. } if tensor == "z");
}

#[test]
fn ix_01_index_naming_a_non_shard_file_is_refused() {
    let mut index = good_index();
    index["weight_map"]["z"] = "config.json".into();
    let (dir, _) = two_shards_with_index("{}");
    dir.write("config.json", b"{}");
    dir.write(INDEX, index.to_string().as_bytes());
    assert_fault!(
        TensorIndex::open(dir.path()),
        INDEX,
        CheckpointFault::IndexShardMissing { shard, .. } if shard == "config.json"
    );
}

#[test]
fn ix_02_tensor_in_the_wrong_shard_is_refused() {
    let mut index = good_index();
    index["weight_map"]["z"] = S1.into();
    let (_dir, result) = two_shards_with_index(&index.to_string());
    assert_fault!(
        result,
        INDEX,
        CheckpointFault::IndexWrongShard { tensor, index_shard, header_shard }
            if tensor == "z" && index_shard == S1 && header_shard == S2
    );
}

#[test]
fn ix_02_header_tensor_missing_from_the_index_is_refused() {
    let mut index = good_index();
    index["weight_map"].as_object_mut().unwrap().remove("y");
    let (_dir, result) = two_shards_with_index(&index.to_string());
    assert_fault!(
        result,
        INDEX,
        CheckpointFault::IndexMissingTensor { tensor, shard } if tensor == "y" && shard == S1
    );
}

#[test]
fn ix_02_index_tensor_in_no_header_is_refused() {
    let mut index = good_index();
    index["weight_map"]["ghost"] = S2.into();
    let (_dir, result) = two_shards_with_index(&index.to_string());
    assert_fault!(result, INDEX, CheckpointFault::IndexUnknownTensor { tensor, .. } if tensor == "ghost");
}

#[test]
fn ix_02_duplicate_key_in_weight_map_is_refused() {
    for second in [S1, S2] {
        let text = format!(r#"{{"weight_map":{{"x":"{S1}","y":"{S1}","z":"{S2}","x":"{second}"}}}}"#);
        let (_dir, result) = two_shards_with_index(&text);
        assert_fault!(
            result,
            INDEX,
            CheckpointFault::IndexDuplicateKey { key, within: "weight_map" } if key == "x"
        );
    }
}

#[test]
fn ix_02_duplicate_top_level_or_metadata_keys_are_refused() {
    let wm = format!(r#"{{"x":"{S1}","y":"{S1}","z":"{S2}"}}"#);
    let text = format!(r#"{{"weight_map":{wm},"weight_map":{wm}}}"#);
    let (_dir, result) = two_shards_with_index(&text);
    assert_fault!(result, INDEX, CheckpointFault::IndexDuplicateKey { within: "top level", .. });
    let text = format!(r#"{{"metadata":{{"total_size":12,"total_size":12}},"weight_map":{wm}}}"#);
    let (_dir, result) = two_shards_with_index(&text);
    assert_fault!(result, INDEX, CheckpointFault::IndexDuplicateKey { within: "metadata", .. });
}

#[test]
fn ix_03_total_size_not_matching_the_shards_is_refused() {
    let mut index = good_index();
    index["metadata"]["total_size"] = 13.into();
    let (_dir, result) = two_shards_with_index(&index.to_string());
    assert_fault!(result, INDEX, CheckpointFault::IndexTotalSize { index_total: 13, actual_total: 12 });
}

#[test]
fn ix_03_total_size_that_is_not_an_integer_is_refused() {
    for bad in [serde_json::json!(12.0), serde_json::json!("12"), serde_json::json!(-12)] {
        let mut index = good_index();
        index["metadata"]["total_size"] = bad;
        let (_dir, result) = two_shards_with_index(&index.to_string());
        assert_fault!(result, INDEX, CheckpointFault::IndexTotalSizeInvalid { .. });
    }
}

#[test]
fn ix_03_index_over_64_mib_is_refused_before_reading() {
    let (dir, _) = two_shards_with_index("{}");
    let path = dir.path().join(INDEX);
    fs::OpenOptions::new().write(true).open(&path).unwrap().set_len((64 << 20) + 1).unwrap();
    let start = Instant::now();
    let result = TensorIndex::open(dir.path());
    assert_fault!(
        result,
        INDEX,
        CheckpointFault::IndexTooLarge { len, max } if *len == (64 << 20) + 1 && *max == 64 << 20
    );
    assert!(start.elapsed() < Duration::from_millis(100));
}

#[test]
fn index_shapes_that_are_not_usable_are_refused() {
    let (_dir, result) = two_shards_with_index("[]");
    assert_fault!(result, INDEX, CheckpointFault::IndexNotObject { found: "array" });
    let (_dir, result) = two_shards_with_index(r#"{"metadata":{"total_size":12}}"#);
    assert_fault!(result, INDEX, CheckpointFault::IndexMissingWeightMap);
    let (_dir, result) = two_shards_with_index(r#"{"weight_map":["x"]}"#);
    assert_fault!(result, INDEX, CheckpointFault::IndexWeightMapNotObject { found: "array" });
    let (_dir, result) = two_shards_with_index(r#"{"metadata":[],"weight_map":{}}"#);
    assert_fault!(result, INDEX, CheckpointFault::IndexMetadataNotObject { found: "array" });
    let (_dir, result) = two_shards_with_index(r#"{"weight_map":{"x":1}}"#);
    assert_fault!(result, INDEX, CheckpointFault::IndexShardNotString { found: "number", .. });
    let (_dir, result) = two_shards_with_index(r#"{"weight_map":{"x":"#);
    assert_fault!(result, INDEX, CheckpointFault::JsonSyntax { .. });
}

#[test]
fn index_that_is_a_directory_is_refused() {
    let (dir, _) = two_shards_with_index("{}");
    fs::remove_file(dir.path().join(INDEX)).unwrap();
    fs::create_dir(dir.path().join(INDEX)).unwrap();
    assert_fault!(TensorIndex::open(dir.path()), INDEX, CheckpointFault::NotRegularFile { kind: "directory" });
}

// ------------------------------------------------------------------------------------------
// Reads through the index: misuse is refused, not served.
// ------------------------------------------------------------------------------------------

#[test]
fn forged_tensor_info_is_refused() {
    let dir = TempDir::new();
    dir.write(SHARD, &shard(&[t("a", "U8", &[4], vec![1; 4])], true, None));
    let index = TensorIndex::open(dir.path()).unwrap();
    let real = index.get("a").unwrap().clone();
    let forged = [
        TensorInfo { nbytes: u64::MAX, ..real.clone() },
        TensorInfo { offset: 0, ..real.clone() },
        TensorInfo { shard_idx: 7, ..real.clone() },
        TensorInfo { name: "b".into(), ..real.clone() },
    ];
    for info in forged {
        match index.read(&info) {
            Err(Error::Checkpoint { fault: CheckpointFault::TensorNotInIndex { name }, .. }) => {
                assert_eq!(name, info.name)
            }
            other => panic!("expected TensorNotInIndex, got {other:?}"),
        }
    }
    assert_eq!(index.read(&real).unwrap(), [1; 4]);
}

#[test]
fn read_into_a_buffer_of_the_wrong_size_is_refused() {
    let dir = TempDir::new();
    dir.write(SHARD, &shard(&[t("a", "U8", &[4], vec![1; 4])], true, None));
    let index = TensorIndex::open(dir.path()).unwrap();
    let info = index.get("a").unwrap();
    let mut small = [0u8; 3];
    assert_fault!(
        index.read_into(info, &mut small),
        SHARD,
        CheckpointFault::ReadBufferSize { expected: 4, actual: 3, .. }
    );
}
