//! ST-06..ST-11: tensor names and the data layout.

use super::*;

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
