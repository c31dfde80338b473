//! Conversations that resume without re-prefill: a session saved after a reply and
//! restored by another engine (a restart) continues bit for bit as the session that never
//! left RAM, prefilling only the new turn; a file of another checkpoint, a changed shard, a
//! truncated or corrupted file, one past the context, or no state file at all is refused
//! with `Error::StateFile` naming the file and the reason.

use std::path::{Path, PathBuf};

use k3_engine::chat::{read_saved_conversation, ChatMessage, ChatMode, ChatSession, Role};
use k3_engine::{CancelToken, DecodeMode, Engine, EngineOptions, Error, GenerateParams, Sampling};
use k3_tests::{copy_checkpoint, fixture, scratch_dir, TINY_CHECKPOINTS};

use crate::gates::{engine, golden, Recorder};

fn params(n: usize) -> GenerateParams {
    GenerateParams { max_new_tokens: n, sampling: Sampling::Greedy, stop_ids: vec![], mode: DecodeMode::Incremental }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn state_file(tag: &str) -> PathBuf {
    scratch_dir(tag).join("conversation.k3state")
}

#[test]
fn a_restored_session_continues_bit_for_bit_and_prefills_only_the_new_turn() {
    for name in TINY_CHECKPOINTS {
        let g = golden(name);
        let path = state_file(&format!("resume-{name}"));
        let first = engine(name, Some(1));
        let mut kept = first.new_session();
        first.generate(&mut kept, &g.prompt, &params(8), &CancelToken::new(), &mut Recorder::default()).unwrap();
        first.save_session(&kept, &path, serde_json::json!({"who": name})).unwrap();
        assert!(!path.with_extension("partial").exists(), "{name}: no partial file is left");

        // A restart: another engine over the same files.
        let second = engine(name, Some(2));
        let (mut restored, note) = second.resume_session(&path).unwrap();
        assert_eq!(note, serde_json::json!({"who": name}));
        assert_eq!(restored.tokens(), kept.tokens(), "{name}: tokens");
        assert!(restored.carried().same_bits(kept.carried()), "{name}: carried state");

        let next = &g.full[..5];
        let (mut want, mut got) = (Recorder::default(), Recorder::default());
        let a = first.generate(&mut kept, next, &params(8), &CancelToken::new(), &mut want).unwrap();
        let b = second.generate(&mut restored, next, &params(8), &CancelToken::new(), &mut got).unwrap();
        assert_eq!(b.generated, a.generated, "{name}: the next turn's tokens");
        assert_eq!(bits(&got.logits), bits(&want.logits), "{name}: the next turn's logits");
        assert_eq!(b.n_prefilled, next.len() + 1, "{name}: only the new turn (and the pending token) prefilled");
        assert!(restored.carried().same_bits(kept.carried()), "{name}: carried state after the turn");
    }
}

/// Writes a saved state of `name` into `path` after one short turn.
fn saved(name: &str, path: &Path) -> Engine {
    let e = engine(name, Some(1));
    let mut s = e.new_session();
    e.generate(&mut s, &golden(name).prompt, &params(4), &CancelToken::new(), &mut Recorder::default()).unwrap();
    e.save_session(&s, path, serde_json::Value::Null).unwrap();
    e
}

/// Loads tiny-mxfp4 from `opts`, answers its golden prompt with 2 tokens and saves the
/// session at `path`.
fn save_one_turn(opts: &EngineOptions, path: &Path) {
    let e = Engine::load(opts).unwrap();
    let mut s = e.new_session();
    e.generate(&mut s, &golden("tiny-mxfp4").prompt, &params(2), &CancelToken::new(), &mut Recorder::default())
        .unwrap();
    e.save_session(&s, path, serde_json::Value::Null).unwrap();
}

fn refusal(e: &Engine, path: &Path) -> String {
    match e.resume_session(path) {
        Err(err @ Error::StateFile { .. }) => {
            assert!(err.to_string().contains(&path.display().to_string()), "names the file: {err}");
            assert!(err.is_input_error());
            err.to_string()
        }
        Err(other) => panic!("expected Error::StateFile, got {other}"),
        Ok(_) => panic!("{} was restored", path.display()),
    }
}

#[test]
fn a_state_of_another_checkpoint_or_a_changed_shard_is_refused() {
    let path = state_file("resume-other");
    saved("tiny-mxfp4", &path);
    let other = engine("tiny-f32", Some(1));
    assert!(refusal(&other, &path).contains("another config.json"));

    // The same config over a shard rewritten since (size kept, time changed).
    let dir = copy_checkpoint("tiny-mxfp4", "resume-shard");
    let opts = EngineOptions::resident(&dir, Some(1));
    let path = state_file("resume-shard-state");
    save_one_turn(&opts, &path);
    let shard = std::fs::read_dir(&dir)
        .unwrap()
        .map(|d| d.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "safetensors"))
        .unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&shard).unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5)).unwrap();
    let reopened = Engine::load(&opts).unwrap();
    assert!(refusal(&reopened, &path).contains("changed since it was saved"));
}

#[test]
fn a_truncated_corrupted_or_foreign_file_is_refused_and_nothing_half_written_is_read() {
    let path = state_file("resume-damage");
    let e = saved("tiny-mxfp4", &path);
    let bytes = std::fs::read(&path).unwrap();
    let damaged = path.with_file_name("damaged.k3state");
    for (what, content, says) in [
        ("truncated", bytes[..bytes.len() - 100].to_vec(), "CRC-32"),
        ("one byte flipped", flip(&bytes, bytes.len() / 2), "CRC-32"),
        ("empty", Vec::new(), "no K3STATE magic"),
        ("another format", b"{\"not\": \"a state\"}".to_vec(), "no K3STATE magic"),
    ] {
        std::fs::write(&damaged, &content).unwrap();
        let reason = refusal(&e, &damaged);
        assert!(reason.contains(says), "{what}: {reason}");
    }
    let missing = path.with_file_name("missing.k3state");
    assert!(matches!(e.resume_session(&missing), Err(Error::Io { .. })));
}

/// A file of an earlier build (format 1, the expanded MLA cache) is refused by name, even
/// with an intact CRC-32.
#[test]
fn a_state_of_the_expanded_cache_format_is_refused_by_name() {
    let path = state_file("resume-format1");
    let e = saved("tiny-mxfp4", &path);
    let mut bytes = std::fs::read(&path).unwrap();
    let header_len = u64::from_le_bytes(bytes[8..16].try_into().unwrap()) as usize;
    let header = String::from_utf8(bytes[16..16 + header_len].to_vec()).unwrap();
    let older = header.replacen(&format!("\"format\":{}", k3_engine::resume::FORMAT), "\"format\":1", 1);
    assert_ne!(older, header, "the header names its format: {header}");
    bytes[16..16 + header_len].copy_from_slice(older.as_bytes());
    let body = bytes.len() - 4;
    let crc = crc32fast::hash(&bytes[..body]);
    bytes[body..].copy_from_slice(&crc.to_le_bytes());
    let older_file = path.with_file_name("format1.k3state");
    std::fs::write(&older_file, &bytes).unwrap();
    let reason = refusal(&e, &older_file);
    assert!(reason.contains("format 1 holds the expanded MLA cache"), "{reason}");
}

fn flip(bytes: &[u8], at: usize) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[at] ^= 0x40;
    b
}

#[test]
fn a_state_longer_than_the_context_is_refused() {
    let path = state_file("resume-context");
    saved("tiny-mxfp4", &path);
    let mut opts = EngineOptions::resident(fixture("tiny-mxfp4"), Some(1));
    opts.memory.context_length = 8;
    let small = Engine::load(&opts).unwrap();
    assert!(refusal(&small, &path).contains("more than the context length 8"));
}

/// A chat saved after two turns resumes in another engine: its conversation reads back
/// without a model, and the third turn prefills only itself and replies as the chat that
/// stayed in RAM.
#[test]
fn a_saved_chat_resumes_its_next_turn_without_replaying_the_history() {
    let name = "k3-demo";
    let dir = fixture(name);
    let tokenizer = k3_engine::tokenizer::Tokenizer::load(&dir).unwrap();
    let template =
        k3_engine::chat::ChatTemplate::jinja(tokenizer.chat_template().expect("k3-demo ships a chat template"));
    let path = state_file("resume-chat");
    let first = engine(name, Some(1));
    let mut chat = ChatSession::new(&first, template.clone(), ChatMode::Instruct, Some("Be brief.".into()));
    let cancel = CancelToken::new();
    for text in ["Tell me about Mr. Darcy.", "Who is Emma?"] {
        chat.send(&first, &tokenizer, text, &params(12), &cancel, &mut Recorder::default()).unwrap();
    }
    chat.save(&first, &path).unwrap();
    let saved = read_saved_conversation(&path).unwrap();
    assert_eq!((saved.system.as_deref(), saved.mode, saved.messages.len()), (Some("Be brief."), ChatMode::Instruct, 4));
    assert_eq!(saved.messages[0], ChatMessage::new(Role::User, "Tell me about Mr. Darcy."));

    let second = engine(name, Some(2));
    let mut resumed = ChatSession::resume(&second, template, &path).unwrap();
    assert_eq!(resumed.messages(), chat.messages());
    let want = chat.send(&first, &tokenizer, "And then?", &params(12), &cancel, &mut Recorder::default()).unwrap();
    let got = resumed.send(&second, &tokenizer, "And then?", &params(12), &cancel, &mut Recorder::default()).unwrap();
    assert!(got.reused_history, "the restored state served the turn");
    assert_eq!(got.generation.generated, want.generation.generated);
    assert_eq!(got.generation.n_prefilled, want.generation.n_prefilled, "the same few tokens prefilled");
    assert!(got.generation.n_prefilled < resumed.tokens().len() / 2, "far less than the history");
}

/// A state is tied to each shard's SHA-256 where the checkpoint records one (here the
/// Hugging Face cache's blob names): a copied cache whose times all changed still resumes,
/// and a shard swapped for another file of the same size and time is refused.
#[cfg(unix)]
#[test]
fn a_state_is_tied_to_the_hashes_the_checkpoint_records() {
    use sha2::{Digest, Sha256};
    let source = copy_checkpoint("tiny-mxfp4", "resume-hf-source");
    let cache = scratch_dir("resume-hf-cache");
    let (blobs, snapshot) = (cache.join("blobs"), cache.join("snapshots").join("c0ffee"));
    std::fs::create_dir_all(&blobs).unwrap();
    std::fs::create_dir_all(&snapshot).unwrap();
    let mut shard_link = None;
    for entry in std::fs::read_dir(&source).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_owned();
        if path.extension().is_some_and(|x| x == "safetensors") {
            let bytes = std::fs::read(&path).unwrap();
            let blob = blobs.join(hex(&Sha256::digest(&bytes)));
            std::fs::write(&blob, &bytes).unwrap();
            std::os::unix::fs::symlink(&blob, snapshot.join(&name)).unwrap();
            shard_link = Some((snapshot.join(&name), blob, bytes));
        } else if path.is_file() {
            std::fs::copy(&path, snapshot.join(&name)).unwrap();
        }
    }
    let (link, blob, bytes) = shard_link.unwrap();
    let opts = EngineOptions::resident(&snapshot, Some(1));
    let path = state_file("resume-hf-state");
    save_one_turn(&opts, &path);

    let saved_time = std::fs::metadata(&blob).unwrap().modified().unwrap();
    // The cache copied elsewhere: every time changed, every hash the same.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::OpenOptions::new().write(true).open(&blob).unwrap().set_modified(later).unwrap();
    assert!(Engine::load(&opts).unwrap().resume_session(&path).is_ok(), "same hashes, new times: resumes");

    // Another file in the shard's place, of the same size and with the time it had when the
    // state was saved (a writer that restores times): only the hash tells.
    let mut other = bytes.clone();
    *other.last_mut().unwrap() ^= 1;
    let other_blob = blobs.join(hex(&Sha256::digest(&other)));
    std::fs::write(&other_blob, &other).unwrap();
    std::fs::OpenOptions::new().write(true).open(&other_blob).unwrap().set_modified(saved_time).unwrap();
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&other_blob, &link).unwrap();
    let reopened = Engine::load(&opts).unwrap();
    assert!(refusal(&reopened, &path).contains("another file than when it was saved"));
}

#[cfg(unix)]
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
