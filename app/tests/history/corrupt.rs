//! Damaged history files at startup (RELIABILITY PS-05, PS-11): each corruption is made
//! from a valid database, then opened the way the app starts (`history::open_for_app`, what
//! `AppState::start` calls). A damaged file is moved aside with its bytes unchanged, a new
//! empty history starts and a notice names the file kept; a newer app's file is left
//! untouched and the session runs on a temporary history; a damaged leftover beside a sound
//! file is moved aside and the history opens intact.

use std::path::{Path, PathBuf};

use k3_app::history::{open_for_app, HistoryStore, NewAssistantMessage, SCHEMA_VERSION};
use k3_app::history::{HistoryNoticeKind, MessageStatus, SamplingSettings};

const PAGE: usize = 4096;

/// A valid history with enough rows for several pages (overflow pages included).
fn valid_history(path: &Path) -> Vec<String> {
    let mut store = open_for_app(path).unwrap().store;
    let mut texts = Vec::new();
    for c in 0..3 {
        let conv = store.create(&SamplingSettings::default()).unwrap();
        for i in 0..8 {
            let user = format!("question {c}.{i}: {}", "why? ".repeat(i * 40));
            store.add_user_message(conv.id, &user).unwrap();
            let answer = format!("answer {c}.{i}: {}", "because. ".repeat(i * 150 + 5));
            let reply = NewAssistantMessage {
                content: answer.clone(),
                think: None,
                status: MessageStatus::Complete,
                stats: None,
                failure: None,
                tool_calls: Vec::new(),
            };
            store.add_assistant_message(conv.id, &reply).unwrap();
            texts.extend([user, answer]);
        }
    }
    drop(store);
    assert!(!wal(path).exists(), "a clean close leaves no WAL");
    texts
}

fn wal(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}-wal", path.display()))
}

fn journal(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}-journal", path.display()))
}

/// Deterministic bytes (xorshift) for garbage.
fn garbage(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn rewrite(path: &Path, f: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(path).unwrap();
    f(&mut bytes);
    std::fs::write(path, bytes).unwrap();
}

fn put(bytes: &mut [u8], at: usize, data: &[u8]) {
    bytes[at..at + data.len()].copy_from_slice(data);
}

fn pages(path: &Path) -> usize {
    std::fs::metadata(path).unwrap().len() as usize / PAGE
}

fn set_version(path: &Path, version: i64) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(&format!("PRAGMA user_version = {version}")).unwrap();
}

type Corrupt = fn(&Path);

/// Each corruption, named; all leave a file the app must set aside.
fn damaging() -> Vec<(&'static str, Corrupt)> {
    vec![
        ("truncated to 0 bytes", |p| rewrite(p, |b| b.clear())),
        ("truncated inside the header", |p| rewrite(p, |b| b.truncate(60))),
        ("truncated mid first page", |p| rewrite(p, |b| b.truncate(2000))),
        ("truncated mid file, mid page", |p| rewrite(p, |b| b.truncate(b.len() / 2 / PAGE * PAGE + 1234))),
        ("truncated at a page boundary, half the pages", |p| rewrite(p, |b| b.truncate(b.len() / 2 / PAGE * PAGE))),
        ("last page cut off", |p| rewrite(p, |b| b.truncate(b.len() - PAGE))),
        ("one byte cut off", |p| rewrite(p, |b| b.truncate(b.len() - 1))),
        ("garbage page 2", |p| rewrite(p, |b| put(b, PAGE, &garbage(2, PAGE)))),
        ("garbage page in the middle", |p| {
            let at = pages(p) / 2 * PAGE;
            rewrite(p, |b| put(b, at, &garbage(3, PAGE)))
        }),
        ("garbage last page", |p| {
            let at = (pages(p) - 1) * PAGE;
            rewrite(p, |b| put(b, at, &garbage(4, PAGE)))
        }),
        ("garbage pages 2 to 4", |p| rewrite(p, |b| put(b, PAGE, &garbage(5, 3 * PAGE)))),
        ("zeroed first page", |p| rewrite(p, |b| put(b, 0, &[0; PAGE]))),
        ("zeroed page 3", |p| rewrite(p, |b| put(b, 2 * PAGE, &[0; PAGE]))),
        ("b-tree page header smashed", |p| rewrite(p, |b| put(b, 2 * PAGE, &[0xff; 12]))),
        ("overwritten header magic", |p| rewrite(p, |b| put(b, 0, b"SQLite format 4\0"))),
        ("page size field not a power of two", |p| rewrite(p, |b| put(b, 16, &1000u16.to_be_bytes()))),
        ("page size field wrong (1024)", |p| rewrite(p, |b| put(b, 16, &1024u16.to_be_bytes()))),
        ("page size field wrong (8192)", |p| rewrite(p, |b| put(b, 16, &8192u16.to_be_bytes()))),
        ("write version byte impossible", |p| rewrite(p, |b| b[18] = 7)),
        ("payload fraction impossible", |p| rewrite(p, |b| b[21] = 99)),
        ("header page count beyond the file", |p| rewrite(p, |b| put(b, 28, &100_000u32.to_be_bytes()))),
        ("random bytes, not SQLite", |p| std::fs::write(p, garbage(6, 64 * 1024)).unwrap()),
        ("a JSON file", |p| {
            std::fs::write(
                p,
                br#"{"conversations": [{"title": "not a database", "messages": []}], "version": 1}"#.repeat(4),
            )
            .unwrap()
        }),
        ("a short text file", |p| std::fs::write(p, b"hello\n").unwrap()),
        ("a directory", |p| {
            std::fs::remove_file(p).unwrap();
            std::fs::create_dir(p).unwrap();
            std::fs::write(p.join("inside.txt"), b"kept").unwrap();
        }),
        ("a foreign SQLite database", |p| {
            std::fs::remove_file(p).unwrap();
            let conn = rusqlite::Connection::open(p).unwrap();
            conn.execute_batch("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('someone else''s');").unwrap();
        }),
        ("our version with the messages table gone", |p| {
            let conn = rusqlite::Connection::open(p).unwrap();
            conn.execute_batch("DROP TABLE messages").unwrap();
        }),
        ("a negative schema version", |p| set_version(p, -3)),
        ("only a WAL left, the database file gone", |p| {
            std::fs::remove_file(p).unwrap();
            std::fs::write(wal(p), garbage(7, 3 * PAGE)).unwrap();
        }),
    ]
}

/// A file's bytes, or a directory's entries and their bytes.
type Snapshot = Vec<(String, Vec<u8>)>;

/// The files at `path`.
fn snapshot(path: &Path) -> Snapshot {
    if path.is_dir() {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
            .collect();
        v.sort();
        v
    } else {
        vec![(String::new(), std::fs::read(path).unwrap())]
    }
}

#[test]
fn every_damaged_file_is_set_aside_unchanged_and_a_new_history_starts() {
    let cases = damaging();
    assert!(cases.len() >= 20, "at least 20 corruptions ({})", cases.len());
    let template = tempfile::tempdir().unwrap();
    valid_history(&template.path().join("chats.sqlite"));
    for (name, corrupt) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chats.sqlite");
        std::fs::copy(template.path().join("chats.sqlite"), &path).unwrap();
        corrupt(&path);
        let before: Vec<Snapshot> =
            [path.clone(), wal(&path)].into_iter().filter(|p| p.exists()).map(|p| snapshot(&p)).collect();

        let opened = open_for_app(&path).unwrap();
        let notice = opened.notice.unwrap_or_else(|| panic!("{name}: no notice"));
        assert_eq!(notice.kind, HistoryNoticeKind::Damaged, "{name}: {}", notice.message);
        assert!(notice.saved, "{name}: a new history is saved");
        assert_eq!(notice.set_aside.len(), before.len(), "{name}: every file of the set moved: {:?}", notice.set_aside);
        for (bytes, aside) in before.iter().zip(&notice.set_aside) {
            let aside = Path::new(aside);
            assert!(
                aside.file_name().unwrap().to_string_lossy().contains("chats.sqlite.damaged-"),
                "{name}: {aside:?}"
            );
            assert_eq!(&snapshot(aside), bytes, "{name}: {} keeps the original bytes", aside.display());
        }
        assert!(
            notice.message.contains(&notice.set_aside[0]),
            "{name}: the message names the file: {}",
            notice.message
        );
        let store = opened.store;
        assert_eq!(store.path(), path, "{name}: the new history is at the usual place");
        assert!(store.list().unwrap().is_empty(), "{name}: the new history is empty");
        assert_eq!(store.integrity_check().unwrap(), "ok");
        drop(store);
        let again = open_for_app(&path).unwrap();
        assert!(again.notice.is_none(), "{name}: the new history opens cleanly next time");
        eprintln!("{name}: {}", notice.message);
    }
}

#[test]
fn a_history_from_a_newer_app_is_left_untouched_and_nothing_is_saved_over_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chats.sqlite");
    valid_history(&path);
    set_version(&path, SCHEMA_VERSION + 1);
    let before = std::fs::read(&path).unwrap();
    let opened = open_for_app(&path).unwrap();
    let notice = opened.notice.unwrap();
    assert_eq!(notice.kind, HistoryNoticeKind::TooNew, "{}", notice.message);
    assert!(!notice.saved && notice.set_aside.is_empty());
    assert!(notice.message.contains("newer version") && notice.message.contains(&path.display().to_string()));
    // The session works on a temporary store; the file is not written.
    let mut store = opened.store;
    assert_ne!(store.path(), path);
    let c = store.create(&SamplingSettings::default()).unwrap();
    store.add_user_message(c.id, "not saved").unwrap();
    drop(store);
    assert_eq!(std::fs::read(&path).unwrap(), before, "the newer file is byte-identical");
    let names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(names.iter().all(|n| !n.contains("damaged")), "nothing set aside: {names:?}");
}

/// Leftovers SQLite would discard or replay: set aside, the history intact.
#[test]
fn a_damaged_wal_or_a_stray_journal_is_set_aside_and_the_history_opens_intact() {
    type MakeLeftover = fn(&Path) -> PathBuf;
    let leftovers: [(&str, MakeLeftover); 3] = [
        ("garbage WAL", |p| {
            std::fs::write(wal(p), garbage(8, 5 * PAGE + 32)).unwrap();
            wal(p)
        }),
        ("garbage rollback journal", |p| {
            std::fs::write(journal(p), garbage(9, 2 * PAGE)).unwrap();
            journal(p)
        }),
        ("zeroed rollback journal", |p| {
            std::fs::write(journal(p), vec![0; 512]).unwrap();
            journal(p)
        }),
    ];
    for (name, make) in leftovers {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chats.sqlite");
        let texts = valid_history(&path);
        let db_before = std::fs::read(&path).unwrap();
        let leftover = make(&path);
        let bytes = std::fs::read(&leftover).unwrap();
        let opened = open_for_app(&path).unwrap();
        let notice = opened.notice.unwrap_or_else(|| panic!("{name}: no notice"));
        assert_eq!(notice.kind, HistoryNoticeKind::LeftoverSetAside, "{name}: {}", notice.message);
        assert_eq!(notice.set_aside.len(), 1, "{name}");
        assert_eq!(std::fs::read(&notice.set_aside[0]).unwrap(), bytes, "{name}: leftover bytes kept");
        assert!(notice.message.contains(&notice.set_aside[0]), "{name}");
        let store = opened.store;
        let stored: Vec<String> =
            store.list().unwrap().iter().rev().flat_map(|c| store.messages(c.id).unwrap()).map(|m| m.content).collect();
        assert_eq!(stored, texts, "{name}: every message intact");
        drop(store);
        assert_eq!(std::fs::read(&path).unwrap().len(), db_before.len(), "{name}");
    }
}

/// A WAL too short to hold a frame, or whose header is all zero, holds nothing to keep: a
/// full disk or a power cut during its first write leaves one (found by the power
/// campaign, `history_power.rs`: half a header after `ENOSPC`). SQLite ignores it and
/// writes over it; there is no notice. (Until 2026-12-07 a WAL shorter than its header
/// was set aside with a notice, which told users of damage after an ordinary fault.)
#[test]
fn a_wal_that_holds_no_frame_is_left_to_sqlite_without_a_notice() {
    type MakeWal = fn(&Path);
    let wals: [(&str, MakeWal); 3] = [
        ("half a header", |p| std::fs::write(wal(p), b"\x37\x7f\x06\x82\x00\x2d\xe2\x18").unwrap()),
        ("a header, no whole frame", |p| std::fs::write(wal(p), garbage(3, 200)).unwrap()),
        ("a zeroed header before frame-sized garbage", |p| {
            let mut bytes = garbage(4, 2 * PAGE);
            bytes[..32].fill(0);
            std::fs::write(wal(p), bytes).unwrap()
        }),
    ];
    for (name, make) in wals {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chats.sqlite");
        let texts = valid_history(&path);
        make(&path);
        let opened = open_for_app(&path).unwrap();
        assert_eq!(opened.notice, None, "{name}");
        let store = opened.store;
        let stored: Vec<String> =
            store.list().unwrap().iter().rev().flat_map(|c| store.messages(c.id).unwrap()).map(|m| m.content).collect();
        assert_eq!(stored, texts, "{name}: every message intact");
        assert_eq!(store.integrity_check().unwrap(), "ok", "{name}");
    }
}

/// A WAL with a valid header from another database: SQLite would read its pages into
/// ours; the set (database and WAL) moves aside together, both unchanged.
#[test]
fn a_foreign_wal_moves_aside_with_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chats.sqlite");
    valid_history(&path);
    let other = dir.path().join("other.sqlite");
    let conn = rusqlite::Connection::open(&other).unwrap();
    conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (x BLOB); INSERT INTO t VALUES (zeroblob(20000));")
        .unwrap();
    std::fs::copy(wal(&other), wal(&path)).unwrap(); // taken while `conn` keeps it
    drop(conn);
    let (db, w) = (std::fs::read(&path).unwrap(), std::fs::read(wal(&path)).unwrap());
    let notice = open_for_app(&path).unwrap().notice.unwrap();
    assert_eq!(notice.kind, HistoryNoticeKind::Damaged, "{}", notice.message);
    assert_eq!(notice.set_aside.len(), 2, "{:?}", notice.set_aside);
    assert_eq!(std::fs::read(&notice.set_aside[0]).unwrap(), db);
    assert_eq!(std::fs::read(&notice.set_aside[1]).unwrap(), w);
    assert!(notice.set_aside[1].ends_with("-wal"), "the WAL keeps its database's name plus -wal");
}

/// A WAL left by a crash holds committed messages: it is neither damage nor a leftover.
#[test]
fn a_valid_wal_from_a_crash_is_replayed_without_a_notice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chats.sqlite");
    valid_history(&path);
    let mut store = HistoryStore::open(&path).unwrap();
    let c = store.create(&SamplingSettings::default()).unwrap();
    store.add_user_message(c.id, "only in the WAL").unwrap();
    let (db, w) = (std::fs::read(&path).unwrap(), std::fs::read(wal(&path)).unwrap());
    drop(store);
    std::fs::write(&path, db).unwrap();
    std::fs::write(wal(&path), w).unwrap(); // as a SIGKILL leaves them
    let opened = open_for_app(&path).unwrap();
    assert!(opened.notice.is_none(), "{:?}", opened.notice);
    assert_eq!(opened.store.messages(c.id).unwrap()[0].content, "only in the WAL");
}

/// A checkpoint stopped mid-page by a full disk or a power cut (found by
/// `app/tests/history_power.rs`): page 1 already counts the new pages and the file ends in
/// a part page, but the WAL still holds every page the checkpoint was writing. SQLite
/// writes them whole at its next checkpoint, so this is a crash, not damage.
#[test]
fn a_checkpoint_cut_mid_page_with_its_wal_intact_opens_without_a_notice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chats.sqlite");
    valid_history(&path);
    let before = std::fs::metadata(&path).unwrap().len() as usize;
    let mut store = HistoryStore::open(&path).unwrap();
    let c = store.create(&SamplingSettings::default()).unwrap();
    let long = "a page and more. ".repeat(2000);
    store.add_user_message(c.id, &long).unwrap();
    let w = std::fs::read(wal(&path)).unwrap();
    drop(store); // checkpoints: the file now holds the new pages
    let checkpointed = std::fs::read(&path).unwrap();
    let cut = before + PAGE + PAGE / 2;
    assert!(checkpointed.len() > cut + PAGE, "the message added pages ({} → {})", before, checkpointed.len());
    std::fs::write(&path, &checkpointed[..cut]).unwrap();
    std::fs::write(wal(&path), w).unwrap();
    let opened = open_for_app(&path).unwrap();
    assert!(opened.notice.is_none(), "{:?}", opened.notice);
    assert_eq!(opened.store.messages(c.id).unwrap()[0].content, long);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok");
}
