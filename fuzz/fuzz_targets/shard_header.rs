//! A safetensors shard's first bytes → its tensor table (`k3_io::format::remote`).
//!
//! Input: `[u64 LE file length][8-byte length prefix][header bytes…]`.
//! Invariants of an accepted header: the prefix passes `header_len`; the tensors are
//! ordered by offset, have unique names, each byte range lies inside the data section
//! (`8 + N ..= file length`) with `nbytes = elements × dtype size`, and the non-empty ones
//! tile the data section exactly; the table round-trips: re-serialised as a canonical header
//! and parsed again, it is the same table (offsets moved by the header-length difference);
//! `check_header` agrees on the count.
#![no_main]

use std::collections::HashSet;

use k3_io::format::remote::{check_header, header_len, header_tensors, PREFIX_BYTES};
use k3_io::format::TensorInfo;
use k3_fuzz::u64_at;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Map, Value};

fuzz_target!(|data: &[u8]| {
    let file_len = u64_at(data, 0);
    let Some(head) = data.get(8..) else { return };
    let Some(prefix) = head.get(..8).and_then(|p| <[u8; 8]>::try_from(p).ok()) else { return };
    let Ok(n) = header_len(prefix, file_len) else { return };
    let Some(header) = head.get(8..).and_then(|h| h.get(..usize::try_from(n).ok()?)) else { return };
    let Ok(tensors) = header_tensors(header, file_len) else { return };
    check_table(&tensors, PREFIX_BYTES + n, file_len);
    assert_eq!(check_header(header, file_len), Ok(tensors.len()));

    // Round trip: the canonical header of this table describes the same tensors.
    let data_start = PREFIX_BYTES + n;
    let data_len = file_len - data_start;
    let canonical = canonical_header(&tensors, data_start);
    let canonical_start = PREFIX_BYTES + canonical.len() as u64;
    let Some(canonical_len) = canonical_start.checked_add(data_len) else { return };
    let again = header_tensors(&canonical, canonical_len).expect("the canonical header of an accepted table parses");
    let moved: Vec<TensorInfo> =
        again.into_iter().map(|t| TensorInfo { offset: t.offset - canonical_start + data_start, ..t }).collect();
    assert_eq!(sorted(moved), sorted(tensors));
});

fn check_table(tensors: &[TensorInfo], data_start: u64, file_len: u64) {
    let mut names = HashSet::new();
    let mut cursor = data_start;
    let mut last_offset = data_start;
    for t in tensors {
        assert!(names.insert(t.name.as_str()), "duplicate name {}", t.name);
        assert_eq!(t.shard_idx, 0);
        assert!(t.offset >= last_offset, "not ordered by offset");
        last_offset = t.offset;
        let end = t.offset.checked_add(t.nbytes).expect("end fits a u64");
        assert!(t.offset >= data_start && end <= file_len, "{} lies outside the data section", t.name);
        let elements = t.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).expect("element count fits");
        assert_eq!(elements.checked_mul(t.dtype.size_bytes()), Some(t.nbytes), "{} size", t.name);
        // An empty tensor may share its offset with a neighbour, never sit inside one.
        assert_eq!(t.offset, cursor, "{} leaves a hole or overlaps", t.name);
        cursor = end;
    }
    assert_eq!(cursor, file_len, "the tensors do not end at the end of the file");
}

fn canonical_header(tensors: &[TensorInfo], data_start: u64) -> Vec<u8> {
    let mut map = Map::new();
    for t in tensors {
        let begin = t.offset - data_start;
        let entry = json!({ "dtype": t.dtype.name(), "shape": t.shape, "data_offsets": [begin, begin + t.nbytes] });
        map.insert(t.name.clone(), entry);
    }
    serde_json::to_vec(&Value::Object(map)).expect("a JSON object serialises")
}

fn sorted(mut tensors: Vec<TensorInfo>) -> Vec<TensorInfo> {
    tensors.sort_by(|a, b| a.name.cmp(&b.name));
    tensors
}
