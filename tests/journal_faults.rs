//! Issue 13 item 2, the download journal: one session of `k3-store`'s `PartialFile` (open
//! — resuming from a journal when there is one —, then chunk after chunk: write →
//! `fdatasync` → journal append → `fsync`), and one of the download's `ChunkWriter` (chunks
//! written and hashed on two threads, made durable two at a time: write, write → one
//! `fdatasync` → both records → one `fsync`; issue 44), through a
//! `k3_tests::faults::FaultyStorage`,
//! failing each of its operations in turn with `ENOSPC` or `EIO`, or cutting the power there
//! (unsynced data dropped, then a "reboot").
//! Promise checked for every operation: the next open resumes only from verified data — its
//! durable end holds exactly the source's bytes, never less than what the session had
//! acknowledged (after a power cut: exactly that), and finishing from there gives the file's
//! SHA-256 (the journalled hash state is the bytes').

use std::sync::Arc;

use k3_store::download::chunk_buf::ChunkBuf;
use k3_store::download::layout::StoreLayout;
use k3_store::download::partial::PartialFile;
use k3_store::download::writer::ChunkWriter;
use k3_store::hub::{FileHash, RepoFile};
use k3_tests::faults::{FaultyStorage, WriteFault};
use k3_tests::scratch_dir;
use sha2::{Digest, Sha256};

const CHUNK: usize = 16 << 10;
const N_CHUNKS: usize = 5;

struct Source {
    bytes: Vec<u8>,
    file: RepoFile,
    sha: String,
}

fn source() -> Source {
    let bytes: Vec<u8> = (0..CHUNK * N_CHUNKS + 77).map(|i| (i * 31 % 251) as u8).collect();
    let sha = hex(&Sha256::digest(&bytes));
    let file = RepoFile {
        path: "sub/model-00001.safetensors".into(),
        size: bytes.len() as u64,
        hash: FileHash::Sha256(sha.clone()),
    };
    Source { bytes, file, sha }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A store whose partial already holds the first `chunks` chunks durably (a resumed session).
fn store_with(src: &Source, tag: &str, chunks: usize) -> StoreLayout {
    let layout = StoreLayout::new(scratch_dir(tag));
    if chunks > 0 {
        let mut p = PartialFile::open(&layout, &src.file, &src.sha, "c0mmit").unwrap();
        for c in src.bytes.chunks(CHUNK).take(chunks) {
            p.append(c).unwrap();
        }
    }
    layout
}

/// How a session makes its chunks durable.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// `PartialFile::append`: each chunk synced and journaled on its own.
    EachChunk,
    /// The download's `ChunkWriter`: two chunks per `fdatasync`.
    Grouped,
}

/// One session through `storage`: open, then write every remaining chunk, stopping at the
/// first error. Returns the durable end the session had acknowledged.
fn session(src: &Source, layout: &StoreLayout, storage: &FaultyStorage, acked_before: u64, mode: Mode) -> u64 {
    let storage: Arc<FaultyStorage> = Arc::new(storage.clone());
    let Ok(mut p) = PartialFile::open_in(storage, layout, &src.file, &src.sha, "c0mmit") else {
        return acked_before;
    };
    if let Mode::Grouped = mode {
        return grouped_session(src, p);
    }
    let mut acked = p.durable_end();
    while (acked as usize) < src.bytes.len() {
        let end = (acked as usize + CHUNK).min(src.bytes.len());
        if p.append(&src.bytes[acked as usize..end]).is_err() {
            break;
        }
        acked = p.durable_end();
    }
    acked
}

/// The rest of the file through a `ChunkWriter` that syncs every two chunks; what it holds
/// durable when it stops (after a failure it keeps the group written before it).
fn grouped_session(src: &Source, p: PartialFile) -> u64 {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut at = p.durable_end() as usize;
        let mut w = ChunkWriter::new(p, 2 * CHUNK as u64);
        let mut failed = false;
        while at < src.bytes.len() {
            let end = (at + CHUNK).min(src.bytes.len());
            if w.write(ChunkBuf::copy_of(&src.bytes[at..end])).await.is_err() {
                failed = true;
                break;
            }
            at = end;
        }
        if !failed {
            let _ = w.settle().await;
        }
        w.durable_end()
    })
}

/// The next open resumes at a verified end ≥ `acked` (= `acked` when `exact`), and
/// finishing from there gives the file's SHA-256.
fn check_resume(src: &Source, layout: &StoreLayout, acked: u64, exact: bool, what: &str) {
    let mut p = PartialFile::open(layout, &src.file, &src.sha, "c0mmit").unwrap_or_else(|e| panic!("{what}: {e}"));
    let end = p.durable_end();
    assert!(end >= acked, "{what}: resumed at {end}, before the acknowledged {acked}");
    if exact {
        assert_eq!(end, acked, "{what}: resumed past what the journal made durable");
    }
    let on_disk = std::fs::read(layout.partial(&src.file.path)).unwrap();
    assert!(on_disk[..end as usize] == src.bytes[..end as usize], "{what}: the resumed prefix is not the source's");
    for c in src.bytes[end as usize..].chunks(CHUNK) {
        p.append(c).unwrap();
    }
    assert_eq!(p.digest(), src.sha, "{what}: the hash after resuming");
}

/// The operations of a clean session from `chunks` chunks already durable.
fn clean_ops(src: &Source, chunks: usize, mode: Mode) -> Vec<&'static str> {
    let layout = store_with(src, &format!("journal-clean-{chunks}-{mode:?}"), chunks);
    let counting = FaultyStorage::new(WriteFault::None);
    let acked = session(src, &layout, &counting, 0, mode);
    assert_eq!(acked, src.bytes.len() as u64, "a clean session writes every chunk");
    counting.log()
}

#[test]
fn journal_faults_enospc_or_eio_at_every_operation_resume_only_from_verified_data() {
    enospc_or_eio_at_every_operation(Mode::EachChunk);
}

#[test]
fn journal_faults_grouped_enospc_or_eio_at_every_operation_resume_only_from_verified_data() {
    enospc_or_eio_at_every_operation(Mode::Grouped);
}

#[test]
fn journal_faults_a_power_cut_at_every_operation_resumes_exactly_the_acknowledged_chunks() {
    power_cut_at_every_operation(Mode::EachChunk);
}

#[test]
fn journal_faults_grouped_a_power_cut_at_every_operation_resumes_exactly_the_acknowledged_chunks() {
    power_cut_at_every_operation(Mode::Grouped);
}

fn enospc_or_eio_at_every_operation(mode: Mode) {
    let src = source();
    for chunks in [0, 2] {
        let log = clean_ops(&src, chunks, mode);
        let ops = log.len();
        // Each chunk: write, sync, journal write, journal sync; grouped, the syncs are shared.
        let per_chunk = match mode {
            Mode::EachChunk => 4,
            Mode::Grouped => 2,
        };
        assert!(ops > per_chunk * (N_CHUNKS - chunks), "{ops} operations for {} chunks", N_CHUNKS - chunks);
        for (at, op) in log.iter().enumerate() {
            let errno = if at % 2 == 0 { libc::ENOSPC } else { libc::EIO };
            let layout = store_with(&src, &format!("journal-fail-{mode:?}-{chunks}-{at}"), chunks);
            let acked_before = (chunks * CHUNK) as u64;
            let storage = FaultyStorage::new(WriteFault::Fail { at, errno });
            let acked = session(&src, &layout, &storage, acked_before, mode);
            let what = format!("{mode:?}: errno {errno} at operation {at} of {ops} ({op}), from {chunks} chunks");
            // Only a failed read of the resume's CRC check may go unnoticed: that chunk counts
            // as unverified, and the session fetches it again.
            let absorbed = chunks > 0 && *op == "read_at";
            assert!(acked < src.bytes.len() as u64 || absorbed, "{what}: the failure went unnoticed");
            check_resume(&src, &layout, acked, false, &what);
        }
    }
}

fn power_cut_at_every_operation(mode: Mode) {
    let src = source();
    for chunks in [0, 2] {
        let ops = clean_ops(&src, chunks, mode).len();
        for at in 0..ops {
            let layout = store_with(&src, &format!("journal-cut-{mode:?}-{chunks}-{at}"), chunks);
            let storage = FaultyStorage::new(WriteFault::PowerCut { at });
            let acked_before = (chunks * CHUNK) as u64;
            let acked = session(&src, &layout, &storage, acked_before, mode);
            storage.reboot().unwrap();
            let what = format!("{mode:?}: power cut at operation {at} of {ops}, from {chunks} chunks");
            check_resume(&src, &layout, acked, true, &what);
        }
    }
}
