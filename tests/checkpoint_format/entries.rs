//! ST-12..ST-15: entry fields.

use super::*;

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
    // Each file is 100× its header (a sparse hole), so the ST-03 share does not refuse it first.
    for depth in [100_000, 2_000_000] {
        let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let header = format!(r#"{{"__metadata__":{{"a":{arrays}}}}}"#);
        assert_fault!(
            try_header_sparse(&header, 100 * header.len() as u64),
            SHARD,
            CheckpointFault::MetadataValueNotString { found: "array", .. }
        );
        let objects = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
        let header = format!(r#"{{"__metadata__":{{"k":{objects}}}}}"#);
        assert_fault!(
            try_header_sparse(&header, 100 * header.len() as u64),
            SHARD,
            CheckpointFault::MetadataValueNotString { found: "object", .. }
        );
        let header = raw_entry("\"U8\"", &format!("[{arrays}]"), "[0,0]");
        assert_fault!(
            try_header_sparse(&header, 100 * header.len() as u64),
            SHARD,
            CheckpointFault::DimNotInteger { index: 0, .. }
        );
        let header = format!(r#"{{"w":{{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":{objects}}}}}"#);
        assert_fault!(
            try_header_sparse(&header, 100 * header.len() as u64),
            SHARD,
            CheckpointFault::EntryUnknownField { .. }
        );
    }
}
