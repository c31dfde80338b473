//! What the chat history's fault campaigns share: a seeded workload that writes through
//! the real `HistoryStore` API and says what it does as protocol lines (`B …` before a
//! write, the acknowledgement after it returns), the history as a test knows it, replaying
//! those lines onto it, and the check that a reopened history holds exactly what was
//! acknowledged, the one write in flight at the end either wholly applied or not at all.
//!
//! Used by `history_crash.rs` (SIGKILL of a child process) and `history_power.rs` (faults
//! and power cuts injected under SQLite through the storage seam).

#![allow(dead_code)]

use std::collections::BTreeMap;

use k3_app::history::{open_for_app, HistoryError, HistoryStore, NewAssistantMessage};
use k3_app::history::{MessageStatus, Role, SamplingSettings};

/// Conversations the workload keeps at most (it deletes beyond), so the file stays small.
const MAX_CONVERSATIONS: usize = 6;

/// xorshift64*: small, seeded, the same in parent and child.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// FNV-1a over the content's bytes: what an acknowledgement carries.
pub fn hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

pub fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

pub fn clock_seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(7, |d| d.as_nanos() as u64) | 1
}

fn text(rng: &mut Rng, min: u64, max: u64) -> String {
    const WORDS: [&str; 8] = ["expert", "router", "token", "ünïcødé", "layer", "cache", "日本語", "shard"];
    let len = min + rng.below(max - min);
    let mut s = String::new();
    while (s.len() as u64) < len {
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        s.push(if rng.below(9) == 0 { '\n' } else { ' ' });
    }
    s
}

/// Picks and performs one write: `say`s `B …` before it starts and the acknowledgement
/// after it returns. An error leaves the `B …` line unacknowledged.
pub fn step(store: &mut HistoryStore, rng: &mut Rng, say: &mut dyn FnMut(&str)) -> Result<(), HistoryError> {
    let list = store.list()?;
    let roll = rng.below(100);
    if list.is_empty() || roll < 6 {
        say("B C");
        let c = store.create(&SamplingSettings::default())?;
        say(&format!("C {}", c.id));
        return Ok(());
    }
    let c = list[rng.below(list.len() as u64) as usize].id;
    if list.len() > MAX_CONVERSATIONS || roll < 8 {
        say(&format!("B D {c}"));
        store.delete(c)?;
        say(&format!("D {c}"));
        return Ok(());
    }
    let messages = store.messages(c)?;
    let users: Vec<i64> = messages.iter().filter(|m| m.role == Role::User).map(|m| m.id).collect();
    if !users.is_empty() && roll < 18 {
        say(&format!("B R {c}"));
        let answered = store.drop_last_reply(c)?;
        say(&format!("R {c} {}", answered.id));
        return Ok(());
    }
    if !users.is_empty() && (roll < 26 || messages.len() > 40) {
        // Mostly one of the last few questions, as people edit.
        let m = users[users.len() - 1 - rng.below(users.len().min(3) as u64) as usize];
        let t = text(rng, 5, 300);
        say(&format!("B E {c} {m} {}", hash(&t)));
        store.edit_user_message(c, m, &t)?;
        say(&format!("E {c} {m} {}", hash(&t)));
        return Ok(());
    }
    if roll < 62 {
        let t = text(rng, 5, 400);
        say(&format!("B U {c} {}", hash(&t)));
        let m = store.add_user_message(c, &t)?;
        say(&format!("U {c} {} {}", m.id, hash(&t)));
        return Ok(());
    }
    let t = text(rng, 20, 9000);
    let status = [MessageStatus::Complete, MessageStatus::Stopped, MessageStatus::Failed][rng.below(3) as usize];
    let reply = NewAssistantMessage {
        content: t.clone(),
        think: None,
        status,
        stats: None,
        failure: None,
        tool_calls: Vec::new(),
    };
    say(&format!("B A {c} {}", hash(&t)));
    let m = store.add_assistant_message(c, &reply)?;
    say(&format!("A {c} {} {}", m.id, hash(&t)));
    Ok(())
}

/// A message as the test knows it: id, user?, content hash.
pub type Msg = (i64, bool, u64);
/// Conversations by id.
pub type History = BTreeMap<i64, Vec<Msg>>;

/// A write that began and was not acknowledged.
#[derive(Debug, Clone)]
pub enum Op {
    Create,
    Delete(i64),
    Regenerate(i64),
    Edit(i64, i64, u64),
    Add(i64, bool, u64),
}

/// What replaying protocol lines found.
#[derive(Debug, Default)]
pub struct Replayed {
    /// The write begun last and not acknowledged.
    pub in_flight: Option<Op>,
    pub acknowledged: u64,
    /// Whether any write began.
    pub wrote: bool,
}

/// Applies the acknowledgements in `lines` to `known`.
pub fn replay(lines: &[String], known: &mut History) -> Replayed {
    let mut out = Replayed::default();
    for line in lines {
        let f: Vec<&str> = line.split(' ').collect();
        let n = |i: usize| -> i64 { f[i].parse().unwrap() };
        let h = |i: usize| -> u64 { f[i].parse().unwrap() };
        match f[0] {
            "N" => panic!("the workload's startup saw a notice: {line}"),
            "S" => {}
            "B" => {
                out.wrote = true;
                out.in_flight = Some(match f[1] {
                    "C" => Op::Create,
                    "D" => Op::Delete(n(2)),
                    "R" => Op::Regenerate(n(2)),
                    "E" => Op::Edit(n(2), n(3), h(4)),
                    "U" => Op::Add(n(2), true, h(3)),
                    _ => Op::Add(n(2), false, h(3)),
                });
            }
            "C" => {
                known.insert(n(1), Vec::new());
            }
            "D" => {
                known.remove(&n(1));
            }
            "R" => truncate_after(known.get_mut(&n(1)).unwrap(), n(2)),
            "E" => edit(known.get_mut(&n(1)).unwrap(), n(2), h(3)),
            "U" | "A" => known.get_mut(&n(1)).unwrap().push((n(2), f[0] == "U", h(3))),
            other => panic!("unknown line {other:?}"),
        }
        if f[0] != "B" && f[0] != "S" {
            out.in_flight = None;
            out.acknowledged += 1;
        }
    }
    out
}

fn truncate_after(msgs: &mut Vec<Msg>, id: i64) {
    let at = msgs.iter().position(|m| m.0 == id).unwrap();
    msgs.truncate(at + 1);
}

fn edit(msgs: &mut Vec<Msg>, id: i64, h: u64) {
    truncate_after(msgs, id);
    msgs.last_mut().unwrap().2 = h;
}

/// Every table, index and trigger, as `sqlite_master` spells them.
pub fn schema(conn: &rusqlite::Connection) -> Vec<String> {
    let mut stmt =
        conn.prepare("SELECT type || ' ' || name || ' ' || COALESCE(sql, '') FROM sqlite_master ORDER BY 1").unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

/// The schema of a new history.
pub fn fresh_schema() -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open_for_app(&dir.path().join("chats.sqlite")).unwrap().store;
    schema(store.connection())
}

/// The history as stored.
pub fn read(store: &HistoryStore) -> History {
    let list = store.list().unwrap();
    let msgs =
        |id| store.messages(id).unwrap().iter().map(|m| (m.id, m.role == Role::User, hash(&m.content))).collect();
    list.iter().map(|c| (c.id, msgs(c.id))).collect()
}

/// `Ok(applied)` when `actual` is what was acknowledged (`applied` false) or that plus
/// the whole in-flight write (`applied` true); anything else is a lost or torn write.
pub fn check(known: &History, actual: &History, in_flight: Option<&Op>) -> Result<bool, String> {
    if actual == known {
        return Ok(false);
    }
    let Some(op) = in_flight else {
        return Err(format!("no write was in flight, yet\n acknowledged {known:?}\n stored {actual:?}"));
    };
    let mut after = known.clone();
    match op {
        Op::Create => {
            let new = actual.keys().find(|k| !known.contains_key(k)).copied();
            after.insert(new.unwrap_or(-1), Vec::new());
        }
        Op::Delete(c) => {
            after.remove(c);
        }
        Op::Regenerate(c) => {
            let msgs = after.get_mut(c).ok_or("regenerated a conversation never acknowledged")?;
            if let Some(last_user) = msgs.iter().rposition(|m| m.1) {
                msgs.truncate(last_user + 1);
            }
        }
        Op::Edit(c, m, h) => edit(after.get_mut(c).ok_or("edited an unknown conversation")?, *m, *h),
        Op::Add(c, user, h) => {
            let id = actual.get(c).and_then(|v| v.last()).map_or(-1, |m| m.0);
            after.get_mut(c).ok_or("added to an unknown conversation")?.push((id, *user, *h));
        }
    }
    if *actual == after {
        Ok(true)
    } else {
        Err(format!("in flight {op:?}, yet\n acknowledged {known:?}\n stored {actual:?}"))
    }
}
