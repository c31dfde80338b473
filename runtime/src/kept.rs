//! The engine states of the conversations answered most recently, kept so that a turn
//! continuing any of them prefills only what is new (an agent re-sends its whole history
//! on every request; several agents or chats interleave).
//!
//! Owns: [`KeptChats`]: sessions in RAM, most recent first, never more than the memory
//! plan counts (`Engine::sequences`: the sessions answering now included — several when
//! replies run together); with a folder
//! ([`KeptOnDisk`]), the sessions pushed out of RAM are saved there in the app's state-file
//! format (`ChatSession::save`) up to a count, and read back when a turn continues one —
//! also after a restart: the folder is indexed from the files' notes when it is opened.
//! Must not: hand out a session that does not hold exactly the turn's history (`holds`);
//! hold more sessions than the plan counts; leave a file it no longer indexes.
//! One process at a time keeps sessions in a folder (a lock file); another runs without.
//! Easy to break: a session read back from the folder leaves it (it is about to change);
//! a file that cannot be read back for this model is deleted, never retried forever.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use k3_engine::chat::{read_saved_conversation, ChatMessage, ChatMode, ChatSession, SavedConversation};

use crate::handler::ChatTurn;
use crate::key::ConversationKey;
use crate::model::LoadedModel;

/// Where sessions pushed out of RAM go, and how many are kept there.
#[derive(Debug, Clone, Default)]
pub struct KeptOnDisk {
    /// `None`: a session pushed out of RAM is dropped.
    pub dir: Option<PathBuf>,
    /// Sessions kept in `dir` (the oldest file is deleted past it).
    pub count: usize,
}

/// Where a kept session was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeptSource {
    Ram,
    Disk,
}

/// One session kept in RAM.
struct InRam {
    conversation: ConversationKey,
    session: ChatSession,
}

/// One session saved in the folder, with what it holds (to match turns without reading it).
struct OnDisk {
    conversation: ConversationKey,
    path: PathBuf,
    held: SavedConversation,
}

/// The kept sessions.
pub struct KeptChats {
    ram: VecDeque<InRam>,
    disk: VecDeque<OnDisk>,
    on_disk: KeptOnDisk,
    next_file: u64,
    /// Sessions handed out ([`KeptChats::take`], [`KeptChats::make_room`]) and not yet
    /// kept again or released: the replies running now.
    answering: usize,
    /// The folder's lock, held while this process keeps sessions there.
    _lock: Option<std::fs::File>,
}

const SUFFIX: &str = ".k3state";

impl KeptChats {
    /// No sessions in RAM; the folder's files indexed, most recently written first (a
    /// folder that cannot be read or created is logged, and nothing goes to disk).
    pub fn open(on_disk: KeptOnDisk) -> Self {
        let mut kept =
            KeptChats { ram: VecDeque::new(), disk: VecDeque::new(), on_disk, next_file: 0, answering: 0, _lock: None };
        if let Some(dir) = kept.on_disk.dir.clone() {
            match std::fs::create_dir_all(&dir).and_then(|()| lock(&dir)).and_then(|l| kept.index(&dir).map(|()| l)) {
                Ok(lock) => kept._lock = Some(lock),
                Err(e) => {
                    log::warn!("the folder of kept conversations {}: {e}; none will be kept on disk", dir.display());
                    kept.on_disk.dir = None;
                }
            }
        }
        kept
    }

    fn index(&mut self, dir: &Path) -> std::io::Result<()> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let Some((conversation, number)) = file_key(&path) else { continue };
            match read_saved_conversation(&path) {
                Ok(held) => found.push((number, OnDisk { conversation, path, held })),
                Err(e) => {
                    log::info!("deleting the unreadable kept conversation {}: {e}", path.display());
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        found.sort_by_key(|(number, _)| std::cmp::Reverse(*number));
        self.next_file = found.first().map_or(0, |(n, _)| n + 1);
        self.disk = found.into_iter().map(|(_, d)| d).collect();
        self.trim_disk();
        Ok(())
    }

    /// Sessions in RAM now.
    pub fn in_ram(&self) -> usize {
        self.ram.len()
    }

    /// Sessions saved in the folder now.
    pub fn on_disk(&self) -> usize {
        self.disk.len()
    }

    /// Forgets the sessions in RAM (another model was opened; the files stay, and a file of
    /// another checkpoint is refused and deleted when a turn would resume it).
    pub fn clear_ram(&mut self) {
        self.ram.clear();
    }

    /// The kept session holding exactly `turn`'s history, taken out (RAM first, then the
    /// folder). On a miss, RAM is trimmed so a new session fits the plan beside the rest.
    /// Either way one more session is answering until [`KeptChats::keep`] or
    /// [`KeptChats::release`].
    pub fn take(&mut self, model: &LoadedModel, turn: &ChatTurn) -> Option<(ChatSession, KeptSource)> {
        let hit = self.ram.iter().position(|k| k.conversation == turn.conversation && holds(&k.session, turn));
        if let Some(session) = hit.and_then(|i| self.ram.remove(i)).map(|k| k.session) {
            self.answering += 1;
            return Some((session, KeptSource::Ram));
        }
        self.make_room(model);
        let found = self.disk.iter().position(|d| {
            d.conversation == turn.conversation
                && history_matches((d.held.mode, d.held.system.as_deref(), &d.held.messages), turn)
        })?;
        let entry = self.disk.remove(found)?;
        let resumed = ChatSession::resume(&model.engine, model.template.clone(), &entry.path);
        let _ = std::fs::remove_file(&entry.path);
        match resumed {
            Ok(session) if holds(&session, turn) => Some((session, KeptSource::Disk)),
            Ok(_) => None,
            Err(e) => {
                log::info!("not resuming the kept conversation {}: {e}", entry.path.display());
                None
            }
        }
    }

    /// One more session answering (a new one): the oldest in RAM go to the folder until it
    /// fits the plan beside the rest.
    pub fn make_room(&mut self, model: &LoadedModel) {
        self.answering += 1;
        self.trim_ram(model, model.engine.sequences().saturating_sub(self.answering));
    }

    /// A session handed out is gone (its turn failed, or it was a raw completion's).
    pub fn release(&mut self) {
        self.answering = self.answering.saturating_sub(1);
    }

    /// Keeps `session` (the conversation `conversation` just answered) as the most recent;
    /// the oldest in RAM past the plan's count (beside the sessions still answering) go to
    /// the folder.
    pub fn keep(&mut self, model: &LoadedModel, conversation: ConversationKey, session: ChatSession) {
        self.release();
        self.ram.push_front(InRam { conversation, session });
        self.trim_ram(model, model.engine.sequences().saturating_sub(self.answering));
    }

    /// Moves every session in RAM to the folder (the runtime is shutting down), most recent
    /// last so it stays the newest file.
    pub fn keep_all_on_disk(&mut self, model: &LoadedModel) {
        self.trim_ram(model, 0);
    }

    /// Moves the oldest sessions in RAM to the folder (or drops them) until `limit` remain.
    fn trim_ram(&mut self, model: &LoadedModel, limit: usize) {
        while self.ram.len() > limit {
            let Some(oldest) = self.ram.pop_back() else { break };
            self.save(model, oldest);
        }
    }

    fn save(&mut self, model: &LoadedModel, kept: InRam) {
        let Some(dir) = self.on_disk.dir.as_deref().filter(|_| self.on_disk.count > 0) else { return };
        let path = dir.join(format!("{}-{:08}{SUFFIX}", kept.conversation, self.next_file));
        self.next_file += 1;
        let held = SavedConversation {
            system: kept.session.system().map(str::to_string),
            messages: kept.session.messages().to_vec(),
            mode: kept.session.mode(),
        };
        match kept.session.save(&model.engine, &path) {
            Ok(()) => {
                self.disk.push_front(OnDisk { conversation: kept.conversation, path, held });
                self.trim_disk();
            }
            Err(e) => log::warn!("keeping a conversation on disk at {}: {e}", path.display()),
        }
    }

    fn trim_disk(&mut self) {
        while self.disk.len() > self.on_disk.count {
            let Some(oldest) = self.disk.pop_back() else { break };
            if let Err(e) = std::fs::remove_file(&oldest.path) {
                log::warn!("deleting the kept conversation {}: {e}", oldest.path.display());
            }
        }
    }
}

/// The folder's lock file, locked: one process keeps sessions in a folder at a time (two
/// would number and delete each other's files).
fn lock(dir: &Path) -> std::io::Result<std::fs::File> {
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(dir.join(".lock"))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => {
            Err(std::io::Error::other("another process keeps conversations there"))
        }
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// The conversation key and file number of a kept file's name (`KEY-NUMBER.k3state`).
fn file_key(path: &Path) -> Option<(ConversationKey, u64)> {
    let name = path.file_name()?.to_str()?.strip_suffix(SUFFIX)?;
    let (key, number) = name.rsplit_once('-')?;
    Some((ConversationKey::parse(key)?, number.parse().ok()?))
}

/// True when `s` holds exactly the conversation `turn` continues.
pub(crate) fn holds(s: &ChatSession, turn: &ChatTurn) -> bool {
    history_matches((s.mode(), s.system(), s.messages()), turn)
}

/// True when a conversation of `mode` with `system` and `messages` is exactly the one
/// `turn` continues. A tool call's id is the client's handle, never rendered: a client
/// may send back its calls under other ids.
pub(crate) fn history_matches(
    (mode, system, messages): (ChatMode, Option<&str>, &[ChatMessage]),
    turn: &ChatTurn,
) -> bool {
    let same = |a: &ChatMessage, b: &ChatMessage| {
        let calls_alike = a.tool_calls.len() == b.tool_calls.len()
            && a.tool_calls
                .iter()
                .zip(&b.tool_calls)
                .all(|(x, y)| (x.index, &x.tool, &x.arguments) == (y.index, &y.tool, &y.arguments));
        calls_alike
            && ChatMessage { tool_calls: Vec::new(), ..a.clone() }
                == ChatMessage { tool_calls: Vec::new(), ..b.clone() }
    };
    mode == turn.mode
        && system == turn.system.as_deref()
        && messages.len() == turn.history.len()
        && messages.iter().zip(&turn.history).all(|(a, b)| same(a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_carry_the_conversation_and_their_order() {
        assert_eq!(file_key(Path::new("/x/api-00000012.k3state")), Some((ConversationKey::Api, 12)));
        assert_eq!(file_key(Path::new("/x/history.7-00000003.k3state")), Some((ConversationKey::History(7), 3)));
        // Named before keys had a type: the API's old constant, a history row's bare id.
        assert_eq!(file_key(Path::new("/x/-82683511195904-00000004.k3state")), Some((ConversationKey::Api, 4)));
        assert_eq!(file_key(Path::new("/x/7-00000005.k3state")), Some((ConversationKey::History(7), 5)));
        assert_eq!(file_key(Path::new("/x/7-00000003.k3state.tmp")), None);
        assert_eq!(file_key(Path::new("/x/notes.txt")), None);
    }
}
