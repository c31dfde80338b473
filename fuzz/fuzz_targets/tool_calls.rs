//! The tools channel of a reply as the model streams it (`k3_engine::chat::calls`): tags
//! and text in any order, any bytes.
//!
//! Input: sections (see `k3_fuzz::sections`), each one event: first byte 0 an opening tag,
//! 1 a closing tag (the rest is the tag's text), anything else: the rest is text bytes.
//! Invariants: no panic; the reader stops at its first error; without an error, every
//! finished call names a declared tool, its arguments are JSON, and the streamed deltas of
//! each call concatenate to its arguments, the first delta naming the call.
#![no_main]

use k3_engine::chat::calls::CallReader;
use k3_fuzz::sections;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let declared = vec!["search".to_string(), "run".to_string()];
    let mut reader = CallReader::new(declared.clone(), "call_".into());
    let mut assembled: Vec<(String, String)> = Vec::new();
    let mut closed = false;
    for part in sections(data) {
        let Some((&kind, rest)) = part.split_first() else { continue };
        match kind {
            0 | 1 if !closed => closed = reader.tag(kind == 0, &String::from_utf8_lossy(rest)),
            _ if !closed => reader.text(rest),
            _ => {}
        }
        collect(&mut reader, &mut assembled);
    }
    reader.finish();
    collect(&mut reader, &mut assembled);
    if reader.error().is_some() {
        return;
    }
    for (i, call) in reader.calls().iter().enumerate() {
        assert!(declared.contains(&call.tool), "an undeclared tool {}", call.tool);
        assert!(serde_json::from_str::<serde_json::Value>(&call.arguments).is_ok(), "{}", call.arguments);
        assert_eq!(assembled[i], (call.tool.clone(), call.arguments.clone()), "deltas of call {i}");
    }
});

/// Appends the reader's new deltas to each call's (tool, arguments).
fn collect(reader: &mut CallReader, assembled: &mut Vec<(String, String)>) {
    for d in reader.take_deltas() {
        if let Some((_, tool)) = d.opened {
            assert_eq!(d.position, assembled.len(), "a call opens out of order");
            assembled.push((tool, String::new()));
        }
        assembled[d.position].1.push_str(&d.arguments);
    }
}
