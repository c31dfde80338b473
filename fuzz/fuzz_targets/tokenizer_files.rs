//! `tiktoken.model` + `tokenizer_config.json` → `Tokenizer` (`Tokenizer::from_bytes`), then
//! a short text through it.
//!
//! Input: sections: the ranks file, the config, a text (at most 4 KiB, lossily UTF-8).
//! Invariants of an accepted tokenizer (spec §12: byte-level BPE, added tokens matched in
//! text): `encode` and `encode_ordinary` never panic, give ids below `vocab_size`, and
//! decode back to exactly the text, also through `StreamDecoder` one token at a time;
//! every id below `vocab_size` that names a token decodes; the BOS/EOS ids are added tokens.
#![no_main]

use std::path::Path;

use k3_engine::tokenizer::{StreamDecoder, Tokenizer};
use k3_fuzz::{sections, MODEL_DIR};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parts = sections(data);
    let (Some(ranks), Some(config)) = (parts.first(), parts.get(1)) else { return };
    let text = String::from_utf8_lossy(parts.get(2).copied().unwrap_or_default());
    if text.len() > 4096 {
        return;
    }
    let Ok(tok) = Tokenizer::from_bytes(ranks, config, Path::new(MODEL_DIR)) else { return };
    for id in [tok.bos_id(), tok.eos_id()].into_iter().flatten() {
        assert!(tok.is_added(id), "BOS/EOS id {id} is not an added token");
    }
    for ids in [tok.encode(&text), tok.encode_ordinary(&text)] {
        assert!(ids.iter().all(|&id| (id as usize) < tok.vocab_size()), "an id past the vocabulary");
        let bytes = tok.decode_bytes(&ids).expect("encoded ids decode");
        assert_eq!(bytes, text.as_bytes(), "decode(encode(text)) is not the text");
        let mut stream = StreamDecoder::new();
        let mut streamed = String::new();
        for &id in &ids {
            streamed.push_str(&stream.push(tok.token_bytes(id).expect("an encoded id has bytes")));
        }
        streamed.push_str(&stream.finish());
        assert_eq!(streamed, text, "the stream decoder changed the text");
    }
});
