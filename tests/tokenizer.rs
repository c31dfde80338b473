//! Tokenizer parity with Python `tiktoken` (golden ids committed under
//! `fixtures/tokenizer/`), round trips, byte-level decoding, added tokens, UTF-8-safe
//! streaming, and malformed tokenizer files refused with a named error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k3_engine::tokenizer::pattern::kimi_pattern;
use k3_engine::tokenizer::{StreamDecoder, Tokenizer};
use k3_engine::Error;
use k3_tests::{fixture, read_json, scratch_dir, u64s};
use serde_json::Value;

fn corpus() -> BTreeMap<String, String> {
    let v = read_json(&fixture("tokenizer/corpus.json"));
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_string(), c["text"].as_str().unwrap().to_string()))
        .collect()
}

fn ids(v: &Value) -> Vec<u32> {
    u64s(v).into_iter().map(|x| x as u32).collect()
}

/// The o200k_base ranks shipped by the tiktoken-rs crate, in the released file format,
/// with the 256 added tokens of the fixtures at ids 199998.. (read at test time, not
/// committed). Built once per test run in a scratch folder.
fn o200k_dir() -> PathBuf {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cargo"));
    let registry = cargo_home.join("registry/src");
    let ranks = std::fs::read_dir(&registry)
        .unwrap_or_else(|e| panic!("{}: {e}", registry.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("tiktoken-rs-0.12.1/assets/o200k_base.tiktoken"))
        .find(|p| p.exists())
        .expect("tiktoken-rs 0.12.1 sources (a dependency of k3-engine) hold assets/o200k_base.tiktoken");
    let dir = scratch_dir("o200k");
    std::fs::copy(&ranks, dir.join("tiktoken.model")).unwrap();
    let tiny_cfg = read_json(&fixture("tiny-mxfp4/tokenizer_config.json"));
    let mut added = serde_json::Map::new();
    for (id, entry) in tiny_cfg["added_tokens_decoder"].as_object().unwrap() {
        let shifted = id.parse::<u32>().unwrap() - 512 + 199_998;
        added.insert(shifted.to_string(), entry.clone());
    }
    let cfg = serde_json::json!({ "added_tokens_decoder": added, "bos_token": "[BOS]", "eos_token": "<|end_of_msg|>" });
    std::fs::write(dir.join("tokenizer_config.json"), cfg.to_string()).unwrap();
    dir
}

/// Checks every corpus case against the golden ids; returns the number of cases.
fn check_parity(tok: &Tokenizer, golden: &Value) -> usize {
    let corpus = corpus();
    let want = golden["ids"].as_object().unwrap();
    assert_eq!(want.len(), corpus.len(), "golden covers the whole corpus");
    let mut failures = Vec::new();
    for (name, text) in &corpus {
        let got = tok.encode(text);
        if got != ids(&want[name]) {
            failures.push(format!("{name}: got {got:?}\n  want {:?}", ids(&want[name])));
        }
        assert_eq!(tok.decode_bytes(&got).unwrap(), text.as_bytes(), "{name}: round trip");
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from tiktoken:\n{}",
        failures.len(),
        corpus.len(),
        failures.join("\n")
    );
    corpus.len()
}

fn check_decode_cases(tok: &Tokenizer, golden: &Value) {
    for case in golden["decode_cases"].as_array().unwrap() {
        let want: Vec<u8> = (0..case["hex"].as_str().unwrap().len() / 2)
            .map(|i| u8::from_str_radix(&case["hex"].as_str().unwrap()[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let ids = ids(&case["ids"]);
        let got = tok.decode_bytes(&ids).unwrap();
        assert_eq!(got, want, "{}", case["note"]);
        assert_eq!(std::str::from_utf8(&got).is_ok(), case["valid_utf8"].as_bool().unwrap(), "{}", case["note"]);
        // Streaming the same ids one token at a time gives the same text as decoding at once.
        let mut stream = StreamDecoder::new();
        let mut text: String = ids.iter().map(|&id| stream.push(tok.token_bytes(id).unwrap())).collect();
        text.push_str(&stream.finish());
        assert_eq!(text, String::from_utf8_lossy(&want), "{}", case["note"]);
    }
}

#[test]
fn pattern_is_pinned_exactly_as_the_fixtures_were_made() {
    let pinned = std::fs::read_to_string(fixture("tokenizer/pattern.txt")).unwrap();
    assert_eq!(kimi_pattern(), pinned);
}

#[test]
fn tiny_vocabulary_matches_tiktoken_on_the_whole_corpus() {
    let tok = Tokenizer::load(&fixture("tiny-mxfp4")).unwrap();
    assert_eq!(tok.vocab_size(), 768);
    let golden = read_json(&fixture("tokenizer/golden_tiny.json"));
    let n = check_parity(&tok, &golden);
    check_decode_cases(&tok, &golden);
    eprintln!("tiny vocabulary: {n} corpus cases equal to tiktoken");
}

#[test]
fn o200k_vocabulary_matches_tiktoken_on_the_whole_corpus() {
    let dir = o200k_dir();
    let tok = Tokenizer::load(&dir).unwrap();
    assert_eq!(tok.vocab_size(), 199_998 + 256);
    let golden = read_json(&fixture("tokenizer/golden_o200k.json"));
    let n = check_parity(&tok, &golden);
    check_decode_cases(&tok, &golden);
    eprintln!("o200k vocabulary: {n} corpus cases equal to tiktoken");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn added_tokens_come_from_the_files_and_match_in_text() {
    let tok = Tokenizer::load(&fixture("tiny-f32")).unwrap();
    let (open, sep, eom) =
        (tok.added_id("<|open|>").unwrap(), tok.added_id("<|sep|>").unwrap(), tok.added_id("<|end_of_msg|>").unwrap());
    assert_eq!((open, sep, eom), (514, 516, 517));
    assert_eq!((tok.bos_id(), tok.eos_id()), (Some(512), Some(eom)));
    let ids = tok.encode("a<|open|><|sep|>b<|open");
    assert_eq!(ids[1..3], [open, sep]);
    assert!(!ids[3..].contains(&open), "a bare prefix `<|open` stays text: {ids:?}");
    assert_eq!(tok.decode(&ids).unwrap(), "a<|open|><|sep|>b<|open");
    // encode_ordinary leaves the marker as text.
    assert!(!tok.encode_ordinary("<|open|>").contains(&open));
    assert!(matches!(tok.decode_bytes(&[768]), Err(Error::TokenId { id: 768, .. })));
}

#[test]
fn longest_added_token_wins_at_a_position() {
    let dir = scratch_dir("prefix-tokens");
    std::fs::copy(fixture("tiny-f32/tiktoken.model"), dir.join("tiktoken.model")).unwrap();
    let cfg = serde_json::json!({ "added_tokens_decoder": {
        "512": {"content": "<|a"}, "513": {"content": "<|a|>"}, "514": {"content": "<|a|>b"}
    }});
    std::fs::write(dir.join("tokenizer_config.json"), cfg.to_string()).unwrap();
    let tok = Tokenizer::load(&dir).unwrap();
    let ids = tok.encode("x<|a|>by<|a|>z<|aq");
    assert_eq!(ids[1], 514, "{ids:?}");
    assert!(ids.contains(&513) && ids.contains(&512), "{ids:?}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn stream_decoder_never_splits_a_character_and_flushes_at_the_end() {
    let text = "é漢😀👨‍👩‍👧";
    let bytes = text.as_bytes();
    let mut stream = StreamDecoder::new();
    let mut out = String::new();
    for b in bytes {
        let piece = stream.push(&[*b]);
        assert!(text.starts_with(&(out.clone() + &piece)), "emitted a partial character");
        out.push_str(&piece);
    }
    assert_eq!(out + &stream.finish(), text);
    // A truncated character is held, then flushed as U+FFFD; an invalid byte is not held.
    let mut stream = StreamDecoder::new();
    assert_eq!(stream.push(&[0xF0, 0x9F]), "");
    assert_eq!(stream.pending_len(), 2);
    assert_eq!(stream.finish(), "\u{FFFD}");
    assert_eq!(StreamDecoder::new().push(&[b'a', 0xFF, b'b']), "a\u{FFFD}b");
}

/// Writes tokenizer files into a scratch folder: `ranks` lines and a config value.
fn files(ranks: &str, config: Option<Value>) -> PathBuf {
    let dir = scratch_dir("badtok");
    std::fs::write(dir.join("tiktoken.model"), ranks).unwrap();
    if let Some(c) = config {
        std::fs::write(dir.join("tokenizer_config.json"), c.to_string()).unwrap();
    }
    dir
}

fn good_config() -> Value {
    serde_json::json!({ "added_tokens_decoder": { "300": {"content": "<|end_of_msg|>", "special": true} }, "eos_token": "<|end_of_msg|>" })
}

/// A ranks file whose ranks 0..256 are the single bytes, then `extra` lines (from rank 256).
fn byte_ranks(extra: &str) -> String {
    const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    // One byte in base64: two characters and `==`.
    let one = |b: u8| format!("{}{}==", B64[usize::from(b >> 2)] as char, B64[usize::from((b & 3) << 4)] as char);
    let mut text: String = (0..=255u8).map(|b| format!("{} {b}\n", one(b))).collect();
    text.push_str(extra);
    text
}

fn expect_refused(dir: &Path, file: &str, says: &str) {
    match Tokenizer::load(dir) {
        Err(e @ Error::Tokenizer { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(file) && msg.contains(says), "`{msg}` should name {file} and say `{says}`");
        }
        Err(other) => panic!("expected a tokenizer error naming {file}, got {other}"),
        Ok(_) => panic!("expected {file} to be refused ({says})"),
    }
}

#[test]
fn malformed_tokenizer_files_are_refused_with_a_named_error() {
    let ok = &byte_ranks("YWI= 256\n");
    assert!(Tokenizer::load(&files(ok, Some(good_config()))).is_ok());
    expect_refused(&files("YQ== 0\n@@@ 1\n", Some(good_config())), "tiktoken.model line 2", "bad base64");
    expect_refused(&files("YQ== 0\nYg== 0\n", Some(good_config())), "tiktoken.model line 2", "duplicate rank 0");
    expect_refused(&files("YQ== 0\nYQ== 1\n", Some(good_config())), "tiktoken.model line 2", "already given on line 1");
    expect_refused(&files("YQ== 0\nYg== 2\n", Some(good_config())), "tiktoken.model", "rank 1 is missing");
    expect_refused(
        &files("YQ== 0\nYg==\n", Some(good_config())),
        "tiktoken.model line 2",
        "expected `<base64> <rank>`",
    );
    expect_refused(&files("YQ== zero\n", Some(good_config())), "tiktoken.model line 1", "bad rank");
    expect_refused(&files("", Some(good_config())), "tiktoken.model", "no ranks");
    // Found by the `tokenizer_files` fuzz target (seed `few-ranks`): a byte without a rank
    // made `encode` panic inside tiktoken-rs on any text containing it.
    expect_refused(&files("YQ== 0\nYg== 1\nYWI= 2\n", Some(good_config())), "tiktoken.model", "byte 0x00 has no rank");
    let missing = files(ok, None);
    match Tokenizer::load(&missing) {
        Err(e @ Error::Io { .. }) => assert!(e.to_string().contains("tokenizer_config.json") && e.is_input_error()),
        other => panic!("expected a missing config to be refused, got {:?}", other.err()),
    }
    let collide_id = serde_json::json!({ "added_tokens_decoder": { "1": {"content": "<|x|>"} } });
    expect_refused(&files(ok, Some(collide_id)), "tokenizer_config.json", "which is a BPE rank");
    let collide_bytes = serde_json::json!({ "added_tokens_decoder": { "300": {"content": "ab"} } });
    expect_refused(&files(ok, Some(collide_bytes)), "tokenizer_config.json", "same bytes as rank 256");
    let twice =
        serde_json::json!({ "added_tokens_decoder": { "300": {"content": "<|x|>"}, "301": {"content": "<|x|>"} } });
    expect_refused(&files(ok, Some(twice)), "tokenizer_config.json", "given twice");
    let bad_key = serde_json::json!({ "added_tokens_decoder": { "three": {"content": "<|x|>"} } });
    for key in ["0300", "+300", " 300", "300.0"] {
        // issue 13: only the canonical decimal form names an id.
        let config = serde_json::json!({ "added_tokens_decoder": { key: {"content": "<|x|>"} } });
        expect_refused(&files(ok, Some(config)), "tokenizer_config.json", &format!("{key:?}"));
    }
    expect_refused(&files(ok, Some(bad_key)), "tokenizer_config.json", "not a token id");
    let no_decoder = serde_json::json!({ "eos_token": "<|end_of_msg|>" });
    expect_refused(&files(ok, Some(no_decoder)), "tokenizer_config.json", "added_tokens_decoder");
    let unknown_eos =
        serde_json::json!({ "added_tokens_decoder": { "300": {"content": "<|x|>"} }, "eos_token": "<|nope|>" });
    expect_refused(&files(ok, Some(unknown_eos)), "tokenizer_config.json", "eos_token");
    let dir = files(ok, None);
    std::fs::write(dir.join("tokenizer_config.json"), "{\"added_tokens_decoder\": {}, \"added_tokens_decoder\": {}}")
        .unwrap();
    expect_refused(&dir, "tokenizer_config.json", "duplicate key");
}

#[test]
fn every_tiny_checkpoint_carries_a_tokenizer_matching_its_vocab_size() {
    for name in k3_tests::TINY_CHECKPOINTS {
        let cfg = k3_engine::ModelConfig::load(&fixture(name).join("config.json")).unwrap();
        let tok = Tokenizer::load(&fixture(name)).unwrap();
        assert_eq!(tok.vocab_size(), cfg.vocab_size, "{name}");
    }
}

/// issue 13: a million spaces or tabs made the tokenizer panic (fancy-regex gave up inside
/// tiktoken-rs); runs up to `MAX_WHITESPACE_RUN` are encoded in one piece as before (the
/// corpus parity tests above hold them to `tiktoken`).
#[test]
fn issue_13_huge_whitespace_runs_encode_without_a_panic() {
    use k3_engine::tokenizer::MAX_WHITESPACE_RUN;
    let tok = Tokenizer::load(&k3_tests::fixture("tiny-mxfp4")).unwrap();
    for ws in [" ", "\t", "\u{3000}"] {
        let text = format!("a{}b", ws.repeat(1_000_000));
        let ids = tok.encode(&text);
        let bytes = tok.decode_bytes(&ids).unwrap();
        assert_eq!(bytes, text.as_bytes(), "{ws:?}: the ids decode back to the text");
    }
    // A run at the limit is one piece: the same ids as the run alone between the letters.
    let at_limit = " ".repeat(MAX_WHITESPACE_RUN);
    let ids = tok.encode(&format!("a{at_limit}b"));
    assert_eq!(tok.decode_bytes(&ids).unwrap().len(), MAX_WHITESPACE_RUN + 2);
}
