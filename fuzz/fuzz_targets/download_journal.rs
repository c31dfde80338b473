//! The download journal (`k3_store::download::journal::resume_point`): which durable
//! prefix of a partial file a resume may keep.
//!
//! Input: sections: the journal text, then the partial file's bytes (the resume reads them
//! back). The journal describes `HEADER_*` below: a 64 KiB file.
//! Invariants of a resume: the kept records are indexed `0..n`, start at byte 0, each
//! chunk non-empty and starting where the one before ended; the resume continues at the
//! last kept chunk's end, with the next index `n`; that end is inside the partial file and
//! the file's size (the journal is never ahead of the data); every kept chunk's CRC matches
//! the data and the hash carried on is the SHA-256 of the data up to the resume; the
//! rewritten journal resumes at the same point with the same records.
#![no_main]

use k3_fuzz::sections;
use k3_store::download::journal::{journal_text, resume_point, state_hex, JournalHeader, JOURNAL_VERSION};
use sha2::{Digest, Sha256};
use libfuzzer_sys::fuzz_target;

const HEADER_SIZE: u64 = 1 << 16;

fn header() -> JournalHeader {
    JournalHeader {
        k3_journal: JOURNAL_VERSION,
        path: "model-00001-of-000096.safetensors".into(),
        size: HEADER_SIZE,
        sha256: "5d41402abc4b2a76b9719d911017c592ae5e3b6d3b1c8f7e1a9f3b2c4d5e6f70".into(),
        commit: "0123456789abcdef0123456789abcdef01234567".into(),
    }
}

fuzz_target!(|data: &[u8]| {
    let parts = sections(data);
    let text = parts.first().copied().unwrap_or_default();
    let file = parts.get(1).copied().unwrap_or_default();
    let header = header();
    let bytes = |start: u64, end: u64| file.get(usize::try_from(start).ok()?..usize::try_from(end).ok()?);
    let mut read = |start: u64, end: u64, sink: &mut dyn FnMut(&[u8])| {
        sink(bytes(start, end)?);
        Some(())
    };
    let Some(point) = resume_point(text, &header, &mut read) else { return };
    let records = &point.records;
    let last = records.last().expect("a resume keeps at least one record");
    assert_eq!(records[0].start, 0, "the first kept chunk does not start at byte 0");
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.index, i as u64);
        assert!(r.end > r.start, "an empty chunk");
        if let Some(next) = records.get(i + 1) {
            assert_eq!(next.start, r.end, "chunks {i} and {} are not contiguous", i + 1);
        }
    }
    assert_eq!(point.resume.end, last.end);
    assert_eq!(point.resume.next_index, records.len() as u64);
    assert!(point.resume.end <= file.len() as u64, "the journal is ahead of the data");
    assert!(point.resume.end <= header.size, "the resume is past the file's size");
    for r in records {
        assert_eq!(bytes(r.start, r.end).map(crc32fast::hash), Some(r.crc32), "chunk {} does not match", r.index);
    }
    let whole = bytes(0, point.resume.end).expect("the resume is inside the data");
    assert_eq!(state_hex(&point.resume.hasher), state_hex(&Sha256::new_with_prefix(whole)), "the hash is not the data's");

    let rewritten = journal_text(&header, records).expect("records serialise");
    let again = resume_point(rewritten.as_bytes(), &header, &mut read).expect("the rewritten journal resumes");
    assert_eq!(&again.records, records, "the rewritten journal keeps other records");
    assert_eq!((again.resume.end, again.resume.next_index), (point.resume.end, point.resume.next_index));
});
