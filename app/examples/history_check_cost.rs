//! What the startup check costs on a large history: builds a history of `N` messages
//! (default 10,000; the first argument), then times `PRAGMA integrity_check`,
//! `PRAGMA quick_check` and the whole `open_for_app`, five runs each, warm page cache.
//!
//! `cargo run --release -p k3-app --example history_check_cost -- 10000`
//! (figures in benches/results/history-crash.md).

use std::time::{Duration, Instant};

use k3_app::history::open_for_app;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args().nth(1).map(|s| s.parse()).transpose()?.unwrap_or(10_000);
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("chats.sqlite");
    fill(&path, n)?;
    let bytes = std::fs::metadata(&path)?.len();
    println!("{n} messages, {:.1} MB", bytes as f64 / 1e6);
    let conn = rusqlite::Connection::open(&path)?;
    for pragma in ["integrity_check", "quick_check"] {
        let t = median(|| {
            let ok: String = conn.query_row(&format!("PRAGMA {pragma}"), [], |r| r.get(0))?;
            assert_eq!(ok, "ok");
            Ok(())
        })?;
        println!("PRAGMA {pragma}: {:.1} ms", t.as_secs_f64() * 1e3);
    }
    drop(conn);
    let t = median(|| {
        let opened = open_for_app(&path)?;
        assert!(opened.notice.is_none());
        Ok(())
    })?;
    println!("open_for_app (header + integrity_check + schema + open): {:.1} ms", t.as_secs_f64() * 1e3);
    Ok(())
}

type Step = Result<(), Box<dyn std::error::Error>>;

fn median(mut f: impl FnMut() -> Step) -> Result<Duration, Box<dyn std::error::Error>> {
    let mut times = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        f()?;
        times.push(start.elapsed());
    }
    times.sort();
    Ok(times[2])
}

/// `n` messages in conversations of 20, replies of 200–3,000 characters, written in one
/// transaction through the store's connection (the API's one fsync per message would take
/// minutes).
fn fill(path: &std::path::Path, n: usize) -> Step {
    let mut store = open_for_app(path)?.store;
    let settings = k3_app::history::SamplingSettings::default();
    let conversations: Vec<i64> =
        (0..n.div_ceil(20)).map(|_| store.create(&settings).map(|c| c.id)).collect::<Result<_, _>>()?;
    let tx = store.connection().transaction()?;
    for i in 0..n {
        let (role, len) = if i % 2 == 0 { ("user", 40 + i % 300) } else { ("assistant", 200 + (i * 7919) % 2800) };
        tx.execute(
            "INSERT INTO messages (conversation_id, role, content, status, created_at) VALUES (?1, ?2, ?3, 'complete', ?4)",
            rusqlite::params![conversations[i / 20], role, "word ".repeat(len / 5), i as i64],
        )?;
    }
    tx.commit()?;
    Ok(())
}
