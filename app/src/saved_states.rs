//! Conversations that resume without re-prefill after a restart: where each local
//! conversation's engine state is saved (`<data>/states/<id>.k3state`, written by the
//! runtime when a reply ends, `k3_engine::resume`'s format) and how many are kept.
//!
//! Owns: [`ResumeChoice`] and its file (`resume.json`: the most recent conversations whose
//! state is kept, Settings › Performance), the state file of a conversation, pruning the
//! folder to the choice (oldest first, by modification time) and the space it takes.
//! Must not: keep more files than the choice says once a reply is queued, or leave a
//! deleted conversation's state behind. A file the engine refuses (another model, damaged)
//! costs only a full prefill: the runtime replays the history and writes it anew.

use std::path::{Path, PathBuf};

use crate::settings::records::ResumeRecord;
use crate::settings::{Settings, SettingsRecord};

use crate::error::{AppError, ErrorKind};

fn io_error(path: &Path, e: std::io::Error) -> AppError {
    AppError::new(ErrorKind::Io, format!("{}: {e}", path.display()))
}

/// The choice's file in the app's data folder.
pub const RESUME_FILE: &str = ResumeRecord::FILE;
/// The folder of saved states in the app's data folder.
pub const STATES_DIR: &str = "states";
/// The most conversations the page offers to keep.
pub const MAX_KEEP: u32 = 64;
/// Kept when nothing is chosen: a real K3 state is about half a gigabyte.
pub const DEFAULT_KEEP: u32 = crate::settings::records::DEFAULT_KEEP;

/// How many of the most recent conversations keep their engine state (0: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResumeChoice {
    pub keep: u32,
}

impl Default for ResumeChoice {
    fn default() -> Self {
        ResumeChoice { keep: DEFAULT_KEEP }
    }
}

impl ResumeChoice {
    /// `resume.json`, or the default when it is absent or unreadable.
    pub fn load(settings: &Settings) -> ResumeChoice {
        ResumeChoice { keep: settings.get::<ResumeRecord>().keep }
    }

    pub fn save(&self, settings: &Settings) -> Result<(), AppError> {
        Ok(settings.set(ResumeRecord { keep: self.keep })?)
    }

    pub fn check(&self) -> Result<(), AppError> {
        if self.keep > MAX_KEEP {
            return Err(AppError::invalid(format!("saved conversations: {} is more than {MAX_KEEP}", self.keep)));
        }
        Ok(())
    }
}

/// The state file of local conversation `id` (`None`: states are not kept).
pub fn state_file(data_dir: &Path, id: i64, choice: ResumeChoice) -> Option<PathBuf> {
    (choice.keep > 0).then(|| data_dir.join(STATES_DIR).join(format!("{id}.k3state")))
}

/// Every saved state with its modification time, newest first.
fn saved(data_dir: &Path) -> Vec<(PathBuf, std::time::SystemTime, u64)> {
    let Ok(entries) = std::fs::read_dir(data_dir.join(STATES_DIR)) else { return Vec::new() };
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "k3state"))
        .filter_map(|p| {
            let meta = std::fs::metadata(&p).ok()?;
            Some((p, meta.modified().ok()?, meta.len()))
        })
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.1));
    files
}

/// Makes room for conversation `next`'s state: keeps it and the `keep - 1` newest others
/// (all removed when `keep` is 0); creates the folder.
pub fn prune(data_dir: &Path, keep: u32, next: Option<&Path>) -> Result<(), AppError> {
    let dir = data_dir.join(STATES_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
    let others = saved(data_dir).into_iter().filter(|(p, ..)| Some(p.as_path()) != next);
    let room = (keep as usize).saturating_sub(usize::from(next.is_some()));
    for (p, ..) in others.skip(room) {
        std::fs::remove_file(&p).map_err(|e| io_error(&p, e))?;
    }
    if keep == 0 {
        if let Some(p) = next.filter(|p| p.exists()) {
            std::fs::remove_file(p).map_err(|e| io_error(p, e))?;
        }
    }
    Ok(())
}

/// Removes conversation `id`'s saved state, if any.
pub fn forget(data_dir: &Path, id: i64) -> Result<(), AppError> {
    let p = data_dir.join(STATES_DIR).join(format!("{id}.k3state"));
    match std::fs::remove_file(&p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_error(&p, e)),
        _ => Ok(()),
    }
}

/// The saved states now and the bytes they take (Settings › Performance shows them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SavedStates {
    pub count: u32,
    pub bytes: u64,
}

/// Saved states now, and the bytes they take.
pub fn usage(data_dir: &Path) -> SavedStates {
    let files = saved(data_dir);
    SavedStates { count: files.len() as u32, bytes: files.iter().map(|f| f.2).sum() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(dir: &Path, id: i64, age_s: u64) {
        let p = dir.join(STATES_DIR).join(format!("{id}.k3state"));
        std::fs::write(&p, vec![0u8; 10]).unwrap();
        let t = std::time::SystemTime::now() - std::time::Duration::from_secs(age_s);
        std::fs::File::options().write(true).open(&p).unwrap().set_modified(t).unwrap();
    }

    #[test]
    fn the_newest_states_are_kept_and_the_next_conversation_always_has_room() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join(STATES_DIR)).unwrap();
        for (id, age) in [(1, 50), (2, 40), (3, 30), (4, 20), (5, 10)] {
            touch(d, id, age);
        }
        let next = state_file(d, 1, ResumeChoice { keep: 3 }).unwrap();
        prune(d, 3, Some(&next)).unwrap();
        let mut left: Vec<_> =
            saved(d).into_iter().map(|f| f.0.file_name().unwrap().to_string_lossy().into_owned()).collect();
        left.sort();
        assert_eq!(left, ["1.k3state", "4.k3state", "5.k3state"], "the oldest one is the next conversation's");
        assert_eq!(usage(d), SavedStates { count: 3, bytes: 30 });
        forget(d, 4).unwrap();
        forget(d, 4).unwrap();
        assert_eq!(usage(d).count, 2);
        prune(d, 0, Some(&next)).unwrap();
        assert_eq!(usage(d), SavedStates { count: 0, bytes: 0 }, "keeping none removes every state");
        assert_eq!(state_file(d, 1, ResumeChoice { keep: 0 }), None);
        assert_eq!(ResumeChoice::load(&Settings::open(d)), ResumeChoice { keep: DEFAULT_KEEP });
        assert!(ResumeChoice { keep: 65 }.check().unwrap_err().message.contains("65 is more than 64"));
    }
}
