//! ST-01..ST-05, ST-16: sizes before any allocation, and the header text.

use super::*;

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

/// A shard of `file_len` bytes whose one U8 tensor fills the data section after a valid
/// header padded with spaces to `header_len` bytes (the data is a sparse hole).
fn padded_shard(dir: &TempDir, header_len: u64, file_len: u64) -> std::path::PathBuf {
    let data_len = file_len - 8 - header_len;
    let mut header = obj(&[e("a", "U8", &[data_len], 0, data_len)]);
    assert!(header.len() as u64 <= header_len);
    header.extend(std::iter::repeat_n(' ', (header_len as usize) - header.len()));
    let path = dir.write(SHARD, &file_bytes(header.as_bytes(), &[]));
    fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(file_len).unwrap();
    path
}

#[test]
fn st_03_a_header_that_is_most_of_its_file_is_refused_under_the_16_mib_cap() {
    // The probe's case: a 16 MB header that is 98 % of its file was parsed.
    let dir = TempDir::new();
    let header_len = 16_000_000;
    padded_shard(&dir, header_len, header_len * 100 / 98);
    assert_fault!(
        TensorIndex::open(dir.path()),
        SHARD,
        CheckpointFault::HeaderTooLarge { header_len: 16_000_000, max: 1_048_576 }
    );
}

#[test]
fn st_03_above_1_mib_a_header_may_be_1_percent_of_its_file_and_not_a_byte_more() {
    let limit: u64 = 2 << 20;
    let file_len = limit * 100;
    let dir = TempDir::new();
    padded_shard(&dir, limit, file_len);
    let index = TensorIndex::open(dir.path()).expect("a header of exactly 1 % of its file");
    assert_eq!(index.len(), 1);
    let dir = TempDir::new();
    padded_shard(&dir, limit + 1, file_len);
    assert_fault!(
        TensorIndex::open(dir.path()),
        SHARD,
        CheckpointFault::HeaderTooLarge { header_len, max } if *header_len == limit + 1 && *max == limit
    );
}

#[test]
fn st_03_a_small_checkpoint_s_header_of_up_to_1_mib_opens_whatever_its_share() {
    // The tiny fixtures' headers are up to 3.5 % of their shards; below 1 MiB no share is
    // refused (here 85 %).
    let dir = TempDir::new();
    padded_shard(&dir, 600_000, 700_000);
    assert_eq!(TensorIndex::open(dir.path()).expect("a 600 kB header").len(), 1);
    let dir = TempDir::new();
    padded_shard(&dir, (1 << 20) + 1, 1_200_000);
    assert_fault!(TensorIndex::open(dir.path()), SHARD, CheckpointFault::HeaderTooLarge { max: 1_048_576, .. });
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
