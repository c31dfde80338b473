//! `k3 chat --resume FILE` keeps a conversation in a regular file and nothing else (probe
//! findings, high): a device node is refused, never replaced by a file; a FIFO is refused
//! at once, never waited on; a symbolic link is written through, never replaced; a damaged
//! file is kept aside and its conversation continues from its text.

use std::io::Write;
#[cfg(unix)]
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures").join(name)
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("k3-chat-state-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `k3 chat` on the demo with `--resume resume`, one message on stdin; killed after 60 s.
fn chat(resume: &Path) -> Output {
    let model = fixture("k3-demo");
    let mut child = Command::new(env!("CARGO_BIN_EXE_k3"))
        .args(["chat", "--model", model.to_str().unwrap(), "--max-tokens", "3", "--greedy", "--resume"])
        .arg(resume)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(b"Hello there\n/quit\n");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("k3 chat --resume {} did not end", resume.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[cfg(unix)]
fn refused(out: &Output, path: &Path, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains(&path.display().to_string()) && err.contains(what), "stderr: {err}");
}

// Device nodes, FIFOs and symbolic links as Unix has them.
#[cfg(unix)]
#[test]
fn a_device_node_is_refused_and_stays_a_device() {
    let out = chat(Path::new("/dev/null"));
    refused(&out, Path::new("/dev/null"), "not a regular file");
    assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device(), "/dev/null was replaced");
}

// Device nodes, FIFOs and symbolic links as Unix has them.
#[cfg(unix)]
#[test]
fn a_fifo_and_a_link_to_dev_zero_are_refused_at_once() {
    let dir = tmp("fifo");
    let fifo = dir.join("state.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let start = Instant::now();
    refused(&chat(&fifo), &fifo, "not a regular file");
    assert!(start.elapsed() < Duration::from_secs(30), "waited on the FIFO");
    let zero = dir.join("zero.k3state");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    refused(&chat(&zero), &zero, "not a regular file");
    let dangling = dir.join("dangling.k3state");
    std::os::unix::fs::symlink(dir.join("nowhere/else"), &dangling).unwrap();
    refused(&chat(&dangling), &dangling, "a symbolic link to nothing");
    let _ = std::fs::remove_dir_all(&dir);
}

// Device nodes, FIFOs and symbolic links as Unix has them.
#[cfg(unix)]
#[test]
fn a_symbolic_link_is_written_through_and_stays_a_link() {
    let dir = tmp("link");
    let target = dir.join("kept.k3state");
    let link = dir.join("link.k3state");
    std::fs::write(&target, b"").unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = chat(&link);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced by a file");
    let saved = std::fs::read(&target).unwrap();
    assert!(saved.starts_with(b"K3STATE"), "the state went somewhere else: {} bytes in the target", saved.len());
    // And the next run continues the conversation through the link.
    let again = chat(&link);
    assert!(String::from_utf8_lossy(&again.stdout).contains("(continuing the 2 messages saved in"), "{again:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Probe finding (medium): after a one-bit flip in a saved state, the next message replaced
/// the six saved messages with a new one-turn conversation. The damaged file is kept aside,
/// and the conversation continues from its messages' text (the state is read again).
#[test]
fn a_damaged_state_file_is_kept_aside_and_its_conversation_continues() {
    let dir = tmp("damaged");
    let state = dir.join("talk.k3state");
    assert!(chat(&state).status.success());
    let mut bytes = std::fs::read(&state).unwrap();
    let at = bytes.len() - 40; // in the carried numbers, past the header
    bytes[at] ^= 0x01;
    std::fs::write(&state, &bytes).unwrap();
    let out = chat(&state);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("kept as") && stdout.contains("continuing its 2 messages from their text"), "{stdout}");
    assert_eq!(std::fs::read(dir.join("talk.k3state.damaged")).unwrap(), bytes, "the damaged file is kept as it was");
    let again = chat(&state);
    assert!(String::from_utf8_lossy(&again.stdout).contains("(continuing the 4 messages saved in"), "{again:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
