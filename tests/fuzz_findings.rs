//! The bytes-level entry points the fuzz targets call (`fuzz/`) agree with the file-level
//! ones. The regressions of what fuzzing found live beside the code they pin (each input is
//! also a seed of its target's corpus, `fuzz/corpus/<target>/finding-*`):
//! `plan/tests/memory.rs` `fuzz_finding_footprints_past_64_bits_are_refused_never_wrapped`,
//! `tests/tokenizer.rs` `malformed_tokenizer_files_are_refused_with_a_named_error` (a byte
//! without a rank), `server/src/request.rs` `fuzz_finding_*`, `store/src/download/journal.rs`
//! `fuzz_finding_a_resume_starts_at_byte_0_and_stays_within_the_size`, and here the chat
//! templates.

use std::path::Path;

use std::time::{Duration, Instant};

use k3_engine::chat::{ChatMessage, ChatMode, ChatTemplate, Role};
use k3_engine::tokenizer::Tokenizer;
use k3_io::format::{ShardHead, TensorIndex, TensorInfo};

/// `(file name, header, file length)` of every shard of `dir`, read as the fuzz seeds are.
fn heads_of(dir: &Path) -> Vec<(String, Vec<u8>, u64)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".safetensors") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        out.push((name, bytes[8..8 + n].to_vec(), bytes.len() as u64));
    }
    out
}

fn sorted(index: &TensorIndex) -> Vec<TensorInfo> {
    let mut t: Vec<TensorInfo> = index.tensors().cloned().collect();
    t.sort_by(|a, b| a.name.cmp(&b.name));
    t
}

#[test]
fn an_index_from_header_bytes_equals_the_index_of_the_folder() {
    let dir = k3_tests::fixture("tiny-mxfp4");
    let owned = heads_of(&dir);
    let heads: Vec<ShardHead> =
        owned.iter().map(|(n, h, len)| ShardHead { file_name: n, header: h, file_len: *len }).collect();
    let index_file = std::fs::read(dir.join("model.safetensors.index.json")).unwrap();
    let from_bytes = TensorIndex::from_heads(&dir, &heads, Some(&index_file)).unwrap();
    let opened = TensorIndex::open(&dir).unwrap();
    assert_eq!(sorted(&from_bytes), sorted(&opened));
    assert_eq!(from_bytes.shard_paths(), opened.shard_paths());
    // Nothing was opened, so nothing can be read.
    let any = from_bytes.tensors().next().unwrap().clone();
    assert!(from_bytes.read(&any).is_err());
    // The same refusal as the folder's: a tensor the index file does not list.
    let mut bad: serde_json::Value = serde_json::from_slice(&index_file).unwrap();
    bad["weight_map"].as_object_mut().unwrap().remove(&any.name);
    let e = TensorIndex::from_heads(&dir, &heads, Some(bad.to_string().as_bytes())).unwrap_err();
    assert!(e.to_string().contains(&any.name), "{e}");
}

#[test]
fn a_tokenizer_from_bytes_equals_the_tokenizer_of_the_folder() {
    let dir = k3_tests::fixture("tiny-mxfp4");
    let ranks = std::fs::read(dir.join("tiktoken.model")).unwrap();
    let config = std::fs::read(dir.join("tokenizer_config.json")).unwrap();
    let from_bytes = Tokenizer::from_bytes(&ranks, &config, &dir).unwrap();
    let loaded = Tokenizer::load(&dir).unwrap();
    let text = "<|open|>message role=\"user\"<|sep|>Hello, world!<|close|>message<|sep|>";
    assert_eq!(from_bytes.encode(text), loaded.encode(text));
    assert_eq!(from_bytes.vocab_size(), loaded.vocab_size());
    assert_eq!(from_bytes.chat_template(), loaded.chat_template());
}

/// Found by the `chat_template` fuzz target in the campaign (corpus seed
/// `finding-slow-macro-recursion`): a macro calling itself four times per level rendered
/// megabytes of NULs and took over 1 s in the fuzz build. Rendering is bounded by fuel and
/// the output cap, which is now enforced while the template writes (a template emitting
/// more than 16 MiB stops there instead of building the whole text first).
#[test]
fn fuzz_finding_runaway_templates_end_quickly_within_the_cap() {
    let seed =
        std::fs::read(k3_tests::repo_root().join("fuzz/corpus/chat_template/finding-slow-macro-recursion")).unwrap();
    let marker: &[u8] = b"\n\0-8<-\0\n";
    let end = seed.windows(marker.len()).position(|w| w == marker).unwrap_or(seed.len());
    let source = std::str::from_utf8(&seed[..end]).unwrap();
    let messages = [ChatMessage::new(Role::User, "hi")];
    let start = Instant::now();
    let rendered = ChatTemplate::jinja(source).render(&messages, ChatMode::Instruct, false);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(1), "took {took:?}");
    if let Ok(text) = rendered {
        assert!(text.len() <= 16 << 20);
    }
    // 100 MB asked for: refused at the cap (or by fuel), fast.
    let flood = "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}";
    let start = Instant::now();
    let e = ChatTemplate::jinja(flood).render(&messages, ChatMode::Instruct, false).unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(1), "took {:?}", start.elapsed());
    assert!(matches!(e, k3_engine::Error::Template { .. }), "{e}");
}
