//! The shared I/O engine (`io::Reader`): a window read in pieces in flight together holds
//! exactly the file's bytes, its CRC-32 (or CRC32C) is the payload's, whatever the piece size, depth
//! and alignment; a file that ends before the window is a named error.

use k3_io::{Blob, Checksum, DirectFile, OsRead, PositionedRead, ReadPattern, Reader, Urgency};
use k3_tests::scratch_dir;

fn file_of(len: usize) -> (std::path::PathBuf, Vec<u8>) {
    let dir = scratch_dir("reader");
    let bytes: Vec<u8> = (0..len).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    let path = dir.join(format!("data-{len}.bin"));
    std::fs::write(&path, &bytes).unwrap();
    (path, bytes)
}

#[test]
fn every_pattern_reads_the_same_bytes_and_crc() {
    let (path, bytes) = file_of(3 * 1024 * 1024 + 12_345);
    let file = DirectFile::open(&path).unwrap();
    let windows = [(0u64, 4096usize), (17, 1_000_000), (8191, 2 * 1024 * 1024 + 3), (5000, bytes.len() - 5000)];
    for request_bytes in [4096, 64 * 1024, 1 << 20] {
        for depth in [1, 3, 8] {
            let reader = Reader::new(ReadPattern { request_bytes, depth }).unwrap();
            for &(offset, len) in &windows {
                let mut blob = Blob::zeroed(len + 8192);
                let urgency = if depth == 3 { Urgency::Next } else { Urgency::Now };
                let read = reader.read_window_into(&file, &mut blob, offset, len, urgency, Checksum::Crc32).unwrap();
                let c = reader.read_window_into(&file, &mut blob, offset, len, urgency, Checksum::Crc32c).unwrap();
                let got = &blob.bytes()[read.payload_start..read.payload_start + len];
                let want = &bytes[offset as usize..offset as usize + len];
                assert!(got == want, "{request_bytes} B × {depth}: window {offset}+{len} differs");
                assert_eq!(read.checksum, crc32fast::hash(want), "{request_bytes} B × {depth}: window {offset}+{len}");
                assert_eq!(c.checksum, crc32c::crc32c(want), "CRC32C, {request_bytes} B × {depth}: {offset}+{len}");
            }
        }
    }
}

#[test]
fn a_file_that_ends_early_is_a_named_error_and_bad_patterns_are_refused() {
    let (path, bytes) = file_of(100_000);
    let file = DirectFile::open(&path).unwrap();
    let reader = Reader::new(ReadPattern { request_bytes: 16 * 1024, depth: 4 }).unwrap();
    let mut blob = Blob::zeroed(200_000);
    let e = reader
        .read_window_into(&file, &mut blob, 50_000, bytes.len(), Urgency::Now, Checksum::Crc32c)
        .unwrap_err()
        .to_string();
    assert!(e.contains("data-100000.bin") && e.contains("short read"), "{e}");
    let mut small = Blob::zeroed(4096);
    assert!(
        reader.read_window_into(&file, &mut small, 0, 10_000, Urgency::Next, Checksum::Crc32).is_err(),
        "a buffer too small is refused"
    );
    for bad in [ReadPattern { request_bytes: 1000, depth: 4 }, ReadPattern { request_bytes: 4096, depth: 0 }] {
        assert!(Reader::new(bad).is_err(), "{bad:?}");
    }
}

/// issue 13 (reads within limits): one logical read of 2.3 GiB — past what a single
/// `pread` may return on Linux (just under 2 GiB) — is split into calls of at most 1 GiB
/// and lands every byte where it belongs (a sparse file with markers at the seams); the
/// calls are watched through the storage seam.
#[test]
fn a_read_past_two_gib_is_split_into_calls_and_lands_every_byte() {
    let dir = scratch_dir("reader-sparse");
    let path = dir.join("sparse.bin");
    let len: u64 = 2_469_606_195; // 2.3 GiB
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(len).unwrap();
    let gib = 1u64 << 30;
    let marks = [0, gib - 1, gib, 2 * gib - 1, 2 * gib, 2 * gib + 4097, len - 1];
    for (i, &at) in marks.iter().enumerate() {
        k3_io::os::write_all_at(&file, &[0xA0 + i as u8], at).unwrap();
    }
    drop(file);
    let direct = DirectFile::open(&path).unwrap();
    // Every `pread` the loop makes, seen through the storage seam.
    let calls = Calls::default();
    let mut blob = Blob::zeroed(len as usize);
    let padded = k3_io::direct::widen(0, len as usize).1;
    direct.read_range_via(&calls, &mut blob.pages_mut()[..padded], 0, len as usize).unwrap();
    let asked = calls.0.lock().unwrap().clone();
    assert!(asked.len() >= 3, "2.3 GiB in {} calls: {asked:?}", asked.len());
    assert!(asked.iter().all(|&n| n <= gib as usize), "a call asked for more than 1 GiB: {asked:?}");
    let bytes = blob.bytes();
    for (i, &at) in marks.iter().enumerate() {
        assert_eq!(bytes[at as usize], 0xA0 + i as u8, "marker {i} at {at}");
    }
    assert_eq!(bytes[(gib + 12_345) as usize], 0, "a hole reads as zero");
    drop(blob);
    std::fs::remove_file(&path).ok();
}

/// The OS `pread`, recording how many bytes each call asked for.
#[derive(Debug, Default)]
struct Calls(std::sync::Mutex<Vec<usize>>);

impl PositionedRead for Calls {
    fn read_at(
        &self,
        file: &std::fs::File,
        path: &std::path::Path,
        buf: &mut [u8],
        offset: u64,
    ) -> std::io::Result<usize> {
        self.0.lock().unwrap().push(buf.len());
        OsRead.read_at(file, path, buf, offset)
    }
}
