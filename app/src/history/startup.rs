//! Opening the chat history at app start: check it, set a damaged one aside, and come up
//! with a usable store and, when something was wrong, a notice for the user.
//!
//! Owns: the startup decisions. A sound file opens. A damaged one (bad header, cut short,
//! not SQLite, a directory, failing `PRAGMA integrity_check`, foreign tables) moves aside
//! with its sidecars and a new empty history starts in its place. A file from a newer app,
//! or one that cannot be read for reasons that are not damage (permissions, I/O, locks), is
//! left untouched and this session's chats live in memory. Leftovers SQLite would discard
//! or replay (a WAL with a bad header, a rollback journal beside our WAL database) move
//! aside first.
//! Must not: delete, truncate or write into a file it has not checked; inspection uses a
//! query-only connection that never checkpoints a WAL into the file on close. It is not a
//! read-only one: SQLite does not load a read-only database's CHECK constraints, so its
//! `integrity_check` passes rows no constraint allows (found by `app/tests/history_power.rs`:
//! a zeroed page passed the check at startup and failed it once the app had opened it).
//! A WAL that holds no frame (too short for one, or its header all zero) is what a full
//! disk or a power cut during its first write leaves; SQLite ignores it, and so does this.
//! Easy to break: a crash must never be taken for damage — the kill campaign
//! (`app/tests/history_crash.rs`) reopens through here after every SIGKILL and fails on any notice.

use std::path::{Path, PathBuf};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

use super::error::HistoryError;
use super::header::{check_main, wal_header, Damage, FileCheck, WalHeader};
use super::quarantine::{set_aside, set_file_aside, with_suffix, SIDECARS};
use super::schema::{schema_of, SCHEMA_VERSION};
use super::store::HistoryStore;
use super::types::{HistoryNotice, HistoryNoticeKind};

/// The history the app runs with, and what the user must be told about it.
pub struct StartupHistory {
    pub store: HistoryStore,
    pub notice: Option<HistoryNotice>,
}

/// What the checks decided, before it is put into words.
enum Outcome {
    Opened(HistoryStore),
    /// Damaged: the files now at `set_aside`, a new history in place.
    Replaced {
        store: HistoryStore,
        damage: Damage,
        set_aside: Vec<PathBuf>,
    },
    TooNew {
        found: i64,
    },
    Unavailable {
        reason: String,
    },
}

/// What SQLite's read-only look at a plausible file found.
enum Verdict {
    Sound,
    Damaged(Damage),
    TooNew(i64),
}

/// Opens the history at `path` as the app does at start (see the module header). Fails
/// only when not even an in-memory database opens.
pub fn open_for_app(path: &Path) -> Result<StartupHistory, HistoryError> {
    let mut leftovers = Vec::new();
    let outcome = decide(path, &mut leftovers).unwrap_or_else(|reason| Outcome::Unavailable { reason });
    let notice = notice(path, &outcome, &leftovers);
    let store = match outcome {
        Outcome::Opened(store) | Outcome::Replaced { store, .. } => store,
        Outcome::TooNew { .. } | Outcome::Unavailable { .. } => HistoryStore::temporary()?,
    };
    if let Some(n) = &notice {
        log::warn!("{}", n.message);
    }
    Ok(StartupHistory { store, notice })
}

fn decide(path: &Path, leftovers: &mut Vec<PathBuf>) -> Result<Outcome, String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating the folder {}: {e}", dir.display()))?;
    }
    let io = |e: std::io::Error| format!("reading {}: {e}", path.display());
    if std::fs::metadata(path).is_err() {
        if sidecars_present(path) {
            return replace(path, Damage::Orphaned);
        }
        return Ok(Outcome::Opened(HistoryStore::create_new(path).map_err(|e| e.to_string())?));
    }
    leftovers.extend(set_leftovers_aside(path)?);
    let wal_has_pages = matches!(wal_header(&with_suffix(path, "-wal")), Ok(WalHeader::Sound));
    let verdict = match check_main(path, wal_has_pages).map_err(io)? {
        FileCheck::Missing => return Err(format!("{} vanished while it was checked", path.display())),
        FileCheck::Damaged(d) => Verdict::Damaged(d),
        FileCheck::Plausible => inspect_leaving_no_trace(path)?,
    };
    match verdict {
        Verdict::Sound => Ok(Outcome::Opened(HistoryStore::open(path).map_err(|e| e.to_string())?)),
        Verdict::TooNew(found) => Ok(Outcome::TooNew { found }),
        Verdict::Damaged(damage) => replace(path, damage),
    }
}

fn moving_error(path: &Path, e: std::io::Error) -> String {
    format!("setting {} aside failed ({e}); nothing was deleted", path.display())
}

fn sidecars_present(path: &Path) -> bool {
    SIDECARS.iter().any(|s| std::fs::symlink_metadata(with_suffix(path, s)).is_ok())
}

/// A rollback journal (this app's database is always WAL, so SQLite would replay or drop
/// a journal it never wrote) and a WAL whose header SQLite would ignore and overwrite.
fn set_leftovers_aside(path: &Path) -> Result<Vec<PathBuf>, String> {
    let mut moved = Vec::new();
    let journal = with_suffix(path, "-journal");
    if std::fs::symlink_metadata(&journal).is_ok() {
        moved.push(set_file_aside(&journal, "leftover").map_err(|e| moving_error(&journal, e))?);
    }
    let wal = with_suffix(path, "-wal");
    let bad_wal = match std::fs::symlink_metadata(&wal) {
        Ok(m) if !m.is_file() => true,
        Ok(m) if m.len() > 0 => {
            let header = wal_header(&wal).map_err(|e| format!("reading {}: {e}", wal.display()))?;
            match header {
                WalHeader::Sound | WalHeader::Unwritten => false,
                WalHeader::Bad => true,
            }
        }
        Ok(_) | Err(_) => false,
    };
    if bad_wal {
        moved.push(set_file_aside(&wal, "damaged").map_err(|e| moving_error(&wal, e))?);
    }
    Ok(moved)
}

/// Sets the damaged set aside and starts a new history in its place.
fn replace(path: &Path, damage: Damage) -> Result<Outcome, String> {
    let set_aside = set_aside(path, "damaged").map_err(|e| moving_error(path, e))?;
    let store = HistoryStore::create_new(path).map_err(|e| e.to_string())?;
    Ok(Outcome::Replaced { store, damage, set_aside })
}

/// [`inspect`], then removes the empty `-wal` and the `-shm` a read-only connection
/// creates, when they were not there before: a damaged set moves aside as it was found.
fn inspect_leaving_no_trace(path: &Path) -> Result<Verdict, String> {
    let created: Vec<PathBuf> = ["-wal", "-shm"]
        .iter()
        .map(|s| with_suffix(path, s))
        .filter(|p| std::fs::symlink_metadata(p).is_err())
        .collect();
    let verdict = inspect(path);
    for p in created {
        let is_wal = p.to_string_lossy().ends_with("-wal");
        let ours = std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file() && (m.len() == 0 || !is_wal));
        if ours {
            std::fs::remove_file(&p).map_err(|e| format!("removing {}: {e}", p.display()))?;
        }
    }
    verdict
}

/// SQLite's verdict through a query-only connection that does not checkpoint on close:
/// schema version, integrity (CHECK constraints included), tables. Errors that are not
/// damage (I/O, permissions, locks) are the `Err`.
fn inspect(path: &Path) -> Result<Verdict, String> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let looked = Connection::open_with_flags(path, flags).and_then(|conn| {
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
        conn.pragma_update(None, "query_only", true)?;
        verdict(&conn)
    });
    match looked {
        Ok(v) => Ok(v),
        Err(e) if is_damage(&e) => Ok(Verdict::Damaged(Damage::Refused { reason: e.to_string() })),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

fn verdict(conn: &Connection) -> rusqlite::Result<Verdict> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Ok(Verdict::TooNew(version));
    }
    let mut stmt = conn.prepare("PRAGMA integrity_check")?;
    let problems: Vec<String> = stmt.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    if problems != ["ok"] {
        // The first line may be the "*** in database main ***" heading.
        let first = problems.iter().find(|l| !l.starts_with("***")).cloned().unwrap_or_default();
        return Ok(Verdict::Damaged(Damage::Integrity { first, problems: problems.len() }));
    }
    let sound = version >= 0 && schema_of(conn)? == expected_schema(version)?;
    Ok(if sound { Verdict::Sound } else { Verdict::Damaged(Damage::ForeignSchema { version }) })
}

/// The tables a file of schema `version` has: the first `version` migrations applied to
/// an empty database.
fn expected_schema(version: i64) -> rusqlite::Result<Vec<[String; 4]>> {
    let conn = Connection::open_in_memory()?;
    let n = usize::try_from(version).unwrap_or(0);
    for sql in super::schema::MIGRATIONS.iter().take(n) {
        conn.execute_batch(sql)?;
    }
    schema_of(&conn)
}

fn is_damage(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode;
    match e {
        rusqlite::Error::SqliteFailure(f, _) => matches!(f.code, ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase),
        _ => false,
    }
}

/// The notice for `outcome`, none when the history opened and nothing was set aside.
fn notice(path: &Path, outcome: &Outcome, leftovers: &[PathBuf]) -> Option<HistoryNotice> {
    let file = path.display().to_string();
    let names = |ps: &[PathBuf]| ps.iter().map(|p| p.display().to_string()).collect::<Vec<_>>();
    let also = match leftovers {
        [] => String::new(),
        l => format!(" Also set aside, unchanged: {}.", names(l).join(", ")),
    };
    let (kind, message, mut set_aside, saved) = match outcome {
        Outcome::Opened(_) if leftovers.is_empty() => return None,
        Outcome::Opened(_) => (
            HistoryNoticeKind::LeftoverSetAside,
            format!("Your chat history {file} is intact. A damaged or stray file beside it was set aside, unchanged: {}.", names(leftovers).join(", ")),
            Vec::new(),
            true,
        ),
        Outcome::Replaced { damage, set_aside, .. } => (
            HistoryNoticeKind::Damaged,
            format!(
                "Your chat history {file} could not be used: {damage}. It was moved, unchanged, to {} and the app started with an empty history. Keep that file: it may let your old chats be recovered.{also}",
                names(set_aside).first().cloned().unwrap_or_default()
            ),
            names(set_aside),
            true,
        ),
        Outcome::TooNew { found } => (
            HistoryNoticeKind::TooNew,
            format!("Your chat history {file} was written by a newer version of k3-desktop (schema {found}; this version knows {SCHEMA_VERSION}). It was left untouched. Chats in this session are not saved; update the app to use your history.{also}"),
            Vec::new(),
            false,
        ),
        Outcome::Unavailable { reason } => (
            HistoryNoticeKind::Unavailable,
            format!("Your chat history could not be opened: {reason}. The file was left untouched. Chats in this session are not saved.{also}"),
            Vec::new(),
            false,
        ),
    };
    set_aside.extend(names(leftovers));
    Some(HistoryNotice { kind, message, file, set_aside, saved })
}
