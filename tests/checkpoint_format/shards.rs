//! ST-19, ST-20 and shard numbering (IX-03): the files themselves and the set of shards.

use super::*;

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

// FIFOs as Unix makes them.
#[cfg(unix)]
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

#[cfg(unix)]
#[test]
fn st_20_socket_named_like_a_shard_is_refused() {
    let dir = TempDir::new();
    let _listener = std::os::unix::net::UnixListener::bind(dir.path().join(SHARD)).unwrap();
    assert_fault!(TensorIndex::open(dir.path()), SHARD, CheckpointFault::NotRegularFile { kind: "socket" });
}

#[cfg(unix)]
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
