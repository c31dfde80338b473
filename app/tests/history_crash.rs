//! Kill campaign for the chat history (RELIABILITY PS-01, issue 13 item 3): a child
//! process writes conversations through the real `HistoryStore` API — create, user and
//! assistant messages, regenerate, edit-and-resend, delete — and prints an
//! acknowledgement after each call returns; the parent SIGKILLs it after a random delay,
//! reopens the same file the way the app starts (`open_for_app`) and checks: no startup
//! notice (a crash is never taken for damage), `integrity_check` ok, the schema intact,
//! and the stored history equal to the acknowledged one — the one write in flight at the
//! kill either fully applied or not at all. Then it goes on with the same file, so damage
//! would accumulate.
//!
//! The child is this same test re-executed with `K3_CRASH_CHILD_DIR` set.
//! `K3_CRASH_KILLS` (default 100), `K3_CRASH_SEED` (default: the clock; printed) and
//! `K3_CRASH_MAX_DELAY_MS` (default 40) set the campaign; see benches/results/history-crash.md.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use k3_app::history::{open_for_app, HistoryStore, NewAssistantMessage, SCHEMA_VERSION};
use k3_app::history::{MessageStatus, Role, SamplingSettings};

const CHILD_DIR: &str = "K3_CRASH_CHILD_DIR";
const CHILD_SEED: &str = "K3_CRASH_CHILD_SEED";
const TEST_NAME: &str = "acknowledged_history_survives_sigkill_at_random_points";
/// Conversations the child keeps at most (it deletes beyond), so the file stays small.
const MAX_CONVERSATIONS: usize = 6;

/// xorshift64*: small, seeded, the same in parent and child.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// FNV-1a over the content's bytes: what an acknowledgement carries.
fn hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

#[test]
fn acknowledged_history_survives_sigkill_at_random_points() {
    if let Some(dir) = std::env::var_os(CHILD_DIR) {
        let seed = std::env::var(CHILD_SEED).ok().and_then(|s| s.parse().ok()).unwrap_or(1);
        child(Path::new(&dir), seed);
    }
    let kills = env_number("K3_CRASH_KILLS", 100);
    let max_delay = env_number("K3_CRASH_MAX_DELAY_MS", 40);
    let seed = env_number("K3_CRASH_SEED", clock_seed());
    eprintln!("history kill campaign: {kills} kills, delays 0..{max_delay} ms, K3_CRASH_SEED={seed}");
    let dir = tempfile::tempdir().unwrap();
    let report = campaign(&dir.path().join("chats.sqlite"), kills, max_delay, seed);
    eprintln!("K3_CRASH_SEED={seed}: {report}");
    assert_eq!(report.kills, kills);
    assert!(report.in_flight * 4 >= kills, "at least a quarter of the kills land mid-write: {report}");
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn clock_seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(7, |d| d.as_nanos() as u64) | 1
}

// ---- the child: writes through the real API, acknowledges each committed call ----

fn child(dir: &Path, seed: u64) -> ! {
    let opened = open_for_app(&dir.join("chats.sqlite")).unwrap();
    if let Some(n) = opened.notice {
        say(&format!("N {}", n.message));
    }
    let mut store = opened.store;
    let mut rng = Rng(seed | 1);
    say("S");
    loop {
        step(&mut store, &mut rng);
        if rng.below(4) == 0 {
            std::thread::sleep(Duration::from_micros(rng.below(1500)));
        }
    }
}

/// One protocol line on stdout, flushed (`@ ` marks it among the harness's own lines).
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "@ {line}").unwrap();
    out.flush().unwrap();
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

/// Picks and performs one write: `B …` before it starts, the acknowledgement after it returns.
fn step(store: &mut HistoryStore, rng: &mut Rng) {
    let list = store.list().unwrap();
    let roll = rng.below(100);
    if list.is_empty() || roll < 6 {
        say("B C");
        let c = store.create(&SamplingSettings::default()).unwrap();
        return say(&format!("C {}", c.id));
    }
    let c = list[rng.below(list.len() as u64) as usize].id;
    if list.len() > MAX_CONVERSATIONS || roll < 8 {
        say(&format!("B D {c}"));
        store.delete(c).unwrap();
        return say(&format!("D {c}"));
    }
    let messages = store.messages(c).unwrap();
    let users: Vec<i64> = messages.iter().filter(|m| m.role == Role::User).map(|m| m.id).collect();
    if !users.is_empty() && roll < 18 {
        say(&format!("B R {c}"));
        let answered = store.drop_last_reply(c).unwrap();
        return say(&format!("R {c} {}", answered.id));
    }
    if !users.is_empty() && (roll < 26 || messages.len() > 40) {
        // Mostly one of the last few questions, as people edit.
        let m = users[users.len() - 1 - rng.below(users.len().min(3) as u64) as usize];
        let t = text(rng, 5, 300);
        say(&format!("B E {c} {m} {}", hash(&t)));
        store.edit_user_message(c, m, &t).unwrap();
        return say(&format!("E {c} {m} {}", hash(&t)));
    }
    if roll < 62 {
        let t = text(rng, 5, 400);
        say(&format!("B U {c} {}", hash(&t)));
        let m = store.add_user_message(c, &t).unwrap();
        return say(&format!("U {c} {} {}", m.id, hash(&t)));
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
    let m = store.add_assistant_message(c, &reply).unwrap();
    say(&format!("A {c} {} {}", m.id, hash(&t)));
}

// ---- the parent: kill, reopen, compare with what was acknowledged ----

/// A message as the parent knows it: id, user?, content hash.
type Msg = (i64, bool, u64);
/// Conversations by id.
type History = BTreeMap<i64, Vec<Msg>>;

/// A write the child began and had not acknowledged.
#[derive(Debug, Clone)]
enum Op {
    Create,
    Delete(i64),
    Regenerate(i64),
    Edit(i64, i64, u64),
    Add(i64, bool, u64),
}

#[derive(Debug, Default)]
struct Report {
    kills: u64,
    acknowledged: u64,
    in_flight: u64,
    in_flight_applied: u64,
    before_first_write: u64,
    messages_at_end: usize,
    elapsed: Duration,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} kills, {} acknowledged writes, {} kills mid-write ({} of those writes had committed), {} before the first write, {} messages at the end, {:.1} s",
            self.kills,
            self.acknowledged,
            self.in_flight,
            self.in_flight_applied,
            self.before_first_write,
            self.messages_at_end,
            self.elapsed.as_secs_f64()
        )
    }
}

fn campaign(path: &Path, kills: u64, max_delay_ms: u64, seed: u64) -> Report {
    let started = Instant::now();
    let expected_schema = fresh_schema();
    let mut rng = Rng(seed);
    let mut known = History::new();
    let mut report = Report::default();
    for kill in 0..kills {
        let delay = Duration::from_micros(rng.below(max_delay_ms * 1000));
        let lines = run_and_kill(path, rng.next(), delay);
        let in_flight = replay(&lines, &mut known, &mut report);
        let store = reopen(path, &expected_schema, kill, seed);
        let actual = read(&store);
        let applied = check(&known, &actual, in_flight.as_ref()).unwrap_or_else(|why| {
            panic!("kill {kill} (K3_CRASH_SEED={seed}): {why}\nchild said:\n{}", lines.join("\n"))
        });
        report.in_flight += u64::from(in_flight.is_some());
        report.in_flight_applied += u64::from(applied);
        report.kills += 1;
        known = actual;
    }
    report.messages_at_end = known.values().map(Vec::len).sum();
    report.elapsed = started.elapsed();
    report
}

/// Starts the child, SIGKILLs it after `delay`, returns its protocol lines.
fn run_and_kill(path: &Path, child_seed: u64, delay: Duration) -> Vec<String> {
    let dir = path.parent().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads", "1"])
        .env(CHILD_DIR, dir)
        .env(CHILD_SEED, child_seed.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| l.strip_prefix("@ ").map(str::to_string))
            .collect::<Vec<_>>()
    });
    std::thread::sleep(delay);
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    let lines = reader.join().unwrap();
    if !was_killed(status) {
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        panic!("the child ended by itself ({status:?}):\n{}\n{err}", lines.join("\n"));
    }
    lines
}

/// Whether the child ended because the parent killed it: SIGKILL on Unix; on Windows
/// `Child::kill` is `TerminateProcess` with exit code 1.
fn was_killed(status: std::process::ExitStatus) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        status.signal() == Some(9)
    }
    #[cfg(not(unix))]
    {
        status.code() == Some(1)
    }
}

/// Applies the acknowledgements to `known`; returns the write left in flight.
fn replay(lines: &[String], known: &mut History, report: &mut Report) -> Option<Op> {
    let mut in_flight = None;
    let mut wrote = false;
    for line in lines {
        let f: Vec<&str> = line.split(' ').collect();
        let n = |i: usize| -> i64 { f[i].parse().unwrap() };
        let h = |i: usize| -> u64 { f[i].parse().unwrap() };
        match f[0] {
            "N" => panic!("the child's startup saw a notice: {line}"),
            "S" => {}
            "B" => {
                wrote = true;
                in_flight = Some(match f[1] {
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
            in_flight = None;
            report.acknowledged += 1;
        }
    }
    report.before_first_write += u64::from(!wrote);
    in_flight
}

fn truncate_after(msgs: &mut Vec<Msg>, id: i64) {
    let at = msgs.iter().position(|m| m.0 == id).unwrap();
    msgs.truncate(at + 1);
}

fn edit(msgs: &mut Vec<Msg>, id: i64, h: u64) {
    truncate_after(msgs, id);
    msgs.last_mut().unwrap().2 = h;
}

/// Reopens as the app does and checks what must hold after any kill.
fn reopen(path: &Path, expected_schema: &[String], kill: u64, seed: u64) -> HistoryStore {
    let opened = open_for_app(path).unwrap();
    let ctx = format!("kill {kill} (K3_CRASH_SEED={seed})");
    assert!(opened.notice.is_none(), "{ctx}: a crash was taken for damage: {:?}", opened.notice);
    let mut store = opened.store;
    assert_eq!(store.integrity_check().unwrap(), "ok", "{ctx}");
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION, "{ctx}");
    assert_eq!(schema(store.connection()), expected_schema, "{ctx}: schema changed");
    store
}

fn schema(conn: &rusqlite::Connection) -> Vec<String> {
    let mut stmt =
        conn.prepare("SELECT type || ' ' || name || ' ' || COALESCE(sql, '') FROM sqlite_master ORDER BY 1").unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

fn fresh_schema() -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open_for_app(&dir.path().join("chats.sqlite")).unwrap().store;
    schema(store.connection())
}

fn read(store: &HistoryStore) -> History {
    let list = store.list().unwrap();
    let msgs =
        |id| store.messages(id).unwrap().iter().map(|m| (m.id, m.role == Role::User, hash(&m.content))).collect();
    list.iter().map(|c| (c.id, msgs(c.id))).collect()
}

/// `Ok(applied)` when `actual` is what was acknowledged (`applied` false) or that plus
/// the whole in-flight write (`applied` true); anything else is a lost or torn write.
fn check(known: &History, actual: &History, in_flight: Option<&Op>) -> Result<bool, String> {
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
