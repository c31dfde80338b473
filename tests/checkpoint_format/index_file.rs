//! IX-01..IX-03: `model.safetensors.index.json`, and reads through the index.

use super::*;

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
            Err(Error::Checkpoint { fault, .. }) => match *fault {
                CheckpointFault::TensorNotInIndex { name } => assert_eq!(name, info.name),
                other => panic!("expected TensorNotInIndex, got {other:?}"),
            },
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
