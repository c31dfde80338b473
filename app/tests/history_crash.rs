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

mod support;

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use k3_app::history::{open_for_app, HistoryStore, SCHEMA_VERSION};
use support::history_model::{check, clock_seed, env_number, fresh_schema, read, replay, schema, step};
use support::history_model::{History, Rng};

const CHILD_DIR: &str = "K3_CRASH_CHILD_DIR";
const CHILD_SEED: &str = "K3_CRASH_CHILD_SEED";
const TEST_NAME: &str = "acknowledged_history_survives_sigkill_at_random_points";

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
        step(&mut store, &mut rng, &mut say).unwrap();
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

// ---- the parent: kill, reopen, compare with what was acknowledged ----

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
        let replayed = replay(&lines, &mut known);
        report.acknowledged += replayed.acknowledged;
        report.before_first_write += u64::from(!replayed.wrote);
        let in_flight = replayed.in_flight;
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
